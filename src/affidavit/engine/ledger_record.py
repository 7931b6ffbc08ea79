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
from affidavit.index.serving import boundary_shown_to
from affidavit.ledger.contents import evidence_chunk_ids, referenced_chunk_ids
from affidavit.observability.traces import traced
from affidavit.policy.derived import model_labels, shown_to
from affidavit.records import AuthzContext, canonical_json, stable_hash
from affidavit.references.citations import NO_CITATIONS, CitationDrafts
from affidavit.store.protocol import ChunkRecord, LedgerEntry, Store

RECORD_SCHEMA = "affidavit.ledger/1"
WITHHELD = "[withheld: you may not read this evidence]"


class LedgerWriter:
    """Appends records; raises :class:`~affidavit.errors.LedgerError` when it cannot."""

    def __init__(self, store: Store):
        self.store = store
        self._settings_recorded: dict[str, str] = {}

    @traced("ledger.append", lambda entry: {"affidavit.ledger_seq": entry.seq})
    def append(self, tenant: str, request_id: str, record: dict[str, Any], *,
               citations: CitationDrafts = NO_CITATIONS) -> LedgerEntry:
        """Persist ``record``; its ``citations`` become Citation references in the same
        transaction."""
        record_id = "led-" + uuid.uuid4().hex[:20]
        created_at = datetime.now(UTC).isoformat(timespec="microseconds")
        payload = canonical_json({**record, "schema": RECORD_SCHEMA, "record_id": record_id,
                                  "tenant": tenant, "created_at": created_at,
                                  "policy_version": self._policy_version(tenant, record)})
        return self.store.append_ledger(tenant, record_id=record_id, request_id=request_id,
                                        created_at=created_at, payload=payload,
                                        references=citations.bind(record_id, created_at))


    def _policy_version(self, tenant: str, record: dict[str, Any]) -> dict[str, Any]:
        """The head of the tenant's policy chain, after recording the effective settings
        the record was made under if the chain does not name them yet."""
        from affidavit.audit import operator_actor, policy_version, record_effective_settings

        version = record.get("config_version")
        if isinstance(version, str) and self._settings_recorded.get(tenant) != version:
            record_effective_settings(self.store, tenant, version, actor=operator_actor())
            self._settings_recorded[tenant] = version
        return policy_version(self.store, tenant)


_SAFE_WHEN_WITHHELD = frozenset({
    "schema", "record_id", "request_id", "tenant", "created_at", "principal", "role",
    "authz", "config_version", "corpus_generation", "output_state", "reasons",
    "gate_reasons", "layers_available", "citations", "retrieved", "gates", "sire",
    "policy_version", "tier",
    # The serving run, its digest and DEGRADED_BOUNDARY; the excluded names are screened.
    "boundary",
})


