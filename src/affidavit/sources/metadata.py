"""Declared document metadata: validation of front matter and sidecar mappings.

A sidecar is a YAML file named ``<filename>.meta.yaml`` next to the document it describes.
Both sidecars and Markdown front matter are mappings whose known keys are checked here;
unknown keys (``date``, ``tags`` ...) are ignored. A value of the wrong type is refused
rather than dropped: a document whose declared permissions cannot be read must not be
ingested with default ones.

``acl`` subjects look like ``user:cfo``, ``group:finance#member``, ``service:etl``, or
``*`` for everyone in the tenant. A ``null`` is treated as "not declared" for every key
except ``acl``, where it is refused because it reads like "nobody" but would mean "default".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from affidavit.errors import InputRejected
from affidavit.records import DocumentMetadata, ordered_unique
from affidavit.sources.safe_yaml import load_yaml_document

SIDECAR_SUFFIX = ".meta.yaml"
MALFORMED_METADATA = "MALFORMED_METADATA"
MALFORMED_SIDECAR = "MALFORMED_SIDECAR"

EVERYONE = "*"
ACL_SUBJECT = re.compile(r"(user|group|service):[A-Za-z0-9_.@*-]+(#[a-z_]+)?")
_LABEL = re.compile(r"[A-Z0-9_]+")
_MAX_FIELD_CHARS = 1024
# Metadata is a flat mapping; a generous bound still stops hostile nesting early.
_MAX_METADATA_DEPTH = 32


def parse_metadata(mapping: object, *, origin: str) -> DocumentMetadata:
    """Validate a front-matter or sidecar mapping into :class:`DocumentMetadata`."""
    if not isinstance(mapping, Mapping):
        raise InputRejected(MALFORMED_METADATA, f"{origin}: metadata must be a mapping")
    field = _FieldReader(mapping, origin)
    return DocumentMetadata(
        source_id=field.text("source_id"),
        title=field.text("title"),
        acl=field.acl(),
        classification=field.classification(),
        oracle_id=field.text("oracle_id"),
        frameworks=field.strings("frameworks") or (),
    )


def load_sidecar(data: bytes, *, origin: str) -> DocumentMetadata:
    """Read a ``.meta.yaml`` sidecar: YAML problems are ``MALFORMED_SIDECAR``."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputRejected(MALFORMED_SIDECAR, f"{origin}: not UTF-8 text") from exc
    try:
        mapping = load_yaml_document(text, max_depth=_MAX_METADATA_DEPTH)
    except InputRejected as exc:
        raise InputRejected(MALFORMED_SIDECAR, f"{origin}: {exc.detail}") from exc
    if not isinstance(mapping, Mapping):
        raise InputRejected(MALFORMED_SIDECAR, f"{origin}: a sidecar must be a YAML mapping")
    return parse_metadata(mapping, origin=origin)


class _FieldReader:
    """Typed access to one metadata mapping; every refusal names the key and the origin."""

    def __init__(self, mapping: Mapping[object, object], origin: str) -> None:
        self._mapping = mapping
        self._origin = origin

    def reject(self, key: str, problem: str) -> InputRejected:
        return InputRejected(MALFORMED_METADATA, f"{self._origin}: {key!r} {problem}")

    def text(self, key: str) -> str | None:
        value = self._mapping.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.reject(key, f"must be a string, not {_type_name(value)}")
        value = value.strip()
        if not value:
            raise self.reject(key, "must not be empty")
        if len(value) > _MAX_FIELD_CHARS:
            raise self.reject(key, f"is longer than {_MAX_FIELD_CHARS} characters")
        return value

    def strings(
        self, key: str, check: Callable[[str], bool] | None = None
    ) -> tuple[str, ...] | None:
        value = self._mapping.get(key)
        if value is None:
            return None
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise self.reject(key, "must be a string or a list of strings")
        cleaned = [item.strip() for item in items]
        for item in cleaned:
            if not item or len(item) > _MAX_FIELD_CHARS or (check and not check(item)):
                raise self.reject(key, f"has an invalid entry {item[:80]!r}")
        return ordered_unique(cleaned)

    def acl(self) -> tuple[str, ...] | None:
        if "acl" in self._mapping and self._mapping["acl"] is None:
            raise self.reject("acl", "is empty; write [] to grant no one, or omit it")
        return self.strings("acl", check=is_acl_subject)

    def classification(self) -> str | None:
        label = self.text("classification")
        if label is None:
            return None
        label = label.upper()
        if not _LABEL.fullmatch(label):
            raise self.reject("classification", "must be a label name (letters, digits, _)")
        return label


def is_acl_subject(subject: str) -> bool:
    """True for ``*`` and for subjects like ``user:cfo`` or ``group:finance#member``."""
    return subject == EVERYONE or ACL_SUBJECT.fullmatch(subject) is not None


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__
