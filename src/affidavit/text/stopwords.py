"""Built-in stop word lists, named in settings with a leading ``@``.

``[lexical] stop_words = ["@english", "hereby"]`` means the built-in English list plus one
word of the deployment's own. A list is data: changing one changes the tokenizer signature
and so re-indexes the lexical plane only.

``english`` is the 33-word set of Lucene's ``EnglishAnalyzer`` (also what Anserini and
``bm25s`` use), so that BM25 figures are comparable with theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from affidavit.errors import ConfigurationError

LIST_PREFIX = "@"

ENGLISH = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
)

BUILTIN_STOP_WORDS: Mapping[str, tuple[str, ...]] = {"english": ENGLISH}
"""Name (without the ``@``) to words."""


def expand_stop_words(entries: Iterable[str]) -> tuple[str, ...]:
    """Replace every ``@name`` entry by the built-in list of that name; keep other words.

    An unknown list name is a :class:`~affidavit.errors.ConfigurationError`, never silently
    an empty list: a typo must not switch stop words off.
    """
    words: list[str] = []
    for entry in entries:
        name = entry.strip()
        if not name.startswith(LIST_PREFIX):
            words.append(entry)
            continue
        listed = BUILTIN_STOP_WORDS.get(name[len(LIST_PREFIX):].lower())
        if listed is None:
            known = ", ".join(LIST_PREFIX + n for n in sorted(BUILTIN_STOP_WORDS))
            raise ConfigurationError(f"unknown stop word list {name!r} (known: {known})",
                                     key="lexical.stop_words")
        words.extend(listed)
    return tuple(words)
