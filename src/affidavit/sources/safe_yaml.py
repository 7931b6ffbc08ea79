"""YAML for untrusted input: plain data only, no anchors or aliases, bounded nesting.

PyYAML's ``safe_load`` already refuses Python object tags, but it still expands aliases
(the "billion laughs" bomb), accepts ``!!set`` and ``!!binary`` values that have no stable
text form, keeps the last of two duplicate keys silently, and composes nested collections
recursively. This loader refuses all of those before any value is built, so sidecars, front
matter and ``.yaml`` documents all obey one set of rules.

Refusals raise :class:`~affidavit.errors.InputRejected` with ``MALFORMED_YAML`` or
``NESTING_TOO_DEEP``; callers re-raise with the reason code of what they were reading.
"""

from __future__ import annotations

from typing import cast

import yaml
from yaml.events import AliasEvent, CollectionStartEvent, NodeEvent
from yaml.nodes import MappingNode, Node

from affidavit.errors import InputRejected

MALFORMED_YAML = "MALFORMED_YAML"
NESTING_TOO_DEEP = "NESTING_TOO_DEEP"

_CORE_TAG_PREFIX = "tag:yaml.org,2002:"
# Explicit tags a document may use: the ones whose values are plain, printable data.
_ALLOWED_EXPLICIT_TAGS = frozenset(
    _CORE_TAG_PREFIX + name
    for name in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp")
) | {"!"}


class _UntrustedLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors, aliases, unknown tags, duplicate keys, deep nesting."""

    def __init__(self, text: str, *, max_depth: int) -> None:
        super().__init__(text)
        self._max_depth = max_depth
        self._depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        _refuse_event(event)
        if not isinstance(event, CollectionStartEvent):
            return super().compose_node(parent, index)
        # Composition recurses once per collection level; counting here stops a deep
        # document long before Python's own recursion limit is near.
        self._depth += 1
        try:
            if self._depth > self._max_depth:
                raise InputRejected(
                    NESTING_TOO_DEEP, f"nesting deeper than {self._max_depth} levels"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[object, object]:
        mapping = cast(dict[object, object], super().construct_mapping(node, deep=deep))
        # ``node.value`` holds every key after merges were flattened: fewer entries in the
        # result means a key was given twice and one value would be silently dropped.
        if len(mapping) < len(node.value):
            raise InputRejected(MALFORMED_YAML, f"duplicate key {_where(node)}")
        return mapping


def _refuse_event(event: object) -> None:
    if isinstance(event, AliasEvent):
        raise InputRejected(MALFORMED_YAML, f"aliases are not allowed {_where(event)}")
    if not isinstance(event, NodeEvent):
        return
    if event.anchor is not None:
        raise InputRejected(MALFORMED_YAML, f"anchors are not allowed {_where(event)}")
    tag = getattr(event, "tag", None)
    if tag is not None and tag not in _ALLOWED_EXPLICIT_TAGS:
        raise InputRejected(MALFORMED_YAML, f"tag {tag!r} is not allowed {_where(event)}")


def _where(item: object) -> str:
    mark = getattr(item, "start_mark", None)
    if mark is None:
        return ""
    return f"(line {mark.line + 1}, column {mark.column + 1})"


def load_yaml_documents(text: str, *, max_depth: int) -> list[object]:
    """Every document of a YAML stream as plain data (dict, list, str, int, float, ...)."""
    try:
        return _read_documents(text, max_depth)
    except InputRejected:
        raise
    except yaml.YAMLError as exc:
        raise InputRejected(MALFORMED_YAML, _summary(exc)) from exc
    except (ValueError, OverflowError) as exc:
        # Scalars that match a core pattern but cannot be built (a 13th month, an
        # integer longer than Python converts) surface as plain value errors.
        raise InputRejected(MALFORMED_YAML, f"invalid value: {_summary(exc)}") from exc
    except RecursionError as exc:
        raise InputRejected(NESTING_TOO_DEEP, "nesting too deep to read") from exc


def _read_documents(text: str, max_depth: int) -> list[object]:
    loader = _UntrustedLoader(text, max_depth=max_depth)
    try:
        documents: list[object] = []
        while loader.check_node():
            documents.append(cast(object, loader.get_data()))
        return documents
    finally:
        loader.dispose()


def load_yaml_document(text: str, *, max_depth: int) -> object:
    """The single document of a YAML stream (``None`` when the stream is empty)."""
    documents = load_yaml_documents(text, max_depth=max_depth)
    if len(documents) > 1:
        raise InputRejected(MALFORMED_YAML, "expected one YAML document, found several")
    return documents[0] if documents else None


def _summary(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__
