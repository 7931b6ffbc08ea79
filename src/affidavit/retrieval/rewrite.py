"""The glossary multi-query rewriter: deterministic, rule-based, no model.

A glossary maps a term to its synonyms (``[retrieval.glossary] "net income" = ["net profit",
"earnings"]``); a term and its synonyms form one group. When a query mentions a member of a
group (whole words, case-insensitive), each other member of the group gives one variant
query with the mention replaced. The original query always comes first; variants follow in
glossary-term order, then group order; duplicates (ignoring case and spacing) are dropped;
at most ``max_queries`` queries are returned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from affidavit.config.settings import RetrievalSettings
from affidavit.errors import ConfigurationError

DEFAULT_MAX_QUERIES = 5


def mention_pattern(phrase: str) -> re.Pattern[str]:
    """Whole-word, case-insensitive, any-spacing pattern for ``phrase``.

    Scripts without spaces between words (CJK) match as substrings.
    """
    body = r"\s+".join(re.escape(word) for word in phrase.split())
    if any(ch.isalnum() and ch.isascii() for ch in phrase[:1] + phrase[-1:]):
        return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)
    return re.compile(body, re.IGNORECASE)


def _key(query: str) -> str:
    return " ".join(query.casefold().split())


@dataclass(frozen=True)
class GlossaryQueryRewriter:
    """Expands a query with glossary synonyms; the same query always gives the same list."""

    glossary: Mapping[str, Sequence[str]] = field(default_factory=dict)
    max_queries: int = DEFAULT_MAX_QUERIES

    def __post_init__(self) -> None:
        if self.max_queries < 1:
            raise ConfigurationError("must be at least 1", key="retrieval.max_queries")

    @classmethod
    def from_settings(cls, settings: RetrievalSettings) -> GlossaryQueryRewriter:
        """The rewriter ``[retrieval]`` describes (``glossary``, ``max_queries``)."""
        return cls(dict(settings.glossary), settings.max_queries)

    def groups(self) -> list[tuple[str, ...]]:
        """Each glossary term with its synonyms, in term order, blanks and repeats dropped."""
        out: list[tuple[str, ...]] = []
        for term in sorted(self.glossary):
            members: list[str] = []
            for phrase in (term, *self.glossary[term]):
                cleaned = " ".join(phrase.split())
                if cleaned and _key(cleaned) not in {_key(m) for m in members}:
                    members.append(cleaned)
            if len(members) > 1:
                out.append(tuple(members))
        return out

    def rewrite(self, query: str) -> list[str]:
        """The original query, then its glossary variants, at most ``max_queries`` in all."""
        queries = [query]
        seen = {_key(query)}
        for group in self.groups():
            for variant in _variants(query, group):
                if len(queries) >= self.max_queries:
                    return queries
                if _key(variant) not in seen:
                    seen.add(_key(variant))
                    queries.append(variant)
        return queries


def _variants(query: str, group: Sequence[str]) -> list[str]:
    """Replace every mention of a group member by each other member, longest mention first."""
    variants: list[str] = []
    for mentioned in sorted(group, key=lambda m: (-len(m), m)):
        pattern = mention_pattern(mentioned)
        if not pattern.search(query):
            continue
        for other in group:
            if other != mentioned:
                # Backslashes escaped: a synonym is literal text, never a group reference.
                variants.append(pattern.sub(other.replace("\\", "\\\\"), query))
        break  # a longer member already covers a shorter one inside it
    return variants
