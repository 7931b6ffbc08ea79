"""The query path: authz context → retrieve → gates → compile → generate → verify → gate →
ledger → response.

:class:`Engine` is the library's front door; the CLI and the HTTP service are thin shells
around it. No answer leaves :meth:`Engine.ask` unless its ledger record was persisted first.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from affidavit.authz import Authorizer, FailClosedAuthorizer, StoreAuthorizer
from affidavit.config.settings import Settings
from affidavit.errors import AuthorizationError
from affidavit.index.epochs import serving_epoch, serving_state
from affidavit.observability.traces import configure as configure_telemetry
from affidavit.observability.traces import count_answer, id_hash, traced
from affidavit.records import AuthzContext, ScoredChunk, canonical_json, stable_hash
from affidavit.retrieval import HybridHit, HybridRetriever
from affidavit.store import SQLiteStore
from affidavit.store.protocol import TAKE_OVER, Store

if TYPE_CHECKING:

    from affidavit.answer import FaqMatch
    from affidavit.engine.ledger_record import LedgerWriter
    from affidavit.identity.active import ActiveSireStates
    from affidavit.index.boundary import Boundary
    from affidavit.ingest.catch_up import CatchUp, Progress
    from affidavit.llm.ask_options import AskOptions
    from affidavit.llm.guard import GuardedProvider
    from affidavit.llm.providers import LLMProvider, ProviderRequest, ProviderResponse
    from affidavit.llm.template import PromptTemplate
    from affidavit.records import Reference
    from affidavit.references.citations import CitationDrafts
    from affidavit.retrieval.egress import ModelEgress

# What only an answer, a model provider or the vector channel needs (the answering
# machinery, numpy, the HTTP client, YAML, the entailment layer, the ledger writer) is
# imported where it is used, so that a search on the default lexical index does not load
# it (tests/project/test_startup_search_imports.py).


@dataclass(frozen=True)
class SearchHit:
    chunk_id: str
    doc_id: str
    source_id: str
    title: str
    text: str
    label: str
    score: float
    locator: str
    sire_active: bool
    explain: dict[str, Any] = field(default_factory=dict)
    # The reference this hit came through (reference_depth > 0), as the caller may see it.
    via_reference: dict[str, str] | None = None

    def to_dict(self, *, operator: bool = False) -> dict[str, Any]:
        """The hit as a caller sees it: its rank and fused (RRF) score, both functions of
        rankings among chunks the caller may read, and the gates it passed.

        ``operator=True`` (``affidavit search --explain``) adds each channel's own rank and
        score. Those are operator data: a BM25 score is computed with the tenant's term
        statistics, hidden documents included, so it tells whether documents the caller
        may not read contain a query term.
        """
        view = {
            "chunk_id": self.chunk_id, "doc_id": self.doc_id, "source_id": self.source_id,
            "title": self.title, "text": self.text, "label": self.label, "score": self.score,
            "rank": self.explain.get("fused_rank"), "locator": self.locator,
            "sire_active": self.sire_active, "gates": self.explain.get("gates", {}),
            "via_reference": self.via_reference,
        }
        return {**view, **self.explain} if operator else view


@dataclass
class AskResult:
    request_id: str
    output_state: str
    answer: str
    claims: list[dict[str, Any]] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    ledger_record_id: str = ""
    ledger_record_hash: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id, "output_state": self.output_state,
            "answer": self.answer, "claims": self.claims, "citations": self.citations,
            "reasons": self.reasons, "ledger_record_id": self.ledger_record_id,
            "ledger_record_hash": self.ledger_record_hash,
        }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _default_provider(settings: Settings) -> LLMProvider:
    if settings.answer.provider == "openai":
        from affidavit.llm.openai import OpenAIProvider

        return OpenAIProvider(settings.provider)
    if settings.answer.provider == "local":
        from affidavit.llm.local import LocalProvider

        return LocalProvider(settings.local, settings.provider)
    from affidavit.llm.providers import ExtractiveProvider

    return ExtractiveProvider(max_sentences=settings.answer.max_answer_sentences)


def config_version(settings: Settings) -> str:
    data = settings.to_dict()
    data.pop("source_file", None)
    # How the service listens and authenticates, and where spans go, change no answer.
    data.pop("service", None)
    data.pop("telemetry", None)
    return stable_hash("config", canonical_json(data))[:16]


class TokenSink(Protocol):
    """Receives the visible answer while it is generated (the service's stream).

    What it receives is a draft: it has not been verified, and the final output state may
    invalidate it. The ledger record is written whether or not anyone still listens.
    """

    def token(self, text: str) -> None: ...

    def generated(self) -> None:
        """Generation ended; verification starts."""
        ...


class Engine:
    """Search and answer for one tenant, as a given principal, from one store."""

    def __init__(self, store: Store, settings: Settings, *, tenant: str | None = None,
                 authorizer: Authorizer | None = None, provider: LLMProvider | None = None,
                 memory_index: bool = False):
        """``memory_index`` keeps postings and vectors in memory (rebuilt when the corpus
        changes): worth it for a long-running process, not for one CLI query."""
        self.store = store
        self.settings = settings
        self.tenant = tenant or settings.tenant
        configure_telemetry(settings.telemetry)
        # Whatever authorizer is given, any failure of it closes the request.
        self.authorizer: Authorizer = FailClosedAuthorizer(
            authorizer or StoreAuthorizer(store, settings))
        if provider is not None:
            self.provider = provider
        elif settings.answer.provider in ("openai", "local"):
            # A model provider is built now, so that a misconfigured one fails at start.
            self.provider = _default_provider(settings)
        self.faq = None
        if settings.answer.faq_file:
            from affidavit.answer.faq import FaqCache

            self.faq = FaqCache.load(settings.answer.faq_file)
        memory = None
        if memory_index and isinstance(store, SQLiteStore):
            from affidavit.index.memory import MemoryIndex
            from affidavit.index.snapshot import SQLiteSnapshotSource

            memory = MemoryIndex(SQLiteSnapshotSource(store), store)
        self.retriever = HybridRetriever.from_settings(store, settings, memory=memory)
        self._boundary_cache: tuple[int, Boundary | None] | None = None
        self._stale_count: tuple[tuple[int, str], int] | None = None
        # The epochs in force for this engine: a chunk derived under another policy,
        # schema, resolver or classifier prompt is not served (index.epochs.serving_epoch),
        # and only declared labels' text is sent to a model.
        self.label_epoch = serving_epoch(settings, self.tenant)

    # What only answering needs is made on first use (see the note on imports above).
    @functools.cached_property
    def provider(self) -> LLMProvider:
        return _default_provider(self.settings)

    @functools.cached_property
    def template(self) -> PromptTemplate:
        from affidavit.llm.compiler import load_template

        return load_template(self.settings.answer.template)

    @functools.cached_property
    def ledger(self) -> LedgerWriter:
        from affidavit.engine.ledger_record import LedgerWriter

        return LedgerWriter(self.store)

    @functools.cached_property
    def sire_states(self) -> ActiveSireStates:
        """Versions with an ACTIVE SIRE, read once per policy generation."""
        from affidavit.identity.active import ActiveSireStates

        return ActiveSireStates(self.store)

    @functools.cached_property
    def egress(self) -> ModelEgress:
        from affidavit.retrieval.egress import ModelEgress

        return ModelEgress.from_settings(self.settings)

    # ------------------------------------------------------------------ search
    @traced("query.authz_context", lambda c: {
        "affidavit.principal_hash": id_hash(c.principal),
        "affidavit.granted_labels": len(c.granted_labels)})
    def authz_context(self, principal: str | None) -> AuthzContext:
        """The caller's context, pinned to this engine's label epoch whatever authorizer
        answered: a chunk labelled under another sensitivity policy is never read."""
        context = self.authorizer.context_for(self.tenant, principal)
        if context.label_epoch == self.label_epoch:  # the store authorizer's, usually
            return context
        return replace(context, label_epoch=self.label_epoch)

    def catch_up(self, *, limit: int | None = None, skip: Collection[str] = (),
                 progress: Progress | None = None) -> CatchUp:
        """After a policy change, serve again the documents it does not affect: each head
        derived under an earlier serving key is derived in memory from its stored blob and
        marked current in place when nothing served changes; the affected stay withheld
        until requalified (:mod:`affidavit.ingest.catch_up`)."""
        from affidavit.ingest.catch_up import catch_up

        return catch_up(self.store, self.settings, tenant=self.tenant, limit=limit, skip=skip,
                        progress=progress)

    @traced("query.search", lambda hits: {"affidavit.hits": len(hits)})
    def search(self, principal: str | None, query: str, *, limit: int | None = None,
               reference_depth: int = 0) -> list[SearchHit]:
        """Chunks the principal may read, best first. Fails closed without a context.

        ``reference_depth`` > 0 also searches documents reached through references
        (:mod:`affidavit.retrieval.reference_expansion`)."""
        authz = self.authz_context(principal)
        limit = limit or self.settings.retrieval.top_k
        hits = self.retriever.search(authz, query, limit=limit)
        via: dict[str, Reference] = {}
        if reference_depth > 0:
            from affidavit.retrieval.reference_expansion import expand_hits

            hits, _, via = expand_hits(self.store, self.retriever, authz, query, hits,
                                       depth=reference_depth, limit=limit)
        active = self.sire_states.active(self.tenant, (h.chunk.version_id for h in hits))
        return [self._hit(h, h.chunk.version_id in active, _via(via.get(h.chunk.chunk_id)))
                for h in hits]

    @staticmethod
    def _hit(scored: HybridHit, sire_active: bool,
             via_reference: dict[str, str] | None = None) -> SearchHit:
        c = scored.chunk
        gates = {"authz": "passed (filter inside retrieval)",
                 "sire": "passed" if sire_active else "no ACTIVE SIRE: excluded from answers"}
        return SearchHit(c.chunk_id, c.node_id, scored.doc_source_id, scored.title, c.text,
                         c.label, scored.score, c.locator, sire_active,
                         {**scored.explain(), "gates": gates}, via_reference)

    # ------------------------------------------------------------------ ask
    @traced("query.ask", lambda r: {"affidavit.output_state": r.output_state,
                                     "affidavit.citations": len(r.citations)})
    def ask(self, principal: str | None, question: str, *, role: str | None = None,
            request_id: str | None = None, stream_to: TokenSink | None = None,
            reference_depth: int = 0, options: AskOptions | None = None) -> AskResult:
        """A governed, verified, ledgered answer. Every failure closes, and is recorded.

        ``request_id`` lets a caller name the request before it ends (the service answers a
        timed-out client with it); ``stream_to`` receives the draft while it is generated.
        ``options`` are the request's model role, response mode, inference profile and
        subject scope (:mod:`affidavit.llm.ask_options`); ``role`` alone is the older
        way to give the model role.
        """
        from affidavit.identity.exclusion_check import exclusion_gate_problem
        from affidavit.index.serving import boundary_entry
        from affidavit.llm.ask_options import AskOptions
        from affidavit.retrieval.scope import check_scope

        options = options or AskOptions(model_role=role)
        trace = _Trace(request_id=request_id or new_request_id(), question=question,
                       principal=principal or "",
                       role=options.role(self.settings.answer.role), stream_to=stream_to,
                       options=options)
        trace.record["config_version"] = config_version(self.settings)
        trace.record["egress"] = self.egress.to_dict()
        scope = check_scope(question, self.settings.scope.out_of_scope_entities,
                            lexical=self.settings.lexical)
        if scope.refused:
            return self._refuse(trace, "OUT_OF_SCOPE_ENTITY:" + ",".join(scope.entities))
        try:
            authz = self.authz_context(principal)
        except AuthorizationError as exc:
            return self._refuse(trace, f"AUTHORIZATION_FAILED: {exc}")
        trace.record["authz"] = authz.to_dict()
        # [sire] require_excludes: an exclusion gate that excludes nothing is a governance
        # component that does not work, so the request fails closed (spec 003 §11.3).
        empty_gate = exclusion_gate_problem(self.store, self.settings, self.tenant)
        if empty_gate is not None:
            return self._refuse(trace, "EXCLUSION_GATE_EMPTY: [sire] require_excludes is "
                                       "true and the tenant's SIRE exclusion gate excludes "
                                       "nothing")
        trace.record["corpus_generation"] = self.store.corpus_generation(self.tenant)
        # The run whose boundary this answer is judged against; DEGRADED_BOUNDARY and the
        # documents it left out when it quarantined some (spec 003 §10.2).
        trace.record["boundary"] = boundary_entry(self.store, self.tenant)
        # A vetted FAQ answer is not drawn from scoped evidence: a scoped request skips it.
        faq = None if options.subject_scope else self._faq_match(authz, question)
        if faq is not None:
            from affidavit.engine.faq_answering import faq_answer

            vetted = faq_answer(self, trace, faq, authz)
            if vetted is not None:
                return vetted
        candidates = self.retriever.search(authz, question,
                                           limit=self.settings.retrieval.candidates)
        # Why a document may be missing: derived under other epochs, it is withheld until
        # requalified; only the current embedding model's vectors are searched.
        backend = self.retriever.backend
        trace.record["epochs"] = serving_state(
            self.store, self.tenant, self.label_epoch, backend.model_id if backend else None,
            stale_documents=self._stale_documents(trace.record["corpus_generation"]))
        if reference_depth > 0:
            from affidavit.retrieval.reference_expansion import expand_hits

            candidates, expansion, _ = expand_hits(
                self.store, self.retriever, authz, question, candidates,
                depth=reference_depth, limit=self.settings.retrieval.candidates)
            trace.record["references"] = expansion.to_dict()
        trace.record["retrieved"] = [
            {"chunk_id": c.chunk.chunk_id, "score": c.score, "label": c.chunk.label}
            for c in candidates]
        return self._answer(trace, candidates)

    # ------------------------------------------------------------------ answering
    # The answering half lives in :mod:`affidavit.engine.answering`, imported on the first ask.
    def _answer(self, trace: _Trace, candidates: Sequence[ScoredChunk]) -> AskResult:
        from affidavit.engine.answering import answer

        return answer(self, trace, candidates)

    def _verify_and_emit(self, trace: _Trace, request: ProviderRequest,
                         response: ProviderResponse, guarded: GuardedProvider,
                         shown: Sequence[ScoredChunk]) -> AskResult:
        from affidavit.engine.answering import verify_and_emit

        return verify_and_emit(self, trace, request, response, guarded, shown)

    def _plausibility(self, question: str, evidence: Sequence[ScoredChunk],
                      serving: dict[str, Any] | None = None) -> dict[str, Any]:
        from affidavit.engine.answering import plausibility

        return plausibility(self, question, evidence, serving)

    def _faq_match(self, authz: AuthzContext, question: str) -> FaqMatch | None:
        if self.faq is None:
            return None

        def can_read_source(source_id: str) -> bool:
            # Every head chunk of the source must be readable: the vetted answer may rest on
            # any part of it.
            ids = self.store.source_chunk_ids(self.tenant, source_id)
            return bool(ids) and len(self.store.get_chunks(authz, ids)) == len(ids)

        # A vetted answer does not follow a source id another document took over.
        taken_over: dict[str, str] = {}
        for resolution in self.store.list_identity_resolutions(self.tenant):
            if resolution.decision == TAKE_OVER:
                taken_over[resolution.source_id] = resolution.resolved_at
        def content_of(source_id: str) -> str | None:
            # An entry binds to the bytes it was vetted against: its source's head version's.
            ids = self.store.source_chunk_ids(self.tenant, source_id)
            heads = [self.store.head(self.tenant, node) for node in
                     {c.chunk.node_id for c in self.store.get_chunks(authz, ids)}]
            digests = {head.raw_digest for head in heads if head is not None}
            return digests.pop() if len(digests) == 1 else None

        return self.faq.match(question, can_read_source=can_read_source,
                              granted_labels=authz.granted_labels,
                              out_of_scope_entities=self.settings.scope.out_of_scope_entities,
                              taken_over_at=taken_over.get, content_of=content_of)

    def _stale_documents(self, generation: int) -> int:
        """Head documents derived under another serving epoch: a scan of every chunk row,
        so it is counted once per corpus generation (every head move and restamp advances
        it), not on every answer."""
        key = (generation, self.label_epoch)
        cached = self._stale_count
        if cached is not None and cached[0] == key:
            return cached[1]
        count = len(self.store.label_stale_heads(self.tenant, self.label_epoch))
        self._stale_count = (key, count)
        return count

    def _refuse(self, trace: _Trace, reason: str) -> AskResult:
        from affidavit.answer import GateDecision, governed_refusal

        state = ("REQUIRES_SPEC" if reason.startswith(("NO_EVIDENCE", "AWAITING_SIRE_APPROVAL"))
                 else "BLOCKED")
        decision = GateDecision(output_state=state, reasons=(reason,))
        return self._emit(trace, state, governed_refusal(decision), [], [], [reason])

    def _emit(self, trace: _Trace, state: str, answer: str, claims: list[dict[str, Any]],
              citations: list[dict[str, Any]], reasons: list[str]) -> AskResult:
        from affidavit.answer.verify.proof import unproven
        from affidavit.references.citations import NO_CITATIONS

        # Every record states its proof depth; one refused or answered before verification
        # says that no layer ran.
        trace.record.setdefault("proof", unproven(self.settings.gate.required(),
                                                  "no claim was verified: " + reasons[0]
                                                  if reasons else "no claim was verified"))
        if "faq" in trace.record and "FAQ_SHORT_CIRCUIT" not in reasons:
            reasons = ["FAQ_SHORT_CIRCUIT", *reasons]  # a vetted entry's answer, verified
        trace.record.update({"output_state": state, "answer": answer, "citations": citations,
                             "reasons": reasons})
        entry = self.ledger.append(self.tenant, trace.request_id, trace.record,
                                   citations=NO_CITATIONS if trace.citations is None
                                   else trace.citations)
        count_answer(state)
        return AskResult(trace.request_id, state, answer, claims, citations, reasons,
                         entry.record_id, entry.record_hash)


def _via(reference: Reference | None) -> dict[str, str] | None:
    return None if reference is None else {"ref_id": reference.ref_id, "kind": reference.kind}


def new_request_id() -> str:
    """A fresh request id, the form every ledger record carries."""
    return "req-" + uuid.uuid4().hex[:20]


@dataclass
class _Trace:
    request_id: str
    question: str
    principal: str
    role: str
    stream_to: TokenSink | None = None
    options: AskOptions | None = None
    record: dict[str, Any] = field(default_factory=dict)
    # No citation drafts until the answer has some (the ledger writes what it is given).
    citations: CitationDrafts | None = None

    def __post_init__(self) -> None:
        self.record.update({"request_id": self.request_id, "query": self.question,
                            "principal": self.principal, "role": self.role})
        if self.options is not None:
            self.record["request"] = self.options.to_dict()
