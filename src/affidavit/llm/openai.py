"""The ``openai`` provider: any OpenAI-compatible HTTP server (OpenAI, vLLM, llama.cpp
server, Ollama), spoken over httpx with no SDK.

* :meth:`OpenAIProvider.generate` — ``POST {base_url}/chat/completions`` with the compiled
  prompt as a system and a user message; token log-probabilities are asked for when
  ``[provider] logprobs`` is on and kept when the server returns them.
* :meth:`OpenAIProvider.stream` — the same request with ``stream: true``; server-sent
  ``data:`` chunks carry ``delta.content`` until ``[DONE]``; think blocks are removed
  across chunk boundaries.
* :meth:`OpenAIProvider.score` — the prompt-scoring trick that vLLM, llama.cpp and other
  completions servers support: ``POST {base_url}/completions`` with the rendered prompt
  followed by the completion, ``echo: true, logprobs: 1, max_tokens: 1``; the echoed
  prompt tokens carry their log-probabilities and character offsets (the one generated
  token lies past the completion and is not counted: ``max_tokens: 0`` would be cleaner,
  but llama-cpp-python's server reads 0 as "no limit" and generates until it times out).
  Before the first scoring, a probe (:mod:`affidavit.llm.echo_alignment`, fixed texts,
  once per provider) checks that the server's echoed log-probabilities line up with the
  prompt's tokens and finds the prefix that makes them (llama-cpp-python's server is one
  position late unless the prompt starts with the model's beginning-of-sequence token);
  a server that cannot be shown aligned gets no prompt scored: its scoring fails with the
  reason, so L1 from scoring and Δ are recorded unavailable rather than wrong.

Connect errors, timeouts, 429 and 5xx answers are retried ``max_retries`` times under the
network retry policy (:mod:`affidavit.util.retry`: exponential backoff with jitter, a numeric
``Retry-After`` honoured up to a bound); 401 and other 4xx answers are not. Every failure is
a :class:`~affidavit.errors.ProviderError` naming the URL, the HTTP status and the server's
own message. The API key is read from the environment
variable named by ``api_key_env``. Call it only through
:class:`~affidavit.llm.guard.GuardedProvider`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx

from affidavit.config.settings import ProviderSettings
from affidavit.errors import ConfigurationError, InputRejected, ProviderError
from affidavit.llm.attribution import TokenScores
from affidavit.llm.compiler import CompiledPrompt
from affidavit.llm.control_tokens import inert_control_tokens
from affidavit.llm.echo_alignment import EchoAlignment, probe_alignment
from affidavit.llm.providers import ProviderRequest, ProviderResponse, ThinkStreamFilter
from affidavit.util.retry import RetryPolicy, TryAgain, retry_after_seconds

SCORING_SEPARATOR = "\n\n"
"""Between the rendered prompt and the completion when a completion is scored."""
MAX_SERVER_MESSAGE = 200
"""Characters of a server's error message kept in a ProviderError."""
_RETRY_STATUSES = frozenset((429, 500, 502, 503, 504))
# A refused or dropped connection and every timeout (a read timeout included: the server
# may only be overloaded) are worth another attempt; a malformed request is not.
_RETRY_ERRORS = (httpx.ConnectError, httpx.TimeoutException, httpx.RemoteProtocolError)


def render_for_scoring(prompt: CompiledPrompt) -> str:
    """The text a completion is scored after: the whole prompt, then a blank line.

    Chat servers wrap messages in a model-specific template that the completions endpoint
    does not apply, so scores are an approximation of the chat generation's; both terms of
    Δ use the same rendering, so the approximation cancels in the difference. Control-token
    spellings in it are made inert (:mod:`affidavit.llm.control_tokens`).
    """
    return inert_control_tokens(prompt.text) + SCORING_SEPARATOR


def chat_messages(prompt: CompiledPrompt) -> list[dict[str, str]]:
    """The chat messages of a compiled prompt: its system part and its user part, with
    control-token spellings made inert, since a server renders its chat template into one
    string and would read ``<|im_end|>`` in evidence as the end of the turn."""
    return [{"role": "system", "content": inert_control_tokens(prompt.system)},
            {"role": "user", "content": inert_control_tokens(prompt.user)}]


