"""``[src:xxxxxxxx]`` citation tags: finding them, and stripping those the prompt never had.

A tag is looked for in the text as every matcher reads it
(:func:`affidavit.text.matching.mapped_for_matching`), so that one that merely looks like a tag
to a reader (a zero-width character or markup inside it, full-width brackets or colon) is
rewritten to its plain form first (:func:`canonical_tags`): a disguised fabricated id is
stripped like any other, and a disguised valid id is recognised.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from affidavit.text.matching import mapped_for_matching

SRC_PATTERN = re.compile(r"\[src:([0-9a-f]{8})\]", re.IGNORECASE)
"""A well-formed citation tag; group 1 is the 8-hex id."""

LOOSE_SRC_PATTERN = re.compile(r"\[\s*src\s*:\s*([^\[\]\n]{0,64}?)\s*\]", re.IGNORECASE)
"""Anything that looks like a citation tag, spacing variants and malformed ids included, so
that a malformed tag is never mistaken for prose and never survives unchecked."""

_TAG_WITH_LEADING_SPACE = re.compile(r"[ \t]*" + LOOSE_SRC_PATTERN.pattern, re.IGNORECASE)


def src_id(match: re.Match[str]) -> str:
    """The normalized id of a tag match: inner whitespace removed, lower case."""
    return "".join(match.group(1).split()).lower()


# Brackets and colons that read as "[", "]" and ":" but that NFKC leaves alone; each maps
# to one character, so offsets into the normalised text stay valid.
_LOOKALIKES = str.maketrans({"【": "[", "】": "]", "〔": "[", "〕": "]", "⟦": "[", "⟧": "]",
                             "〖": "[", "〗": "]", "∶": ":", "꞉": ":", "˸": ":"})


def canonical_tags(text: str) -> str:
    """``text`` with every tag that only looks like one rewritten as ``[src:<id>]``.

    A tag already written plainly (spacing and letter case aside) is left exactly as it
    is; everything outside tags is untouched.
    """
    mapped = mapped_for_matching(text)
    readable = mapped.text.translate(_LOOKALIKES)
    pieces: list[str] = []
    done = 0
    for match in LOOSE_SRC_PATTERN.finditer(readable):
        first, last = mapped.source_span(*match.span())
        if first < done:
            continue
        plain = LOOSE_SRC_PATTERN.fullmatch(text, first, last)
        if plain is not None and src_id(plain) == src_id(match):
            continue
        pieces.extend((text[done:first], f"[src:{src_id(match)}]"))
        done = last
    pieces.append(text[done:])
    return "".join(pieces)


def cited_ids(text: str) -> tuple[str, ...]:
    """Ids of every tag in ``text`` (loose matching, disguises included), normalized,
    first-seen order."""
    seen: dict[str, None] = {}
    for match in LOOSE_SRC_PATTERN.finditer(canonical_tags(text)):
        seen.setdefault(src_id(match), None)
    return tuple(seen)


def strip_fabricated(text: str, valid: Collection[str]) -> tuple[str, tuple[str, ...]]:
    """Remove every tag whose id was not in the prompt (with the spaces before it).

    Returns the cleaned text and the stripped ids, sorted and unique. Disguised tags are
    made plain first (:func:`canonical_tags`); other tags with a valid id are kept exactly
    as written, spacing variants included.
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
    # Making tags plain can likewise reveal one that was hidden, so both steps repeat.
    cleaned, previous = text, None
    while cleaned != previous:
        previous = cleaned
        cleaned = _TAG_WITH_LEADING_SPACE.sub(keep_or_drop, canonical_tags(cleaned))
    return cleaned, tuple(sorted(stripped))
