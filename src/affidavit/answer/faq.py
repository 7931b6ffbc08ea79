"""The FAQ short-circuit (spec 000): SME-vetted question -> answer entries, no model.

It sits in front of claim verification, so it is deliberately conservative:

* a question matches an entry only when both normalize to the same text (casefolded, NFKC,
  punctuation dropped, whitespace collapsed), or *near-exactly*: the token sets have a
  Jaccard similarity of at least :data:`NEAR_EXACT_JACCARD`, carry the same numbers, and
  differ by no negation word;
* never for a question (or an entry) that names an out-of-scope entity;
* never when the caller cannot read every source of the entry, or lacks a grant for any of
  its labels: a permission-dependent answer is only served to those who may see all of it;
* never when a source's identity was taken over by another document (an operator's
  ``affidavit identity resolve --take-over``) after the entry was vetted: the answer was
  vetted against the document that held the id before. An entry's optional ``vetted_at``
  (an ISO 8601 date or date-time, UTC when no offset is given) says when it was vetted;
  an entry without one counts as vetted before any take-over;
* never when a source's content is not what the entry was vetted against: an entry binds
  to the SHA-256 of each source's bytes as vetted (``vetted_against``, source id -> hex
  digest, what ``sha256sum`` prints for the file), and lapses when a source changes, goes,
  or was never bound (fail closed; :mod:`affidavit.text.bindings`). The caller that knows the
  store says what each source's bytes are now (``content_of``).

Entries live in a TOML file (``[[entries]]`` tables) or a YAML file (``entries:`` list),
each with ``question``, ``answer``, ``sources`` (source ids, at least one),
``vetted_against`` and optional ``labels`` and ``vetted_at``. Loading is the only I/O;
matching is pure.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from affidavit.errors import InputRejected
from affidavit.llm.text import CJK_CLASS
from affidavit.retrieval.scope import check_scope
from affidavit.text.bindings import ContentBinding
from affidavit.text.forms import nfkc

NEAR_EXACT_JACCARD = 0.9
_TOKEN = re.compile(f"[{CJK_CLASS}]|[^\\W_{CJK_CLASS}]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_NEGATIONS = frozenset(("not", "no", "never", "without", "cannot", "nor", "none", "neither",
                        "isn", "aren", "don", "doesn", "didn", "won", "can", "t", "不", "没",
                        "未", "无", "非"))


@dataclass(frozen=True)
class FaqEntry:
    """One vetted answer and the sources it rests on."""

    question: str
    answer: str
    sources: tuple[str, ...]
    labels: tuple[str, ...] = ()
    vetted_at: str | None = None  # UTC ISO 8601
    vetted_against: tuple[tuple[str, str], ...] = ()  # (source id, SHA-256 of its bytes)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        data: dict[str, Any] = {"question": self.question, "answer": self.answer,
                                "sources": list(self.sources), "labels": list(self.labels)}
        if self.vetted_at is not None:
            data["vetted_at"] = self.vetted_at
        if self.vetted_against:
            data["vetted_against"] = dict(self.vetted_against)
        return data

    def binding(self, source: str) -> ContentBinding:
        """What the entry was vetted against for ``source`` (unbound when not named)."""
        return ContentBinding(dict(self.vetted_against).get(source))

    def holds(self, content_of: Callable[[str], str | None]) -> bool:
        """Every source's bytes are still the ones the entry was vetted against."""
        return all(self.binding(source).holds(content_of(source)) for source in self.sources)


@dataclass(frozen=True)
class FaqMatch:
    """An entry that answers the question, and how closely it matched."""

    entry: FaqEntry
    kind: str  # "exact" | "near_exact"
    similarity: float


def normalize_question(text: str) -> str:
    """Casefolded NFKC text, punctuation dropped, whitespace collapsed."""
    return " ".join(_TOKEN.findall(nfkc(text).casefold()))


class FaqCache:
    """The loaded entries; :meth:`match` finds the one (if any) that may answer."""

    def __init__(self, entries: Sequence[FaqEntry]) -> None:
        seen: dict[str, FaqEntry] = {}
        for entry in entries:
            key = normalize_question(entry.question)
            if key in seen:
                raise InputRejected("FAQ_DUPLICATE_QUESTION",
                                    f"two FAQ entries ask {entry.question!r}")
            seen[key] = entry
        self.entries = tuple(entries)
        self._by_question = seen

    @classmethod
    def load(cls, path: str | Path) -> FaqCache:
        """Entries from a ``.toml``, ``.yaml`` or ``.yml`` file."""
        file = Path(path)
        try:
            raw = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputRejected("FAQ_UNREADABLE", f"cannot read {file}: {exc}") from exc
        return cls(parse_faq(raw, file.suffix.lstrip(".").lower()))

    def match(
        self,
        question: str,
        *,
        can_read_source: Callable[[str], bool],
        granted_labels: Collection[str] = (),
        out_of_scope_entities: Mapping[str, Sequence[str]] | None = None,
        taken_over_at: Callable[[str], str | None] = lambda source: None,
        content_of: Callable[[str], str | None] | None = None,
    ) -> FaqMatch | None:
        """The entry that answers ``question`` for this caller, or ``None``.

        ``taken_over_at`` gives, for a source id, when its identity was last taken over by
        another document (UTC ISO 8601), or None; ``content_of`` the SHA-256 of the source's
        current bytes (None when it has none), against which an entry's binding is checked
        (matching alone, without a store, checks none)."""
        entities = out_of_scope_entities or {}
        if check_scope(question, entities).refused:
            return None
        key = normalize_question(question)
        candidates = [(self._by_question[key], "exact", 1.0)] if key in self._by_question else []
        candidates.extend(sorted(
            ((entry, "near_exact", score) for entry in self.entries
             if normalize_question(entry.question) != key
             and (score := near_exact(question, entry.question)) is not None),
            key=lambda found: (-found[2], normalize_question(found[0].question))))
        for entry, kind, score in candidates:
            if (_servable(entry, can_read_source, granted_labels, entities)
                    and not _vetted_before_take_over(entry, taken_over_at)
                    and (content_of is None or entry.holds(content_of))):
                return FaqMatch(entry, kind, round(score, 6))
        return None


