"""A vetted FAQ answer, checked like any other answer before it leaves.

An SME-vetted entry may answer without retrieval or a model, but not without proof: its
answer is verified, claim by claim, against the current text of the sources it was vetted
against, and the gate decides its output state as it decides any answer's. So an entry can
be AUTHORIZED only while its sources still say what it says; it carries those sources as
citations with their locators; and its ledger record names the entry (``faq``), the
evidence and the claims, so that a replay re-executes it.

The entry is not used at all (the question goes to retrieval instead) when any of its
sources has no chunk the asker may read, lost its ACTIVE SIRE, or holds RESTRICTED text
only; :meth:`Engine._faq_match` has already refused entries whose sources changed since
they were vetted, or were taken over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from affidavit.llm.compiler import compile_prompt
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.evidence import evidence_from_chunk as evidence_from
from affidavit.llm.guard import GuardedProvider
from affidavit.llm.layers import NO_MODEL
from affidavit.llm.providers import ExtractiveProvider, ProviderRequest, ProviderResponse
from affidavit.llm.text import _sentence_spans, content_terms, normalize_space
from affidavit.policy.derived import model_labels
from affidavit.records import AuthzContext, ScoredChunk
from affidavit.retrieval import restricted_exit
from affidavit.retrieval.gates import GateResult

if TYPE_CHECKING:
    from affidavit.answer.faq import FaqMatch
    from affidavit.engine.query import AskResult, Engine, _Trace

FAQ_MODEL_ID = "faq-vetted"


def faq_answer(engine: Engine, trace: _Trace, match: FaqMatch,
               authz: AuthzContext) -> AskResult | None:
    """The entry's answer, verified against its sources; ``None`` when they cannot
    ground it for this asker (the question then goes to retrieval)."""
    found = _sources(engine, match, authz)
    if found is None:
        return None
    sources, context = found
    shown = list(context.kept)
    granted = frozenset(authz.granted_labels)
    evidence = [evidence_from(c, model_labels(granted, engine.egress.answer_labels))
                for c in shown]
    prompt = compile_prompt(trace.question, evidence, role=trace.role,
                            template=engine.template)
    trace.record["faq"] = {"entry": match.entry.to_dict(), "kind": match.kind,
                           "similarity": match.similarity}
    # Logged as retrieval and context assembly log theirs, so that a replay rebuilds the
    # evidence: the sources' chunks, and the RESTRICTED exit over them.
    trace.record["retrieved"] = [{"chunk_id": c.chunk.chunk_id, "score": c.score,
                                  "label": c.chunk.label} for c in sources]
    trace.record["gates"] = [context.to_dict()]
    trace.record["prompt"] = {"template_version": prompt.template_version,
                              "prompt_hash": prompt.prompt_hash, "text": prompt.text,
                              "zones": [list(z) for z in prompt.zones]}
    trace.record["provider"] = {"name": "faq", "model_id": FAQ_MODEL_ID}
    trace.record["tier"] = NO_MODEL
    trace.record["evidence"] = [item.to_dict() for item in prompt.evidence]
    response = ProviderResponse(text=cite_sentences(match.entry.answer, prompt.evidence),
                                model_id=FAQ_MODEL_ID)
    request = ProviderRequest(prompt=prompt,
                              max_sentences=engine.settings.answer.max_answer_sentences)
    # No model is asked: the guard and the extractive provider only stand where the
    # verifier expects a provider, and record the model-side layers as unavailable.
    guarded = GuardedProvider(ExtractiveProvider(), engine.egress.guard(shown))
    from affidavit.engine.answering import verify_and_emit

    return verify_and_emit(engine, trace, request, response, guarded, shown)


def _sources(engine: Engine, match: FaqMatch, authz: AuthzContext
             ) -> tuple[list[ScoredChunk], GateResult] | None:
    """The head chunks of the entry's sources the asker may read, and the RESTRICTED exit
    over them; ``None`` when a source is unreadable, lost its ACTIVE SIRE, or nothing is
    left for the verifier."""
    store, tenant = engine.store, engine.tenant
    chunks: list[ScoredChunk] = []
    for source in match.entry.sources:
        ids = store.source_chunk_ids(tenant, source)
        records = store.get_chunks(authz, ids) if ids else []
        if not records or len(records) != len(ids):
            return None
        chunks.extend(ScoredChunk(r.chunk, r.title, r.source_id, 0.0) for r in records)
    active = store.active_sire(tenant, sorted({c.chunk.version_id for c in chunks}))
    if any(c.chunk.version_id not in active for c in chunks):
        return None
    context = restricted_exit(chunks, limit=len(chunks))
    return (chunks, context) if context.kept else None


def cite_sentences(answer: str, evidence: Sequence[EvidenceItem]) -> str:
    """``answer`` with each sentence tagged ``[src:ID]`` of the evidence item sharing the
    most content terms with it (the first on a tie; the first item when none shares any,
    which the verifier then finds unsupported)."""
    bags = [set(content_terms(item.text)) for item in evidence]
    cited = []
    for start, end in _sentence_spans(answer):
        sentence = normalize_space(answer[start:end])
        terms = set(content_terms(sentence))
        best = max(range(len(evidence)), key=lambda i: (len(terms & bags[i]), -i))
        cited.append(f"{sentence} [src:{evidence[best].src}]")
    return " ".join(cited)
