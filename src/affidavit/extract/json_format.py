"""JSON: parsed after a bracket scan that bounds nesting, rendered as record paragraphs."""

from __future__ import annotations

import json
import re
from itertools import accumulate

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract.layout import RenderedText, rendered_budget
from affidavit.extract.structured import render_records, top_level_title
from affidavit.records import ExtractedDocument

MALFORMED_JSON = "MALFORMED_JSON"
NESTING_TOO_DEEP = "NESTING_TOO_DEEP"

_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_DEPTH_CHANGE = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonParser:
    """Parser for ``.json`` files."""

    formats: tuple[str, ...] = (".json",)

    def parse(self, text: str, *, limits: IngestSettings) -> ExtractedDocument:
        """Each top-level field (or list item) becomes one ``record`` paragraph."""
        check_json_depth(text, limits.max_nesting_depth)
        try:
            value = json.loads(text, object_pairs_hook=_unique_keys)
        except RecursionError as exc:
            raise InputRejected(NESTING_TOO_DEEP, "nesting too deep to read") from exc
        except ValueError as exc:  # JSONDecodeError, duplicate keys, oversized integers
            raise InputRejected(MALFORMED_JSON, str(exc)[:300]) from exc
        rendered = RenderedText(max_paragraphs=limits.max_paragraphs,
                                max_chars=rendered_budget(len(text), limits))
        render_records([value], rendered)
        return ExtractedDocument(
            text=rendered.text,
            paragraphs=rendered.paragraphs,
            format="json",
            title=top_level_title([value]),
        )


def check_json_depth(text: str, max_depth: int) -> None:
    """Refuse JSON nested deeper than ``max_depth`` before any parser recurses into it.

    Strings are blanked out first, so brackets inside them do not count; the remaining
    brackets are summed in C (``accumulate``), never by Python recursion.
    """
    if text.count("[") + text.count("{") <= max_depth:
        return  # not enough brackets to be too deep: the common case costs two counts
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    deepest = max(accumulate(map(_DEPTH_CHANGE.__getitem__, brackets)), default=0)
    if deepest > max_depth:
        raise InputRejected(NESTING_TOO_DEEP, f"nesting deeper than {max_depth} levels")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """An object whose keys are all distinct; a repeated key would hide one of its values."""
    mapping: dict[str, object] = {}
    for key, value in pairs:
        if key in mapping:
            raise ValueError(f"duplicate key {key[:80]!r}")
        mapping[key] = value
    return mapping
