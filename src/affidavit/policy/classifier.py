"""The seam for an optional model-based paragraph classifier.

No classifier ships with the package. Whatever is plugged in here must never be shown a
paragraph that is already RESTRICTED: :func:`consult_classifier` is the one way to ask it,
and it withholds those paragraphs (DESIGN.md, "RESTRICTED never reaches a model").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from affidavit.config.settings import RESTRICTED
from affidavit.errors import GovernanceError
from affidavit.records import ExtractedDocument, ParagraphLabel


class ParagraphClassifier(Protocol):
    """Suggests a label (or None for no opinion) for each paragraph text it is given."""

    def classify(self, paragraphs: Sequence[str]) -> Sequence[str | None]: ...


def consult_classifier(
    classifier: ParagraphClassifier,
    doc: ExtractedDocument,
    labels: Sequence[ParagraphLabel],
) -> tuple[str | None, ...]:
    """Ask ``classifier`` about every paragraph not labelled RESTRICTED by ``labels``.

    Returns one answer per paragraph, suitable as ``extra`` for ``classify_paragraphs``;
    RESTRICTED paragraphs are never sent and get None.
    """
    if [label.index for label in labels] != [p.index for p in doc.paragraphs]:
        raise GovernanceError("labels do not match the document's paragraphs")
    shown = [
        position
        for position, label in enumerate(labels)
        if label.label.casefold() != RESTRICTED.casefold()
    ]
    answers: list[str | None] = [None] * len(doc.paragraphs)
    if not shown:
        return tuple(answers)
    texts = [doc.paragraph_text(doc.paragraphs[position]) for position in shown]
    suggested = list(classifier.classify(texts))
    if len(suggested) != len(shown):
        raise GovernanceError(
            f"classifier answered {len(suggested)} times for {len(shown)} paragraphs"
        )
    for position, label in zip(shown, suggested, strict=True):
        answers[position] = label
    return tuple(answers)


class RecordingClassifier:
    """A test double: answers from a fixed table and remembers every text it was shown.

    ``answers`` maps a phrase to a label; a paragraph containing the phrase gets that label
    (the first matching phrase in table order), any other paragraph gets None.
    """

    def __init__(self, answers: Sequence[tuple[str, str]] = ()) -> None:
        self.answers = tuple(answers)
        self.seen: list[str] = []

    def classify(self, paragraphs: Sequence[str]) -> Sequence[str | None]:
        self.seen.extend(paragraphs)
        return [self._answer(text) for text in paragraphs]

    def _answer(self, text: str) -> str | None:
        for phrase, label in self.answers:
            if phrase in text:
                return label
        return None
