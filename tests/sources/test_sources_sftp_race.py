"""SFTP reads are race-free: what was opened must be the file that was checked.

The servers below play the attacker who can write into the shared folder. Around the
client's open of one document they swap that file, or the folder holding it, for a link to
a secret outside the root, let the open follow the link, and (mostly) swap the original
back before the client looks again. Every check made on the path alone (an lstat before the
open, an lstat after it) can see a regular file; the open handle's attributes and the
server's real path of what was opened tell that the secret was opened.
"""

from __future__ import annotations

import os
import sqlite3
import zlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

import asyncssh
import pytest
from sources_servers import SftpServer

from affidavit.config.settings import Settings, SftpSettings
from affidavit.ingest.run import Ingestor
from affidavit.sources import SftpSource
from affidavit.store import SQLiteStore

SECRET = "RESTRICTED: the vault combination is 12-34-56"
PLANTED = "An ordinary looking note."
PASSWORD = "correct horse battery staple"
T = TypeVar("T")


class _SwappingSftp(asyncssh.SFTPServer):
    """When the client calls ``hook`` on a path ending in ``trigger``, swaps ``victim`` (a
    path under the root) for a link to ``target`` first, and puts it back afterwards when
    ``restore``."""

    hook = "open"
    trigger = b"swapped.md"
    victim = "swapped.md"
    target: Path
    restore = True

    def _swapped(self, call: str, path: bytes, operation: Callable[[], T]) -> T:
        if not self._swap_in(call, path):
            return operation()
        try:
            return operation()
        finally:
            self._swap_back()

    def _swap_in(self, call: str, path: bytes) -> bool:
        victim = self._victim()
        if call != self.hook or not path.endswith(self.trigger) or victim.is_symlink():
            return False
        os.rename(victim, victim.with_name(".swapped.tmp"))
        os.symlink(self.target, victim)
        return True

    def _swap_back(self) -> None:
        if self.restore:
            victim = self._victim()
            os.unlink(victim)
            os.rename(victim.with_name(".swapped.tmp"), victim)

    def _victim(self) -> Path:
        return Path(os.fsdecode(self.map_path(b"/" + self.victim.encode())))

    def open(self, path: bytes, pflags: int, attrs: asyncssh.SFTPAttrs) -> object:
        return self._swapped("open", path, lambda: super(_SwappingSftp, self).open(
            path, pflags, attrs))

    def lstat(self, path: bytes) -> object:
        return self._swapped("lstat", path, lambda: super(_SwappingSftp, self).lstat(path))

    async def scandir(self, path: bytes) -> AsyncIterator[asyncssh.SFTPName]:
        swapped = self._swap_in("scandir", path)
        try:
            async for name in super().scandir(path):
                yield name
        finally:
            if swapped:
                self._swap_back()


def _listing(tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch,
             host_key: asyncssh.SSHKey, **swap: object,
             ) -> tuple[dict[str, tuple[str | None, bytes]], Path]:
    """Each document's (reason code, content) and the database an ingest of them wrote."""
    server_class = type("Swapping", (_SwappingSftp,), swap)
    factory = lambda channel: server_class(channel, chroot=str(root).encode())  # noqa: E731
    database = tmp_path / "store.db"
    with SftpServer(root, host_key, sftp_factory=factory) as server:
        known_hosts = tmp_path / "known_hosts"
        known_hosts.write_text(server.known_hosts_line(), encoding="utf-8")
        monkeypatch.setenv("RACE_PASSWORD", PASSWORD)
        settings = SftpSettings(known_hosts=str(known_hosts), password_env="RACE_PASSWORD",
                                timeout_seconds=10.0)

        def source() -> SftpSource:
            return SftpSource(server.url("/"), settings=settings, max_document_bytes=4096,
                              sleep=lambda seconds: None)

        documents = {d.alias: (d.rejection[0] if d.rejection else None, d.content)
                     for d in source().list_documents()}
        store = SQLiteStore(database)
        try:
            Ingestor(store, Settings()).run([source()])
        finally:
            store.close()
    return documents, database


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _assert_secret_never_ingested(database: Path,
                                  refused: tuple[str, str] = ("swapped.md", "SOURCE_CHANGED"),
                                  ) -> None:
    with sqlite3.connect(database) as conn:
        # Blobs and versions' own texts are stored deflated; a chunk may be a span of them.
        blobs = b"".join(zlib.decompress(row[0]) if row[1] == "zlib" else bytes(row[0])
                         for row in conn.execute("SELECT content, encoding FROM blobs"))
        texts = " ".join([*(row[0] for row in conn.execute("SELECT text FROM chunks")),
                          *(zlib.decompress(row[0]).decode() for row in conn.execute(
                              "SELECT text FROM version_texts"))])
        quarantined = dict(conn.execute("SELECT alias, reason_code FROM quarantine"))
        messages = " ".join(row[0] for row in conn.execute("SELECT message FROM quarantine"))
    assert SECRET.encode() not in blobs
    assert "vault" not in texts and "vault" not in messages
    assert quarantined == dict([refused])