def redact_for(entry: LedgerEntry, authz: AuthzContext, store: Store) -> dict[str, Any]:
    """The record as this caller may see it: texts of evidence it cannot read are withheld,
    and so is anything derived from a source it cannot read (its SIRE identity)."""
    record: dict[str, Any] = json.loads(entry.payload)
    readable = store.get_chunks(authz, referenced_chunk_ids(record))
    visible = {r.chunk.chunk_id for r in readable}
    # Evidence whose title, path or headings this caller may not see as the prompt showed
    # them counts as hidden: the prompt and the answer were made with them.
    complete = _derived_seen(record, readable, authz)
    hidden = [cid for cid in evidence_chunk_ids(record) if cid not in complete]
    if hidden:
        # Default deny: once any evidence is hidden, only fields known to carry no text or
        # derivative of evidence stay; everything else (prompt, answer, claims, evidence,
        # layer inputs, rerank, plausibility, FAQ, and fields added later) is withheld.
        for key in list(record):
            if key not in _SAFE_WHEN_WITHHELD:
                record[key] = WITHHELD
        record["withheld_evidence"] = len(hidden)
    elif isinstance(record.get("evidence"), list):
        record["evidence"] = [e for e in record["evidence"] if e.get("chunk_id") in visible]
    record["citations"] = _citations_for(record.get("citations", []), readable)
    record["retrieved"] = [r for r in record.get("retrieved", []) if r["chunk_id"] in visible]
    if "boundary" in record:
        record["boundary"] = boundary_shown_to(record["boundary"], store, authz)
    for gate in record.get("gates", []):
        gate["kept"] = [c for c in gate.get("kept", []) if c in visible]
        gate["dropped"] = [d for d in gate.get("dropped", []) if d["chunk_id"] in visible]
    # SIRE terms are drawn from a source's text: shown only for sources readable now.
    # The SIRE subject is drawn from the title: shown only where the title is.
    versions = {r.chunk.version_id for r in readable
                if r.chunk.derived is not None and "title" not in r.chunk.derived.withheld}
    # Each term is shown only when its label is granted to the caller now.
    record["sire"] = {v: sire_dict_shown_to(s, authz.granted_labels)
                      for v, s in record.get("sire", {}).items() if v in versions}
    # The compliance score names SIRE subjects too (drawn from titles).
    if "compliance" in record and any(r.chunk.version_id not in versions for r in readable):
        record["compliance"] = WITHHELD
    if isinstance(record.get("sire_excludes"), dict):
        record["sire_excludes"] = _excludes_shown(record["sire_excludes"])
    if record.get("principal") != authz.principal:
        record.pop("authz", None)
        # The documents a reference traversal reached were the asker's to read, not
        # necessarily this reader's: their ids stay with the asker.
        record.pop("references", None)
    return {"seq": entry.seq, "record_hash": entry.record_hash, "prev_hash": entry.prev_hash,
            "record": record}


def _excludes_shown(logged: dict[str, Any]) -> dict[str, Any]:
    """The default exclusions a record ran under, as a view shows them: how many and a
    digest of the list, never the terms. They are configuration, not text of a source the
    reader may read: an operator may exclude a codename no reader is cleared for. The record
    keeps the list, and a replay applies it."""
    terms = [str(t) for t in logged.get("in_force", [])]
    return {"in_force": {"count": len(terms),
                         "digest": stable_hash("sire-excludes", canonical_json(terms))[:16]},
            "not_applied": len(logged.get("not_applied", []))}


def _citations_for(citations: list[dict[str, Any]],
                   readable: list[ChunkRecord]) -> list[dict[str, Any]]:
    """Citations of chunks this caller may read, with the title and locator it may see now
    (the logged ones are the asker's)."""
    shown = {r.chunk.chunk_id: r for r in readable}
    return [{**c, "title": shown[c["chunk_id"]].title,
             "locator": shown[c["chunk_id"]].chunk.locator}
            for c in citations if c["chunk_id"] in shown]


def _derived_seen(record: dict[str, Any], readable: list[ChunkRecord],
                  authz: AuthzContext) -> set[str]:
    """Chunk ids whose derived text, as logged in the prompt's evidence, this caller sees
    the same now; a chunk with no logged evidence entry only if nothing of it is withheld."""
    logged = {str(e.get("chunk_id")): e for e in record.get("evidence") or []
              if isinstance(e, dict)}
    egress = (record.get("egress") or {}).get("answer_labels")
    for_model = model_labels(authz.granted_labels, None if egress is None else set(egress))
    seen: set[str] = set()
    for r in readable:
        entry = logged.get(r.chunk.chunk_id)
        if entry is None:
            if r.chunk.derived is not None and not r.chunk.derived.withheld:
                seen.add(r.chunk.chunk_id)
            continue
        view = shown_to(r.chunk, for_model)
        assert view.derived is not None  # shown_to always sets it
        if (entry.get("title") == view.derived.title and entry.get("locator") == view.locator
                and entry.get("heading_path") == list(view.heading_path)):
            seen.add(r.chunk.chunk_id)
    return seen
