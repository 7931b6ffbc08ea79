"""Ledger replay: re-execute a Claim Ledger record from its logged state and compare.

What is re-executed, each step named in :attr:`ReplayReport.checked` when it ran and in
:attr:`ReplayReport.skipped` (with the reason) when it could not:

* ``config_version``: the settings in force hash to the version the record names;
* ``scope``: the out-of-scope gate refuses the question iff the record was refused for it;
* ``retrieval``: only when the corpus generation and the principal's authorization context
  are what the record logged: the same candidates, scores and gate decisions;
* ``rerank``: when the record was reranked, the rerank re-executed with the judge's logged
  answer (:class:`~affidavit.retrieval.rerank.LoggedJudge`): the same chunks sent and held
  and the same order, which the context gate then starts from;
* ``prompt``: the prompt recompiled from the logged evidence chunk ids, in their logged
  order, with the logged template version, hashes to the logged prompt hash;
* ``verification``: fabricated-citation stripping, claim extraction, verification (fed the
  logged model-layer inputs) and the Boundary Gate, run on the logged raw response, give
  the logged claims, output state, reasons and answer.

The model is never called again: its raw response and the rerank judge's answer are part of
the logged state. Chunks are
read for audit by id regardless of head state (superseded chunks are retained), so a
record stays replayable after its documents change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from affidavit.answer import decide, verify_claims
from affidavit.answer.verify.bearing import claims_beside_the_question
from affidavit.answer.verify.gate import shown_answer
from affidavit.authz import StoreAuthorizer
from affidavit.config.settings import Settings
from affidavit.errors import NotFound
from affidavit.llm.citations import strip_fabricated
from affidavit.llm.claims import extract_claims
from affidavit.llm.compiler import compile_prompt, load_template
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.layers import LayerInput
from affidavit.llm.providers import strip_think_blocks
from affidavit.llm.relevance import evidence_texts, question_coverage
from affidavit.records import AuthzContext, Chunk, ScoredChunk
from affidavit.retrieval import restricted_exit, sire_gate
from affidavit.retrieval.egress import ModelEgress
from affidavit.retrieval.rerank import JUDGE_FAILED, LoggedJudge, rerank
from affidavit.retrieval.scope import check_scope
from affidavit.retrieval.subject_scope import subject_scope_gate
from affidavit.store.protocol import Store

Retrieve = Callable[[AuthzContext, str, int], Sequence[ScoredChunk]]


@dataclass
class ReplayReport:
    """Whether a record reproduces; the first difference found, if any."""

    matches: bool
    first_difference: str | None
    checked: list[str]
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the CLI and the service."""
        return {"matches": self.matches, "first_difference": self.first_difference,
                "checked": list(self.checked), "skipped": list(self.skipped)}


class _Replay:
    def __init__(self) -> None:
        self.checked: list[str] = []
        self.skipped: list[str] = []
        self.differences: list[str] = []

    def compare(self, step: str, logged: Any, now: Any) -> bool:
        self.checked.append(step)
        if logged != now:
            self.differences.append(f"{step}: logged {_short(logged)}, replayed {_short(now)}")
            return False
        return True

    def report(self) -> ReplayReport:
        first = self.differences[0] if self.differences else None
        return ReplayReport(first is None, first, self.checked, self.skipped)


