"""Reading ZIP archives (DOCX packages) from untrusted bytes without trusting the archive.

The standard library's ``zipfile`` builds its whole directory before anyone can count it,
follows whatever offsets the directory claims and inflates as much as an entry yields.
This reader parses the directory itself and refuses, before inflating anything:

* more than ``max_entries`` entries (counted while the directory is read);
* multi-disk archives, data before the archive, encrypted entries, compression methods
  other than stored and deflate;
* two entries whose names differ only in case (package part names are case-insensitive);
* entries whose data ranges overlap, or run into the central directory: the trick that
  lets a few kilobytes of "overlapping" zip bombs expand into gigabytes;
* declared sizes over ``max_decompressed_bytes`` (one entry, or all entries together),
  and declared compression ratios over ``max_compression_ratio`` for entries that inflate
  to more than :data:`RATIO_FLOOR_BYTES`.

Inflating then happens in blocks and stops as soon as an entry yields more than it
declared, so a lying directory costs at most one block more than the caps allow. The CRC
of every entry read is checked.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected

MALFORMED_ARCHIVE = "MALFORMED_ARCHIVE"
ENCRYPTED_ARCHIVE = "ENCRYPTED_ARCHIVE"
TOO_MANY_ARCHIVE_ENTRIES = "TOO_MANY_ARCHIVE_ENTRIES"
DUPLICATE_ARCHIVE_ENTRY = "DUPLICATE_ARCHIVE_ENTRY"
OVERLAPPING_ARCHIVE_ENTRIES = "OVERLAPPING_ARCHIVE_ENTRIES"
DECOMPRESSED_TOO_LARGE = "DECOMPRESSED_TOO_LARGE"
COMPRESSION_RATIO_TOO_HIGH = "COMPRESSION_RATIO_TOO_HIGH"

REASON_CODES = (
    COMPRESSION_RATIO_TOO_HIGH,
    DECOMPRESSED_TOO_LARGE,
    DUPLICATE_ARCHIVE_ENTRY,
    ENCRYPTED_ARCHIVE,
    MALFORMED_ARCHIVE,
    OVERLAPPING_ARCHIVE_ENTRIES,
    TOO_MANY_ARCHIVE_ENTRIES,
)
"""Every reason code this module refuses an archive with."""

RATIO_FLOOR_BYTES = 1024 * 1024
"""Entries inflating to at most this many bytes are not held to the compression ratio:
small, repetitive XML parts legitimately compress very well."""

STORED, DEFLATED = 0, 8
_BLOCK = 64 * 1024

_END = struct.Struct("<IHHHHIIH")
_END_SIGNATURE = 0x06054B50
_ZIP64_LOCATOR = struct.Struct("<IIQI")
_ZIP64_LOCATOR_SIGNATURE = 0x07064B50
_ZIP64_END = struct.Struct("<IQHHIIQQQQ")
_ZIP64_END_SIGNATURE = 0x06064B50
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_CENTRAL_SIGNATURE = 0x02014B50
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_LOCAL_SIGNATURE = 0x04034B50
_ZIP64_EXTRA = 0x0001
_MAX_COMMENT = 0xFFFF

_FLAG_ENCRYPTED = 0x0001
_FLAG_PATCHED = 0x0020
_FLAG_STRONG_ENCRYPTION = 0x0040
_FLAG_UTF8 = 0x0800


@dataclass(frozen=True)
class ArchiveLimits:
    """The caps one archive is read under."""

    max_entries: int
    max_decompressed_bytes: int
    max_compression_ratio: float

    @classmethod
    def from_settings(cls, settings: IngestSettings) -> ArchiveLimits:
        """The archive caps of the ingest settings."""
        return cls(
            max_entries=settings.max_archive_entries,
            max_decompressed_bytes=settings.max_decompressed_bytes,
            max_compression_ratio=settings.max_compression_ratio,
        )


@dataclass(frozen=True)
class ArchiveEntry:
    """One member as the central directory declares it."""

    name: str
    raw_name: bytes
    flags: int
    method: int
    crc: int
    compressed_size: int
    size: int
    header_offset: int


@dataclass(frozen=True)
class _Directory:
    entries: int
    offset: int
    size: int


@dataclass(frozen=True)
class _Span:
    entry: ArchiveEntry
    data_offset: int
    local_name: bytes

    @property
    def data_end(self) -> int:
        return self.data_offset + self.entry.compressed_size


class SafeZip:
    """A validated ZIP archive held in memory; members are read by name, within the caps."""

    def __init__(self, content: bytes, limits: ArchiveLimits) -> None:
        self._content = content
        self._limits = limits
        directory = _end_of_directory(content)
        entries = list(_central_entries(content, directory, limits.max_entries))
        spans = [_locate(content, entry) for entry in entries]
        _refuse_overlaps(spans, directory.offset)
        _refuse_mismatched_names(spans)
        _refuse_duplicates(entries)
        _refuse_declared_sizes(entries, limits)
        self._spans = {span.entry.name.lower(): span for span in spans}
        self.names: tuple[str, ...] = tuple(entry.name for entry in entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._spans

    def read(self, name: str) -> bytes:
        """The inflated bytes of member ``name`` (case-insensitive); CRC-checked."""
        span = self._spans.get(name.lower())
        if span is None:
            raise KeyError(name)
        data = memoryview(self._content)[span.data_offset : span.data_end]
        entry = span.entry
        inflated = bytes(data) if entry.method == STORED else _inflate(data, entry)
        if len(inflated) != entry.size or zlib.crc32(inflated) != entry.crc:
            raise InputRejected(MALFORMED_ARCHIVE, f"{_shown(entry)} fails its size or CRC check")
        return inflated


# ---------------------------------------------------------------------- the directory


def _end_of_directory(content: bytes) -> _Directory:
    """The central directory's place and size, from the (zip64) end record."""
    position = _end_record_position(content)
    (_, disk, directory_disk, _, entries, size, offset, _) = _END.unpack_from(content, position)
    directory_end = position
    if _has_zip64_locator(content, position):
        disk, directory_disk, entries, size, offset, directory_end = _zip64_end(content, position)
    elif 0xFFFF in (entries, disk, directory_disk) or 0xFFFFFFFF in (size, offset):
        raise InputRejected(MALFORMED_ARCHIVE, "zip64 sizes without a zip64 locator")
    if disk != 0 or directory_disk != 0:
        raise InputRejected(MALFORMED_ARCHIVE, "multi-disk archives are not supported")
    if offset + size != directory_end:
        # Data before the archive or between directory and end record: never in a package.
        raise InputRejected(MALFORMED_ARCHIVE, "the central directory is not where it claims")
    return _Directory(entries, offset, size)