class OpenAIProvider:
    """An :class:`~affidavit.llm.providers.LLMProvider` over an OpenAI-compatible API."""

    name = "openai"

    def __init__(self, settings: ProviderSettings, *, api_key: str | None = None,
                 client: httpx.Client | None = None, backoff_seconds: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not settings.base_url.strip():
            raise ConfigurationError("must name the server's base URL", key="provider.base_url")
        if not settings.model.strip():
            raise ConfigurationError("must name the model", key="provider.model")
        if settings.max_retries < 0 or settings.timeout_seconds <= 0:
            raise ConfigurationError("need max_retries >= 0 and timeout_seconds > 0",
                                     key="provider")
        if settings.max_tokens < 1 or settings.context_window < 0 or (
                settings.context_window and settings.context_window <= settings.max_tokens):
            raise ConfigurationError("need max_tokens >= 1 and a context_window of 0 "
                                     "(unknown) or above max_tokens", key="provider")
        self.settings = settings
        self.model_id = settings.model
        self._base = settings.base_url.rstrip("/")
        key = api_key if api_key is not None else os.environ.get(settings.api_key_env, "")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._owns_client = client is None
        self._client = client or httpx.Client(timeout=settings.timeout_seconds)
        self._retry = RetryPolicy(settings.max_retries + 1, backoff_seconds, sleep)
        # The server's echo alignment, probed before the first scoring; a failure to reach
        # the server is not a conclusion about it, so only a probe's answer is kept.
        self._alignment: EchoAlignment | None = None
        self._alignment_lock = threading.Lock()

    def close(self) -> None:
        """Close the HTTP client if this provider made it."""
        if self._owns_client:
            self._client.close()

    # ------------------------------------------------------------------ generation
    def generate(self, request: ProviderRequest) -> ProviderResponse:
        """One chat completion, with token log-probabilities when configured and offered."""
        data = self._post_json("/chat/completions", self._chat_body(request, stream=False))
        choice = _first_choice(data)
        message = choice.get("message")
        if not isinstance(message, Mapping) or not isinstance(message.get("content"), str):
            raise ProviderError("the server's answer has no message content")
        tokens, logprobs = _chat_logprobs(choice.get("logprobs"))
        return ProviderResponse(
            text=message["content"], model_id=str(data.get("model") or self.model_id),
            token_logprobs=logprobs, finish_reason=str(choice.get("finish_reason") or "stop"),
            tokens=tokens)

    def stream(self, request: ProviderRequest) -> Iterator[str]:
        """Visible text deltas of a streamed chat completion, think blocks removed."""
        body = self._chat_body(request, stream=True)
        return self._stream_deltas(body)

    def _stream_deltas(self, body: dict[str, Any]) -> Iterator[str]:
        response = self._send("/chat/completions", body, stream=True)
        visible = ThinkStreamFilter()
        try:
            for line in response.iter_lines():
                delta = _sse_delta(line)
                if delta is None:
                    break
                text = visible.feed(delta)
                if text:
                    yield text
            tail = visible.close()
            if tail:
                yield tail
        except httpx.HTTPError as exc:
            raise ProviderError(f"the stream broke off: {type(exc).__name__}") from exc
        finally:
            response.close()

    def _chat_body(self, request: ProviderRequest, *, stream: bool) -> dict[str, Any]:
        temperature = (self.settings.temperature if request.temperature is None
                       else request.temperature)
        body: dict[str, Any] = {"model": self.model_id, "messages": chat_messages(request.prompt),
                                "temperature": temperature, "stream": stream,
                                "max_tokens": self.settings.max_tokens}
        if self.settings.logprobs and not stream:
            body.update({"logprobs": True, "top_logprobs": 0})
        return body

    # ------------------------------------------------------------------ scoring
    def score(self, request: ProviderRequest, completion: str) -> TokenScores:
        """Log-probabilities of ``completion`` after ``request.prompt`` (echo trick), with
        the scoring prefix the alignment probe found; :class:`ProviderError` when the
        server's echo cannot be shown to line up with the prompt's tokens."""
        alignment = self.alignment()
        if alignment.unavailable:
            raise ProviderError(f"prompts cannot be scored at {self._base}/completions: "
                                f"{alignment.unavailable}")
        prefix = alignment.prefix + render_for_scoring(request.prompt)
        body = {"model": self.model_id, "prompt": prefix + completion, "echo": True,
                "logprobs": 1, "max_tokens": 1, "temperature": 0.0}
        data = self._post_json("/completions", body)
        logprobs = _first_choice(data).get("logprobs")
        if not isinstance(logprobs, Mapping):
            raise ProviderError("the server returned no log-probabilities for the prompt")
        # The server counts offsets from where the probe showed it does.
        start = len(prefix) - alignment.offset_shift
        return _completion_scores(logprobs, start, start + len(completion))

    def alignment(self) -> EchoAlignment:
        """How this server's prompts are scored: probed on first use, then kept. A probe
        that cannot reach the server raises :class:`ProviderError` and is tried again on
        the next call."""
        with self._alignment_lock:
            if self._alignment is None:
                self._alignment = probe_alignment(
                    lambda body: self._post_json("/completions", body), self.model_id)
            return self._alignment

    # ------------------------------------------------------------------ transport
    def _post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self._send(path, body, stream=False)
        try:
            data = response.json()
        except ValueError as exc:
            raise ProviderError("the server's answer is not JSON") from exc
        if not isinstance(data, dict):
            raise ProviderError("the server's answer is not a JSON object")
        return data

    def _send(self, path: str, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        """Send under the network retry policy (connect errors, timeouts, 429 and 5xx are
        tried again; 401 and other 4xx are not); a failure names the URL, the HTTP status
        and the server's own message."""
        url = self._base + path
        request = self._client.build_request("POST", url, json=body, headers=self._headers)

        def once() -> httpx.Response:
            try:
                response = self._client.send(request, stream=stream)
            except _RETRY_ERRORS as exc:
                raise TryAgain(f"cannot reach the provider at {url}: {_describe(exc)}") from exc
            except httpx.HTTPError as exc:
                raise ProviderError(f"provider request to {url} failed: "
                                    f"{_describe(exc)}") from exc
            if response.status_code < 400:
                return response
            failure = (f"provider at {url} answered HTTP {response.status_code}: "
                       f"{_server_message(response)}")
            if response.status_code in _RETRY_STATUSES:
                raise TryAgain(failure, retry_after=retry_after_seconds(
                    response.headers.get("retry-after")))
            raise ProviderError(failure)

        try:
            return self._retry.call(once)
        except TryAgain as exc:
            raise ProviderError(f"{exc} (after {self._retry.attempts} attempts)") from exc


def _describe(exc: httpx.HTTPError) -> str:
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _server_message(response: httpx.Response) -> str:
    """What the server said about its refusal: the OpenAI-style ``error.message`` when it
    sent one, else the start of its body; bounded, since it ends up in messages and logs."""
    try:
        raw = response.read()
    except httpx.HTTPError:
        return "(no readable body)"
    finally:
        response.close()
    text = raw[:4096].decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, Mapping):
        error = data.get("error")
        message = error.get("message") if isinstance(error, Mapping) else error
        if isinstance(message, str) and message.strip():
            text = message
    text = " ".join(text.split())
    return (text[:MAX_SERVER_MESSAGE] + "...") if len(text) > MAX_SERVER_MESSAGE else (
        text or "(empty body)")


def _first_choice(data: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ProviderError("the server's answer has no choices")
    return choices[0]


def _chat_logprobs(block: Any) -> tuple[tuple[str, ...] | None, tuple[float, ...] | None]:
    """Tokens and log-probabilities of a chat choice, or ``(None, None)`` when absent."""
    if not isinstance(block, Mapping) or not isinstance(block.get("content"), list):
        return None, None
    tokens: list[str] = []
    values: list[float] = []
    for entry in block["content"]:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("token"), str):
            raise ProviderError("malformed log-probabilities in the server's answer")
        logprob = entry.get("logprob")
        if isinstance(logprob, bool) or not isinstance(logprob, int | float):
            raise ProviderError("malformed log-probabilities in the server's answer")
        tokens.append(entry["token"])
        values.append(float(logprob))
    return tuple(tokens), tuple(values)


def _sse_delta(line: str) -> str | None:
    """The content of one server-sent line: ``""`` for lines without content, ``None``
    at ``[DONE]``."""
    if not line.startswith("data:"):
        return ""
    payload = line[len("data:") :].strip()
    if payload == "[DONE]":
        return None
    try:
        chunk = json.loads(payload)
    except ValueError as exc:
        raise ProviderError("malformed stream chunk from the server") from exc
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    if not choices or not isinstance(choices[0], Mapping):
        return ""
    delta = choices[0].get("delta")
    content = delta.get("content") if isinstance(delta, Mapping) else None
    return content if isinstance(content, str) else ""


def _completion_scores(logprobs: Mapping[str, Any], start: int, end: int) -> TokenScores:
    """The echoed tokens that overlap ``[start, end)``, offsets made relative to ``start``."""
    tokens = logprobs.get("tokens")
    values = logprobs.get("token_logprobs")
    if not isinstance(tokens, list) or not isinstance(values, list) or len(tokens) != len(values):
        raise ProviderError("malformed log-probabilities in the server's answer")
    offsets = logprobs.get("text_offset")
    if not isinstance(offsets, list) or len(offsets) != len(tokens):
        offsets = list(TokenScores.from_tokens([str(t) for t in tokens],
                                               [None] * len(tokens)).offsets)
    kept = [(str(tok), _logprob(val), int(off) - start)
            for tok, val, off in zip(tokens, values, offsets, strict=True)
            if int(off) < end and int(off) + max(len(str(tok)), 1) > start]
    try:
        return TokenScores(tuple(k[0] for k in kept), tuple(k[1] for k in kept),
                           tuple(k[2] for k in kept))
    except InputRejected as exc:
        raise ProviderError(f"malformed log-probabilities in the server's answer: {exc}") from exc


def _logprob(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProviderError("malformed log-probabilities in the server's answer")
    return float(value)
