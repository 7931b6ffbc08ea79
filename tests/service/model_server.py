"""A scripted OpenAI-compatible chat server on 127.0.0.1 that can be slow or hang.

``reply`` is the answer of every chat completion: streamed as one event per delta (with
``delay`` seconds before each) when the request asks for a stream, else one JSON body.
``hang`` makes every request wait that many seconds before answering anything. Any other
path answers 404, so optional model-side layers (scoring) are simply unavailable.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ModelScript:
    deltas: list[str] = field(default_factory=lambda: ["Nothing to add."])
    delay: float = 0.0
    hang: float = 0.0
    requests: list[dict[str, object]] = field(default_factory=list)


class ModelServer:
    def __init__(self, script: ModelScript):
        self.script = script
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        script = self.script

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw or b"{}")
                script.requests.append(body)
                if script.hang:
                    time.sleep(script.hang)
                if self.path != "/v1/chat/completions":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                try:
                    if body.get("stream"):
                        self._stream()
                    else:
                        self._json("".join(script.deltas))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the hang cases)

            def _json(self, content: str) -> None:
                payload = json.dumps({"id": "c1", "model": "scripted", "choices": [
                    {"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for delta in script.deltas:
                    time.sleep(script.delay)
                    chunk = {"choices": [{"index": 0, "delta": {"content": delta}}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        return Handler


@contextmanager
def model_server(script: ModelScript) -> Iterator[ModelServer]:
    server = ModelServer(script)
    thread = threading.Thread(target=server.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()
