"""Who may read a Claim Ledger record at all.

A record holds the question someone asked and the evidence they were shown, so it is shown
only to the principal who asked it, and then only with the evidence that principal may read
now. For anyone else the record does not exist: the answer must be the same as for an id
that was never issued, so that "forbidden" cannot be told apart from "not found".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from affidavit.records import AuthzContext


def may_view_record(record: Mapping[str, Any], authz: AuthzContext) -> bool:
    """Whether ``authz`` may see ``record`` (its own question, in its own tenant)."""
    asked_by = str(record.get("principal") or "").strip()
    tenant = record.get("tenant")
    return bool(asked_by) and asked_by == authz.principal and tenant in (None, authz.tenant)