def replay(store: Store, settings: Settings, record_id: str, *, tenant: str,
           retrieve: Retrieve | None = None) -> ReplayReport:
    """Re-execute ledger record ``record_id`` of ``tenant`` and report the first difference.

    ``retrieve(authz, question, limit)`` is the retrieval the engine used (lexical by
    default).
    """
    entry = store.get_ledger(tenant, record_id)
    if entry is None:
        raise NotFound(f"no ledger record {record_id}")
    record: dict[str, Any] = json.loads(entry.payload)
    run = _Replay()
    _check_config(run, record, settings)
    if not run.compare("scope", _refused_for_scope(record),
                       check_scope(str(record.get("query", "")),
                                   settings.scope.out_of_scope_entities,
                                   lexical=settings.lexical).refused):
        return run.report()
    if "prompt" not in record:
        run.skipped.append("prompt: the record was refused before any evidence was assembled")
        return run.report()
    if "faq" in record:  # a vetted entry rests on its sources, not on a search
        run.skipped.append("retrieval: an FAQ answer's evidence is its entry's sources")
    else:
        _check_retrieval(run, store, settings, record, tenant, retrieve)
    evidence = _logged_evidence(store, record, tenant)
    if isinstance(evidence, str):
        run.differences.append(f"prompt: {evidence}")
        return run.report()
    _check_prompt(run, record, evidence)
    _check_verification(run, record, evidence, settings)
    return run.report()


# --------------------------------------------------------------------------- steps


def _check_config(run: _Replay, record: Mapping[str, Any], settings: Settings) -> None:
    # Imported here: the engine imports the ledger package, so a module-level import of
    # the engine from inside the ledger package would be circular.
    from affidavit.engine.query import config_version

    run.compare("config_version", record.get("config_version"), config_version(settings))


def _refused_for_scope(record: Mapping[str, Any]) -> bool:
    return any(str(r).startswith("OUT_OF_SCOPE_ENTITY") for r in record.get("reasons", []))


def _check_retrieval(run: _Replay, store: Store, settings: Settings, record: Mapping[str, Any],
                     tenant: str, retrieve: Retrieve | None) -> None:
    logged_generation = record.get("corpus_generation")
    if logged_generation is None:
        run.skipped.append("retrieval: the record does not log its corpus generation")
        return
    if logged_generation != store.corpus_generation(tenant):
        run.skipped.append("retrieval: the corpus changed since the record was made")
        return
    authz = _logged_authz(record)
    if authz is None:
        run.skipped.append("retrieval: the record does not log its authorization context")
        return
    current = StoreAuthorizer(store, settings).context_for(tenant, authz.principal or None)
    if current.to_dict() != authz.to_dict():
        run.skipped.append("retrieval: the principal's authorization context changed")
        return
    search = retrieve or _lexical(store, settings)
    candidates = list(search(current, str(record["query"]), settings.retrieval.candidates))
    now = [{"chunk_id": c.chunk.chunk_id, "score": c.score, "label": c.chunk.label}
           for c in candidates]
    if not run.compare("retrieval", record.get("retrieved"), now):
        return
    active = store.active_sire(tenant, [c.chunk.version_id for c in candidates])
    # The default exclusions the record ran under (none logged: the gate applied none).
    logged = record.get("sire_excludes") or {}
    defaults = [str(t) for t in logged.get("in_force", [])] if isinstance(logged, dict) else []
    gates = [sire_gate(candidates, active, defaults)]
    scope = (record.get("request") or {}).get("subject_scope")
    if scope:  # the request's subject scope override, as logged
        gates.append(subject_scope_gate(gates[0].kept, active, [str(s) for s in scope]))
    egress = ModelEgress.from_settings(settings).gate(gates[-1].kept)
    ranked = _replay_rerank(run, settings, record, egress.kept)
    context = restricted_exit(ranked, limit=settings.answer.max_evidence)
    run.compare("gates", record.get("gates"),
                [*(gate.to_dict() for gate in gates), context.to_dict()])


