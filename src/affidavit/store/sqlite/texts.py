"""The SQLite text plane: every text stored once (migration 17).

A document's text used to be in the database twice: its raw bytes in ``blobs`` and, again,
every chunk's text in ``chunks``. Now

* a blob is stored deflated (zlib, level 9: the same bytes give the same stored bytes)
  when that is smaller, ``blobs.encoding`` saying which (``raw`` or ``zlib``); the blob
  stays the authority, byte for byte once inflated;
* a version's normalised text is its blob's UTF-8 text in the common case (Markdown, plain
  text) and is then not stored again; otherwise (a PDF, HTML) it is stored once, deflated,
  in ``version_texts``;
* a chunk whose text is the span ``[start_offset, end_offset)`` of its version's text
  stores ``''`` and is read back from that span (a chunk is never empty: the chunker trims
  and drops blank spans). Any other chunk keeps its own text.

Only what the query has already admitted is filled in: the text of a chunk row that the
authorization filter returned. The texts of versions are cached by (tenant, version id), which
names one immutable text.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence

from affidavit.errors import StoreError

RAW = "raw"
ZLIB = "zlib"
# Characters of version text kept in memory across reads (hits are read back again and again).
CACHE_CHARS = 16_000_000

Read = Callable[[str, Sequence[object]], list[tuple[object, ...]]]


def deflate(content: bytes) -> bytes:
    return zlib.compress(content, 9)


def pack_blob(content: bytes) -> tuple[bytes, str]:
    """The stored form of a blob and its encoding: deflated only when that is smaller."""
    packed = deflate(content)
    return (packed, ZLIB) if len(packed) < len(content) else (content, RAW)


def unpack_blob(content: object, encoding: object) -> bytes:
    data: bytes = bytes(content)  # type: ignore[call-overload]
    if encoding == ZLIB:
        return zlib.decompress(data)
    if encoding in (RAW, None):
        return data
    raise StoreError(f"unknown blob encoding {encoding!r}")


def utf8_text(content: bytes) -> str | None:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def blob_span(content: object, encoding: object, start: object, end: object) -> str | None:
    """The characters ``[start, end)`` of a stored blob's UTF-8 text (None: not text).
    A SQL function of the store's connection, for migration 17."""
    if content is None:
        return None
    text = utf8_text(unpack_blob(content, encoding))
    return None if text is None else text[int(str(start)):int(str(end))]


def version_text_row(normalized: str, blob_content: bytes) -> bytes | None:
    """What ``version_texts`` holds for a version: nothing when its normalised text is its
    blob's UTF-8 text, else that text deflated."""
    if utf8_text(blob_content) == normalized:
        return None
    return deflate(normalized.encode("utf-8"))


def stored_chunk_text(normalized: str, start: int, end: int, text: str) -> str:
    """What ``chunks.text`` holds: '' when the chunk is the span of its version's text."""
    return "" if text and normalized[start:end] == text else text


def sire_json_stored(tuple_json: str) -> bytes:
    """A SIRE tuple as ``sire.tuple_json`` holds it: deflated (its terms are most of a
    record; rows written before migration 17 hold the JSON text, read as it is)."""
    return deflate(tuple_json.encode("utf-8"))


def sire_json(stored: object) -> str:
    if isinstance(stored, bytes):
        return zlib.decompress(stored).decode("utf-8")
    return str(stored)


class VersionTexts:
    """Fills in the text of chunk rows stored as spans, from their versions' texts."""

    def __init__(self, max_chars: int = CACHE_CHARS):
        self.max_chars = max_chars
        self._texts: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def fill(self, read: Read, tenant: str, rows: Sequence[tuple[object, ...]], *,
             text: int, version: int, start: int, end: int) -> list[tuple[object, ...]]:
        """``rows`` with column ``text`` filled in where it is a span of the version named by
        column ``version`` (columns ``start``, ``end``)."""
        wanted = sorted({str(r[version]) for r in rows if r[text] == ""})
        if not wanted:
            return list(rows)
        texts = self.texts(read, tenant, wanted)
        out: list[tuple[object, ...]] = []
        for row in rows:
            if row[text] == "":
                whole = texts.get(str(row[version]))
                if whole is None:
                    raise StoreError(f"the text of version {row[version]} is missing")
                span = whole[int(str(row[start])):int(str(row[end]))]
                row = (*row[:text], span, *row[text + 1:])
            out.append(row)
        return out

    def texts(self, read: Read, tenant: str, version_ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        missing: list[str] = []
        with self._lock:
            for vid in version_ids:
                cached = self._texts.get((tenant, vid))
                if cached is None:
                    missing.append(vid)
                else:
                    self._texts.move_to_end((tenant, vid))
                    found[vid] = cached
        for part in range(0, len(missing), 500):
            ids = missing[part:part + 500]
            rows = read(
                "SELECT v.version_id, t.text, CASE WHEN t.text IS NULL THEN b.content END, "
                "b.encoding FROM versions v LEFT JOIN version_texts t ON t.tenant_id = "
                "v.tenant_id AND t.version_id = v.version_id LEFT JOIN blobs b ON "
                "b.tenant_id = v.tenant_id AND b.raw_digest = v.raw_digest WHERE "
                f"v.tenant_id = ? AND v.version_id IN ({','.join('?' * len(ids))})",
                (tenant, *ids))
            for named, own, blob, encoding in rows:
                whole = _version_text(own, blob, encoding)
                if whole is not None:
                    found[str(named)] = whole
                    self._keep(tenant, str(named), whole)
        return found

    def _keep(self, tenant: str, version_id: str, text: str) -> None:
        if len(text) > self.max_chars // 4:
            return
        with self._lock:
            if (tenant, version_id) in self._texts:
                return
            self._texts[(tenant, version_id)] = text
            self._chars += len(text)
            while self._chars > self.max_chars:
                _, dropped = self._texts.popitem(last=False)
                self._chars -= len(dropped)


def _version_text(own: object, blob: object, encoding: object) -> str | None:
    """A version's text: its own (deflated) row, else its blob's UTF-8 text."""
    if own is not None:
        return zlib.decompress(unpack_blob(own, RAW)).decode("utf-8")
    return None if blob is None else utf8_text(unpack_blob(blob, encoding))
