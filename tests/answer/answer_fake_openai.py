"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, started per test.

Responses are queued per path; every request (path, headers, JSON body) is recorded. A path
with an empty queue answers with its default, if one was set, else 500.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


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


class FakeOpenAI:
    def __init__(self) -> None:
        self.queues: dict[str, list[Scripted]] = {}
        self.defaults: dict[str, Scripted] = {}
        self.requests: list[Seen] = []
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
        return [seen.body for seen in self.requests if path is None or seen.path == path]

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
                with fake.lock:
                    fake.requests.append(Seen(self.path, dict(self.headers), json.loads(raw), raw))
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
