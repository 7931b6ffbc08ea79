"""The SFTP transport against a real asyncssh server on 127.0.0.1 rooted at a temp folder."""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path

import asyncssh
import pytest
from sources_servers import PASSWORD_ENV, SFTP_USER, SftpServer

from affidavit.config.settings import SftpSettings
from affidavit.errors import ConfigurationError, InputRejected
from affidavit.records import SourceDocument
from affidavit.sources import SftpSource, parse_sftp_url
from affidavit.util.retry import JITTER

LIMIT = 1024
SECRET = "the vault combination is 12-34-56"


def jittered(sleeps: list[float], bases: list[float]) -> bool:
    """Each pause is its exponential backoff plus at most JITTER of it (affidavit.util.retry)."""
    return len(sleeps) == len(bases) and all(
        b <= s <= b * (1 + JITTER) for s, b in zip(sleeps, bases, strict=True))


def listing(url: str, settings: SftpSettings, **options) -> list[SourceDocument]:
    options.setdefault("max_document_bytes", LIMIT)
    options.setdefault("sleep", lambda seconds: None)
    return list(SftpSource(url, settings=settings, **options).list_documents())


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def codes(documents: list[SourceDocument]) -> dict[str, str | None]:
    return {d.alias: d.rejection[0] if d.rejection else None for d in documents}


def test_lists_the_tree_like_the_local_folder(sftp_server, sftp_settings, sftp_root):
    write(sftp_root / "b.md", "# B")
    write(sftp_root / "a" / "deeper" / "c.md", "c")
    write(sftp_root / "a" / "z.txt", "z")
    write(sftp_root / ".hidden.md", "x")
    write(sftp_root / ".git" / "config.md", "x")
    documents = listing(sftp_server.url("/"), sftp_settings)
    assert [d.source_id for d in documents] == ["a/deeper/c.md", "a/z.txt", "b.md"]
    assert [d.alias for d in documents] == ["a/deeper/c.md", "a/z.txt", "b.md"]
    assert documents[0].content == b"c"
    assert documents[0].source_rev == hashlib.sha256(b"c").hexdigest()
    assert all(d.source_system == "files" and d.rejection is None for d in documents)


def test_sidecars_declare_metadata_and_identity(sftp_server, sftp_settings, sftp_root):
    write(sftp_root / "minutes.txt", "Board minutes.")
    write(sftp_root / "minutes.txt.meta.yaml",
          "source_id: BOARD-7\ntitle: Minutes\nacl: [user:cfo]\nclassification: secret\n")
    write(sftp_root / "broken.md", "b")
    write(sftp_root / "broken.md.meta.yaml", "acl: [oops\n")
    documents = listing(sftp_server.url("/"), sftp_settings, source_system="board")
    assert codes(documents) == {"broken.md": "MALFORMED_SIDECAR", "minutes.txt": None}
    broken, minutes = sorted(documents, key=lambda d: d.alias)
    assert (minutes.source_system, minutes.source_id) == ("board", "BOARD-7")
    assert minutes.metadata.acl == ("user:cfo",) and minutes.metadata.classification == "SECRET"
    assert broken.content == b""


def test_a_subfolder_root_and_a_single_file_root(sftp_server, sftp_settings, sftp_root):
    write(sftp_root / "team" / "notes" / "n.md", "n")
    write(sftp_root / "team" / "one.md", "one")
    in_folder = listing(sftp_server.url("/team"), sftp_settings)
    assert [d.source_id for d in in_folder] == ["notes/n.md", "one.md"]
    single = listing(sftp_server.url("/team/one.md"), sftp_settings)
    assert [(d.source_id, d.content) for d in single] == [("one.md", b"one")]


def test_symlinks_are_refused_and_never_read(sftp_server, sftp_settings, sftp_root, tmp_path):
    outside = write(tmp_path / "outside" / "vault.md", SECRET)
    write(sftp_root / "ok.md", "fine")
    os.symlink(outside, sftp_root / "escape.md")
    os.symlink(outside.parent, sftp_root / "linked-folder")
    os.symlink(sftp_root / "ok.md", sftp_root / "inner-link.md")
    write(sftp_root / "guarded.md", "guarded")
    os.symlink(write(tmp_path / "outside" / "meta.yaml", "acl: ['*']\n"),
               sftp_root / "guarded.md.meta.yaml")
    documents = listing(sftp_server.url("/"), sftp_settings)
    assert codes(documents) == {
        "escape.md": "SYMLINK_REFUSED",
        "guarded.md": "MALFORMED_SIDECAR",
        "inner-link.md": "SYMLINK_REFUSED",
        "linked-folder": "SYMLINK_REFUSED",
        "ok.md": None,
    }
    assert all(SECRET.encode() not in d.content for d in documents)


