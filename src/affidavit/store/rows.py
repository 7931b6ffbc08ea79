"""Row shapes both store backends share: the migration record, API-key and policy-event rows,
and the reference filters' SQL fragments. They sit beneath :mod:`affidavit.store.sqlite` and
:mod:`affidavit.store.postgres`, so neither backend imports the other."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from affidavit.store.protocol import ApiKeyRecord, PolicyEvent


@dataclass(frozen=True)
class Migration:
    """One named, numbered schema migration: applied once, in a transaction, never edited."""

    version: int
    name: str
    sql: str


def created(record: ApiKeyRecord) -> dict[str, object]:
    """An ``api_key.create`` event's ``after``: never the secret or its hash."""
    return {"key_id": record.key_id, "principal": record.principal, "role": record.role,
            "expires_at": record.expires_at}


def revoked(key_id: str, principal: str, role: str,
            at: str) -> tuple[dict[str, object], dict[str, object]]:
    """An ``api_key.revoke`` event's ``before`` and ``after``."""
    described: dict[str, object] = {"key_id": key_id, "principal": principal, "role": role}
    return {**described, "revoked_at": None}, {**described, "revoked_at": at}


def api_key_row(record: ApiKeyRecord) -> tuple[object, ...]:
    """The stored columns of ``record``, in ``_COLUMNS`` order (shared with PostgreSQL)."""
    return (record.key_id, record.principal, record.role, record.salt, record.secret_hash,
            record.created_at, record.expires_at, record.revoked_at)


def api_key_record(row: Sequence[object]) -> ApiKeyRecord:
    """The record of one row read in ``_COLUMNS`` order."""
    return ApiKeyRecord(
        key_id=str(row[0]), principal=str(row[1]), role=str(row[2]), salt=str(row[3]),
        secret_hash=str(row[4]), created_at=str(row[5]),
        expires_at=None if row[6] is None else str(row[6]),
        revoked_at=None if row[7] is None else str(row[7]))


def policy_event(row: Sequence[object]) -> PolicyEvent:
    """A stored row (in ``_COLUMNS`` order) as a :class:`PolicyEvent`."""
    return PolicyEvent(int(str(row[0])), *(str(x) for x in row[1:8]))


VIEWABLE_SOURCE = "(source_type = 'document' OR (source_type = 'ledger' AND created_by = {}))"
"""A reference from a document, or a citation of the reader's own answer (its creator is the
asker of its record; :func:`affidavit.authz.ledger_view.may_view_record` decides after)."""

def like_pattern(text: str) -> str:
    """A LIKE pattern finding ``text`` anywhere, its own wildcards taken literally."""
    escaped = text.casefold().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
