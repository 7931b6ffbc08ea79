"""Classification: sensitivity policy, identifier detectors, paragraph labels, segments.

Where a chunk's label is decided: :func:`classify_paragraphs` labels each paragraph (pass 1)
and :func:`build_segments` groups adjacent paragraphs of one label (pass 2); the chunker
then works inside those segments.

An optional model-based :class:`ParagraphClassifier` may add its opinion through
``classify_paragraphs(..., extra=...)``; it must never be shown RESTRICTED paragraphs, so
ask it only through :func:`consult_classifier`.
"""

from affidavit.policy.classifier import (
    ParagraphClassifier,
    RecordingClassifier,
    consult_classifier,
)
from affidavit.policy.detectors import DETECTORS, Detection, run_detectors
from affidavit.policy.labels import classify_paragraphs, restricted_filename_matches
from affidavit.policy.policy import SensitivityPolicy
from affidavit.policy.segments import build_segments

__all__ = [
    "DETECTORS",
    "Detection",
    "ParagraphClassifier",
    "RecordingClassifier",
    "SensitivityPolicy",
    "build_segments",
    "classify_paragraphs",
    "consult_classifier",
    "restricted_filename_matches",
    "run_detectors",
]
