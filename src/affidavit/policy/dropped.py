"""Labels of what the extractor dropped: the part of the original file no chunk carries.

A front-matter field, an HTML comment, a DOCX comment or tracked deletion, PDF document
information: none of it reaches a chunk, all of it leaves with the original file. Each
kind the extractor recorded (:class:`~affidavit.records.DroppedContent`) is labelled here
like derived text (:func:`affidavit.policy.labels.label_text`: the document's declared
label, its path, the detectors on the text). Content whose text the extractor could not
read has no label: it counts as the most severe configured label.

The labels are stored with the version, under ``"dropped"`` in its metadata, as
``[{"kind": ..., "label": ... | null}]``; the text itself is never stored. A version
stored before dropped content was recorded has no such entry: what its file holds beyond
its chunks is unknown, and counts as the most severe label too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from affidavit.config.settings import RESTRICTED
from affidavit.policy.labels import label_text
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import DroppedContent

DROPPED_KEY = "dropped"


def label_dropped(entries: Sequence[DroppedContent], *, policy: SensitivityPolicy,
                  declared: str | None, path: str) -> list[dict[str, str | None]]:
    """The stored form of ``entries``: each kind with the label of its text, or None."""
    fallback = RESTRICTED if policy.escalate_unknown_to_restricted else policy.default_level
    return [{"kind": entry.kind,
             "label": None if entry.text is None else label_text(
                 entry.text, policy=policy, declared=declared, path=path,
                 fallback=fallback)}
            for entry in entries]


def dropped_labels(metadata: dict[str, Any], *, most_severe: str) -> dict[str, str]:
    """Each dropped kind of a stored version with the label it counts as: an unlabelled
    kind, or a version that recorded none (``"*"``), counts as ``most_severe``."""
    stored = metadata.get(DROPPED_KEY)
    if not isinstance(stored, list):
        return {"*": most_severe}
    labels: dict[str, str] = {}
    for entry in stored:
        kind = str(entry.get("kind")) if isinstance(entry, dict) else "*"
        label = entry.get("label") if isinstance(entry, dict) else None
        labels[kind] = label if isinstance(label, str) else most_severe
    return labels
