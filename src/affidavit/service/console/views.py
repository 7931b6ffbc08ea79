"""What the console's pages show, read through the same engine views the API serves.

Each function runs on the engine inside the caller's credential scope
(``ServiceState.call``) and returns plain data for a template. Nothing here decides who may
read what: ledger records come through :func:`~affidavit.engine.ledger_record.redact_for` (as
``/v1/ledger`` serves them), documents through :mod:`affidavit.engine.reader` (as
``/v1/documents``), SIRE records through ``sire_records_for`` (as ``/v1/review/sire``),
passages and titles through the store's authorization filter with the caller's context.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from affidavit.answer.verify.gate import BLOCKED, REQUIRES_SPEC, GateDecision, shown_answer
from affidavit.engine.ledger_record import WITHHELD, redact_for
from affidavit.engine.query import Engine
from affidavit.engine.reader import DocumentView, read_document
from affidavit.errors import NotFound
from affidavit.ledger.chain import verify_chain
from affidavit.llm.citations import SRC_PATTERN
from affidavit.service.api.auth import Credential
from affidavit.service.api.ledger_routes import replay_view, visible_view
from affidavit.store.protocol import LedgerEntry

AUDITOR_ROLES = frozenset({"admin"})
"""Roles that walk every record of the tenant in the ledger page (each as they may see it)."""


@dataclass(frozen=True)
class Identity:
    """The identity bar of every page: who, which tenant, which role, which grants."""

    principal: str
    tenant: str
    role: str
    method: str
    groups: tuple[str, ...]
    granted_labels: tuple[str, ...]


def identity(engine: Engine, caller: Credential) -> Identity:
    authz = engine.authz_context(caller.principal)
    groups = tuple(sorted(t for t in authz.tokens if t.startswith("group:")))
    return Identity(caller.principal, caller.tenant, caller.role, caller.method, groups,
                    tuple(sorted(authz.granted_labels)))


@dataclass
class Source:
    """One source row: a chunk the caller may read, with its own view of title and place."""

    chunk_id: str
    doc_id: str
    title: str
    locator: str
    label: str
    passage: str
    src: str = ""


@dataclass
class AnswerView:
    """A recorded answer as the caller may see it: the Ask page's result panel."""

    request_id: str
    record_id: str
    record_hash: str
    output_state: str
    answer: str
    reasons: list[str]
    claims: list[dict[str, Any]]
    cited: list[Source]
    unused: list[Source]
    withheld: int
    withheld_labels: list[str]
    asked_by: str
    question: str
    answer_withheld: bool = False
    refused: bool = False
    layers_available: dict[str, Any] = field(default_factory=dict)


def _sources(engine: Engine, caller: Credential, chunk_ids: list[str]) -> dict[str, Source]:
    authz = engine.authz_context(caller.principal)
    records = engine.store.get_chunks(authz, chunk_ids)
    return {r.chunk.chunk_id: Source(r.chunk.chunk_id, r.chunk.node_id, r.title,
                                     r.chunk.locator, r.chunk.label, r.chunk.text)
            for r in records}


def _document_withheld(engine: Engine, caller: Credential,
                       doc_ids: list[str]) -> tuple[int, list[str]]:
    """Sections of these documents the caller is not cleared for, as the reader counts
    them (the reader shows each as a placeholder naming its label)."""
    count, labels = 0, set[str]()
    for doc_id in doc_ids:
        try:
            view = read_document(engine, caller.principal, doc_id)
        except NotFound:
            continue
        hidden = [s for s in view.sections if not s.readable]
        count += len(hidden)
        labels.update(s.label for s in hidden)
    return count, sorted(labels)


def viewable(engine: Engine, caller: Credential,
             request_id: str) -> tuple[LedgerEntry, dict[str, Any]]:
    """A record and the caller's redacted view of it: the asker's own (as ``/v1/ledger``
    serves it), or any record of the tenant for an auditor; NotFound otherwise."""
    if caller.role not in AUDITOR_ROLES:
        return visible_view(engine, caller, request_id)
    entry = engine.store.get_ledger(caller.tenant, request_id)
    if entry is None:
        raise NotFound(f"no ledger record {request_id} that you may see")
    return entry, redact_for(entry, engine.authz_context(caller.principal), engine.store)


def answer_view(engine: Engine, caller: Credential, request_id: str) -> AnswerView:
    """The record of ``request_id`` split into cited sources, sources retrieved but not
    used, and a count of evidence withheld from the caller."""
    entry, view = viewable(engine, caller, request_id)
    return _answer_from(engine, caller, entry.record_id, entry.record_hash, view["record"])


def replay_record(engine: Engine, caller: Credential, request_id: str) -> dict[str, Any]:
    """Whether the record's decision reproduces (``POST /v1/ledger/{id}/verify``)."""
    entry, view = viewable(engine, caller, request_id)
    return replay_view(engine, caller, entry, view)


