"""Derived text of a chunk: its document's title, its source path and its heading path.

These strings leave the store beside a chunk's body (search hits, locators, prompts,
citations, ledger views), and a heading or a title can say more than the paragraph under it
("Project Lighthouse acquisition" above an ordinary INTERNAL paragraph). So each one is
labelled by the same signals as a paragraph (:func:`label_derived`), independently of the
chunk's own label, and a reader is shown each one only when its label is granted
(:func:`shown_to`); otherwise a neutral stand-in takes its place. The locator is rebuilt
from the strings shown, so it follows the same rule.

:func:`shown_to` is the one place where that decision is made: the store applies it to every
chunk it returns for an authorization context, and the answering stage applies it again with
the labels the model may receive, which never include RESTRICTED.
"""

from __future__ import annotations

import json
from collections.abc import Sequence, Set
from dataclasses import dataclass, replace
from functools import lru_cache

from affidavit.config.settings import PUBLIC, RESTRICTED
from affidavit.policy.labels import label_text
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import Chunk, ChunkDraft, DerivedText, ParagraphLabel

TITLE_WITHHELD = "[title withheld]"
HEADING_WITHHELD = "[heading withheld]"
SOURCE_WITHHELD = "[source withheld]"

__all__ = [
    "HEADING_WITHHELD",
    "SOURCE_WITHHELD",
    "TITLE_WITHHELD",
    "DocumentDerivedLabels",
    "compact_derived_json",
    "derived_from_json",
    "derived_to_json",
    "derived_to_row",
    "format_locator",
    "label_derived",
    "model_labels",
    "restricted_derived",
    "shown_to",
]


@dataclass(frozen=True)
class DocumentDerivedLabels:
    """Labels of one document version's derived strings, computed once at ingest."""

    title: str
    title_label: str
    alias: str
    alias_label: str
    headings: dict[str, str]

    def for_chunk(self, draft: ChunkDraft) -> DerivedText:
        return DerivedText(title=self.title, title_label=self.title_label, alias=self.alias,
                           alias_label=self.alias_label,
                           heading_labels=tuple(self.headings[h] for h in draft.heading_path),
                           page=draft.page)


def label_derived(title: str, alias: str, drafts: Sequence[ChunkDraft],
                  paragraph_labels: Sequence[ParagraphLabel], *, policy: SensitivityPolicy,
                  declared: str | None) -> DocumentDerivedLabels:
    """Label the title, the source path and every heading the chunks carry."""
    escalated = any("escalated:no_signal" in pl.reasons for pl in paragraph_labels)
    fallback = RESTRICTED if escalated else policy.default_level

    def label(text: str) -> str:
        return label_text(text, policy=policy, declared=declared, path=alias, fallback=fallback)

    headings = sorted({h for draft in drafts for h in draft.heading_path})
    return DocumentDerivedLabels(title=title, title_label=label(title), alias=alias,
                                 alias_label=label(alias),
                                 headings={h: label(h) for h in headings})


def format_locator(alias: str, page: int | None, heading_path: Sequence[str], start: int,
                   end: int) -> str:
    """Where a chunk sits in its source, for people: path, page, heading trail, offsets."""
    parts = [alias]
    if page is not None:
        parts.append(f"p. {page}")
    if heading_path:
        parts.append(" > ".join(heading_path))
    parts.append(f"chars {start}-{end}")
    return " | ".join(parts)


def shown_to(chunk: Chunk, granted: Set[str], *,
             derived: DerivedText | None = None) -> Chunk:
    """``chunk`` as a reader granted ``granted`` may see it: every derived string whose
    label is not granted replaced by its stand-in, and the locator rebuilt from the rest.

    A string of unknown label (a chunk stored before derived text was labelled) is never
    shown. Stand-ins are PUBLIC, so applying this again with fewer labels narrows further.
    The chunk's body and its own label are untouched: whether the body may be read at all
    is the authorization filter's decision, made before this. ``derived`` (the stored
    labels, read back by the store) stands in for the chunk's own.
    """
    stored = derived if derived is not None else chunk.derived
    headings, shown, locator = _derived_view(
        stored, tuple(chunk.heading_path), chunk.start, chunk.end, frozenset(granted))
    return replace(chunk, heading_path=headings, derived=shown, locator=locator)