def _end_record_position(content: bytes) -> int:
    """Where the end-of-directory record starts: the last signature whose comment fits."""
    lowest = max(0, len(content) - _END.size - _MAX_COMMENT)
    position = len(content) - _END.size
    signature = _END_SIGNATURE.to_bytes(4, "little")
    while position >= lowest:
        position = content.rfind(signature, lowest, position + 4)
        if position < 0:
            break
        comment_length = int.from_bytes(content[position + 20 : position + 22], "little")
        if position + _END.size + comment_length == len(content):
            return position
        position -= 1
    raise InputRejected(MALFORMED_ARCHIVE, "not a ZIP archive (no end-of-directory record)")


def _has_zip64_locator(content: bytes, end_position: int) -> bool:
    locator_position = end_position - _ZIP64_LOCATOR.size
    signature = content[locator_position : locator_position + 4] if locator_position >= 0 else b""
    return signature == _ZIP64_LOCATOR_SIGNATURE.to_bytes(4, "little")


def _zip64_end(content: bytes, end_position: int) -> tuple[int, int, int, int, int, int]:
    """Disks, entry count, directory size and offset, and where the zip64 record starts."""
    locator_position = end_position - _ZIP64_LOCATOR.size
    _, _, record_position, _ = _ZIP64_LOCATOR.unpack_from(content, locator_position)
    if record_position + _ZIP64_END.size > locator_position:
        raise InputRejected(MALFORMED_ARCHIVE, "the zip64 locator points past its own place")
    fields = _ZIP64_END.unpack_from(content, record_position)
    if fields[0] != _ZIP64_END_SIGNATURE:
        raise InputRejected(MALFORMED_ARCHIVE, "the zip64 end record is missing")
    _, _, _, _, disk, directory_disk, _, entries, size, offset = fields
    return disk, directory_disk, entries, size, offset, record_position


