"""Stage A transport over SFTP: ``sftp://user@host:port/path`` (a folder or one file).

The remote tree is listed like a local folder: recursively, hidden names and sidecars
skipped, each document paired with its ``<filename>.meta.yaml`` sidecar, source ids being
paths relative to the root, so the same tree gives the same node ids over any transport.

Untrusted-input rules (the server and everything on it are untrusted):

* the server's host key must be in ``[sftp] known_hosts`` unless ``check_host_keys`` is
  off; a mismatch (``HOST_KEY_MISMATCH``) or refused login (``AUTH_FAILED``) fails the
  listing; the password is read from the environment variable ``password_env`` names, and
  never from the URL;
* symbolic links are never followed: they are yielded refused (``SYMLINK_REFUSED``), and a
  sidecar that is a link refuses its document (``MALFORMED_SIDECAR``);
* a name from the server that is not a plain file name, or a path that normalizes outside
  the root, is refused (``PATH_ESCAPE``); so is a file whose open handle is not the file
  that was checked, as when a link is swapped in around the open (``SOURCE_CHANGED``, see
  :mod:`affidavit.sources.sftp_tree`);
* a file over ``max_document_bytes`` is not read (``TOO_LARGE``);
* dropped connections and timeouts are retried with backoff after reconnecting, then the
  document is quarantined (``FETCH_FAILED``).

asyncssh is asynchronous; the listing drives it on an event loop of its own thread, so it
works the same whether or not the caller runs an event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

from affidavit.config.settings import SftpSettings
from affidavit.errors import ConfigurationError, InputRejected
from affidavit.records import SourceDocument
from affidavit.sources.local import TOO_LARGE
from affidavit.sources.remote import (
    FETCH_FAILED,
    RemoteEntry,
    RetryPolicy,
    TransientFailure,
    in_listing_order,
)
from affidavit.sources.sftp_tree import (
    Vanished,
    connection_errors,
    list_tree,
    load_asyncssh,
    read_file,
)

if TYPE_CHECKING:
    from asyncssh import SFTPClient, SSHClientConnection

HOST_KEY_MISMATCH = "HOST_KEY_MISMATCH"
AUTH_FAILED = "AUTH_FAILED"
SFTP_UNAVAILABLE = "SFTP_UNAVAILABLE"
MALFORMED_URL = "MALFORMED_URL"

# Refusals that concern the whole server, not one document: they end the listing.
_LISTING_FAILURES = frozenset({HOST_KEY_MISMATCH, AUTH_FAILED})
T = TypeVar("T")


@dataclass(frozen=True)
class SftpLocation:
    """Where an ``sftp://`` URL points."""

    host: str
    port: int
    username: str | None
    path: str

    def __str__(self) -> str:
        user = f"{self.username}@" if self.username else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"sftp://{user}{host}:{self.port}{self.path}"