class _HostileSftp(asyncssh.SFTPServer):
    """A server that names entries outside the folder it lists."""

    def listdir(self, path: bytes) -> list[asyncssh.SFTPName]:
        file_attrs = asyncssh.SFTPAttrs(permissions=0o100644, size=len(SECRET))
        real = os.listdir(self.map_path(path))
        return [
            *(asyncssh.SFTPName(name, attrs=file_attrs) for name in real),
            asyncssh.SFTPName(b"../vault.md", attrs=file_attrs),
            asyncssh.SFTPName(b"sub/../../vault.md", attrs=file_attrs),
            asyncssh.SFTPName(b"/etc/passwd", attrs=file_attrs),
        ]


def test_names_that_escape_the_root_are_refused(sftp_host_key, tmp_path, monkeypatch):
    root = tmp_path / "hostile" / "root"
    write(root / "ok.md", "fine")
    write(root.parent / "vault.md", SECRET)
    factory = lambda channel: _HostileSftp(channel, chroot=str(root).encode())  # noqa: E731
    with SftpServer(root, sftp_host_key, sftp_factory=factory) as server:
        known_hosts = write(tmp_path / "known_hosts", server.known_hosts_line())
        monkeypatch.setenv("HOSTILE_PASSWORD", "correct horse battery staple")
        settings = SftpSettings(known_hosts=str(known_hosts), password_env="HOSTILE_PASSWORD")
        documents = listing(server.url("/"), settings)
    assert codes(documents) == {
        "../vault.md": "PATH_ESCAPE",
        "/etc/passwd": "PATH_ESCAPE",
        "ok.md": None,
        "sub/../../vault.md": "PATH_ESCAPE",
    }
    assert all(SECRET.encode() not in d.content for d in documents)


def test_files_over_the_cap_are_not_read(sftp_server, sftp_settings, sftp_root):
    write(sftp_root / "big.md", "x" * (LIMIT + 1))
    write(sftp_root / "exact.md", "x" * LIMIT)
    documents = listing(sftp_server.url("/"), sftp_settings)
    assert codes(documents) == {"big.md": "TOO_LARGE", "exact.md": None}


def test_two_files_claiming_one_source_id_are_both_refused(sftp_server, sftp_settings,
                                                           sftp_root):
    for name in ("one.md", "two.md"):
        write(sftp_root / name, name)
        write(sftp_root / f"{name}.meta.yaml", "source_id: SAME\n")
    assert set(codes(listing(sftp_server.url("/"), sftp_settings)).values()) == {
        "DUPLICATE_SOURCE_ID"}


def test_a_missing_root_fails_the_listing(sftp_server, sftp_settings):
    with pytest.raises(InputRejected) as caught:
        listing(sftp_server.url("/nowhere"), sftp_settings)
    assert caught.value.reason_code == "SOURCE_NOT_FOUND"


class _DroppingSftp(asyncssh.SFTPServer):
    """Drops the whole connection the first ``drops`` times ``flaky.md`` is opened."""

    drops = 0

    def open(self, path: bytes, pflags: int, attrs: asyncssh.SFTPAttrs) -> object:
        if path.endswith(b"flaky.md") and _DroppingSftp.drops > 0:
            _DroppingSftp.drops -= 1
            self.channel.get_connection().abort()
        return super().open(path, pflags, attrs)


@pytest.mark.parametrize(("drops", "expected"), [(2, None), (3, "FETCH_FAILED")])
def test_a_dropped_connection_is_reopened_and_retried(sftp_host_key, tmp_path, monkeypatch,
                                                      drops, expected):
    root = tmp_path / "flaky"
    write(root / "flaky.md", "flaky")
    write(root / "steady.md", "steady")
    _DroppingSftp.drops = drops
    factory = lambda channel: _DroppingSftp(channel, chroot=str(root).encode())  # noqa: E731
    sleeps: list[float] = []
    with SftpServer(root, sftp_host_key, sftp_factory=factory) as server:
        known_hosts = write(tmp_path / "known_hosts", server.known_hosts_line())
        monkeypatch.setenv("FLAKY_PASSWORD", "correct horse battery staple")
        settings = SftpSettings(known_hosts=str(known_hosts), password_env="FLAKY_PASSWORD")
        documents = listing(server.url("/"), settings, sleep=sleeps.append,
                            fetch_backoff_seconds=0.5)
    assert codes(documents) == {"flaky.md": expected, "steady.md": None}
    assert jittered(sleeps, [0.5, 1.0])
    assert [d.content for d in documents] == [b"flaky" if expected is None else b"", b"steady"]