def _central_entries(content: bytes, directory: _Directory, max_entries: int
                     ) -> Iterator[ArchiveEntry]:
    """Entries of the central directory, refused as soon as there are too many."""
    if directory.entries > max_entries:
        raise InputRejected(TOO_MANY_ARCHIVE_ENTRIES,
                            f"{directory.entries} entries exceeds the limit of {max_entries}")
    position, end, count = directory.offset, directory.offset + directory.size, 0
    while position < end:
        count += 1
        if count > max_entries:
            raise InputRejected(TOO_MANY_ARCHIVE_ENTRIES,
                                f"more than {max_entries} entries in the directory")
        entry, position = _central_entry(content, position, end)
        yield entry
    if count != directory.entries:
        raise InputRejected(MALFORMED_ARCHIVE,
                            f"the directory holds {count} entries, not {directory.entries}")


def _central_entry(content: bytes, position: int, end: int) -> tuple[ArchiveEntry, int]:
    if position + _CENTRAL.size > end:
        raise InputRejected(MALFORMED_ARCHIVE, "truncated central directory")
    fields = _CENTRAL.unpack_from(content, position)
    (signature, _, _, flags, method, _, _, crc, compressed, size,
     name_length, extra_length, comment_length, disk, _, _, offset) = fields
    if signature != _CENTRAL_SIGNATURE:
        raise InputRejected(MALFORMED_ARCHIVE, "bad central directory record")
    name_start = position + _CENTRAL.size
    extra_start = name_start + name_length
    next_position = extra_start + extra_length + comment_length
    if next_position > end:
        raise InputRejected(MALFORMED_ARCHIVE, "truncated central directory")
    raw_name = content[name_start:extra_start]
    extra = content[extra_start : extra_start + extra_length]
    size, compressed, offset, disk = _apply_zip64(extra, size, compressed, offset, disk)
    if disk != 0:
        raise InputRejected(MALFORMED_ARCHIVE, "multi-disk archives are not supported")
    entry = ArchiveEntry(_decode_name(raw_name, flags), raw_name, flags, method, crc,
                         compressed, size, offset)
    _refuse_unreadable(entry)
    return entry, next_position


def _apply_zip64(extra: bytes, size: int, compressed: int, offset: int, disk: int
                 ) -> tuple[int, int, int, int]:
    """Sizes and offset with the zip64 extra field's values where the record says 0xFF..."""
    values = _zip64_values(extra)
    wanted = [size == 0xFFFFFFFF, compressed == 0xFFFFFFFF, offset == 0xFFFFFFFF]
    fields = [size, compressed, offset]
    for index, needed in enumerate(wanted):
        if needed:
            if not values:
                raise InputRejected(MALFORMED_ARCHIVE, "zip64 sizes without a zip64 field")
            fields[index] = values.pop(0)
    if disk == 0xFFFF and values:
        disk = values.pop(0)
    return fields[0], fields[1], fields[2], disk


def _zip64_values(extra: bytes) -> list[int]:
    position = 0
    while position + 4 <= len(extra):
        header_id, length = struct.unpack_from("<HH", extra, position)
        body = extra[position + 4 : position + 4 + length]
        if header_id == _ZIP64_EXTRA:
            return [int.from_bytes(body[i : i + 8], "little")
                    for i in range(0, len(body) - len(body) % 8, 8)]
        position += 4 + length
    return []


def _decode_name(raw_name: bytes, flags: int) -> str:
    if flags & _FLAG_UTF8:
        try:
            return raw_name.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputRejected(MALFORMED_ARCHIVE, "an entry name is not valid UTF-8") from exc
    return raw_name.decode("cp437")


def _refuse_unreadable(entry: ArchiveEntry) -> None:
    if entry.flags & (_FLAG_ENCRYPTED | _FLAG_STRONG_ENCRYPTION):
        raise InputRejected(ENCRYPTED_ARCHIVE, f"{_shown(entry)} is encrypted")
    if entry.flags & _FLAG_PATCHED or entry.method not in (STORED, DEFLATED):
        raise InputRejected(MALFORMED_ARCHIVE,
                            f"{_shown(entry)} uses unsupported compression {entry.method}")
    if entry.method == STORED and entry.compressed_size != entry.size:
        raise InputRejected(MALFORMED_ARCHIVE, f"{_shown(entry)} is stored with two sizes")


