"""The query path: authz context → retrieve → gates → compile → generate → verify → gate →
ledger → response.

:class:`Engine` is the library's front door; the CLI and the HTTP service are thin shells
around it. No answer leaves :meth:`Engine.ask` unless its ledger record was persisted first.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from affidavit.answer import (
    ExtractiveProvider,
    GateDecision,
    GuardedProvider,
    LLMProvider,
    ProviderRequest,
    ProviderResponse,
    compile_prompt,
    decide,
    evaluate_layers,
    evidence_from_chunk,
    extract_claims,
    governed_refusal,
    load_template,
    strip_fabricated,
    strip_think_blocks,
    verify_claims,
)
from affidavit.answer.gate import shown_answer
from affidavit.answer.layers import provider_tier
from affidavit.answer.relevance import evidence_texts, question_coverage
from affidavit.authz import Authorizer, FailClosedAuthorizer, StoreAuthorizer
from affidavit.classify.derived import model_labels, restricted_derived
from affidavit.config import RESTRICTED, Settings
from affidavit.errors import AuthorizationError, ProviderError, RestrictedContentError
from affidavit.identity import sire_shown_to
from affidavit.identity.sire_labels import withhold_subjects
from affidavit.index.epochs import serving_epoch, serving_state
from affidavit.index.serving import DEGRADED_BOUNDARY, boundary_entry
from affidavit.ledger.record import LedgerWriter
from affidavit.records import AuthzContext, ScoredChunk, canonical_json, stable_hash
from affidavit.references.citations import NO_CITATIONS, CitationDrafts, citation_drafts
from affidavit.references.model import Reference
from affidavit.retrieval import (
    HybridHit,
    HybridRetriever,
    ProviderListwiseJudge,
    rerank,
    restricted_exit,
    sire_gate,
)
from affidavit.retrieval.compliance import EvidenceSubject, score_query
from affidavit.retrieval.egress import ModelEgress
from affidavit.retrieval.reference_expansion import expand_hits
from affidavit.retrieval.scope import check_scope
from affidavit.store import SQLiteStore
from affidavit.store.base import TAKE_OVER, Store
from affidavit.telemetry import (
    AttributeValue,
    add_evaluation,
    count_answer,
    id_hash,
    stage,
    traced,
)
from affidavit.telemetry import configure as configure_telemetry

if TYPE_CHECKING:
    import numpy.typing as npt

    from affidavit.answer import FaqMatch
    from affidavit.index.boundary import Boundary

# What only an answer, a model provider or the vector channel needs (numpy, the HTTP
# client, YAML, the entailment layer) is imported where it is used, so that a search on
# the default lexical index does not load it (tests/project/test_startup_search_imports.py).


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
        from affidavit.answer.openai import OpenAIProvider

        return OpenAIProvider(settings.provider)
    if settings.answer.provider == "local":
        from affidavit.answer.local import LocalProvider

        return LocalProvider(settings.local, settings.provider)
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
        self.provider: LLMProvider = provider or _default_provider(settings)
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
        self.template = load_template(settings.answer.template)
        self.ledger = LedgerWriter(store)
        # The epochs in force for this engine: a chunk derived under another policy,
        # schema, resolver or classifier prompt is not served (index.epochs.serving_epoch),
        # and only declared labels' text is sent to a model.
        self.label_epoch = serving_epoch(settings, self.tenant)
        self.egress = ModelEgress.from_settings(settings)

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
            hits, _, via = expand_hits(self.store, self.retriever, authz, query, hits,
                                       depth=reference_depth, limit=limit)
        active = self.store.active_sire_versions(self.tenant,
                                                 [h.chunk.version_id for h in hits])
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
            reference_depth: int = 0) -> AskResult:
        """A governed, verified, ledgered answer. Every failure closes, and is recorded.

        ``request_id`` lets a caller name the request before it ends (the service answers a
        timed-out client with it); ``stream_to`` receives the draft while it is generated.
        """
        trace = _Trace(request_id=request_id or new_request_id(), question=question,
                       principal=principal or "", role=role or self.settings.answer.role,
                       stream_to=stream_to)
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
        trace.record["corpus_generation"] = self.store.corpus_generation(self.tenant)
        # The run whose boundary this answer is judged against; DEGRADED_BOUNDARY and the
        # documents it left out when it quarantined some (spec 003 §10.2).
        trace.record["boundary"] = boundary_entry(self.store, self.tenant)
        faq = self._faq_match(authz, question)
        if faq is not None:
            return self._faq_answer(trace, faq)
        candidates = self.retriever.search(authz, question,
                                           limit=self.settings.retrieval.candidates)
        # Why a document may be missing: derived under other epochs, it is withheld until
        # requalified; only the current embedding model's vectors are searched.
        backend = self.retriever.backend
        trace.record["epochs"] = serving_state(self.store, self.tenant, self.label_epoch,
                                               backend.model_id if backend else None)
        if reference_depth > 0:
            candidates, expansion, _ = expand_hits(
                self.store, self.retriever, authz, question, candidates,
                depth=reference_depth, limit=self.settings.retrieval.candidates)
            trace.record["references"] = expansion.to_dict()
        trace.record["retrieved"] = [
            {"chunk_id": c.chunk.chunk_id, "score": c.score, "label": c.chunk.label}
            for c in candidates]
        return self._answer(trace, candidates)

    def _answer(self, trace: _Trace, candidates: Sequence[ScoredChunk]) -> AskResult:
        active = self.store.active_sire(self.tenant, [c.chunk.version_id for c in candidates])
        sire = sire_gate(candidates, active)
        # Undeclared labels never go on toward a model; RESTRICTED keeps its two exits.
        egress = self.egress.gate(sire.kept)
        trace.record["egress"] = {**self.egress.to_dict(), "gate": egress.to_dict()}
        ranked = list(egress.kept)
        if self.settings.retrieval.rerank:
            # Rerank exit: RESTRICTED candidates hold their fused place and are never sent.
            judge = ProviderListwiseJudge(GuardedProvider(self.provider,
                                                          self.egress.guard(candidates)))
            result = rerank(trace.question, ranked, judge,
                            top_n=self.settings.retrieval.rerank_top_n)
            trace.record["rerank"] = result.to_dict()
            ranked = list(result.ordered)
        context = restricted_exit(ranked, limit=self.settings.answer.max_evidence)
        trace.record["plausibility"] = self._plausibility(trace.question, context.kept,
                                                          trace.record.get("boundary"))
        trace.record["gates"] = [sire.to_dict(), context.to_dict()]
        # SIRE terms are derived text: the record keeps only those the asker may see.
        granted = frozenset(trace.record["authz"]["granted_labels"])
        trace.record["sire"] = {
            r.version_id: {"sire_id": r.sire_id, **sire_shown_to(r.sire, granted).to_dict()}
            for r in sorted(active.values(), key=lambda r: r.version_id)}
        sire_of = {r.version_id: r.sire for r in active.values()}
        kept = [EvidenceSubject(c.chunk.chunk_id, sire_of[c.chunk.version_id].subject,
                                sire_of[c.chunk.version_id].relevant, c.score)
                for c in context.kept]
        # Subjects are derived text: the record names only those the asker may see.
        trace.record["compliance"] = withhold_subjects(
            score_query(trace.question, kept, sire_of.values()).to_dict(),
            sire_of.values(), granted)
        # The model reads titles, locators and headings as a reader without RESTRICTED.
        for_model = model_labels(frozenset(trace.record["authz"]["granted_labels"]),
                                 self.egress.answer_labels)
        evidence = [evidence_from_chunk(c, for_model) for c in context.kept]
        prompt = compile_prompt(trace.question, evidence, role=trace.role,
                                template=self.template)
        trace.record["prompt"] = {"template_version": prompt.template_version,
                                  "prompt_hash": prompt.prompt_hash, "text": prompt.text,
                                  "zones": [list(z) for z in prompt.zones]}
        restricted = [c.chunk.text for c in candidates if c.chunk.label.upper() == RESTRICTED]
        restricted += [text for c in candidates for text in restricted_derived(c.chunk)]
        guarded = GuardedProvider(self.provider, self.egress.guard(candidates, also=restricted))
        trace.record["provider"] = {"name": self.provider.name, "model_id": self.provider.model_id,
                                    **_model_facts(self.provider)}
        # Spec 003 tiers: how deep the model-side proof can go (L4 only in process).
        trace.record["tier"] = provider_tier(self.provider)
        if not evidence:
            return self._refuse(trace, "NO_EVIDENCE")
        trace.record["evidence"] = [item.to_dict() for item in prompt.evidence]
        request = ProviderRequest(prompt=prompt,
                                  max_sentences=self.settings.answer.max_answer_sentences)
        try:
            response = _generate(guarded, request, trace.stream_to)
            return self._verify_and_emit(trace, request, response, guarded, context.kept)
        except RestrictedContentError as exc:
            return self._refuse(trace, f"RESTRICTED_GUARD: {exc}")
        except ProviderError as exc:
            return self._refuse(trace, f"PROVIDER_FAILED: {exc}")

    @traced("query.verify", lambda r: {"affidavit.output_state": r.output_state,
                                        "affidavit.claims": len(r.claims)})
    def _verify_and_emit(self, trace: _Trace, request: ProviderRequest,
                         response: ProviderResponse, guarded: GuardedProvider,
                         shown: Sequence[ScoredChunk]) -> AskResult:
        evidence = request.prompt.evidence
        trace.record["raw_response"] = response.text
        by_src = {e.src: e for e in evidence}
        answer, stripped = strip_fabricated(strip_think_blocks(response.text), by_src.keys())
        claims = extract_claims(answer)
        # Model-side layers (L1, contrastive, L3) where the provider offers them; each is
        # recorded as evaluated or unavailable, and the ledger keeps what the tier allowed.
        inputs = evaluate_layers(guarded, request, response, answer, claims,
                                 self.settings.provider, role=trace.role)
        # The trained entailment layer runs in process on the evidence already shown to the
        # model (no call leaves the process); unavailable without the minilm extra.
        from affidavit.answer.nli import nli_input

        inputs = (*inputs, nli_input(claims, by_src))
        trace.record["layer_inputs"] = [layer.to_dict() for layer in inputs]
        trace.record["layers_available"] = {layer.name: not layer.unavailable for layer in inputs}
        verdicts = verify_claims(claims, by_src, threshold=self.settings.answer.support_threshold,
                                 layer_inputs=inputs)
        for verdict in verdicts:
            add_evaluation("claim_support", verdict.status, verdict.support)
        relevance = question_coverage(request.prompt.question, evidence_texts(evidence),
                                      compliance=trace.record.get("compliance"))
        trace.record["relevance"] = relevance.to_dict()
        decision = decide(verdicts, role=trace.role, evidence_count=len(evidence),
                          stripped_citations=stripped, relevance=relevance)
        claim_dicts = [{
            "index": v.claim.index, "text": v.claim.text, "start": v.claim.start,
            "end": v.claim.end, "status": v.status, "support": v.support,
            "contradicted": v.contradicted, "citations": list(v.claim.citations),
            "atoms": [{"kind": a.kind, "text": a.text, "value": a.value} for a in v.claim.atoms],
            "reasons": list(v.reasons),
            "layers": {name: {"available": layer.available, "score": layer.score,
                              "detail": layer.detail} for name, layer in sorted(v.layers.items())},
            **_claim_annotations(trace.record),
        } for v in verdicts]
        cited = sorted({src for v in verdicts for src in v.claim.citations if src in by_src})
        # Citations go to the caller: its own view of each title and locator.
        caller_view = {c.chunk.chunk_id: c for c in shown}
        citations = [{"src": src, "doc_id": by_src[src].node_id,
                      "chunk_id": by_src[src].chunk_id,
                      "title": caller_view[by_src[src].chunk_id].title,
                      "locator": caller_view[by_src[src].chunk_id].chunk.locator}
                     for src in cited]
        blocked = decision.output_state == "BLOCKED"
        if not blocked:
            trace.citations = citation_drafts(
                [(v.claim.index, v.claim.text, v.claim.citations) for v in verdicts],
                {src: e.chunk_id for src, e in by_src.items()}, shown, trace.principal)
        final = shown_answer(decision, answer, len(claims))
        trace.record.update({"stripped_citations": list(stripped), "claims": claim_dicts,
                             "gate_reasons": list(decision.reasons)})
        return self._emit(trace, decision.output_state, final,
                          [] if blocked else claim_dicts, [] if blocked else citations,
                          list(decision.reasons))

    def _plausibility(self, question: str, evidence: Sequence[ScoredChunk],
                      serving: dict[str, Any] | None = None) -> dict[str, Any]:
        """Mahalanobis distance of the query and evidence to the corpus boundary (a
        plausibility signal for reviewers, never a gate); unavailable without vectors."""
        backend = self.retriever.backend
        if backend is None:
            return {"available": False, "reason": "no vector backend configured"}
        import numpy as np

        from affidavit.index.boundary import BOUNDARY_VERSION, corpus_boundary, plausibility
        from affidavit.index.embed import embed_query

        generation = self.store.corpus_generation(self.tenant)
        cached = self._boundary_cache
        if cached is None or cached[0] != generation:
            cached = (generation, corpus_boundary(self.store, self.tenant, backend.model_id))
            self._boundary_cache = cached
        boundary = cached[1]
        if boundary is None:
            return {"available": False, "reason": "fewer than two chunk vectors"}
        ids, blobs = self.store.head_vectors(self.tenant, backend.model_id)
        wanted = {c.chunk.chunk_id for c in evidence}
        vectors: dict[str, npt.NDArray[np.float32] | None] = dict.fromkeys(wanted)
        vectors.update({cid: np.frombuffer(blob, dtype=np.float32)
                        for cid, blob in zip(ids, blobs, strict=True) if cid in wanted})
        query = embed_query(backend, question)
        digest = boundary.digest()
        return {"available": True, "model_id": backend.model_id, "digest": digest,
                "version": BOUNDARY_VERSION,
                # The served vectors are the ones the serving run locked unless a change
                # since (a requalification, say) moved them: then the digests differ.
                "matches_serving_run": digest == (serving or {}).get("digest"),
                **plausibility(boundary, query, vectors,
                               confidence=self.settings.vectors.boundary_confidence)}

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
        return self.faq.match(question, can_read_source=can_read_source,
                              granted_labels=authz.granted_labels,
                              out_of_scope_entities=self.settings.scope.out_of_scope_entities,
                              taken_over_at=taken_over.get)

    def _faq_answer(self, trace: _Trace, match: FaqMatch) -> AskResult:
        trace.record["faq"] = {"entry": match.entry.to_dict(), "kind": match.kind,
                               "similarity": match.similarity}
        state = "NARRATIVE_ONLY" if trace.role == "advisory" else "AUTHORIZED"
        return self._emit(trace, state, match.entry.answer, [], [], ["FAQ_SHORT_CIRCUIT"])

    def _refuse(self, trace: _Trace, reason: str) -> AskResult:
        state = "REQUIRES_SPEC" if reason == "NO_EVIDENCE" else "BLOCKED"
        decision = GateDecision(output_state=state, reasons=(reason,))
        return self._emit(trace, state, governed_refusal(decision), [], [], [reason])

    def _emit(self, trace: _Trace, state: str, answer: str, claims: list[dict[str, Any]],
              citations: list[dict[str, Any]], reasons: list[str]) -> AskResult:
        trace.record.update({"output_state": state, "answer": answer, "citations": citations,
                             "reasons": reasons})
        entry = self.ledger.append(self.tenant, trace.request_id, trace.record,
                                   citations=trace.citations)
        count_answer(state)
        return AskResult(trace.request_id, state, answer, claims, citations, reasons,
                         entry.record_id, entry.record_hash)


def _model_facts(provider: LLMProvider) -> dict[str, Any]:
    """What a provider that runs its model in process says about it (file, size, seed,
    threads), for the ledger; nothing when it says nothing or its model cannot be found
    (the generation that follows fails and says why)."""
    from affidavit.answer.local import LocalProvider

    if not isinstance(provider, LocalProvider):
        return {}
    try:
        return provider.describe()
    except ProviderError:
        return {}


def _claim_annotations(record: dict[str, Any]) -> dict[str, list[str]]:
    """``DEGRADED_BOUNDARY`` on every claim answered from a degraded run (spec 003 §10.2):
    provenance, not a verdict. The documents it names stay in the ledger record."""
    boundary = record.get("boundary") or {}
    return {"annotations": [DEGRADED_BOUNDARY]} if boundary.get("degraded") else {}


def _via(reference: Reference | None) -> dict[str, str] | None:
    return None if reference is None else {"ref_id": reference.ref_id, "kind": reference.kind}


def new_request_id() -> str:
    """A fresh request id, the form every ledger record carries."""
    return "req-" + uuid.uuid4().hex[:20]


def _generate(guarded: GuardedProvider, request: ProviderRequest,
              sink: TokenSink | None) -> ProviderResponse:
    """The provider's response; streamed through ``sink`` when one listens."""
    # The GenAI semantic conventions' "chat {model}" span, inside the stage's own.
    chat: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": guarded.name,
        "gen_ai.request.model": guarded.model_id,
        "affidavit.evidence": len(request.prompt.evidence)}
    with stage("query.synthesize"), stage(f"chat {guarded.model_id}", chat) as span:
        if sink is None:
            response = guarded.generate(request)
        else:
            deltas: list[str] = []
            for delta in guarded.stream(request):
                deltas.append(delta)
                sink.token(delta)
            sink.generated()
            # Streamed deltas are already think-free; no log-probabilities come with them.
            response = ProviderResponse(text="".join(deltas), model_id=guarded.model_id)
        span.set_attributes({"gen_ai.response.model": response.model_id,
                             "gen_ai.response.finish_reasons": (response.finish_reason,)})
        return response


@dataclass
class _Trace:
    request_id: str
    question: str
    principal: str
    role: str
    stream_to: TokenSink | None = None
    record: dict[str, Any] = field(default_factory=dict)
    citations: CitationDrafts = NO_CITATIONS

    def __post_init__(self) -> None:
        self.record.update({"request_id": self.request_id, "query": self.question,
                            "principal": self.principal, "role": self.role})