@lru_cache(maxsize=65_536)
def _derived_view(stored: DerivedText | None, heading_path: tuple[str, ...], start: int,
                  end: int, granted: frozenset[str]
                  ) -> tuple[tuple[str, ...], DerivedText, str]:
    """The headings, derived text and locator a reader granted ``granted`` is shown: a pure
    function of frozen values, kept for the chunks that are read back again and again."""
    derived = stored or DerivedText(
        title="", title_label=None, alias="", alias_label=None,
        heading_labels=(None,) * len(heading_path), page=None)

    def visible(label: str | None) -> bool:
        return label is not None and label in granted

    alias_ok = visible(derived.alias_label)
    alias = derived.alias if alias_ok else SOURCE_WITHHELD
    if visible(derived.title_label):
        title, title_label = derived.title, derived.title_label
    elif alias_ok:  # the source's own path stands in for its title
        title, title_label = derived.alias, derived.alias_label
    else:
        title, title_label = TITLE_WITHHELD, PUBLIC
    labels = _padded(derived.heading_labels, len(heading_path))
    headings = tuple(h if visible(lab) else HEADING_WITHHELD
                     for h, lab in zip(heading_path, labels, strict=True))
    withheld = {name for name, hidden in (
        ("title", not visible(derived.title_label)), ("alias", not alias_ok),
        ("headings", not all(visible(lab) for lab in labels))) if hidden}
    shown = DerivedText(
        title=title, title_label=title_label, alias=alias,
        alias_label=derived.alias_label if alias_ok else PUBLIC,
        heading_labels=tuple(lab if visible(lab) else PUBLIC for lab in labels),
        page=derived.page, withheld=derived.withheld | withheld)
    return headings, shown, format_locator(alias, derived.page, headings, start, end)


def model_labels(granted: Set[str], egress: Set[str] | None = None) -> frozenset[str]:
    """The labels whose derived text may go to a model for this reader: the reader's own,
    within the declared egress, and never RESTRICTED."""
    allowed = set(granted) if egress is None else set(granted) & set(egress)
    return frozenset(allowed - {RESTRICTED})


def restricted_derived(chunk: Chunk) -> list[str]:
    """The derived strings of ``chunk`` labelled RESTRICTED (as far as this view of it
    shows them): the guard refuses any prompt carrying them, as it does RESTRICTED text."""
    derived = chunk.derived
    if derived is None:
        return []
    labelled = [(derived.title, derived.title_label), (derived.alias, derived.alias_label),
                *zip(chunk.heading_path, _padded(derived.heading_labels,
                                                 len(chunk.heading_path)), strict=True)]
    return [text for text, label in labelled if label == RESTRICTED]


def _padded(labels: tuple[str | None, ...], n: int) -> tuple[str | None, ...]:
    """One label per heading; a heading without a recorded label has an unknown one."""
    return labels[:n] + (None,) * (n - len(labels))


def derived_to_json(derived: DerivedText | None) -> str | None:
    """The stored form of a chunk's derived labels (the strings are stored elsewhere)."""
    if derived is None:
        return None
    return json.dumps({"title": derived.title_label, "alias": derived.alias_label,
                       "headings": list(derived.heading_labels), "page": derived.page},
                      sort_keys=True, separators=(",", ":"))


def derived_to_row(derived: DerivedText | None) -> str | None:
    """The compact stored form of a chunk's derived labels (the SQLite store, one per chunk
    row): ``[title, alias, headings]``, then the page when there is one; no field names."""
    if derived is None:
        return None
    fields: list[object] = [derived.title_label, derived.alias_label,
                            list(derived.heading_labels)]
    if derived.page is not None:
        fields.append(derived.page)
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


def compact_derived_json(data: object) -> str | None:
    """:func:`derived_to_json`'s object as :func:`derived_to_row` stores it (a stored array
    is kept as it is)."""
    if data is None:
        return None
    stored = json.loads(str(data))
    if isinstance(stored, list):
        return str(data)
    page = stored.get("page")
    return derived_to_row(DerivedText(
        title="", title_label=stored.get("title"), alias="", alias_label=stored.get("alias"),
        heading_labels=tuple(stored.get("headings", ())),
        page=int(page) if page is not None else None))


def derived_from_json(data: object, *, title: str, alias: str) -> DerivedText:
    """A stored chunk's derived text (either stored form); labels of a row stored before
    they existed are unknown (None), which :func:`shown_to` never shows."""
    return _parsed_derived(None if data is None else str(data), title, alias)


@lru_cache(maxsize=65_536)
def _parsed_derived(data: str | None, title: str, alias: str) -> DerivedText:
    # Parsed once per distinct stored row: hits are read back again and again.
    stored = json.loads(data) if data is not None else {}
    if isinstance(stored, list):  # derived_to_row's [title, alias, headings(, page)]
        stored = dict(zip(("title", "alias", "headings", "page"), stored, strict=False))
    page = stored.get("page")
    return DerivedText(title=title, title_label=stored.get("title"), alias=alias,
                       alias_label=stored.get("alias"),
                       heading_labels=tuple(stored.get("headings", ())),
                       page=int(page) if page is not None else None)
