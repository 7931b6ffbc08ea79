"""The HTTPS manifest: which documents a publisher lists, where they are, what they declare.

A manifest is a JSON object::

    {"documents": [{"source_id": "policies/travel.md", "url": "policies/travel.md",
                    "rev": "2024-03-01", "title": "...", "acl": ["group:staff#member"],
                    "classification": "INTERNAL", "oracle_id": "...", "frameworks": [...]}]}

``url`` is absolute or relative to the manifest's URL as given (not to where a redirect
led, so that a redirect cannot change identities). Without ``source_id`` a document is
identified by its path relative to the manifest's folder, which is what the local folder
transport uses for the same tree, so a tree served from disk, over HTTPS or over SFTP gets
the same node ids. The manifest's ``source_id`` is such a default, like a path: a source id
declared in the document's front matter wins over it. Every other key is declared
metadata, validated like a sidecar. An entry without ``rev`` gets the sha256 of the bytes.

Reading is strict: invalid JSON, a duplicate key, ``NaN`` or a missing ``documents`` list
refuses the whole manifest (``MALFORMED_MANIFEST``); a broken entry is kept with its
rejection so the run quarantines it and goes on.
"""

from __future__ import annotations

import json
from dataclasses import replace

import httpx

from affidavit.errors import InputRejected
from affidavit.sources.metadata import parse_metadata
from affidavit.sources.remote import RemoteEntry

MALFORMED_MANIFEST = "MALFORMED_MANIFEST"

_MAX_FIELD_CHARS = 1024


def parse_manifest(data: bytes, manifest_url: httpx.URL) -> list[RemoteEntry]:
    """The entries of a manifest; a broken entry is kept, carrying its rejection."""
    try:
        document = json.loads(
            data.decode("utf-8-sig"),
            object_pairs_hook=_refuse_duplicate_keys,
            parse_constant=_refuse_constant,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputRejected(MALFORMED_MANIFEST, f"not valid JSON: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("documents"), list):
        raise InputRejected(MALFORMED_MANIFEST, 'expected an object with a "documents" list')
    items: list[object] = document["documents"]
    return [_manifest_entry(item, index, manifest_url) for index, item in enumerate(items)]


def _manifest_entry(item: object, index: int, base: httpx.URL) -> RemoteEntry:
    origin = f"manifest entry {index}"
    if not isinstance(item, dict):
        return _broken(f"#{index}", origin, f"{origin}: must be an object")
    declared_id = item.get("source_id")
    declared = declared_id.strip() if isinstance(declared_id, str) else ""
    fallback_id = declared or f"#{index}"
    raw_url = item.get("url")
    if not isinstance(raw_url, str) or not raw_url.strip():
        return _broken(fallback_id, origin, f'{origin}: needs a "url" string')
    try:
        url = base.join(raw_url.strip())
    except httpx.InvalidURL as exc:
        return _broken(fallback_id, origin, f"{origin}: invalid url ({exc})")
    alias = relative_location(url, base)
    try:
        metadata = parse_metadata(item, origin=origin)
        rev = _revision(item.get("rev"), origin)
    except InputRejected as exc:
        return RemoteEntry(declared or alias, alias, str(url),
                           rejection=(exc.reason_code, exc.detail))
    return RemoteEntry(
        source_id=metadata.source_id or alias,
        alias=alias,
        location=str(url),
        metadata=replace(metadata, source_id=None),
        rev=rev,
    )


def _broken(source_id: str, alias: str, problem: str) -> RemoteEntry:
    return RemoteEntry(source_id, alias, "", rejection=(MALFORMED_MANIFEST, problem))


def _revision(value: object, origin: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip() and len(value) <= _MAX_FIELD_CHARS:
        return value.strip()
    raise InputRejected(MALFORMED_MANIFEST, f"{origin}: 'rev' must be a non-empty string")


def relative_location(url: httpx.URL, base: httpx.URL) -> str:
    """``url``'s path relative to ``base``'s folder when under it, else its whole path."""
    folder = base.path.rsplit("/", 1)[0] + "/"
    same_origin = (url.scheme, url.host, url.port) == (base.scheme, base.host, base.port)
    if same_origin and url.path.startswith(folder) and len(url.path) > len(folder):
        return url.path[len(folder) :]
    return url.path.lstrip("/") or "/"


def single_document_entry(url: str) -> RemoteEntry:
    """A document URL on its own: identified by its path."""
    location = httpx.URL(url).path.lstrip("/") or "/"
    return RemoteEntry(source_id=location, alias=location, location=url)


def _refuse_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    mapping = dict(pairs)
    if len(mapping) < len(pairs):
        raise ValueError("a key is given twice")
    return mapping


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON value")
