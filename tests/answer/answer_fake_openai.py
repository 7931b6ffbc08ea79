"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, started per test.

Responses are queued per path; every request (path, headers, JSON body) is recorded. A path
with an empty queue answers with its default, if one was set, else 500.

The openai provider checks a server's echo alignment (fixed probe texts) before it scores
a prompt; :class:`EchoModel` answers those probes as a server whose echo lines up with its
tokens, unless a test sets ``echo_model`` to another behaviour (or to ``None``, leaving the
probes to the queue). With ``scores_all`` it answers every completions request.
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from affidavit.llm.echo_alignment import PROBE_TEXTS


@dataclass
class Scripted:
    """One canned answer: a JSON body, a server-sent event stream, or a bare status."""

    status: int = 200
    body: Any = None
    events: list[str] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any
    raw: str
    probe: bool = False


class FakeOpenAI:
    def __init__(self) -> None:
        self.queues: dict[str, list[Scripted]] = {}
        self.defaults: dict[str, Scripted] = {}
        self.requests: list[Seen] = []
        self.echo_model: EchoModel | None = EchoModel()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def script(self, path: str, *answers: Scripted) -> None:
        self.queues.setdefault(path, []).extend(answers)

    def bodies(self, path: str | None = None) -> list[Any]:
        """Bodies of the requests to ``path`` (every path by default), probes left out."""
        return [seen.body for seen in self.requests
                if (path is None or seen.path == path) and not seen.probe]

    def probes(self) -> list[Any]:
        """Bodies of the echo alignment probes the server was sent."""
        return [seen.body for seen in self.requests if seen.probe]

    def _next(self, path: str) -> Scripted:
        with self.lock:
            queue = self.queues.get(path, [])
            if queue:
                return queue.pop(0)
            return self.defaults.get(path, Scripted(status=500, body={"error": "no script"}))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                body = json.loads(raw)
                model = fake.echo_model
                prompt = body.get("prompt") if isinstance(body, dict) else None
                probe = (self.path == "/v1/completions" and isinstance(prompt, str)
                         and prompt.endswith(PROBE_TEXTS))
                with fake.lock:
                    fake.requests.append(Seen(self.path, dict(self.headers), body, raw, probe))
                if (model is not None and isinstance(prompt, str)
                        and self.path == "/v1/completions" and (probe or model.scores_all)):
                    self._send_json(Scripted(body=model.answer(prompt)))
                    return
                answer = fake._next(self.path)
                if answer.events is not None:
                    self._send_events(answer)
                else:
                    self._send_json(answer)

            def _send_json(self, answer: Scripted) -> None:
                payload = json.dumps(answer.body).encode()
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _send_events(self, answer: Scripted) -> None:
                self.send_response(answer.status)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for event in answer.events or []:
                    self.wfile.write(f"data: {event}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        return Handler


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running scripted server; shut down after the test."""
    fake = FakeOpenAI()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()


def chat(content: str, tokens: list[tuple[str, float]] | None = None,
         model: str = "test-model") -> Scripted:
    """A chat completion answer, with log-probabilities when ``tokens`` are given."""
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": content}}
    if tokens is not None:
        choice["logprobs"] = {"content": [{"token": t, "logprob": lp, "top_logprobs": []}
                                          for t, lp in tokens]}
    return Scripted(body={"id": "c1", "model": model, "choices": [choice]})


def echo(prompt: str, completion_tokens: list[tuple[str, float]]) -> Scripted:
    """A completions answer echoing ``prompt`` (as one unscored-then-scored token run) and
    the completion tokens with their log-probabilities and character offsets."""
    tokens = [prompt]
    logprobs: list[float | None] = [None]
    offsets = [0]
    position = len(prompt)
    for token, logprob in completion_tokens:
        tokens.append(token)
        logprobs.append(logprob)
        offsets.append(position)
        position += len(token)
    return Scripted(body={"id": "e1", "model": "test-model", "choices": [
        {"index": 0, "text": prompt + "".join(t for t, _ in completion_tokens),
         "logprobs": {"tokens": tokens, "token_logprobs": logprobs, "text_offset": offsets,
                      "top_logprobs": None}}]})


def sse(*deltas: str) -> Scripted:
    """A streamed chat completion: one chunk per delta, then ``[DONE]``."""
    events = [json.dumps({"choices": [{"index": 0, "delta": {"content": d}}]}) for d in deltas]
    return Scripted(events=[*events, "[DONE]"])


_TOKEN = re.compile(r" ?[A-Za-z]+| ?[0-9]|\s|[^A-Za-z0-9\s]")


@dataclass
class EchoModel:
    """A tiny deterministic "model" behind ``/completions`` with ``echo`` and ``logprobs``.

    Words (with their leading space), digits and other characters are its tokens; the
    distribution after a context is a function of that context. ``late`` reports each token
    with the distribution of the position after it, as llama-cpp-python's server does when
    the prompt does not start with ``bos`` (which, when it does, is echoed without text and
    not counted in the offsets). ``tops=False`` leaves out the per-token distributions.
    """

    late: bool = False
    bos: str = ""
    tops: bool = True
    scores_all: bool = False

    @staticmethod
    def tokens(text: str) -> list[str]:
        return _TOKEN.findall(text)

    @staticmethod
    def distribution(context: tuple[str, ...]) -> dict[str, float]:
        seed = zlib.crc32("\x1f".join(context).encode())
        return {f" w{(seed + k) % 97}": round(-0.5 * (k + 1) - seed % 7 / 10, 6)
                for k in range(6)}

    @classmethod
    def logprob(cls, context: tuple[str, ...], token: str) -> float:
        """log P(token | context): below every token of the distribution's top."""
        top = cls.distribution(context)
        if token in top:
            return top[token]
        return round(-4.0 - zlib.crc32("\x1f".join((*context, token)).encode()) % 300 / 100, 6)

    def answer(self, prompt: str) -> dict[str, Any]:
        aligned = not self.late or (bool(self.bos) and prompt.startswith(self.bos))
        text = prompt[len(self.bos):] if self.bos and prompt.startswith(self.bos) else prompt
        tokens = self.tokens(text)
        values: list[float | None] = []
        tops: list[dict[str, float] | None] = []
        for i, token in enumerate(tokens):
            context = tuple(tokens[: i if aligned else i + 1])
            top = {**self.distribution(context), token: self.logprob(context, token)}
            values.append(top[token])
            tops.append(top)
        values[0] = tops[0] = None
        offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
        return {"id": "e1", "model": "test-model", "choices": [
            {"index": 0, "text": prompt + ".", "logprobs": {
                "tokens": tokens, "token_logprobs": values, "text_offset": offsets,
                "top_logprobs": tops if self.tops else None}}]}
