"""The remote tree behind an SFTP source: walking it, pairing sidecars, reading files.

Everything the server says is untrusted. Names are plain file names or refused
(``PATH_ESCAPE``); links are never followed (``SYMLINK_REFUSED``); only regular files are
read, and never past the size limit.

An SFTP open follows links on the server, and a path checked with ``lstat`` can be swapped
for a link before the open and swapped back after it; so can any folder on the path, which
``lstat`` looks through. So what was actually opened is checked: the open handle's own
attributes (``fstat``) must describe the file the ``lstat`` before the open saw, the
server's real path of it after the open must be the path itself (no link anywhere on it),
and an ``lstat`` after that must still describe the same file; otherwise the document is
refused with ``SOURCE_CHANGED`` and its bytes are dropped unread by anything else. A folder
whose real path is not its own path when it has been read is refused with its entries
(``SYMLINK_REFUSED``), so that not even the names of files outside the root are listed.

What remains: SFTP version 3 reports no inode number, so "the same file" means the same
type, mode, owner, group, size and modification time (and the finer times a newer server
reports). A link to another file passes only if that file agrees on all of them; the owner
is the one an attacker cannot choose (changing it takes root), so the swap works only
against files the attacker owns, which it could read anyway.
"""

from __future__ import annotations

import importlib
import posixpath
import stat
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from affidavit.errors import ConfigurationError, InputRejected
from affidavit.sources.local import (
    MAX_SIDECAR_BYTES,
    SOURCE_CHANGED,
    SOURCE_NOT_FOUND,
    UNDECODABLE_FILENAME,
    UNREADABLE,
)
from affidavit.sources.metadata import MALFORMED_SIDECAR, SIDECAR_SUFFIX, load_sidecar
from affidavit.sources.remote import RemoteEntry

if TYPE_CHECKING:
    from asyncssh import SFTPAttrs, SFTPClient

PATH_ESCAPE = "PATH_ESCAPE"
SYMLINK_REFUSED = "SYMLINK_REFUSED"

# The attributes that tell one file from another, compared where the server reports both.
_FILE_IDENTITY = ("permissions", "uid", "gid", "owner", "group", "size", "mtime", "mtime_ns",
                  "ctime", "ctime_ns", "crtime", "crtime_ns")


def load_asyncssh() -> ModuleType:
    """asyncssh, which is optional: its absence names the extra to install."""
    try:
        return importlib.import_module("asyncssh")
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ConfigurationError("SFTP sources need asyncssh: pip install 'affidavit[sftp]'",
                                 key="sftp") from exc


def connection_errors() -> tuple[type[Exception], ...]:
    """The SFTP errors meaning the channel is gone, so that a retry reconnects."""
    ssh = load_asyncssh()
    return (ssh.SFTPConnectionLost, ssh.SFTPNoConnection)


class Vanished:
    """A file that disappeared between the listing and the read."""


VANISHED = Vanished()


async def list_tree(sftp: SFTPClient, root: bytes) -> list[RemoteEntry]:
    """Every document entry under ``root`` (a folder, or one regular file)."""
    ssh = load_asyncssh()
    try:
        real_root = await sftp.realpath(root)
        info = await sftp.stat(real_root)  # the operator chose the root: its link is followed
    except connection_errors():
        raise
    except ssh.SFTPError as exc:
        raise InputRejected(SOURCE_NOT_FOUND, f"{_text(root)}: {exc.reason}") from exc
    if _is(info, stat.S_ISREG):
        folder, name = posixpath.split(real_root)
        return [await _file_entry(sftp, folder, name, _text(name))]
    if not _is(info, stat.S_ISDIR):
        raise InputRejected(SOURCE_NOT_FOUND, f"{_text(root)}: not a regular file or folder")
    entries: list[RemoteEntry] = []
    pending: list[tuple[bytes, str]] = [(real_root, "")]
    while pending:
        folder, prefix = pending.pop()
        try:
            names = sorted(_raw(name.filename) for name in await sftp.readdir(folder))
        except connection_errors():
            raise
        except ssh.SFTPError:
            continue  # an unreadable or vanished folder: nothing in it can be listed
        if await _real_path(sftp, folder) != folder:
            problem = "a folder was swapped for a link while being listed"
            entries.append(_refused(prefix.rstrip("/") or ".", SYMLINK_REFUSED, problem))
            continue
        for found in names:
            entry = await _visit(sftp, real_root, folder, prefix, found, pending)
            if entry is not None:
                entries.append(entry)
    return entries