def parse_sftp_url(url: str) -> SftpLocation:
    """Read ``sftp://[user@]host[:port]/path``; a password in the URL is refused."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "sftp" or not parts.hostname:
        raise InputRejected(MALFORMED_URL, f"{url[:200]!r}: expected sftp://[user@]host/path")
    if parts.password is not None:
        raise InputRejected(MALFORMED_URL, "a password in the URL would be logged; "
                            "name an environment variable in [sftp] password_env")
    try:
        port = parts.port or 22
    except ValueError as exc:
        raise InputRejected(MALFORMED_URL, f"{url[:200]!r}: invalid port") from exc
    path = posixpath.normpath(unquote(parts.path) or "/")
    username = unquote(parts.username) if parts.username else None
    return SftpLocation(parts.hostname, port, username, "/" + path.lstrip("/"))


@dataclass(frozen=True)
class _Login:
    """How to log in; the password never appears in a repr or a traceback."""

    username: str
    known_hosts: str | None
    key_file: str | None
    password: str | None = field(default=None, repr=False)


def _login(location: SftpLocation, settings: SftpSettings,
           environ: Mapping[str, str]) -> _Login:
    username = location.username or settings.username
    if not username:
        raise ConfigurationError("no user name in the URL or the settings", key="sftp.username")
    known_hosts = None
    if settings.check_host_keys:
        known_hosts = str(Path(settings.known_hosts).expanduser())
        if not Path(known_hosts).is_file():
            raise ConfigurationError(f"{known_hosts} does not exist", key="sftp.known_hosts")
    password = None
    if settings.password_env:
        password = environ.get(settings.password_env)
        if password is None:
            raise ConfigurationError(f"environment variable {settings.password_env} is not set",
                                     key="sftp.password_env")
    key_file = str(Path(settings.key_file).expanduser()) if settings.key_file else None
    if key_file is not None and not Path(key_file).is_file():
        raise ConfigurationError(f"{key_file} does not exist", key="sftp.key_file")
    if password is None and key_file is None:
        raise ConfigurationError("set [sftp] password_env or key_file", key="sftp")
    return _Login(username, known_hosts, key_file, password)


class SftpSource:
    """Documents under a folder (or one file) on an SFTP server."""

    def __init__(
        self,
        url: str,
        *,
        settings: SftpSettings,
        max_document_bytes: int,
        source_system: str = "files",
        fetch_attempts: int = 3,
        fetch_backoff_seconds: float = 0.5,
        environ: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.location = parse_sftp_url(url)
        self.source_system = source_system
        self.settings = settings
        self.max_document_bytes = max_document_bytes
        self._login = _login(self.location, settings, os.environ if environ is None else environ)
        self.retry = RetryPolicy(fetch_attempts, fetch_backoff_seconds, sleep)

    def list_documents(self) -> Iterator[SourceDocument]:
        """Every document under the root, sorted by ``source_id`` (then alias)."""
        with _EventLoopThread(self.settings.timeout_seconds) as loop, _Session(
            loop, self.location, self._login, self.retry
        ) as session:
            root = self.location.path.encode("utf-8", "surrogateescape")
            try:
                entries = session.call(lambda sftp: list_tree(sftp, root), what="listing")
            except InputRejected as exc:
                if exc.reason_code != FETCH_FAILED:
                    raise
                raise InputRejected(SFTP_UNAVAILABLE, f"{self.location}: {exc.detail}") from exc
            for entry in in_listing_order(entries):
                document = self._document(session, entry)
                if document is not None:
                    yield document

    def _document(self, session: _Session, entry: RemoteEntry) -> SourceDocument | None:
        if entry.rejection is not None:
            return entry.document(self.source_system)
        path = entry.location.encode("utf-8", "surrogateescape")
        try:
            content = session.call(lambda sftp: read_file(sftp, path, self.max_document_bytes),
                                   what=entry.alias)
        except InputRejected as exc:
            if exc.reason_code in _LISTING_FAILURES:
                raise
            return entry.document(self.source_system, rejection=(exc.reason_code, exc.detail))
        if isinstance(content, Vanished):
            return None  # removed since the listing: simply not part of it
        if content is None:
            problem = f"{entry.alias}: larger than {self.max_document_bytes} bytes"
            return entry.document(self.source_system, rejection=(TOO_LARGE, problem))
        return entry.document(self.source_system, content)


# --------------------------------------------------------------------------- connection


class _EventLoopThread:
    """An asyncio loop running on its own thread for the lifetime of one listing."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="affidavit-sftp",
                                        daemon=True)

    def __enter__(self) -> _EventLoopThread:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    def run(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` on the loop; ``TimeoutError`` past the configured timeout."""

        async def bounded() -> T:
            return await asyncio.wait_for(awaitable, self.timeout_seconds)

        return asyncio.run_coroutine_threadsafe(bounded(), self._loop).result()


class _Session:
    """One SSH connection with its SFTP channel, reopened after a transient failure."""

    def __init__(self, loop: _EventLoopThread, location: SftpLocation, login: _Login,
                 retry: RetryPolicy) -> None:
        self._loop = loop
        self._location = location
        self._login = login
        self._retry = retry
        self._connection: SSHClientConnection | None = None
        self._sftp: SFTPClient | None = None

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._disconnect()

    def call(self, operation: Callable[[SFTPClient], Coroutine[Any, Any, T]], *,
             what: str) -> T:
        """``operation`` on a live SFTP channel, with reconnects and retries."""
        return self._retry.run(lambda: self._attempt(operation), what=what)

    def _attempt(self, operation: Callable[[SFTPClient], Coroutine[Any, Any, T]]) -> T:
        ssh = load_asyncssh()
        try:
            sftp = self._connect() if self._sftp is None else self._sftp
            return self._loop.run(operation(sftp))
        except (*connection_errors(), ssh.ConnectionLost, OSError, TimeoutError) as exc:
            self._disconnect()
            raise TransientFailure(f"{self._location.host}: {exc or type(exc).__name__}") from exc

    def _connect(self) -> SFTPClient:
        ssh = load_asyncssh()
        login = self._login
        try:
            self._connection = self._loop.run(ssh.connect(
                self._location.host, self._location.port, username=login.username,
                password=login.password, client_keys=[login.key_file] if login.key_file else None,
                known_hosts=login.known_hosts, agent_path=None, config=[],
                connect_timeout=self._loop.timeout_seconds))
            self._sftp = self._loop.run(self._connection.start_sftp_client())
        except ssh.HostKeyNotVerifiable as exc:
            raise InputRejected(HOST_KEY_MISMATCH, f"{self._location}: {exc.reason}") from exc
        except ssh.PermissionDenied as exc:
            raise InputRejected(AUTH_FAILED, f"{self._location}: {exc.reason}") from exc
        except ssh.Error as exc:  # disconnected, channel refused ...: worth another try
            self._disconnect()
            raise TransientFailure(f"{self._location.host}: {exc.reason}") from exc
        except ValueError as exc:  # asyncssh's refusal of a key or known_hosts file
            raise ConfigurationError(f"cannot use the SSH key or known_hosts: {exc}",
                                     key="sftp") from exc
        return self._sftp

    def _disconnect(self) -> None:
        connection, self._connection, self._sftp = self._connection, None, None
        if connection is not None:
            connection.close()
            with contextlib.suppress(OSError, TimeoutError):  # it is gone either way
                self._loop.run(connection.wait_closed())
