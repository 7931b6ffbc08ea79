"""Writing and reading Claim Ledger records.

A record is canonical JSON (sorted keys, no spaces), so its hash is reproducible. Reading a
record back for a caller goes through :func:`redact_for`, which withholds every evidence text
the caller may not read now.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from affidavit.identity.sire_labels import sire_dict_shown_to
from affidavit.records import AuthzContext, canonical_json
from affidavit.store.base import LedgerEntry, Store

RECORD_SCHEMA = "affidavit.ledger/1"
WITHHELD = "[withheld: you may not read this evidence]"


class LedgerWriter:
    """Appends records; raises :class:`~affidavit.errors.LedgerError` when it cannot."""

    def __init__(self, store: Store):
        self.store = store

    def append(self, tenant: str, request_id: str, record: dict[str, Any]) -> LedgerEntry:
        record_id = "led-" + uuid.uuid4().hex[:20]
        created_at = datetime.now(UTC).isoformat(timespec="microseconds")
        payload = canonical_json({**record, "schema": RECORD_SCHEMA, "record_id": record_id,
                                  "tenant": tenant, "created_at": created_at})
        return self.store.append_ledger(tenant, record_id=record_id, request_id=request_id,
                                        created_at=created_at, payload=payload)


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


_SAFE_WHEN_WITHHELD = frozenset({
    "schema", "record_id", "request_id", "tenant", "created_at", "principal", "role",
    "authz", "config_version", "corpus_generation", "output_state", "reasons",
    "gate_reasons", "layers_available", "citations", "retrieved", "gates", "sire",
})


def redact_for(entry: LedgerEntry, authz: AuthzContext, store: Store) -> dict[str, Any]:
    """The record as this caller may see it: texts of evidence it cannot read are withheld,
    and so is anything derived from a source it cannot read (its SIRE identity)."""
    record: dict[str, Any] = json.loads(entry.payload)
    readable = store.get_chunks(authz, referenced_chunk_ids(record))
    visible = {r.chunk.chunk_id for r in readable}
    hidden = [cid for cid in evidence_chunk_ids(record) if cid not in visible]
    if hidden:
        # Default deny: once any evidence is hidden, only fields known to carry no text or
        # derivative of evidence stay; everything else (prompt, answer, claims, evidence,
        # layer inputs, rerank, plausibility, FAQ, and fields added later) is withheld.
        for key in list(record):
            if key not in _SAFE_WHEN_WITHHELD:
                record[key] = WITHHELD
        record["citations"] = [c for c in record.get("citations", [])
                               if c["chunk_id"] in visible]
        record["withheld_evidence"] = len(hidden)
    elif isinstance(record.get("evidence"), list):
        record["evidence"] = [e for e in record["evidence"] if e.get("chunk_id") in visible]
    record["retrieved"] = [r for r in record.get("retrieved", []) if r["chunk_id"] in visible]
    for gate in record.get("gates", []):
        gate["kept"] = [c for c in gate.get("kept", []) if c in visible]
        gate["dropped"] = [d for d in gate.get("dropped", []) if d["chunk_id"] in visible]
    # SIRE terms are drawn from a source's text: shown only for sources readable now.
    versions = {r.chunk.version_id for r in readable}
    # Each term is shown only when its label is granted to the caller now.
    record["sire"] = {v: sire_dict_shown_to(s, authz.granted_labels)
                      for v, s in record.get("sire", {}).items() if v in versions}
    if record.get("principal") != authz.principal:
        record.pop("authz", None)
    return {"seq": entry.seq, "record_hash": entry.record_hash, "prev_hash": entry.prev_hash,
            "record": record}