def _replay_rerank(run: _Replay, settings: Settings, record: Mapping[str, Any],
                   kept: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """The candidates in the order the context gate saw: reranked as logged, if it was."""
    logged = record.get("rerank")
    if not isinstance(logged, Mapping):
        return list(kept)
    result = rerank(str(record["query"]), kept, LoggedJudge(logged),
                    top_n=settings.retrieval.rerank_top_n)
    run.compare("rerank", _rerank_view(logged, logged), _rerank_view(result.to_dict(), logged))
    return list(result.ordered)


def _rerank_view(result: Mapping[str, Any], logged: Mapping[str, Any]) -> dict[str, Any]:
    """What a replayed rerank must reproduce. A judge failure's message is not: the judge is
    not called again. Records made before the judge's answer was logged are compared
    without it (it was rebuilt from their order)."""
    keys = ["status", "sent", "held", "order"]
    if logged.get("status") != JUDGE_FAILED:
        keys.append("detail")
    if "judge_output" in logged:
        keys.append("judge_output")
    return {key: result.get(key) for key in keys}


def _lexical(store: Store, settings: Settings) -> Retrieve:
    """The engine's own retrieval (hybrid: lexical, vectors when configured, RRF)."""
    from affidavit.retrieval.hybrid import HybridRetriever

    retriever = HybridRetriever.from_settings(store, settings)
    return lambda authz, question, limit: retriever.search(authz, question, limit=limit)


def _logged_authz(record: Mapping[str, Any]) -> AuthzContext | None:
    data = record.get("authz")
    if not isinstance(data, Mapping):
        return None
    return AuthzContext(tenant=str(data["tenant"]), principal=str(data["principal"]),
                        tokens=frozenset(data["tokens"]),
                        granted_labels=frozenset(data["granted_labels"]),
                        policy_version=str(data["policy_version"]),
                        label_epoch=_optional_str(data.get("label_epoch")))


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)


def _logged_evidence(store: Store, record: Mapping[str, Any],
                     tenant: str) -> list[EvidenceItem] | str:
    """The prompt's evidence items, in logged order, or why they cannot be rebuilt."""
    gates = record.get("gates") or []
    if not gates:
        return "the record does not log the evidence chunk ids"
    ids = [str(c) for c in gates[-1].get("kept", [])]
    labels = {str(r["chunk_id"]): str(r["label"]) for r in record.get("retrieved", [])}
    chunks = audit_chunks(store, tenant, ids, labels)
    titles = _logged_titles(store, record, ids)
    missing = [cid for cid in ids if cid not in chunks]
    if missing:
        return f"chunk {missing[0]} is no longer in the store"
    untitled = [cid for cid in ids if cid not in titles]
    if untitled:
        return f"the title of evidence chunk {untitled[0]} is neither logged nor readable"
    # The prompt showed the model's view of each locator and heading path (what a reader
    # without RESTRICTED may see): the logged one, where the record has it.
    shown = {str(e["chunk_id"]): (str(e["locator"]), tuple(e["heading_path"]))
             for e in record.get("evidence", []) if "locator" in e and "heading_path" in e}
    for cid in ids:
        shown.setdefault(cid, (chunks[cid].locator, chunks[cid].heading_path))
    return [EvidenceItem(src=chunks[cid].src, chunk_id=cid, node_id=chunks[cid].node_id,
                         title=titles[cid], locator=shown[cid][0],
                         text=chunks[cid].text, label=chunks[cid].label,
                         heading_path=shown[cid][1]) for cid in ids]


def _logged_titles(store: Store, record: Mapping[str, Any], ids: list[str]) -> dict[str, str]:
    """Document titles of the evidence: logged with the evidence, or else read as the
    logged principal (head chunks only)."""
    titles = {str(e["chunk_id"]): str(e["title"]) for e in record.get("evidence", [])}
    authz = _logged_authz(record)
    unknown = [cid for cid in ids if cid not in titles]
    if unknown and authz is not None:
        titles.update({r.chunk.chunk_id: r.title for r in store.get_chunks(authz, unknown)})
    return titles


def audit_chunks(store: Store, tenant: str, chunk_ids: Sequence[str],
                 labels: Mapping[str, str]) -> dict[str, Chunk]:
    """Chunks by id for audit, head or superseded, without an authorization filter.

    Only for replaying the ledger: the caller has already been allowed to read the record.
    Reads through :meth:`Store.chunks_with_label`, grouped by the labels the record logged.
    """
    found: dict[str, Chunk] = {}
    by_label: dict[str, list[str]] = {}
    for cid in chunk_ids:
        by_label.setdefault(labels.get(cid, ""), []).append(cid)
    for label, ids in sorted(by_label.items()):
        for chunk in store.chunks_with_label(tenant, ids, label):
            found[chunk.chunk_id] = chunk
    return found


