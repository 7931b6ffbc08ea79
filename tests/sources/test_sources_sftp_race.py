"""SFTP reads are race-free: what was opened must be the file that was checked.

The server below plays the attacker who can write into the shared folder: each time the
client opens ``swapped.md`` it swaps the file for a link to a secret outside the root, lets
the open follow the link, and swaps the original back before the client looks again. Every
check made on the path alone (an lstat before the open, an lstat after it) sees a regular
file; only the attributes of the open handle tell that the secret was opened.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import asyncssh
import pytest
from sources_servers import SftpServer

from affidavit.config import Settings, SftpSettings
from affidavit.ingest import Ingestor
from affidavit.sources import SftpSource
from affidavit.store import SQLiteStore

SECRET = "RESTRICTED: the vault combination is 12-34-56"
PLANTED = "An ordinary looking note."
PASSWORD = "correct horse battery staple"


class _SwappingSftp(asyncssh.SFTPServer):
    """Swaps ``swapped.md`` for a link to ``target`` around every open of it."""

    target: Path

    def open(self, path: bytes, pflags: int, attrs: asyncssh.SFTPAttrs) -> object:
        if not path.endswith(b"swapped.md"):
            return super().open(path, pflags, attrs)
        real = Path(os.fsdecode(self.map_path(path)))
        hidden = real.with_name(".swapped.tmp")
        os.rename(real, hidden)
        os.symlink(self.target, real)
        try:
            return super().open(path, pflags, attrs)
        finally:
            os.unlink(real)
            os.rename(hidden, real)


def _listing(tmp_path: Path, root: Path, secret: Path, monkeypatch: pytest.MonkeyPatch,
             host_key: asyncssh.SSHKey) -> tuple[dict[str, tuple[str | None, bytes]], Path]:
    """Each document's (reason code, content) and the database an ingest of them wrote."""
    _SwappingSftp.target = secret
    factory = lambda channel: _SwappingSftp(channel, chroot=str(root).encode())  # noqa: E731
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


def _assert_secret_never_ingested(database: Path) -> None:
    with sqlite3.connect(database) as conn:
        blobs = b"".join(bytes(row[0]) for row in conn.execute("SELECT content FROM blobs"))
        texts = " ".join(row[0] for row in conn.execute("SELECT text FROM chunks"))
        quarantined = dict(conn.execute("SELECT alias, reason_code FROM quarantine"))
        messages = " ".join(row[0] for row in conn.execute("SELECT message FROM quarantine"))
    assert SECRET.encode() not in blobs
    assert "vault" not in texts and "vault" not in messages
    assert quarantined == {"swapped.md": "SOURCE_CHANGED"}


def test_a_link_swapped_in_around_the_open_is_refused(tmp_path, monkeypatch, sftp_host_key):
    root = tmp_path / "remote"
    _write(root / "swapped.md", PLANTED)
    _write(root / "steady.md", "A steady note.")
    secret = _write(tmp_path / "outside" / "vault.md", SECRET)

    documents, database = _listing(tmp_path, root, secret, monkeypatch, sftp_host_key)

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

    documents, database = _listing(tmp_path, root, secret, monkeypatch, sftp_host_key)

    assert documents == {"swapped.md": ("SOURCE_CHANGED", b"")}
    _assert_secret_never_ingested(database)
