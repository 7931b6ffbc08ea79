"""SIRE identity proposal: spec 003 Algorithm 1, deterministic, no model.

``SIRE = (Subject, Included, Relevant, Excluded)`` of one document version:

1. **Subject** ``S``: the normalized ``oracle_id`` (casefolded; every run of characters
   other than letters and digits becomes one underscore; no leading or trailing
   underscore). Without a usable oracle id, the normalized title; without that, the
   normalized stem of the source id (its last path segment without the extension);
   failing all three, ``source_`` plus 12 hex of the source id's hash, so that a Subject
   always exists.
2. Candidate terms, four extractors over the body text:
   phrases (configured domain phrases found as whole phrases), acronyms (``[A-Z]{2,8}``
   as whole words, at least twice, shouted stop words such as ``THE`` left out),
   significant words (alphabetic words of four or more letters, at least four times,
   not in :data:`STOP_WORDS`) and capitalized terms (runs of capitalized words that are
   not a sentence's opening word, at least twice).
3. **Included** ``I``: phrases, then acronyms, then words, without repeats, cut at
   ``max_included``. Capitalized terms are not Included (step 4 uses them).
4. **Relevant** ``R``: the declared frameworks, then the capitalized terms, minus ``I``,
   without repeats, cut at ``max_relevant``.
5. The source's identity tokens: tokens of oracle id, Subject, title and frameworks.
6. **Excluded** ``E``: the configured default excludes, in configuration order, except
   those whose every token belongs to the identity (so a SOC 2 document never excludes
   ``soc 2``), cut at ``max_excluded``.

Every term is stored folded (NFKC, casefold, single spaces). Order inside a class:
phrases by first appearance in the text (ties: dictionary order); acronyms, words and
capitalized terms by descending count, then first appearance, then the term itself.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from affidavit.config.settings import SireSettings
from affidavit.errors import ConfigurationError
from affidavit.identity.terms import (
    display_term,
    fold,
    identity_tokens,
    occurrences,
    split_by_identity,
    term_tokens,
)
from affidavit.records import SireTuple, ordered_unique, stable_hash
from affidavit.text.forms import nfkc
from affidavit.text.tokenize import CJK_CLASS

MIN_ACRONYM_COUNT = 2
MIN_WORD_COUNT = 4
MIN_WORD_CHARS = 4
MIN_CAPITALIZED_COUNT = 2

# Common English function words: never a significant word, acronym or capitalized term.
# Normative verbs (shall, must, should) are here because policy text repeats them on every
# line; they say nothing about what a source covers.
# fmt: off
STOP_WORDS = frozenset((
    "a", "about", "above", "after", "again", "against", "all", "also", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "could", "did", "does", "doing", "down", "during", "each", "either",
    "else", "every", "few", "for", "from", "further", "had", "has", "have", "having", "here",
    "how", "however", "if", "in", "into", "is", "it", "its", "itself", "just", "may", "might",
    "more", "most", "must", "neither", "no", "nor", "not", "now", "of", "off", "on", "once",
    "only", "or", "other", "otherwise", "our", "ours", "out", "over", "own", "same", "shall",
    "should", "since", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "then", "there", "therefore", "these", "they", "this", "those", "through", "thus", "to",
    "under", "until", "upon", "very", "was", "we", "were", "what", "when", "where", "whereas",
    "whether", "which", "while", "who", "whom", "whose", "why", "will", "with", "within",
    "without", "would", "yet", "you", "your", "yours",
))
# fmt: on

_WORD = re.compile(f"[^\\W_{CJK_CLASS}]+")
_ACRONYM = re.compile(f"(?<![^\\W_{CJK_CLASS}])[A-Z]{{2,8}}(?![^\\W_{CJK_CLASS}])")
_NON_ALNUM = re.compile(r"[\W_]+")
_PATH_SEPARATOR = re.compile(r"[/\\]")
_RUN_GAP = frozenset(" \t")
_SENTENCE_OPENERS = frozenset(" \t\"'([{“‘«")
_SENTENCE_BREAKS = frozenset(".!?:;\n\r\f\v\u2028\u2029。！？•·*#>|-–—")


@dataclass(frozen=True)
class SireInputs:
    """What Algorithm 1 knows about a document besides its text (its front matter)."""

    oracle_id: str | None
    title: str | None
    frameworks: tuple[str, ...]
    source_id: str


# --------------------------------------------------------------------------- subject


def normalize_subject(value: str) -> str:
    """Casefolded, non-alphanumerics as single underscores, none leading or trailing."""
    return _NON_ALNUM.sub("_", fold(value)).strip("_")


def source_stem(source_id: str) -> str:
    """Last path segment of a source id, without its extension (``a/b/soc2.md`` -> ``soc2``)."""
    name = _PATH_SEPARATOR.split(source_id.rstrip("/\\"))[-1]
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem else name


def subject_for(inputs: SireInputs) -> str:
    """Step 1: the Subject, with the documented fallbacks."""
    for candidate in (inputs.oracle_id, inputs.title, source_stem(inputs.source_id)):
        subject = normalize_subject(candidate or "")
        if subject:
            return subject
    return "source_" + stable_hash("sire-subject", inputs.source_id)[:12]


# --------------------------------------------------------------------------- extractors


def _ranked(counts: dict[str, int], first_seen: dict[str, int], min_count: int) -> list[str]:
    """Terms seen at least ``min_count`` times: most frequent first, then earliest, then A-Z."""
    kept = [term for term, count in counts.items() if count >= min_count]
    return sorted(kept, key=lambda term: (-counts[term], first_seen[term], term))


def _tally(found: Iterable[tuple[str, int]]) -> tuple[dict[str, int], dict[str, int]]:
    """Counts and first offsets of ``(term, offset)`` pairs given in text order."""
    counts: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for term, offset in found:
        counts[term] = counts.get(term, 0) + 1
        first_seen.setdefault(term, offset)
    return counts, first_seen


def phrase_extract(text: str, domain_phrases: Sequence[str]) -> list[str]:
    """Configured phrases present in ``text``, by first appearance (ties: dictionary order)."""
    folded = fold(text)
    found: list[tuple[int, int, str]] = []
    for rank, phrase in enumerate(ordered_unique([display_term(p) for p in domain_phrases])):
        starts = occurrences(folded, phrase)
        if starts:
            found.append((starts[0], rank, phrase))
    return [phrase for _, _, phrase in sorted(found)]


def acronym_extract(text: str) -> list[str]:
    """Whole-word ``[A-Z]{2,8}`` tokens seen at least twice, folded."""
    pairs = (
        (fold(m.group()), m.start())
        for m in _ACRONYM.finditer(nfkc(text))
        if fold(m.group()) not in STOP_WORDS
    )
    return _ranked(*_tally(pairs), MIN_ACRONYM_COUNT)


def significant_word_extract(text: str) -> list[str]:
    """Alphabetic words of 4+ letters seen at least 4 times (any case), minus stop words."""
    # Counted in C (Counter over findall); a word's first appearance is its place among the
    # distinct words in text order, which orders ties exactly as its first offset would.
    words = _WORD.findall(fold(text))
    counts = Counter(words)
    first_seen = {word: rank for rank, word in enumerate(dict.fromkeys(words))}
    kept = [word for word, count in counts.items()
            if count >= MIN_WORD_COUNT and len(word) >= MIN_WORD_CHARS and word.isalpha()
            and word not in STOP_WORDS]
    return sorted(kept, key=lambda word: (-counts[word], first_seen[word], word))


def capitalized_term_extract(text: str) -> list[str]:
    """Runs of capitalized words (proper nouns) seen at least twice, folded.

    A run is capitalized words separated only by spaces or tabs. A run that opens a
    sentence (after ``.``, ``!``, ``?``, ``:``, ``;``, a line break, a list bullet or the
    start of the text) is an ordinary sentence start when it is one word long and is
    dropped; a longer run loses its first word only when that word is a stop word (``The
    Board`` -> ``board``; ``Access Control Policy`` stays whole).
    """
    normalized = nfkc(text)
    pairs = (
        (term, start)
        for start, words in _capitalized_runs(normalized)
        if (term := _proper_noun(normalized, start, words))
    )
    return _ranked(*_tally(pairs), MIN_CAPITALIZED_COUNT)


def _is_capitalized(word: str) -> bool:
    return len(word) >= 2 and word.isalpha() and word[0].isupper() and not word.isupper()


def _capitalized_runs(text: str) -> list[tuple[int, list[str]]]:
    """``(start offset, words)`` of each maximal run of capitalized words."""
    runs: list[tuple[int, list[str]]] = []
    previous_end = -1
    for match in _WORD.finditer(text):
        word = match.group()
        # The first test alone turns away most words, cheaply.
        if not word[0].isupper() or not _is_capitalized(word):
            previous_end = -1
            continue
        gap = text[previous_end : match.start()] if previous_end >= 0 else ""
        if runs and gap and set(gap) <= _RUN_GAP:
            runs[-1][1].append(word)
        else:
            runs.append((match.start(), [word]))
        previous_end = match.end()
    return runs


def _opens_sentence(text: str, position: int) -> bool:
    index = position - 1
    while index >= 0 and text[index] in _SENTENCE_OPENERS:
        index -= 1
    return index < 0 or text[index] in _SENTENCE_BREAKS


def _proper_noun(text: str, start: int, words: list[str]) -> str:
    """The folded term a run stands for, or "" when it is only a sentence opening."""
    if _opens_sentence(text, start):
        if len(words) == 1:
            return ""
        if fold(words[0]) in STOP_WORDS:
            words = words[1:]
    return display_term(" ".join(words))


# --------------------------------------------------------------------------- algorithm 1


def _check_caps(settings: SireSettings) -> None:
    for name in ("max_included", "max_relevant", "max_excluded"):
        if getattr(settings, name) < 0:
            raise ConfigurationError("must not be negative", key=f"sire.{name}")


def self_identity_tokens(inputs: SireInputs, subject: str) -> frozenset[str]:
    """Step 5: tokens of oracle id, Subject, title and frameworks (underscores separate)."""
    parts = [inputs.oracle_id or "", subject, inputs.title or "", *inputs.frameworks]
    return identity_tokens(parts)


def _excluded(settings: SireSettings, identity: frozenset[str]) -> tuple[str, ...]:
    """Step 6: default excludes (config order) that do not collapse into the identity."""
    kept, _ = split_by_identity(settings.default_excludes, identity)
    return kept[: settings.max_excluded]


def propose_sire(inputs: SireInputs, text: str, settings: SireSettings) -> SireTuple:
    """Algorithm 1: the proposed SIRE tuple of a document version (state PROPOSED)."""
    _check_caps(settings)
    subject = subject_for(inputs)
    prioritized = [
        *phrase_extract(text, settings.domain_phrases),
        *acronym_extract(text),
        *significant_word_extract(text),
    ]
    included = ordered_unique(prioritized)[: settings.max_included]
    declared = [display_term(f) for f in inputs.frameworks]
    relevant_pool = [*declared, *capitalized_term_extract(text)]
    relevant = [t for t in ordered_unique(relevant_pool) if t and t not in included]
    identity = self_identity_tokens(inputs, subject)
    return SireTuple(
        subject=subject,
        included=included,
        relevant=tuple(relevant[: settings.max_relevant]),
        excluded=_excluded(settings, identity),
    )


def excluded_conflicts(sire: SireTuple, inputs: SireInputs) -> tuple[str, ...]:
    """Excluded terms that would match the source's own identity (an approval must fail).

    A term conflicts when every one of its tokens belongs to the identity, which includes
    a term with no letters or digits at all (it could never be enforced).
    """
    identity = self_identity_tokens(inputs, sire.subject)
    return tuple(term for term in sire.excluded if term_tokens(term) <= identity)