def _check_prompt(run: _Replay, record: Mapping[str, Any], evidence: list[EvidenceItem]) -> None:
    logged = record["prompt"]
    prompt = compile_prompt(str(record["query"]), evidence, role=str(record["role"]),
                            template=load_template(str(logged["template_version"])))
    run.compare("prompt_hash", logged.get("prompt_hash"), prompt.prompt_hash)
    run.compare("zones", logged.get("zones"), [list(z) for z in prompt.zones])


def _check_verification(run: _Replay, record: Mapping[str, Any], evidence: list[EvidenceItem],
                        settings: Settings) -> None:
    if "raw_response" not in record:
        run.skipped.append("verification: no model response was logged (refused before it)")
        return
    by_src = {e.src: e for e in evidence}
    answer, stripped = strip_fabricated(strip_think_blocks(str(record["raw_response"])),
                                        by_src.keys())
    claims = extract_claims(answer)
    inputs = [LayerInput.from_dict(d) for d in record.get("layer_inputs", [])]
    verdicts = verify_claims(claims, by_src, threshold=settings.answer.support_threshold,
                             layer_inputs=inputs)
    logged_relevance = record.get("relevance")
    relevance = None
    if isinstance(logged_relevance, Mapping):
        # The compliance score is logged state; the question's coverage is recomputed.
        relevance = question_coverage(
            str(record["query"]), evidence_texts(evidence),
            compliance={"expected_from": "scope", "status": "NON_COMPLIANT", "score": 0.0}
            if logged_relevance.get("compliance") else None)
        run.compare("relevance", dict(logged_relevance), relevance.to_dict())
    beside: tuple[int, ...] = ()
    if isinstance(record.get("bearing"), Mapping):  # answers decided since the rule exists
        beside = claims_beside_the_question(str(record["query"]), claims)
        run.compare("bearing", record["bearing"].get("beside_the_question"), list(beside))
    decision = decide(verdicts, role=str(record["role"]), evidence_count=len(evidence),
                      stripped_citations=stripped, relevance=relevance,
                      required_layers=settings.gate.required(), beside_the_question=beside)
    run.compare("stripped_citations", record.get("stripped_citations"), list(stripped))
    run.compare("claims", [_claim_view(c) for c in record.get("claims", [])],
                [_claim_view(_verdict_dict(v)) for v in verdicts])
    run.compare("output_state", record.get("output_state"), decision.output_state)
    run.compare("gate_reasons", record.get("gate_reasons"), list(decision.reasons))
    # Records decided since the bearing rule also withhold refused drafts.
    shown = shown_answer(decision, answer, len(claims),
                         withhold_refused_drafts=isinstance(record.get("bearing"), Mapping))
    run.compare("answer", record.get("answer"), shown)


def _verdict_dict(verdict: Any) -> dict[str, Any]:
    return {"text": verdict.claim.text, "start": verdict.claim.start, "end": verdict.claim.end,
            "status": verdict.status, "citations": list(verdict.claim.citations),
            "reasons": list(verdict.reasons), "contradicted": verdict.contradicted,
            "layers": {name: {"available": layer.available, "score": layer.score}
                       for name, layer in verdict.layers.items()}}


def _claim_view(claim: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a logged claim that replay must reproduce."""
    layers = claim.get("layers", {})
    return {"text": claim.get("text"), "start": claim.get("start"), "end": claim.get("end"),
            "status": claim.get("status"), "citations": list(claim.get("citations", [])),
            "reasons": list(claim.get("reasons", [])), "contradicted": claim.get("contradicted"),
            "layers": {name: {"available": layer.get("available"), "score": layer.get("score")}
                       for name, layer in sorted(layers.items())}}


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= 160 else text[:157] + "..."
