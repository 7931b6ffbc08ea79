"""What a ledger record names: the chunk ids whose text it may contain, and every chunk id it
mentions. Pure functions over a record's dictionary, used by the record's writer and by the
readers that decide who may view a record."""

from __future__ import annotations

from typing import Any


def evidence_chunk_ids(record: dict[str, Any]) -> list[str]:
    """Every chunk id whose text a record may contain (prompt evidence and citations)."""
    ids = {c["chunk_id"] for c in record.get("citations", [])}
    for gate in record.get("gates", []):
        ids.update(gate.get("kept", []))
    return sorted(ids)


def referenced_chunk_ids(record: dict[str, Any]) -> list[str]:
    """Every chunk id a record names: retrieved, kept or dropped by a gate, or cited."""
    ids = set(evidence_chunk_ids(record))
    ids.update(r["chunk_id"] for r in record.get("retrieved", []))
    for gate in record.get("gates", []):
        ids.update(d["chunk_id"] for d in gate.get("dropped", []))
    return sorted(ids)
