"""SIRE terms are derived text: drawn only from what an audience may see, and labelled.

A SIRE proposal leaves the store toward people (``affidavit sire list``, the approver) and
into Claim Ledger records, so a term must never carry a word that only a RESTRICTED
paragraph contains, nor show a reader a word from a paragraph whose label it lacks. Two
rules, both deterministic:

1. Algorithm 1 (:func:`~affidavit.identity.sire.propose_sire`) runs over the document's
   non-RESTRICTED paragraphs only, joined by blank lines (a paragraph break ends a
   sentence, so no capitalized run spans two paragraphs). A word that appears only in
   RESTRICTED paragraphs is not counted at all, so it can neither become a term nor tip a
   visible word over a frequency threshold.
2. Every term carries the most severe label of the paragraphs it was found in (over-
   approximated by a whole-phrase, case-insensitive match, so a label can only come out
   more severe). Declared frameworks and the Subject come from the document's metadata
   (front matter or sidecar): each carries the label ``label_metadata`` gives the string
   it came from (a framework name; the oracle id, title or source id the Subject was
   made from), combined for a framework with the paragraphs it is also found in.
   Excluded terms come from configuration and are PUBLIC.

:func:`sire_shown_to` is the one filter every view applies: a term whose label is not
granted (or that carries no label, as in tuples proposed before labels existed) is left
out, and a Subject whose label is not granted is replaced by a stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import replace
from typing import Any

from affidavit.config.settings import PUBLIC, RESTRICTED, SireSettings
from affidavit.identity.sire import SireInputs, normalize_subject, propose_sire
from affidavit.identity.terms import display_term, fold, term_pattern
from affidavit.records import AuthzContext, SireTuple
from affidavit.store.protocol import SireRecord, Store

SUBJECT_WITHHELD = "[subject withheld]"
PARAGRAPH_BREAK = "\n\n"

MostSevere = Callable[[Iterable[str]], str]
LabelMetadata = Callable[[str], str]


def propose_labelled_sire(inputs: SireInputs, paragraphs: Sequence[tuple[str, str]],
                          settings: SireSettings, *, most_severe: MostSevere,
                          label_metadata: LabelMetadata) -> SireTuple:
    """Algorithm 1 over the non-RESTRICTED ``(text, label)`` paragraphs, each term labelled.

    ``label_metadata`` labels one string of the document's metadata as a paragraph of the
    document would be labelled (see :func:`affidavit.policy.labels.label_text`)."""
    visible = [(text, label) for text, label in paragraphs if label.upper() != RESTRICTED]
    sire = propose_sire(inputs, PARAGRAPH_BREAK.join(text for text, _ in visible), settings)
    return label_terms(sire, inputs, visible, most_severe=most_severe,
                       label_metadata=label_metadata)


def label_terms(sire: SireTuple, inputs: SireInputs, paragraphs: Sequence[tuple[str, str]],
                *, most_severe: MostSevere, label_metadata: LabelMetadata) -> SireTuple:
    """``sire`` with every term labelled by what it was derived from (module docstring)."""
    declared: dict[str, list[str]] = {}
    for framework in inputs.frameworks:
        declared.setdefault(display_term(framework), []).append(label_metadata(framework))
    folded = [(fold(text), label) for text, label in paragraphs]
    subject_label = label_metadata(subject_origin(inputs))
    labels: dict[str, str] = {}
    for term in (*sire.included, *sire.relevant):
        found = [label for text, label in folded if _occurs(term, text)]
        found += declared.get(term, [])
        # A term the text yields is always found again; if it somehow is not, it takes the
        # most severe label of every paragraph it could have come from.
        labels[term] = most_severe(found or [label for _, label in folded] or [subject_label])
    for term in sire.excluded:
        labels.setdefault(term, PUBLIC)
    return replace(sire, term_labels=tuple(sorted(labels.items())),
                   subject_label=subject_label)


def subject_origin(inputs: SireInputs) -> str:
    """The string Algorithm 1 made the Subject from: the oracle id, else the title, else the
    source id (its stem, or its hash when the stem is unusable)."""
    for candidate in (inputs.oracle_id, inputs.title):
        if candidate and normalize_subject(candidate):
            return candidate
    return inputs.source_id


def _occurs(term: str, folded_text: str) -> bool:
    pattern = term_pattern(term)
    return pattern is not None and pattern.search(folded_text) is not None


def sire_shown_to(sire: SireTuple, granted: Set[str]) -> SireTuple:
    """The tuple as a reader granted ``granted`` may see it (PUBLIC is always granted)."""
    allowed = {label.upper() for label in granted} | {PUBLIC}

    def shown(term: str) -> bool:
        label = sire.label_of(term)
        return label is not None and label.upper() in allowed

    subject_shown = sire.subject_label is not None and sire.subject_label.upper() in allowed
    return replace(
        sire,
        subject=sire.subject if subject_shown else SUBJECT_WITHHELD,
        included=tuple(t for t in sire.included if shown(t)),
        relevant=tuple(t for t in sire.relevant if shown(t)),
        excluded=tuple(t for t in sire.excluded if shown(t)),
        term_labels=tuple((t, label) for t, label in sire.term_labels if shown(t)),
    )


def sire_dict_shown_to(data: Mapping[str, Any], granted: Set[str]) -> dict[str, Any]:
    """A stored ``{sire_id?, subject, included, ...}`` mapping filtered like the tuple."""
    shown = sire_shown_to(SireTuple.from_dict(data), granted).to_dict()
    extra = {k: v for k, v in data.items() if k not in _TUPLE_KEYS}
    return {**extra, **shown}


_TUPLE_KEYS = frozenset(("subject", "included", "relevant", "excluded", "term_labels",
                         "subject_label"))


def sire_records_for(store: Store, authz: AuthzContext,
                     records: Sequence[SireRecord]) -> list[SireRecord]:
    """The records a reader may see, as the reader may see them.

    A record shows only when the reader may read at least one head chunk of its document
    (its tuple is derived from that document) and the record's own version admitted the
    reader (an earlier version's access list may have been narrower: its terms come from
    text the reader was never admitted to), and then only with the terms whose labels
    the reader is granted, and with the title and path as that chunk shows them to the
    reader; the Subject, drawn from the title, is withheld wherever the title is.
    """
    shown: list[SireRecord] = []
    for record in records:
        metadata = json.loads(store.version_metadata(authz.tenant, record.version_id) or "{}")
        if not _version_admits(metadata, authz, record.is_head):
            continue
        source_id = str(metadata.get("source_id") or "")
        ids = store.source_chunk_ids(authz.tenant, source_id) if source_id else []
        readable = [c for c in store.get_chunks(authz, ids) if c.chunk.node_id == record.node_id]
        if not readable:
            continue
        sire = sire_shown_to(record.sire, authz.granted_labels)
        if readable[0].title != record.title:
            sire = replace(sire, subject=SUBJECT_WITHHELD)
        shown.append(replace(record, sire=sire, title=readable[0].title,
                             alias=readable[0].alias))
    return shown


def _version_admits(metadata: Mapping[str, Any], authz: AuthzContext, is_head: bool) -> bool:
    """Whether a version's own access list (its stored ACL tokens) meets the reader's
    tokens, as the authorization filter decides for a head version's chunks. A version
    stored without its list admits only through its head chunks (an older one: nobody)."""
    acl = metadata.get("acl")
    if not isinstance(acl, list):
        return is_head
    return bool({str(token) for token in acl} & authz.tokens)


def withhold_subjects(data: Any, sires: Iterable[SireTuple], granted: Set[str]) -> Any:
    """``data`` (plain JSON values) with every Subject a reader granted ``granted`` may not
    see replaced by the stand-in: for records computed from the Subjects themselves (the
    compliance score's groups and expected subjects)."""
    tuples = list(sires)
    shown = {sire_shown_to(s, granted).subject for s in tuples}
    hidden = {s.subject for s in tuples} - shown
    return _replace_strings(data, hidden) if hidden else data


def _replace_strings(data: Any, hidden: Set[str]) -> Any:
    if isinstance(data, str):
        return SUBJECT_WITHHELD if data in hidden else data
    if isinstance(data, list):
        return [_replace_strings(item, hidden) for item in data]
    if isinstance(data, dict):
        return {key: _replace_strings(value, hidden) for key, value in data.items()}
    return data