def near_exact(question: str, vetted: str) -> float | None:
    """The token-set Jaccard similarity when the two questions match near-exactly."""
    mine, theirs = _tokens(question), _tokens(vetted)
    if not mine or not theirs:
        return None
    if sorted(_NUMBER.findall(question)) != sorted(_NUMBER.findall(vetted)):
        return None
    if (mine ^ theirs) & _NEGATIONS:
        return None
    score = len(mine & theirs) / len(mine | theirs)
    return score if score >= NEAR_EXACT_JACCARD else None


def _vetted_before_take_over(entry: FaqEntry,
                             taken_over_at: Callable[[str], str | None]) -> bool:
    for source in entry.sources:
        taken = taken_over_at(source)
        if taken is not None and (entry.vetted_at is None
                                  or _instant(entry.vetted_at) <= _instant(taken)):
            return True
    return False


def _instant(value: object) -> datetime:
    """A date, date-time or ISO 8601 text as an aware UTC date-time."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime):
        raise ValueError(f"not a date or date-time: {value!r}")
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)


def _tokens(text: str) -> frozenset[str]:
    return frozenset(normalize_question(text).split())


def _servable(entry: FaqEntry, can_read_source: Callable[[str], bool],
              granted_labels: Collection[str], entities: Mapping[str, Sequence[str]]) -> bool:
    if check_scope(entry.question + "\n" + entry.answer, entities).refused:
        return False
    granted = {label.upper() for label in granted_labels} | {"PUBLIC"}
    if any(label.upper() not in granted for label in entry.labels):
        return False
    return all(can_read_source(source) for source in entry.sources)


# --------------------------------------------------------------------------- parsing


def parse_faq(raw: str, fmt: str) -> tuple[FaqEntry, ...]:
    """Entries from the text of a TOML (``fmt="toml"``) or YAML file."""
    try:
        if fmt == "toml":
            data: Any = tomllib.loads(raw)
        elif fmt in ("yaml", "yml"):
            data = yaml.safe_load(raw)
        else:
            raise InputRejected("FAQ_UNSUPPORTED_FORMAT", f"FAQ files are TOML or YAML: {fmt!r}")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise InputRejected("FAQ_MALFORMED", f"cannot parse the FAQ file: {exc}") from exc
    items = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise InputRejected("FAQ_MALFORMED", "the FAQ file needs a list named 'entries'")
    return tuple(_entry(item, position) for position, item in enumerate(items, start=1))


def _entry(item: Any, position: int) -> FaqEntry:
    if not isinstance(item, dict):
        raise InputRejected("FAQ_MALFORMED", f"entry {position} is not a table")
    question, answer = item.get("question"), item.get("answer")
    if not (isinstance(question, str) and question.strip()
            and isinstance(answer, str) and answer.strip()):
        raise InputRejected("FAQ_MALFORMED", f"entry {position} needs a question and an answer")
    sources = _strings(item.get("sources", []), position, "sources")
    if not sources:
        raise InputRejected("FAQ_ENTRY_WITHOUT_SOURCES",
                            f"entry {position} names no source; vetted answers cite theirs")
    labels = _strings(item.get("labels", []), position, "labels")
    vetted_at = item.get("vetted_at")
    if vetted_at is not None:
        try:
            vetted_at = _instant(vetted_at).isoformat()
        except ValueError as exc:
            raise InputRejected("FAQ_MALFORMED", f"entry {position}: vetted_at must be an "
                                "ISO 8601 date or date-time") from exc
    return FaqEntry(question.strip(), answer.strip(), sources, labels, vetted_at,
                    _vetted_against(item.get("vetted_against", {}), sources, position))


def _vetted_against(value: Any, sources: tuple[str, ...],
                    position: int) -> tuple[tuple[str, str], ...]:
    """``vetted_against``: a table of the entry's own source ids to SHA-256 hex digests."""
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and k.strip() in sources and isinstance(v, str)
            and _SHA256.fullmatch(v.strip().lower()) for k, v in value.items()):
        raise InputRejected("FAQ_MALFORMED", f"entry {position}: vetted_against must map the "
                            "entry's source ids to SHA-256 hex digests")
    return tuple(sorted((k.strip(), v.strip().lower()) for k, v in value.items()))


def _strings(value: Any, position: int, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputRejected("FAQ_MALFORMED", f"entry {position}: {key} must be a list of strings")
    return tuple(v.strip() for v in value)
