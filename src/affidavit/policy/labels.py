"""Pass 1 of classification: one sensitivity label per paragraph, with its reasons.

A paragraph's label is the most severe of every signal that applies to it: the document's
declared label, a restricted filename pattern, a restricted keyword, a per-label keyword, an
enabled detector that fires, and (optionally) an external classifier's answer. Signals can
only raise a label; the one thing that may lower it is an explicit, recorded override.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from affidavit.config.settings import RESTRICTED
from affidavit.errors import GovernanceError, InputRejected
from affidavit.policy.detectors import DETECTORS
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import ExtractedDocument, ParagraphLabel
from affidavit.text.matching import fold_literal, normalize_for_detectors, normalize_for_matching

# Reasons are listed in this order of kind, then alphabetically within a kind.
_DECLARED, _FILENAME, _RESTRICTED_KW, _KEYWORD, _DETECTOR, _CLASSIFIER, _FALLBACK, _OVERRIDE = (
    range(8)
)


@dataclass(frozen=True, order=True)
class _Signal:
    kind: int
    reason: str
    label: str


def classify_paragraphs(
    doc: ExtractedDocument,
    *,
    policy: SensitivityPolicy,
    declared: str | None,
    path: str,
    overrides: Mapping[int, str] | None = None,
    extra: Sequence[str | None] | None = None,
    inherited: Sequence[tuple[str, str]] = (),
) -> tuple[ParagraphLabel, ...]:
    """Label every paragraph of ``doc`` under ``policy``; see the module docstring.

    ``declared`` is the document's own label (metadata, admin, inherited), ``path`` its
    source path, ``overrides`` recorded admin decisions by paragraph index, ``extra`` one
    optional answer per paragraph from a :class:`ParagraphClassifier`, ``inherited`` the
    (pattern, label) pairs of ``[sensitivity.inherit]`` that match the document's path.
    """
    document_signals = _document_signals(policy, declared, path) + [
        _Signal(_DECLARED, f"inherited:{pattern}:{label}", policy.canonical(label))
        for pattern, label in inherited]
    checked_overrides = _checked_overrides(policy, doc, overrides or {})
    classifier_labels = _checked_classifier_labels(policy, doc, extra)
    signals = [
        document_signals
        + _paragraph_signals(policy, doc.paragraph_text(paragraph))
        + _classifier_signal(classifier_labels[position])
        for position, paragraph in enumerate(doc.paragraphs)
    ]
    fallback = _fallback_signal(policy, any_signal=any(signals))
    labels: list[ParagraphLabel] = []
    for paragraph, found in zip(doc.paragraphs, signals, strict=True):
        applied = found or [fallback]
        label = policy.most_severe(signal.label for signal in applied)
        override = checked_overrides.get(paragraph.index)
        if override is not None:
            applied = [*applied, _Signal(_OVERRIDE, f"override:{override}", override)]
            label = override
        labels.append(ParagraphLabel(paragraph.index, label, _reasons(applied)))
    return tuple(labels)


def label_text(
    text: str,
    *,
    policy: SensitivityPolicy,
    declared: str | None,
    path: str,
    fallback: str,
) -> str:
    """The label of one string derived from a document (a title, a heading, a path).

    The same signals as a paragraph of that document decide it: its declared label, its
    filename, the keywords and detectors that fire in ``text``; ``fallback`` is what a
    paragraph of the document with no signal of its own received.
    """
    found = _document_signals(policy, declared, path) + _paragraph_signals(policy, text)
    return policy.most_severe([signal.label for signal in found] or [fallback])


def _reasons(signals: Sequence[_Signal]) -> tuple[str, ...]:
    ordered: list[str] = []
    for signal in sorted(signals):
        if signal.reason not in ordered:
            ordered.append(signal.reason)
    return tuple(ordered)


def _document_signals(policy: SensitivityPolicy, declared: str | None, path: str) -> list[_Signal]:
    """Signals that hold for every paragraph: the declared label and the filename."""
    signals: list[_Signal] = []
    if declared is not None:
        label = policy.canonical(declared)
        signals.append(_Signal(_DECLARED, f"declared:{label}", label))
    for pattern in restricted_filename_matches(policy, path):
        signals.append(_Signal(_FILENAME, f"filename:{pattern}", RESTRICTED))
    return signals


def restricted_filename_matches(policy: SensitivityPolicy, path: str) -> list[str]:
    """Restricted filename patterns matching ``path`` or its basename (case-insensitive).

    The path is tried as written and as every matcher reads it (full-width letters,
    ligatures and invisible characters cannot slip a name past a pattern); the pattern is
    folded the same way but keeps its ``*``, ``?`` and ``_``, which are glob syntax.
    """
    posix = path.replace("\\", "/")
    candidates = {
        form
        for spelling in (posix.casefold(), normalize_for_matching(posix))
        for form in (spelling, spelling.rsplit("/", 1)[-1])
    }
    matched: list[str] = []
    for pattern in policy.restricted_filename_patterns:
        globs = {pattern.casefold(), fold_literal(pattern)}
        if any(fnmatch.fnmatchcase(form, glob) for form in candidates for glob in globs):
            matched.append(pattern)
    return matched


def _paragraph_signals(policy: SensitivityPolicy, text: str) -> list[_Signal]:
    normalized = normalize_for_matching(text)
    signals = [
        _Signal(_RESTRICTED_KW, f"restricted_keyword:{keyword}", RESTRICTED)
        for keyword in policy.restricted_keywords.found_in(text, normalized=normalized)
    ]
    for label, keywords in policy.keyword_sets:
        signals.extend(
            _Signal(_KEYWORD, f"keyword:{label}:{keyword}", label)
            for keyword in keywords.found_in(text, normalized=normalized)
        )
    # Detectors read the text as written and, where it differs, with disguises removed.
    unmasked = normalize_for_detectors(text)
    for name, label in policy.detectors.items():
        if DETECTORS[name](text) or (unmasked != text and DETECTORS[name](unmasked)):
            signals.append(_Signal(_DETECTOR, f"detector:{name}", label))
    return signals


def _classifier_signal(label: str | None) -> list[_Signal]:
    return [] if label is None else [_Signal(_CLASSIFIER, f"classifier:{label}", label)]


def _fallback_signal(policy: SensitivityPolicy, *, any_signal: bool) -> _Signal:
    """What a paragraph without its own signal gets (only the strict switch escalates)."""
    if not any_signal and policy.escalate_unknown_to_restricted:
        return _Signal(_FALLBACK, "escalated:no_signal", RESTRICTED)
    default = policy.default_level
    return _Signal(_FALLBACK, f"default:{default}", default)


def _checked_overrides(
    policy: SensitivityPolicy, doc: ExtractedDocument, overrides: Mapping[int, str]
) -> dict[int, str]:
    indexes = {paragraph.index for paragraph in doc.paragraphs}
    checked: dict[int, str] = {}
    for index, label in sorted(overrides.items()):
        if index not in indexes:
            raise InputRejected(
                "OVERRIDE_OUT_OF_RANGE", f"override names paragraph {index}, which does not exist"
            )
        checked[index] = policy.canonical(label)
    return checked


def _checked_classifier_labels(
    policy: SensitivityPolicy, doc: ExtractedDocument, extra: Sequence[str | None] | None
) -> list[str | None]:
    if extra is None:
        return [None] * len(doc.paragraphs)
    if len(extra) != len(doc.paragraphs):
        raise GovernanceError(
            f"classifier gave {len(extra)} labels for {len(doc.paragraphs)} paragraphs"
        )
    checked: list[str | None] = []
    for label in extra:
        if label is not None and not policy.is_known(label):
            raise GovernanceError(f"classifier gave unknown label {label!r}")
        checked.append(None if label is None else policy.canonical(label))
    return checked
