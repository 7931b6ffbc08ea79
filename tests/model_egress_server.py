"""A real OpenAI-compatible server on 127.0.0.1 that logs every request body it receives.

Chat completions answer with a fixed sentence; embeddings with deterministic vectors
derived from each input's bytes. Tests read :attr:`RecordingModelServer.bodies` to show
what left the process toward a model.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMENSIONS = 16


def vector_for(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 + 0.01 for b in digest[:DIMENSIONS]]


class RecordingModelServer:
    """Logs each POST body; answers chat completions and embeddings."""

    def __init__(self, answer: str = "The travel desk books hotel rooms.") -> None:
        self.answer = answer
        self.bodies: list[tuple[str, str]] = []  # (path, raw body)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def logged(self, kind: str = "") -> str:
        """Every logged body whose path ends with ``kind``, decoded, joined."""
        with self._lock:
            raws = [raw for path, raw in self.bodies if path.endswith(kind)]
        return "\n".join(json.dumps(json.loads(raw), ensure_ascii=False) for raw in raws)

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(1 for path, _ in self.bodies if path.endswith(kind))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                with recorder._lock:
                    recorder.bodies.append((self.path, raw))
                body = json.loads(raw)
                if self.path.endswith("/embeddings"):
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    self._reply({"data": [{"index": i, "embedding": vector_for(text)}
                                          for i, text in enumerate(inputs)]})
                else:
                    self._reply({"id": "c1", "model": "m", "choices": [{
                        "index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": recorder.answer}}]})

            def _reply(self, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler

    @contextmanager
    def running(self) -> Iterator[RecordingModelServer]:
        self._thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
