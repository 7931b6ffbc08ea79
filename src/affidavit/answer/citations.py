"""``[src:xxxxxxxx]`` citation tags: finding them, and stripping those the prompt never had."""

from __future__ import annotations

import re
from collections.abc import Collection

SRC_PATTERN = re.compile(r"\[src:([0-9a-f]{8})\]", re.IGNORECASE)
"""A well-formed citation tag; group 1 is the 8-hex id."""

LOOSE_SRC_PATTERN = re.compile(r"\[\s*src\s*:\s*([^\[\]\n]{0,64}?)\s*\]", re.IGNORECASE)
"""Anything that looks like a citation tag, spacing variants and malformed ids included, so
that a malformed tag is never mistaken for prose and never survives unchecked."""

_TAG_WITH_LEADING_SPACE = re.compile(r"[ \t]*" + LOOSE_SRC_PATTERN.pattern, re.IGNORECASE)


def src_id(match: re.Match[str]) -> str:
    """The normalized id of a tag match: inner whitespace removed, lower case."""
    return "".join(match.group(1).split()).lower()


def cited_ids(text: str) -> tuple[str, ...]:
    """Ids of every tag in ``text`` (loose matching), normalized, first-seen order."""
    seen: dict[str, None] = {}
    for match in LOOSE_SRC_PATTERN.finditer(text):
        seen.setdefault(src_id(match), None)
    return tuple(seen)


def strip_fabricated(text: str, valid: Collection[str]) -> tuple[str, tuple[str, ...]]:
    """Remove every tag whose id was not in the prompt (with the spaces before it).

    Returns the cleaned text and the stripped ids, sorted and unique. Tags with a valid id
    are kept exactly as written, spacing variants included.
    """
    allowed = {v.lower() for v in valid}
    stripped: set[str] = set()

    def keep_or_drop(match: re.Match[str]) -> str:
        inner = LOOSE_SRC_PATTERN.search(match.group())
        assert inner is not None  # the outer pattern contains the loose one
        tag_id = src_id(inner)
        if tag_id in allowed:
            return match.group()
        stripped.add(tag_id)
        return ""

    # Removing a tag can join its neighbours into a new one ("[src:[src:x]zz]"), so repeat
    # until nothing changes; every pass removes at least one tag, so this ends.
    cleaned, previous = _TAG_WITH_LEADING_SPACE.sub(keep_or_drop, text), text
    while cleaned != previous:
        cleaned, previous = _TAG_WITH_LEADING_SPACE.sub(keep_or_drop, cleaned), cleaned
    return cleaned, tuple(sorted(stripped))
