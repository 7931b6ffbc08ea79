"""Stage A transport for a local folder (or a single file).

Walks the folder, pairs each document with its optional sidecar (``<filename>.meta.yaml``)
and yields :class:`~affidavit.records.SourceDocument` values in ``source_id`` order.
Front matter is not read here: that is the parser's job.

Untrusted-input rules:

* hidden names (starting with ``.``) and sidecars are never documents;
* symbolic links are skipped unless ``follow_symlinks``; a followed link must resolve
  inside the root, otherwise it is skipped as well;
* only regular files are read (a FIFO or device would block or never end), and they are
  opened without following a link swapped in after the walk;
* a file over ``max_document_bytes`` is not read: it is yielded with empty content and a
  ``TOO_LARGE`` rejection; a broken or refused sidecar yields the document with the
  sidecar's rejection, never with default permissions;
* a rejected document carries ``content=b""``; ``source_rev`` is always the sha256 of the
  content yielded.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import groupby
from pathlib import Path

from affidavit.errors import InputRejected
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.metadata import MALFORMED_SIDECAR, SIDECAR_SUFFIX, load_sidecar

TOO_LARGE = "TOO_LARGE"
UNREADABLE = "UNREADABLE"
SOURCE_CHANGED = "SOURCE_CHANGED"
SOURCE_NOT_FOUND = "SOURCE_NOT_FOUND"
DUPLICATE_SOURCE_ID = "DUPLICATE_SOURCE_ID"
UNDECODABLE_FILENAME = "UNDECODABLE_FILENAME"

MAX_SIDECAR_BYTES = 1024 * 1024
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


@dataclass(frozen=True)
class _FileRef:
    """A regular file found by the walk, pinned by device and inode."""

    path: Path
    device: int
    inode: int


@dataclass(frozen=True)
class _Candidate:
    alias: str
    file: _FileRef
    sidecar: _FileRef | None = None
    sidecar_problem: str | None = None


@dataclass(frozen=True)
class _Entry:
    source_id: str
    candidate: _Candidate
    metadata: DocumentMetadata = field(default_factory=DocumentMetadata)
    rejection: tuple[str, str] | None = None


class LocalFolderSource:
    """Documents under a local folder, or one local file."""

    def __init__(
        self,
        root: str | Path,
        *,
        source_system: str = "files",
        max_document_bytes: int,
        follow_symlinks: bool = False,
    ) -> None:
        self.source_system = source_system
        self.root = Path(root)
        self.max_document_bytes = max_document_bytes
        self.follow_symlinks = follow_symlinks

    def list_documents(self) -> Iterator[SourceDocument]:
        """Every document under the root, sorted by ``source_id`` (then alias)."""
        entries = sorted(
            (self._describe(candidate) for candidate in self._candidates()),
            key=lambda entry: (entry.source_id, entry.candidate.alias),
        )
        for entry in _reject_duplicates(entries):
            document = self._load(entry)
            if document is not None:
                yield document

    # ------------------------------------------------------------------ walking

    def _candidates(self) -> Iterator[_Candidate]:
        try:
            real_root = self.root.resolve(strict=True)
            root_stat = real_root.stat()
        except (OSError, RuntimeError) as exc:
            raise InputRejected(SOURCE_NOT_FOUND, f"{self.root}: no such file or folder") from exc
        if stat.S_ISDIR(root_stat.st_mode):
            yield from self._walk(real_root)
        elif stat.S_ISREG(root_stat.st_mode):
            file = _FileRef(real_root, root_stat.st_dev, root_stat.st_ino)
            parent = self.root.absolute().parent
            yield self._candidate(self.root.name, file, parent, parent.resolve())
        else:
            raise InputRejected(SOURCE_NOT_FOUND, f"{self.root}: not a regular file or folder")

    def _walk(self, real_root: Path) -> Iterator[_Candidate]:
        """Depth-first over the tree; iterative, and each directory is entered once."""
        pending: list[tuple[Path, str]] = [(real_root, "")]
        root_info = real_root.stat()
        visited = {(root_info.st_dev, root_info.st_ino)}
        while pending:
            directory, prefix = pending.pop()
            try:
                names = sorted(entry.name for entry in os.scandir(directory))
            except OSError:
                continue  # unreadable or vanished folder: nothing in it can be listed
            for name in names:
                if name.startswith(".") or name.endswith(SIDECAR_SUFFIX):
                    continue
                admitted = self._admit(directory / name, real_root)
                if admitted is None:
                    continue
                path, info = admitted
                if stat.S_ISDIR(info.st_mode) and (info.st_dev, info.st_ino) not in visited:
                    visited.add((info.st_dev, info.st_ino))
                    pending.append((path, f"{prefix}{name}/"))
                elif stat.S_ISREG(info.st_mode):
                    file = _FileRef(path, info.st_dev, info.st_ino)
                    yield self._candidate(prefix + name, file, directory, real_root)

    def _admit(self, path: Path, real_root: Path) -> tuple[Path, os.stat_result] | None:
        """The path to read and its status, or None when the walk must not go there."""
        try:
            info = path.lstat()
            if not stat.S_ISLNK(info.st_mode):
                return path, info
            if not self.follow_symlinks:
                return None
            target = path.resolve(strict=True)
            if not target.is_relative_to(real_root):
                return None  # a link out of the root is never followed
            return target, target.stat()
        except (OSError, RuntimeError):
            return None  # vanished, dangling or looping link

    def _candidate(
        self, alias: str, file: _FileRef, directory: Path, real_root: Path
    ) -> _Candidate:
        sidecar_path = directory / (file_name(alias) + SIDECAR_SUFFIX)
        if not _exists(sidecar_path):
            return _Candidate(alias, file)
        admitted = self._admit(sidecar_path, real_root)
        if admitted is None or not stat.S_ISREG(admitted[1].st_mode):
            problem = "sidecar is a link that is not followed, or not a regular file"
            return _Candidate(alias, file, sidecar_problem=problem)
        path, info = admitted
        return _Candidate(alias, file, sidecar=_FileRef(path, info.st_dev, info.st_ino))

    # ------------------------------------------------------------------ reading

    def _describe(self, candidate: _Candidate) -> _Entry:
        alias = candidate.alias
        try:
            alias.encode("utf-8")
        except UnicodeEncodeError:
            printable = alias.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return _Entry(
                printable,
                replace(candidate, alias=printable),
                rejection=(UNDECODABLE_FILENAME, f"{printable}: file name is not UTF-8"),
            )
        if candidate.sidecar_problem is not None:
            problem = f"{alias}: {candidate.sidecar_problem}"
            return _Entry(alias, candidate, rejection=(MALFORMED_SIDECAR, problem))
        if candidate.sidecar is None:
            return _Entry(alias, candidate)
        origin = alias + SIDECAR_SUFFIX
        try:
            data = _read_pinned(candidate.sidecar, MAX_SIDECAR_BYTES)
            if data is None:
                raise InputRejected(MALFORMED_SIDECAR, f"{origin}: larger than {MAX_SIDECAR_BYTES}")
            metadata = load_sidecar(data, origin=origin)
        except InputRejected as exc:
            return _Entry(alias, candidate, rejection=(exc.reason_code, exc.detail))
        except OSError as exc:
            problem = f"{origin}: cannot read ({exc.strerror})"
            return _Entry(alias, candidate, rejection=(MALFORMED_SIDECAR, problem))
        return _Entry(metadata.source_id or alias, candidate, metadata)

    def _load(self, entry: _Entry) -> SourceDocument | None:
        rejection = entry.rejection
        content = b""
        if rejection is None:
            try:
                data = _read_pinned(entry.candidate.file, self.max_document_bytes)
            except FileNotFoundError:
                return None  # removed since the walk: it is simply not part of this listing
            except InputRejected as exc:
                rejection = (exc.reason_code, exc.detail)
            except OSError as exc:
                rejection = (UNREADABLE, f"{entry.candidate.alias}: {exc.strerror}")
            else:
                if data is None:
                    rejection = (TOO_LARGE, self._too_large(entry.candidate))
                else:
                    content = data
        return SourceDocument(
            source_system=self.source_system,
            source_id=entry.source_id,
            source_rev=sha256_hex(content),
            content=content,
            alias=entry.candidate.alias,
            metadata=entry.metadata,
            rejection=rejection,
        )

    def _too_large(self, candidate: _Candidate) -> str:
        try:
            size = f"{candidate.file.path.stat().st_size} bytes"
        except OSError:
            size = "size"
        return f"{candidate.alias}: {size} exceeds the limit of {self.max_document_bytes} bytes"


def file_name(alias: str) -> str:
    """The last component of a POSIX alias."""
    return alias.rsplit("/", 1)[-1]


def _exists(path: Path) -> bool:
    try:
        path.lstat()
    except OSError:
        return False
    return True


def _read_pinned(file: _FileRef, limit: int) -> bytes | None:
    """The file's bytes, or None when it holds more than ``limit`` (then not read whole).

    The file is opened without following a final link and must still be the regular file
    the walk found (same device and inode), so a swap after the walk is caught.
    """
    descriptor = os.open(file.path, _OPEN_FLAGS)
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if (info.st_dev, info.st_ino) != (file.device, file.inode) or not stat.S_ISREG(
            info.st_mode
        ):
            raise InputRejected(SOURCE_CHANGED, f"{file.path.name}: changed while being read")
        if info.st_size > limit:
            return None
        data = handle.read(limit + 1)  # a file that grew since fstat is caught here
    return None if len(data) > limit else data


def _reject_duplicates(entries: list[_Entry]) -> Iterator[_Entry]:
    """Two files claiming one source_id is a collision: both are refused, neither wins."""
    for source_id, group in groupby(entries, key=lambda entry: entry.source_id):
        claimants = list(group)
        if len(claimants) == 1:
            yield claimants[0]
            continue
        aliases = ", ".join(entry.candidate.alias for entry in claimants)
        message = f"source_id {source_id!r} is claimed by {aliases}"
        for entry in claimants:
            yield (
                entry
                if entry.rejection
                else replace(entry, rejection=(DUPLICATE_SOURCE_ID, message))
            )
