"""A whole document's paragraph labels: inherited labels, the rules, the optional model,
and recorded overrides bound to their paragraph's text, in that order (the one place
ingestion asks for labels)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from affidavit.classify.model import ModelParagraphClassifier
from affidavit.classify.overrides import LabelOverride, LapsedOverride
from affidavit.config.settings import RESTRICTED
from affidavit.policy.labels import classify_paragraphs
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import ExtractedDocument, ParagraphLabel
from affidavit.text.bindings import CONTENT_CHANGED, lapse_reason, text_sha256


def inherited_labels(inherit: Mapping[str, str], path: str) -> list[tuple[str, str]]:
    """The ``[sensitivity.inherit]`` (pattern, label) pairs matching ``path``: a glob over
    the whole path (case-insensitive), or a folder (``finance/``) holding it."""
    posix = path.replace("\\", "/").casefold()
    found: list[tuple[str, str]] = []
    for pattern, label in sorted(inherit.items()):
        folded = pattern.replace("\\", "/").casefold()
        folder = folded.rstrip("/") + "/"
        if fnmatch.fnmatchcase(posix, folded) or posix.startswith(folder):
            found.append((pattern, label))
    return found


@dataclass(frozen=True)
class LabelledDocument:
    """Every paragraph's label, and the recorded overrides that no longer hold."""

    labels: tuple[ParagraphLabel, ...]
    lapsed: tuple[LapsedOverride, ...] = ()


def label_document(doc: ExtractedDocument, *, policy: SensitivityPolicy, declared: str | None,
                   path: str, inherit: Mapping[str, str],
                   classifier: ModelParagraphClassifier | None = None,
                   overrides: Sequence[LabelOverride] = ()) -> tuple[ParagraphLabel, ...]:
    """Every paragraph's label (:func:`label_bound`, without the lapsed overrides)."""
    return label_bound(doc, policy=policy, declared=declared, path=path, inherit=inherit,
                       classifier=classifier, overrides=overrides).labels


def label_bound(doc: ExtractedDocument, *, policy: SensitivityPolicy, declared: str | None,
                path: str, inherit: Mapping[str, str],
                classifier: ModelParagraphClassifier | None = None,
                overrides: Sequence[LabelOverride] = ()) -> LabelledDocument:
    """Every paragraph's label. The model is asked about the rules' labels (so it never
    sees what they made RESTRICTED, whatever an override says later, nor what an override
    makes RESTRICTED) and can only raise. An override applies to the paragraphs with the
    text it was decided on whose detected label is the one it replaced; the others lapse."""
    inherited = inherited_labels(inherit, path)
    rules = classify_paragraphs(doc, policy=policy, declared=declared, path=path,
                                inherited=inherited)
    # Hashed only when there is an override to bind: most documents have none.
    hashes = [text_sha256(doc.paragraph_text(p)) for p in doc.paragraphs] if overrides else []
    extra = (classifier.classify_document(doc, _withheld_by_overrides(rules, hashes, overrides))
             if classifier is not None else None)
    detected = rules if extra is None else classify_paragraphs(
        doc, policy=policy, declared=declared, path=path, extra=extra, inherited=inherited)
    held, lapsed = _bind_overrides(detected, hashes, overrides)
    if not held:
        return LabelledDocument(detected, lapsed)
    return LabelledDocument(classify_paragraphs(
        doc, policy=policy, declared=declared, path=path, overrides=held, extra=extra,
        inherited=inherited), lapsed)


def _bind_overrides(detected: tuple[ParagraphLabel, ...], hashes: Sequence[str],
                    overrides: Sequence[LabelOverride]
                    ) -> tuple[dict[int, str], tuple[LapsedOverride, ...]]:
    """paragraph index -> label of the overrides that hold, and those that lapse (the
    content gone, or the label detected for it no longer the one replaced)."""
    held: dict[int, str] = {}
    lapsed: list[LapsedOverride] = []
    for override in overrides:
        reasons = [(row.index, lapse_reason(override.binding, digest, row.label))
                   for row, digest in zip(detected, hashes, strict=True)
                   if digest == override.binding.content_sha256]
        holding = [index for index, reason in reasons if reason is None]
        if holding:
            held.update(dict.fromkeys(holding, override.label))
            continue
        reason = (reasons[0][1] if reasons else None) or lapse_reason(override.binding, None)
        lapsed.append(LapsedOverride(override, reason or CONTENT_CHANGED))
    return held, tuple(lapsed)


def _withheld_by_overrides(rules: tuple[ParagraphLabel, ...], hashes: Sequence[str],
                           overrides: Sequence[LabelOverride]) -> tuple[ParagraphLabel, ...]:
    """The rules' labels, with every paragraph an override makes RESTRICTED marked so: an
    administrator who raised a paragraph the rules missed has said it is RESTRICTED text
    (withholding is safe whatever the label detected now, so only the text must match)."""
    raised = {o.binding.content_sha256 for o in overrides
              if o.label.strip().casefold() == RESTRICTED.casefold()}
    if not raised:
        return rules
    return tuple(replace(label, label=RESTRICTED) if digest in raised else label
                 for label, digest in zip(rules, hashes, strict=True))


def effective_declared(policy: SensitivityPolicy, declared: str | None,
                       inherit: Mapping[str, str], path: str) -> str | None:
    """The declared label with inherited ones folded in: what titles, paths and headings
    of the document are labelled at, at least."""
    labels = ([declared] if declared else []) + [label for _, label in
                                                 inherited_labels(inherit, path)]
    return policy.most_severe(labels) if labels else None