# --------------------------------------------------------------------------- trust and login


def test_a_host_key_mismatch_fails_the_listing(sftp_server, sftp_settings, sftp_root, tmp_path):
    write(sftp_root / "a.md", "a")
    impostor = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    known_hosts = write(tmp_path / "other_known_hosts",
                        f"[127.0.0.1]:{sftp_server.port} {impostor}")
    with pytest.raises(InputRejected) as caught:
        listing(sftp_server.url("/"), replace(sftp_settings, known_hosts=str(known_hosts)))
    assert caught.value.reason_code == "HOST_KEY_MISMATCH"


def test_host_key_checking_can_be_switched_off(sftp_server, sftp_settings, sftp_root):
    write(sftp_root / "a.md", "a")
    settings = replace(sftp_settings, check_host_keys=False, known_hosts="/nonexistent")
    assert [d.content for d in listing(sftp_server.url("/"), settings)] == [b"a"]


def test_a_wrong_password_fails_the_listing(sftp_server, sftp_settings, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, "wrong")
    with pytest.raises(InputRejected) as caught:
        listing(sftp_server.url("/"), sftp_settings)
    assert caught.value.reason_code == "AUTH_FAILED"


def test_key_file_login(sftp_host_key, tmp_path, monkeypatch):
    root = write(tmp_path / "keyed" / "a.md", "a").parent
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_file = tmp_path / "id_ed25519"
    client_key.write_private_key(str(key_file))
    authorized = write(tmp_path / "authorized_keys", client_key.export_public_key().decode())
    with SftpServer(root, sftp_host_key, authorized_keys=authorized) as server:
        known_hosts = write(tmp_path / "known_hosts", server.known_hosts_line())
        settings = SftpSettings(known_hosts=str(known_hosts), key_file=str(key_file))
        assert [d.content for d in listing(server.url("/"), settings)] == [b"a"]


def test_an_unreadable_key_file_is_a_configuration_error(sftp_server, sftp_settings, tmp_path,
                                                        monkeypatch):
    key_file = write(tmp_path / "id_broken", "-----BEGIN OPENSSH PRIVATE KEY-----\ngarbage\n")
    monkeypatch.delenv(PASSWORD_ENV)
    settings = replace(sftp_settings, password_env="", key_file=str(key_file))
    with pytest.raises(ConfigurationError, match="SSH key"):
        listing(sftp_server.url("/"), settings)


def test_an_unreachable_server_fails_the_listing_after_retries(sftp_settings, sftp_server):
    closed_port = sftp_server.port
    sftp_server.__exit__()
    sleeps: list[float] = []
    with pytest.raises(InputRejected) as caught:
        listing(f"sftp://{SFTP_USER}@127.0.0.1:{closed_port}/", sftp_settings,
                sleep=sleeps.append, fetch_backoff_seconds=0.1)
    assert caught.value.reason_code == "SFTP_UNAVAILABLE"
    assert jittered(sleeps, [0.1, 0.2])


def test_settings_problems_are_reported_before_connecting(sftp_settings, monkeypatch, tmp_path):
    url = f"sftp://{SFTP_USER}@127.0.0.1:1/"
    monkeypatch.delenv(PASSWORD_ENV)
    with pytest.raises(ConfigurationError, match="password_env"):
        SftpSource(url, settings=sftp_settings, max_document_bytes=1)
    with pytest.raises(ConfigurationError, match="known_hosts"):
        SftpSource(url, settings=replace(sftp_settings, known_hosts=str(tmp_path / "none")),
                   max_document_bytes=1)
    with pytest.raises(ConfigurationError, match="username"):
        SftpSource("sftp://127.0.0.1/", settings=sftp_settings, max_document_bytes=1)


def test_url_parsing():
    location = parse_sftp_url("sftp://ann@files.example:2222/srv/docs/../policies")
    assert (location.username, location.host, location.port, location.path) == (
        "ann", "files.example", 2222, "/srv/policies")
    assert parse_sftp_url("sftp://files.example").path == "/"
    assert parse_sftp_url("sftp://h/../../etc").path == "/etc"
    for bad in ("sftp://ann:secret@h/", "https://h/", "sftp:///x", "sftp://h:99999/"):
        with pytest.raises(InputRejected) as caught:
            parse_sftp_url(bad)
        assert caught.value.reason_code == "MALFORMED_URL"
