"""The sensitivity policy: configured labels, their order, and the signals that assign them.

Label order is a tie-breaker only: when several signals apply to one paragraph, the most
severe label wins. It never decides access; access is by independent grants (DESIGN.md,
"Sensitivity and classification").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from affidavit.config.settings import PUBLIC, RESTRICTED, SensitivitySettings
from affidavit.errors import ConfigurationError, InputRejected
from affidavit.policy.detectors import DETECTORS
from affidavit.policy.keywords import KeywordSet
from affidavit.records import canonical_json, stable_hash


class SensitivityPolicy:
    """Immutable classification policy built from ``[sensitivity]`` settings."""

    __slots__ = (
        "_by_folded",
        "_default_level",
        "_detectors",
        "_escalate",
        "_filename_patterns",
        "_keyword_sets",
        "_labels",
        "_restricted_keywords",
        "_severity",
    )

    def __init__(
        self,
        labels: Sequence[str],
        *,
        default_level: str = "INTERNAL",
        escalate_unknown_to_restricted: bool = False,
        restricted_filename_patterns: Sequence[str] = (),
        restricted_keywords: Sequence[str] = (),
        keywords: Mapping[str, Sequence[str]] | None = None,
        detectors: Mapping[str, str] | None = None,
    ) -> None:
        self._labels = _checked_labels(labels)
        self._severity = {label: rank for rank, label in enumerate(self._labels)}
        self._by_folded = {label.casefold(): label for label in self._labels}
        self._default_level = self._configured("default_level", default_level)
        self._escalate = escalate_unknown_to_restricted
        self._filename_patterns = tuple(restricted_filename_patterns)
        self._restricted_keywords = KeywordSet(restricted_keywords)
        # Sorted by label so that equal settings give equal behaviour and reasons.
        self._keyword_sets = tuple(
            (self._configured(f"keywords.{label}", label), KeywordSet(words))
            for label, words in sorted((keywords or {}).items())
        )
        self._detectors = MappingProxyType(
            {
                _known_detector(name): self._configured(f"detectors.{name}", label)
                for name, label in sorted((detectors or {}).items())
            }
        )

    @classmethod
    def from_settings(cls, settings: SensitivitySettings) -> SensitivityPolicy:
        """The policy a ``[sensitivity]`` settings section describes."""
        return cls(
            settings.labels,
            default_level=settings.default_level,
            escalate_unknown_to_restricted=settings.escalate_unknown_to_restricted,
            restricted_filename_patterns=settings.restricted_filename_patterns,
            restricted_keywords=settings.restricted_keywords,
            keywords=settings.keywords,
            detectors=settings.detectors,
        )

    # ------------------------------------------------------------------ labels and order

    @property
    def labels(self) -> tuple[str, ...]:
        """Configured labels, least severe first."""
        return self._labels

    def is_known(self, label: str) -> bool:
        """Whether ``label`` (in any letter case) is a configured label."""
        return label.casefold() in self._by_folded

    def canonical(self, label: str) -> str:
        """The configured spelling of ``label``; InputRejected(UNKNOWN_LABEL) if none."""
        found = self._by_folded.get(label.strip().casefold())
        if found is None:
            raise InputRejected("UNKNOWN_LABEL", f"{label!r} is not a configured label")
        return found

    def severity(self, label: str) -> int:
        """Rank of ``label`` in the configured order (0 is least severe)."""
        return self._severity[self.canonical(label)]

    def most_severe(self, labels: Iterable[str]) -> str:
        """The most severe of ``labels``; InputRejected(NO_LABEL) when there are none."""
        ranked = [self.severity(label) for label in labels]
        if not ranked:
            raise InputRejected("NO_LABEL", "no label to choose from")
        return self._labels[max(ranked)]

    # ------------------------------------------------------------------ signals

    @property
    def default_level(self) -> str:
        return self._default_level

    @property
    def escalate_unknown_to_restricted(self) -> bool:
        return self._escalate

    @property
    def restricted_filename_patterns(self) -> tuple[str, ...]:
        return self._filename_patterns

    @property
    def restricted_keywords(self) -> KeywordSet:
        return self._restricted_keywords

    @property
    def keyword_sets(self) -> tuple[tuple[str, KeywordSet], ...]:
        """``(label, keywords)`` pairs, ordered by label name."""
        return self._keyword_sets

    @property
    def detectors(self) -> Mapping[str, str]:
        """Enabled built-in detector name -> the label it assigns, ordered by name."""
        return self._detectors

    def to_dict(self) -> dict[str, Any]:
        """Plain data describing the policy, for recording and hashing."""
        return {
            "labels": list(self._labels),
            "default_level": self._default_level,
            "escalate_unknown_to_restricted": self._escalate,
            "restricted_filename_patterns": list(self._filename_patterns),
            "restricted_keywords": list(self._restricted_keywords.keywords),
            "keywords": {label: list(ks.keywords) for label, ks in self._keyword_sets},
            "detectors": dict(self._detectors),
        }

    @property
    def fingerprint(self) -> str:
        """Stable hash of :meth:`to_dict`: changes exactly when the policy changes."""
        return stable_hash("sensitivity-policy", canonical_json(self.to_dict()))

    def _configured(self, key: str, label: str) -> str:
        if label not in self._severity:
            raise ConfigurationError(f"names unknown label {label!r}", key=f"sensitivity.{key}")
        return label


def _checked_labels(labels: Sequence[str]) -> tuple[str, ...]:
    checked = tuple(labels)
    folded = [label.casefold() for label in checked]
    blank = any(not label.strip() for label in checked)
    if not checked or blank or len(set(folded)) != len(folded):
        raise ConfigurationError("labels must be unique and non-empty", key="sensitivity.labels")
    for required in (PUBLIC, RESTRICTED):
        if required not in checked:
            raise ConfigurationError(
                f"the label set must contain {required}", key="sensitivity.labels"
            )
    return checked


def _known_detector(name: str) -> str:
    if name not in DETECTORS:
        known = ", ".join(sorted(DETECTORS))
        raise ConfigurationError(
            f"unknown detector {name!r} (known: {known})", key=f"sensitivity.detectors.{name}"
        )
    return name
