"""Fixtures for the network transports: servers on 127.0.0.1 and settings that trust them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest
import trustme
from sources_servers import (
    PASSWORD_ENV,
    SFTP_PASSWORD,
    ConnectionTrap,
    HttpsServer,
    SftpServer,
)

from affidavit.config.settings import HttpsSettings, SftpSettings


@pytest.fixture(scope="session")
def tls_ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_bundle(tls_ca: trustme.CA, tmp_path: Path) -> Path:
    path = tmp_path / "ca.pem"
    tls_ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture
def https_root(tmp_path: Path) -> Path:
    root = tmp_path / "served"
    root.mkdir()
    return root


@pytest.fixture
def https_server(https_root: Path, tls_ca: trustme.CA) -> Iterator[HttpsServer]:
    with HttpsServer(https_root, tls_ca) as server:
        yield server


@pytest.fixture
def trap() -> Iterator[ConnectionTrap]:
    with ConnectionTrap() as listener:
        yield listener


@pytest.fixture
def https_settings(ca_bundle: Path) -> HttpsSettings:
    """Trusts the test CA; allows the name ``localhost`` only, not loopback addresses."""
    return HttpsSettings(ca_bundle=str(ca_bundle), timeout_seconds=5.0, max_redirects=3,
                         allow_networks=("localhost",))


@pytest.fixture(scope="session")
def sftp_host_key() -> asyncssh.SSHKey:
    return asyncssh.generate_private_key("ssh-ed25519")


@pytest.fixture
def sftp_root(tmp_path: Path) -> Path:
    root = tmp_path / "remote"
    root.mkdir()
    return root


@pytest.fixture
def sftp_server(sftp_root: Path, sftp_host_key: asyncssh.SSHKey) -> Iterator[SftpServer]:
    with SftpServer(sftp_root, sftp_host_key) as server:
        yield server


@pytest.fixture
def sftp_settings(sftp_server: SftpServer, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> SftpSettings:
    """Password login from the environment; host key pinned in a known_hosts file."""
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(sftp_server.known_hosts_line(), encoding="utf-8")
    monkeypatch.setenv(PASSWORD_ENV, SFTP_PASSWORD)
    return SftpSettings(known_hosts=str(known_hosts), password_env=PASSWORD_ENV,
                        timeout_seconds=10.0)
