"""The answering half of :class:`affidavit.engine.query.Engine`: from governed candidates to a
verified, ledgered answer.

Split from ``query`` so that a search, which needs none of it, does not import the
answering machinery: the engine imports this module on its first ``ask``. The engine's
``_answer``, ``_verify_and_emit`` and ``_plausibility`` call these functions, so the engine
stays the one front door and a subclass may still wrap them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from affidavit.answer import decide, evaluate_layers, verify_claims
from affidavit.answer.verify.bearing import BEARING_RULE, claims_beside_the_question
from affidavit.answer.verify.gate import shown_answer
from affidavit.answer.verify.proof import proof_depth
from affidavit.config.settings import RESTRICTED, ProviderSettings
from affidavit.errors import ProviderError, RestrictedContentError
from affidavit.identity import sire_shown_to
from affidavit.identity.sire_labels import withhold_subjects
from affidavit.index.serving import DEGRADED_BOUNDARY
from affidavit.llm.ask_options import DEEP_REASONING, RELIABILITY
from affidavit.llm.citations import strip_fabricated
from affidavit.llm.claims import extract_claims
from affidavit.llm.compiler import compile_prompt
from affidavit.llm.context_budget import fit_evidence
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.evidence import evidence_from_chunk as evidence_from
from affidavit.llm.guard import GuardedProvider
from affidavit.llm.layers import NO_MODEL, provider_tier
from affidavit.llm.providers import (
    LLMProvider,
    ProviderRequest,
    ProviderResponse,
    strip_think_blocks,
)
from affidavit.llm.relevance import evidence_texts, question_coverage
from affidavit.observability.traces import AttributeValue, add_evaluation, stage, traced
from affidavit.policy.derived import model_labels, restricted_derived
from affidavit.records import ScoredChunk
from affidavit.references.citations import citation_drafts
from affidavit.retrieval import ProviderListwiseJudge, rerank, restricted_exit, sire_gate
from affidavit.retrieval.compliance import EvidenceSubject, score_query
from affidavit.retrieval.gates import GateResult, default_excludes_record
from affidavit.retrieval.subject_scope import subject_scope_gate

if TYPE_CHECKING:
    import numpy.typing as npt

    from affidavit.engine.query import AskResult, Engine, TokenSink, _Trace


def answer(engine: Engine, trace: _Trace, candidates: Sequence[ScoredChunk]) -> AskResult:
    active = engine.store.active_sire(engine.tenant, [c.chunk.version_id for c in candidates])
    # The default exclusions in force now apply with each source's approved Excluded set.
    defaults = engine.settings.sire.default_excludes
    sire = sire_gate(candidates, active, defaults)
    trace.record["sire_excludes"] = default_excludes_record(active, defaults)
    gates = [sire]
    if trace.options is not None and trace.options.subject_scope:
        gates.append(subject_scope_gate(sire.kept, active, trace.options.subject_scope))
    # Undeclared labels never go on toward a model; RESTRICTED keeps its two exits.
    egress = engine.egress.gate(gates[-1].kept)
    trace.record["egress"] = {**engine.egress.to_dict(), "gate": egress.to_dict()}
    ranked = list(egress.kept)
    if engine.settings.retrieval.rerank:
        # Rerank exit: RESTRICTED candidates hold their fused place and are never sent.
        judge = ProviderListwiseJudge(GuardedProvider(engine.provider,
                                                      engine.egress.guard(candidates)))
        result = rerank(trace.question, ranked, judge,
                        top_n=engine.settings.retrieval.rerank_top_n)
        trace.record["rerank"] = result.to_dict()
        ranked = list(result.ordered)
    context = restricted_exit(ranked, limit=engine.settings.answer.max_evidence)
    trace.record["plausibility"] = engine._plausibility(trace.question, context.kept,
                                                      trace.record.get("boundary"))
    trace.record["gates"] = [*(gate.to_dict() for gate in gates), context.to_dict()]
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
                             engine.egress.answer_labels)
    evidence = [evidence_from(c, for_model) for c in context.kept]
    evidence = _fit_to_context(engine, trace, evidence)
    prompt = compile_prompt(trace.question, evidence, role=trace.role,
                            template=engine.template)
    trace.record["prompt"] = {"template_version": prompt.template_version,
                              "prompt_hash": prompt.prompt_hash, "text": prompt.text,
                              "zones": [list(z) for z in prompt.zones]}
    restricted = [c.chunk.text for c in candidates if c.chunk.label.upper() == RESTRICTED]
    restricted += [text for c in candidates for text in restricted_derived(c.chunk)]
    guarded = GuardedProvider(engine.provider, engine.egress.guard(candidates, also=restricted))
    trace.record["provider"] = {"name": engine.provider.name, "model_id": engine.provider.model_id,
                                **_model_facts(engine.provider)}
    # Spec 003 tiers: how deep the model-side proof can go (L4 only in process).
    trace.record["tier"] = provider_tier(engine.provider)
    if not evidence:
        return engine._refuse(trace, _why_no_evidence(sire, candidates))
    trace.record["evidence"] = [item.to_dict() for item in prompt.evidence]
    request = ProviderRequest(prompt=prompt,
                              max_sentences=engine.settings.answer.max_answer_sentences)
    try:
        response = _generate(guarded, request, trace.stream_to)
        return engine._verify_and_emit(trace, request, response, guarded, context.kept)
    except RestrictedContentError as exc:
        return engine._refuse(trace, f"RESTRICTED_GUARD: {exc}")
    except ProviderError as exc:
        return engine._refuse(trace, f"PROVIDER_FAILED: {exc}")


def _why_no_evidence(sire: GateResult, candidates: Sequence[ScoredChunk]) -> str:
    """``NO_EVIDENCE``, or ``AWAITING_SIRE_APPROVAL:<n>`` when ``n`` documents the asker may
    read matched but have no ACTIVE SIRE yet: retrieval is authz-prefiltered, so the count
    is of readable documents only and says nothing about what the asker may not see."""
    unapproved = {d.chunk_id for d in sire.dropped if d.reason == "NO_ACTIVE_SIRE"}
    versions = {c.chunk.version_id for c in candidates if c.chunk.chunk_id in unapproved}
    return f"AWAITING_SIRE_APPROVAL:{len(versions)}" if versions else "NO_EVIDENCE"


def _fit_to_context(engine: Engine, trace: _Trace,
                    evidence: list[EvidenceItem]) -> list[EvidenceItem]:
    """The evidence whose prompt leaves room for the answer in a server model's context
    window ([provider] context_window), lowest-ranked dropped first; the ledger says how
    many were dropped (answer.context_budget)."""
    if engine.provider.name != "openai":
        return evidence
    settings = engine.settings.provider

    def render(items: Sequence[EvidenceItem]) -> str:
        return compile_prompt(trace.question, list(items), role=trace.role,
                              template=engine.template).text

    kept, fitted = fit_evidence(evidence, render, context_window=settings.context_window,
                                max_tokens=settings.max_tokens)
    trace.record["context_budget"] = {**fitted.to_record(),
                                      "context_window": settings.context_window,
                                      "max_tokens": settings.max_tokens}
    return list(kept)


@traced("query.verify", lambda r: {"affidavit.output_state": r.output_state,
                                    "affidavit.claims": len(r.claims)})
def verify_and_emit(engine: Engine, trace: _Trace, request: ProviderRequest,
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
                             _profile_settings(engine, trace), role=trace.role)
    # The trained entailment layer runs in process on the evidence already shown to the
    # model (no call leaves the process); unavailable without the nli extra.
    from affidavit.answer.verify.nli import nli_input

    inputs = (*inputs, nli_input(claims, by_src))
    trace.record["layer_inputs"] = [layer.to_dict() for layer in inputs]
    trace.record["layers_available"] = {layer.name: not layer.unavailable for layer in inputs}
    verdicts = verify_claims(claims, by_src, threshold=engine.settings.answer.support_threshold,
                             layer_inputs=inputs)
    for verdict in verdicts:
        add_evaluation("claim_support", verdict.status, verdict.support)
    relevance = question_coverage(request.prompt.question, evidence_texts(evidence),
                                  compliance=trace.record.get("compliance"))
    trace.record["relevance"] = relevance.to_dict()
    required = engine.settings.gate.required()
    beside = claims_beside_the_question(request.prompt.question, claims)
    trace.record["bearing"] = {"rule": BEARING_RULE, "beside_the_question": list(beside)}
    decision = decide(verdicts, role=trace.role, evidence_count=len(evidence),
                      stripped_citations=stripped, relevance=relevance,
                      required_layers=required, beside_the_question=beside)
    trace.record["proof"] = {"tier": trace.record.get("tier"),
                             **proof_depth(verdicts, required).to_dict()}
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
    if blocked or decision.output_state == "REQUIRES_SPEC":
        # A refused answer shows its refusal and the evidence that was there, never the
        # draft's claims (the ledger keeps them for operators); evidence that does not
        # address the question is not shown as if it did.
        claim_dicts = []
        citations = [{"src": e.src, "doc_id": e.node_id, "chunk_id": e.chunk_id,
                      "title": caller_view[e.chunk_id].title,
                      "locator": caller_view[e.chunk_id].chunk.locator}
                     for e in evidence if e.chunk_id in caller_view and relevance.addressed]
    return engine._emit(trace, decision.output_state, final, claim_dicts, citations,
                        list(decision.reasons))


def _profile_settings(engine: Engine, trace: _Trace) -> ProviderSettings:
    """The provider settings the request's inference profile evaluates with, recorded:
    deep_reasoning asks for ``[answer] deep_reasoning_draws`` stability draws where a model
    can be sampled; with no model there is nothing to draw and nothing changes."""
    settings = engine.settings.provider
    profile = trace.options.inference_profile if trace.options else RELIABILITY
    draws = settings.stability_draws
    effect = "none: the configured decode and evaluation parameters"
    if profile == DEEP_REASONING:
        if trace.role == "advisory":
            effect = "none: the advisory role is evaluated at L1-L2 only"
        elif trace.record.get("tier") == NO_MODEL:
            effect = "none: the provider has no model to sample stability draws from"
        elif engine.settings.answer.deep_reasoning_draws > draws:
            draws = engine.settings.answer.deep_reasoning_draws
            effect = f"stability draws raised to {draws}"
        else:
            effect = f"none: {draws} stability draws are already configured"
    trace.record["inference_profile"] = {"name": profile, "stability_draws": draws,
                                         "effect": effect}
    return replace(settings, stability_draws=draws)


def plausibility(engine: Engine, question: str, evidence: Sequence[ScoredChunk],
                 serving: dict[str, Any] | None = None) -> dict[str, Any]:
    """Mahalanobis distance of the query and evidence to the corpus boundary (a
    plausibility signal for reviewers, never a gate); unavailable without vectors."""
    backend = engine.retriever.backend
    if backend is None:
        return {"available": False, "reason": "no vector backend configured"}
    import numpy as np

    from affidavit.index.boundary import BOUNDARY_VERSION, corpus_boundary
    from affidavit.index.boundary import plausibility as boundary_plausibility
    from affidavit.index.embed import embed_query

    generation = engine.store.corpus_generation(engine.tenant)
    cached = engine._boundary_cache
    if cached is None or cached[0] != generation:
        cached = (generation, corpus_boundary(engine.store, engine.tenant, backend.model_id))
        engine._boundary_cache = cached
    boundary = cached[1]
    if boundary is None:
        return {"available": False, "reason": "fewer than two chunk vectors"}
    ids, blobs = engine.store.head_vectors(engine.tenant, backend.model_id)
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
            **boundary_plausibility(boundary, query, vectors,
                           confidence=engine.settings.vectors.boundary_confidence)}


def _model_facts(provider: LLMProvider) -> dict[str, Any]:
    """What a provider that runs its model in process says about it (file, size, seed,
    threads), for the ledger; nothing when it says nothing or its model cannot be found
    (the generation that follows fails and says why)."""
    from affidavit.llm.local import LocalProvider

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


