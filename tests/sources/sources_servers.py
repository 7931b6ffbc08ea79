"""Real servers on 127.0.0.1 for the network transport tests: HTTPS (trustme CA) and SFTP.

Shared by the fixtures in this folder's conftest and by tests that start their own server.
"""

from __future__ import annotations

import asyncio
import http.server
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import asyncssh
import trustme

SFTP_USER = "reader"
SFTP_PASSWORD = "correct horse battery staple"
PASSWORD_ENV = "AFFIDAVIT_TEST_SFTP_PASSWORD"


# --------------------------------------------------------------------------- HTTPS


@dataclass
class Route:
    """A scripted answer: ``status`` with ``headers`` and ``body``; ``failures`` 503s first."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    failures: int = 0


class HttpsServer:
    """A threaded HTTPS server: files under ``root`` plus scripted routes; counts hits."""

    def __init__(self, root: Path, ca: trustme.CA) -> None:
        self.root = root
        self.routes: dict[str, Route] = {}
        self.hits: dict[str, int] = {}
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
        context.num_tickets = 0  # no session tickets: nothing to wait for after a handshake
        handler = _handler_for(self)
        self._server = _QuietServer(("127.0.0.1", 0), handler)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)

    def url(self, path: str, host: str = "localhost") -> str:
        return f"https://{host}:{self.port}/{path.lstrip('/')}"

    def __enter__(self) -> HttpsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        return  # refused handshakes are what several tests provoke


def _handler_for(server: HttpsServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = -1  # one write per response: no Nagle pause between headers and body

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            server.hits[path] = server.hits.get(path, 0) + 1
            route = server.routes.get(path)
            if route is not None and route.failures > 0:
                route.failures -= 1
                self._answer(503, {}, b"busy")
            elif route is not None:
                self._answer(route.status, route.headers, route.body)
            else:
                self._file(path)

        def _file(self, path: str) -> None:
            target = (server.root / unquote(path).lstrip("/")).resolve()
            if not target.is_relative_to(server.root.resolve()) or not target.is_file():
                self._answer(404, {}, b"not found")
                return
            self._answer(200, {}, target.read_bytes())

        def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if "Content-Length" not in headers and "Transfer-Encoding" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


class ConnectionTrap:
    """A TCP listener on 127.0.0.1 that only counts the connections it receives."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(16)
        self._socket.settimeout(0.05)
        self.port = self._socket.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                peer, _ = self._socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            peer.close()

    def __enter__(self) -> ConnectionTrap:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._socket.close()


# --------------------------------------------------------------------------- SFTP


class _PasswordServer(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        return username == SFTP_USER and password == SFTP_PASSWORD


SftpFactory = Callable[[asyncssh.SSHServerChannel], asyncssh.SFTPServer]


class SftpServer:
    """An asyncssh SFTP server on 127.0.0.1, rooted at ``root``, on its own loop thread."""

    def __init__(self, root: Path, host_key: asyncssh.SSHKey, *,
                 authorized_keys: Path | None = None,
                 sftp_factory: SftpFactory | None = None) -> None:
        self.root = root
        self.host_key = host_key
        self._authorized_keys = authorized_keys
        self._factory = sftp_factory or (
            lambda channel: asyncssh.SFTPServer(channel, chroot=str(root).encode()))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._acceptor: asyncssh.SSHAcceptor | None = None
        self.port = 0

    def __enter__(self) -> SftpServer:
        self._thread.start()
        authorized = str(self._authorized_keys) if self._authorized_keys else None

        async def listen() -> asyncssh.SSHAcceptor:
            return await asyncssh.listen(
                "127.0.0.1", 0, server_host_keys=[self.host_key],
                server_factory=_PasswordServer, sftp_factory=self._factory,
                authorized_client_keys=authorized)

        self._acceptor = asyncio.run_coroutine_threadsafe(listen(), self._loop).result(10)
        self.port = self._acceptor.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop.is_closed():
            return  # already stopped by the test itself
        acceptor = self._acceptor
        if acceptor is not None:
            # Closed on the loop's own thread: asyncio servers are not thread-safe, and a
            # close from here raced the loop's handling of a dropped connection.
            async def closed() -> None:
                acceptor.close()
                await acceptor.wait_closed()

            asyncio.run_coroutine_threadsafe(closed(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def url(self, path: str = "/") -> str:
        return f"sftp://{SFTP_USER}@127.0.0.1:{self.port}{path}"

    def known_hosts_line(self) -> str:
        key = self.host_key.export_public_key().decode().split()[:2]
        return f"[127.0.0.1]:{self.port} {' '.join(key)}\n"