def _answer_from(engine: Engine, caller: Credential, record_id: str, record_hash: str,
                 record: dict[str, Any]) -> AnswerView:
    citations = [c for c in _listed(record.get("citations")) if isinstance(c, dict)]
    retrieved = _listed(record.get("retrieved"))
    ids = [str(c["chunk_id"]) for c in citations] + [str(r["chunk_id"]) for r in retrieved]
    shown = _sources(engine, caller, list(dict.fromkeys(ids)))
    cited: list[Source] = []
    for citation in citations:
        source = shown.get(str(citation["chunk_id"]))
        if source is not None:
            source.src = str(citation.get("src", ""))
            cited.append(source)
    cited_ids = {s.chunk_id for s in cited}
    unused = [shown[str(r["chunk_id"])] for r in retrieved
              if str(r["chunk_id"]) in shown and str(r["chunk_id"]) not in cited_ids]
    hidden_in_record = int(record.get("withheld_evidence") or 0)
    in_documents, labels = _document_withheld(
        engine, caller, sorted({s.doc_id for s in (*cited, *unused)}))
    claims = record.get("claims")
    answer = record.get("answer")
    layers = record.get("layers_available")
    reasons = [str(r) for r in _listed(record.get("reasons"))]
    refused = was_refused(str(record.get("output_state", "")), reasons,
                          len(claims) if isinstance(claims, list) else 0)
    return AnswerView(
        request_id=str(record.get("request_id", "")), record_id=record_id,
        record_hash=record_hash, output_state=str(record.get("output_state", "")),
        answer=answer if isinstance(answer, str) and answer != WITHHELD else "",
        reasons=reasons,
        # A refused answer's claims are its draft: the page shows the refusal instead.
        claims=claims if isinstance(claims, list) and not refused else [], cited=cited,
        unused=unused, refused=refused,
        withheld=hidden_in_record + in_documents, withheld_labels=labels,
        asked_by=str(record.get("principal", "")), question=_text(record.get("query")),
        answer_withheld=answer == WITHHELD,
        layers_available=layers if isinstance(layers, dict) else {})


_SHOWN = "\x00shown"


def was_refused(output_state: str, reasons: list[str], claim_count: int) -> bool:
    """Whether the gate put its refusal in place of the draft (the gate's own rule, asked
    of the recorded state and reasons). An answer without claims is refused when its
    state says so: a vetted FAQ answer has none and is shown."""
    if not claim_count:
        return output_state in (BLOCKED, REQUIRES_SPEC)
    decision = GateDecision(output_state, tuple(reasons))
    return shown_answer(decision, _SHOWN, claim_count) != _SHOWN


@dataclass(frozen=True)
class Segment:
    """A run of answer text, or a citation marker (numbered as in the sources panel)."""

    text: str
    number: int = 0
    source: Source | None = None


def marked(text: str, cited: list[Source]) -> list[Segment]:
    """``text`` with each ``[src:…]`` tag turned into a numbered marker of a cited source;
    a tag of a source the caller may not see now is dropped."""
    numbers = {s.src.lower(): (n, s) for n, s in enumerate(cited, start=1)}
    segments: list[Segment] = []
    last = 0
    for match in SRC_PATTERN.finditer(text):
        segments.append(Segment(text[last:match.start()]))
        found = numbers.get(match.group(1).lower())
        if found is not None:
            segments.append(Segment("", found[0], found[1]))
        last = match.end()
    segments.append(Segment(text[last:]))
    return [s for s in segments if s.text or s.source is not None]


def claim_marked(claim: dict[str, Any], cited: list[Source]) -> list[Segment]:
    """A claim's text with its markers: tags in the text where they stand, the claim's
    other citations after it."""
    segments = marked(str(claim.get("text", "")), cited)
    placed = {s.source.src.lower() for s in segments if s.source is not None}
    numbers = {s.src.lower(): (n, s) for n, s in enumerate(cited, start=1)}
    for src in claim.get("citations") or []:
        found = numbers.get(str(src).lower())
        if found is not None and str(src).lower() not in placed:
            placed.add(str(src).lower())
            segments.append(Segment("", found[0], found[1]))
    return segments


def _listed(value: Any) -> list[Any]:
    """A list field of a record; a withheld field (a string) is an empty list."""
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) and value != WITHHELD else ""


# ---------------------------------------------------------------------- ledger

@dataclass(frozen=True)
class LedgerRow:
    seq: int
    record_id: str
    request_id: str
    created_at: str
    principal: str
    output_state: str
    withheld: int


def ledger_rows(engine: Engine, caller: Credential) -> list[LedgerRow]:
    """The caller's own records, newest first; every record of the tenant for an auditor,
    each redacted for the auditor exactly as a record is for any reader."""
    authz = engine.authz_context(caller.principal)
    rows: list[LedgerRow] = []
    everyone = caller.role in AUDITOR_ROLES
    for entry in engine.store.iter_ledger(caller.tenant):
        payload = json.loads(entry.payload)
        if not everyone and payload.get("principal") != caller.principal:
            continue
        record = redact_for(entry, authz, engine.store)["record"]
        rows.append(LedgerRow(entry.seq, entry.record_id, entry.request_id, entry.created_at,
                              str(payload.get("principal", "")),
                              str(record.get("output_state", "")),
                              int(record.get("withheld_evidence") or 0)))
    return sorted(rows, key=lambda r: r.seq, reverse=True)


@dataclass(frozen=True)
class ChainStatus:
    ok: bool
    checked: int
    reason: str | None
    head_hash: str


def chain_status(engine: Engine, caller: Credential) -> ChainStatus:
    report = verify_chain(engine.store.iter_ledger(caller.tenant), tenant=caller.tenant)
    return ChainStatus(report.ok, report.checked, report.reason, report.head_hash)


def document(engine: Engine, caller: Credential, doc_id: str) -> DocumentView:
    return read_document(engine, caller.principal, doc_id)