def test_a_link_swapped_in_around_the_open_is_refused(tmp_path, monkeypatch, sftp_host_key):
    root = tmp_path / "remote"
    _write(root / "swapped.md", PLANTED)
    _write(root / "steady.md", "A steady note.")
    secret = _write(tmp_path / "outside" / "vault.md", SECRET)

    documents, database = _listing(tmp_path, root, monkeypatch, sftp_host_key, target=secret)

    assert documents["swapped.md"] == ("SOURCE_CHANGED", b"")
    assert documents["steady.md"] == (None, b"A steady note.")
    _assert_secret_never_ingested(database)


def test_a_swapped_in_file_of_the_same_size_is_refused(tmp_path, monkeypatch, sftp_host_key):
    # Size alone would not tell them apart: the open handle's times and mode must match too.
    root = tmp_path / "remote"
    _write(root / "swapped.md", PLANTED.ljust(len(SECRET), "."))
    secret = _write(tmp_path / "outside" / "vault.md", SECRET)
    os.utime(secret, (1_000_000_000, 1_000_000_000))
    os.chmod(secret, 0o640)

    documents, database = _listing(tmp_path, root, monkeypatch, sftp_host_key, target=secret)

    assert documents == {"swapped.md": ("SOURCE_CHANGED", b"")}
    _assert_secret_never_ingested(database)


@pytest.mark.parametrize(("hook", "restore"), [("open", True), ("open", False),
                                               ("lstat", False)])
def test_a_folder_swapped_for_a_link_around_the_read_is_refused(
        tmp_path, monkeypatch, sftp_host_key, hook, restore):
    # A link anywhere on the path is looked through by lstat and followed by open; swapped
    # in before the first lstat and left there, every attribute agrees: only the server's
    # real path of what was opened tells.
    root = tmp_path / "remote"
    _write(root / "sub" / "doc.md", PLANTED)
    outside = tmp_path / "outside"
    _write(outside / "doc.md", SECRET)

    documents, database = _listing(tmp_path, root, monkeypatch, sftp_host_key, hook=hook,
                                   trigger=b"sub/doc.md", victim="sub", target=outside,
                                   restore=restore)

    assert documents == {"sub/doc.md": ("SOURCE_CHANGED", b"")}
    # The ingest lists again: a link left in place is then refused where it stands.
    refused = ("sub/doc.md", "SOURCE_CHANGED") if restore else ("sub", "SYMLINK_REFUSED")
    _assert_secret_never_ingested(database, refused)


def test_a_folder_swapped_for_a_link_while_listed_lists_nothing_outside(
        tmp_path, monkeypatch, sftp_host_key):
    root = tmp_path / "remote"
    _write(root / "sub" / "doc.md", PLANTED)
    _write(root / "top.md", "A note at the top.")
    outside = tmp_path / "outside"
    _write(outside / "payroll-2026.md", SECRET)

    documents, database = _listing(tmp_path, root, monkeypatch, sftp_host_key, hook="scandir",
                                   trigger=b"sub", victim="sub", target=outside,
                                   restore=False)

    assert documents == {"sub": ("SYMLINK_REFUSED", b""), "top.md": (None, b"A note at the top.")}
    _assert_secret_never_ingested(database, ("sub", "SYMLINK_REFUSED"))
    with sqlite3.connect(database) as conn:
        names = " ".join(str(row) for table in ("quarantine", "versions", "runs")
                         for row in conn.execute(f"SELECT * FROM {table}"))
    assert "payroll" not in names