async def _visit(sftp: SFTPClient, root: bytes, folder: bytes, prefix: str, name: bytes,
                 pending: list[tuple[bytes, str]]) -> RemoteEntry | None:
    """The entry for one name of a listed folder; sub-folders go onto ``pending``."""
    if name in (b".", b".."):
        return None
    alias = prefix + _printable(name)
    path = posixpath.join(folder, name)
    if b"/" in name or b"\x00" in name or not _inside(root, path):
        return _refused(alias, PATH_ESCAPE, "the server named a path outside the root")
    if name.startswith(b".") or name.endswith(SIDECAR_SUFFIX.encode()):
        return None
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return _refused(alias, UNDECODABLE_FILENAME, "file name is not UTF-8")
    ssh = load_asyncssh()
    try:
        info = await sftp.lstat(path)
    except ssh.SFTPNoSuchFile:
        return None  # vanished since the folder was read
    except connection_errors():
        raise
    except ssh.SFTPError as exc:
        return _refused(alias, UNREADABLE, exc.reason)
    if _is(info, stat.S_ISLNK):
        return _refused(alias, SYMLINK_REFUSED, "symbolic links are not followed")
    if _is(info, stat.S_ISDIR):
        pending.append((path, alias + "/"))
        return None
    if _is(info, stat.S_ISREG):
        return await _file_entry(sftp, folder, name, alias)
    return None  # FIFOs, devices and sockets are never documents


async def _file_entry(sftp: SFTPClient, folder: bytes, name: bytes, alias: str) -> RemoteEntry:
    location = _text(posixpath.join(folder, name))
    sidecar_path = posixpath.join(folder, name + SIDECAR_SUFFIX.encode())
    origin = alias + SIDECAR_SUFFIX
    try:
        data = await read_file(sftp, sidecar_path, MAX_SIDECAR_BYTES)
    except InputRejected as exc:
        return RemoteEntry(alias, alias, location,
                           rejection=(MALFORMED_SIDECAR, f"{origin}: {exc.detail}"))
    if isinstance(data, Vanished):
        return RemoteEntry(alias, alias, location)
    if data is None:
        problem = f"{origin}: larger than {MAX_SIDECAR_BYTES}"
        return RemoteEntry(alias, alias, location, rejection=(MALFORMED_SIDECAR, problem))
    try:
        metadata = load_sidecar(data, origin=origin)
    except InputRejected as exc:
        return RemoteEntry(alias, alias, location, rejection=(exc.reason_code, exc.detail))
    return RemoteEntry(metadata.source_id or alias, alias, location, metadata)


async def read_file(sftp: SFTPClient, path: bytes, limit: int) -> bytes | Vanished | None:
    """The bytes of a regular file; None when over ``limit``; ``VANISHED`` when absent.

    SFTP opens follow links on the server, so the path must be a regular file just before
    the open, and the open handle and the path just after must still be that file.
    """
    ssh = load_asyncssh()
    try:
        before = await sftp.lstat(path)
        if not _is(before, stat.S_ISREG):
            raise InputRejected(SOURCE_CHANGED, f"{_text(path)}: a link or not a regular file")
        if before.size is not None and before.size > limit:
            return None
        async with sftp.open(path, "rb") as handle:
            opened = await handle.stat()
            data = await handle.read(limit + 1) if same_file(before, opened) else None
        real = await _real_path(sftp, path)
        after = await sftp.lstat(path)
    except ssh.SFTPNoSuchFile:
        return VANISHED
    except connection_errors():
        raise
    except ssh.SFTPError as exc:
        raise InputRejected(UNREADABLE, f"{_text(path)}: {exc.reason}") from exc
    if data is None or real != posixpath.normpath(path) or not same_file(before, after):
        raise InputRejected(SOURCE_CHANGED, f"{_text(path)}: not the file that was checked "
                            "(swapped or changed while being opened)")
    return None if len(data) > limit else _raw(data)


async def _real_path(sftp: SFTPClient, path: bytes) -> bytes | None:
    """The server's canonical form of ``path``, links resolved; None when it gives none (a
    chrooted server refuses to resolve a link that leads out of its root)."""
    ssh = load_asyncssh()
    try:
        return _raw(await sftp.realpath(path))
    except connection_errors():
        raise
    except ssh.SFTPError:
        return None


def same_file(checked: SFTPAttrs, found: SFTPAttrs) -> bool:
    """Whether ``found`` is a regular file agreeing with ``checked`` on every identity
    attribute the server reported for both."""
    if not _is(found, stat.S_ISREG):
        return False
    for name in _FILE_IDENTITY:
        expected, actual = getattr(checked, name), getattr(found, name)
        if expected is not None and actual is not None and expected != actual:
            return False
    return True


def _is(info: SFTPAttrs, kind: Callable[[int], bool]) -> bool:
    return info.permissions is not None and kind(info.permissions)


def _inside(root: bytes, path: bytes) -> bool:
    normalized, base = posixpath.normpath(path), posixpath.normpath(root)
    return normalized == base or normalized.startswith(base.rstrip(b"/") + b"/")


def _refused(alias: str, code: str, problem: str) -> RemoteEntry:
    return RemoteEntry(alias, alias, "", rejection=(code, f"{alias}: {problem}"))


def _raw(value: bytes | str) -> bytes:
    """Bytes as the server sent them (paths given as bytes come back as bytes)."""
    return value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")


def _text(path: bytes) -> str:
    return path.decode("utf-8", "surrogateescape")


def _printable(name: bytes) -> str:
    return name.decode("utf-8", "backslashreplace")
