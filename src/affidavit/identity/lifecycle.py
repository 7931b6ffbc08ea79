"""SIRE lifecycle: PROPOSED → APPROVED → ACTIVE, recorded with who approved and when.

The tuple itself is immutable per document version; approval changes only its state. An
approval is refused when an Excluded term matches the source's own identity.
"""

from __future__ import annotations

import json

from affidavit.errors import InputRejected, NotFound
from affidavit.identity.sire import SireInputs, excluded_conflicts
from affidavit.store.base import SireRecord, Store


def approve_sire(store: Store, tenant: str, sire_id: str, *, by: str, at: str) -> SireRecord:
    """Approve one proposal and make it ACTIVE; raise InputRejected with the reason if not."""
    if not by.strip():
        raise InputRejected("APPROVER_REQUIRED", "an approval must name who approves")
    matches = [r for r in store.list_sire(tenant, head_only=False) if r.sire_id == sire_id]
    if not matches:
        raise NotFound(f"no SIRE record {sire_id}")
    record = matches[0]
    if record.state == "ACTIVE":
        return record
    metadata = json.loads(store.version_metadata(tenant, record.version_id) or "{}")
    inputs = SireInputs(oracle_id=metadata.get("oracle_id"), title=record.title,
                        frameworks=tuple(metadata.get("frameworks") or ()),
                        source_id=str(metadata.get("source_id") or record.alias))
    conflicts = excluded_conflicts(record.sire, inputs)
    if conflicts:
        raise InputRejected(
            "SIRE_SELF_EXCLUSION",
            f"Excluded term(s) {', '.join(conflicts)} match the source's own identity")
    store.set_sire_state(tenant, sire_id, state="APPROVED", by=by, at=at)
    return store.set_sire_state(tenant, sire_id, state="ACTIVE", by=by, at=at)