# ---------------------------------------------------------------------- layout checks


def _locate(content: bytes, entry: ArchiveEntry) -> _Span:
    """Where the entry's data starts, from its local header."""
    position = entry.header_offset
    if position + _LOCAL.size > len(content):
        raise InputRejected(MALFORMED_ARCHIVE, f"{_shown(entry)} points past the archive")
    fields = _LOCAL.unpack_from(content, position)
    if fields[0] != _LOCAL_SIGNATURE:
        raise InputRejected(MALFORMED_ARCHIVE, f"{_shown(entry)} has no local header")
    name_length, extra_length = fields[9], fields[10]
    name_start = position + _LOCAL.size
    local_name = content[name_start : name_start + name_length]
    return _Span(entry, name_start + name_length + extra_length, local_name)


def _refuse_overlaps(spans: list[_Span], directory_offset: int) -> None:
    """Each entry's header and data must lie before the next one's and before the directory."""
    ordered = sorted(spans, key=lambda span: (span.entry.header_offset, span.data_end))
    for before, after in pairwise(ordered):
        if after.entry.header_offset < before.data_end:
            raise InputRejected(
                OVERLAPPING_ARCHIVE_ENTRIES,
                f"{_shown(before.entry)} and {_shown(after.entry)} share archive bytes",
            )
    if ordered and ordered[-1].data_end > directory_offset:
        raise InputRejected(OVERLAPPING_ARCHIVE_ENTRIES,
                            f"{_shown(ordered[-1].entry)} runs into the central directory")


def _refuse_mismatched_names(spans: list[_Span]) -> None:
    for span in spans:
        if span.local_name != span.entry.raw_name:
            raise InputRejected(MALFORMED_ARCHIVE,
                                f"{_shown(span.entry)} has another name in its local header")


def _refuse_duplicates(entries: list[ArchiveEntry]) -> None:
    seen: set[str] = set()
    for entry in entries:
        key = entry.name.lower()
        if key in seen:
            raise InputRejected(DUPLICATE_ARCHIVE_ENTRY, f"{_shown(entry)} appears twice")
        seen.add(key)


def _refuse_declared_sizes(entries: list[ArchiveEntry], limits: ArchiveLimits) -> None:
    """Ratio first: an entry that inflates 1000:1 is a bomb whatever its size."""
    cap = limits.max_decompressed_bytes
    total = 0
    for entry in entries:
        ratio = entry.size / max(entry.compressed_size, 1)
        if entry.size > RATIO_FLOOR_BYTES and ratio > limits.max_compression_ratio:
            raise InputRejected(
                COMPRESSION_RATIO_TOO_HIGH,
                f"{_shown(entry)} inflates {ratio:.0f}:1, over {limits.max_compression_ratio:g}:1",
            )
        total += entry.size
        if total > cap:
            raise InputRejected(DECOMPRESSED_TOO_LARGE,
                                f"{_shown(entry)} brings the inflated size over {cap} bytes")


# ---------------------------------------------------------------------- inflating


def _inflate(data: memoryview, entry: ArchiveEntry) -> bytes:
    """Raw deflate in blocks; stops one block after the entry passes its declared size."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    pieces: list[bytes] = []
    produced, position, pending = 0, 0, b""
    try:
        while not inflater.eof:
            if not pending and position < len(data):
                pending = bytes(data[position : position + _BLOCK])
                position += _BLOCK
            piece = inflater.decompress(pending, _BLOCK)
            pending = inflater.unconsumed_tail
            if not piece and not pending and position >= len(data):
                break  # no input left and nothing more comes out: truncated
            produced += len(piece)
            if produced > entry.size:
                raise InputRejected(
                    MALFORMED_ARCHIVE, f"{_shown(entry)} inflates past its declared size"
                )
            pieces.append(piece)
    except zlib.error as exc:
        raise InputRejected(MALFORMED_ARCHIVE, f"{_shown(entry)}: {exc}") from exc
    if not inflater.eof:
        raise InputRejected(MALFORMED_ARCHIVE, f"{_shown(entry)} is truncated")
    return b"".join(pieces)


def _shown(entry: ArchiveEntry) -> str:
    return repr(entry.name[:120])
