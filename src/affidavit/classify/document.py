"""A whole document's paragraph labels: inherited labels, the rules, the optional model,
and recorded overrides, in that order (the one place ingestion asks for labels)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import replace

from affidavit.classify.labels import classify_paragraphs
from affidavit.classify.model import ModelParagraphClassifier
from affidavit.classify.policy import SensitivityPolicy
from affidavit.config import RESTRICTED
from affidavit.records import ExtractedDocument, ParagraphLabel


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


def label_document(doc: ExtractedDocument, *, policy: SensitivityPolicy, declared: str | None,
                   path: str, inherit: Mapping[str, str],
                   classifier: ModelParagraphClassifier | None = None,
                   overrides: Mapping[int, str] | None = None) -> tuple[ParagraphLabel, ...]:
    """Every paragraph's label. The model is asked about the rules' labels (so it never
    sees what they made RESTRICTED, whatever an override says later, nor what an override
    makes RESTRICTED) and can only raise."""
    inherited = inherited_labels(inherit, path)
    rules = classify_paragraphs(doc, policy=policy, declared=declared, path=path,
                                inherited=inherited)
    extra = (classifier.classify_document(doc, _withheld_by_overrides(rules, overrides))
             if classifier is not None else None)
    if extra is None and not overrides:
        return rules
    return classify_paragraphs(doc, policy=policy, declared=declared, path=path,
                               overrides=overrides, extra=extra, inherited=inherited)


def _withheld_by_overrides(rules: tuple[ParagraphLabel, ...],
                           overrides: Mapping[int, str] | None) -> tuple[ParagraphLabel, ...]:
    """The rules' labels, with every paragraph an override makes RESTRICTED marked so: an
    administrator who raised a paragraph the rules missed has said it is RESTRICTED text."""
    raised = {index for index, label in (overrides or {}).items()
              if label.strip().casefold() == RESTRICTED.casefold()}
    return tuple(replace(label, label=RESTRICTED) if label.index in raised else label
                 for label in rules)


def effective_declared(policy: SensitivityPolicy, declared: str | None,
                       inherit: Mapping[str, str], path: str) -> str | None:
    """The declared label with inherited ones folded in: what titles, paths and headings
    of the document are labelled at, at least."""
    labels = ([declared] if declared else []) + [label for _, label in
                                                 inherited_labels(inherit, path)]
    return policy.most_severe(labels) if labels else None
