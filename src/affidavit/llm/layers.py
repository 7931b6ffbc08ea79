"""Inputs to the verification layers that are computed outside L2.

L1 token confidence, contrastive attribution, L3 stability, L4 representation stability,
embedding similarity and NLI need a model. They are computed by thin shells
(:mod:`affidavit.answer.verify.evaluate`) or by the caller, and handed to
:func:`~affidavit.answer.verify.claims_check.verify_claims` as :class:`LayerInput` values: a score
per
claim index, or the reason the layer did not run. The values are plain data, so the ledger
can record them and a replay can feed the same values back in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from affidavit.errors import InputRejected

L1_CONFIDENCE = "l1_confidence"
CONTRASTIVE = "contrastive"
L3_STABILITY = "l3_stability"
L4_REPRESENTATION = "l4_representation"
EMBEDDING = "embedding"
NLI = "nli"

MODEL_LAYERS = (L1_CONFIDENCE, CONTRASTIVE, L3_STABILITY, L4_REPRESENTATION, EMBEDDING, NLI)
"""Layers whose signal comes from a model, in the order the ledger lists them."""


@dataclass(frozen=True)
class LayerInput:
    """One model layer's signal for an answer's claims.

    ``scores`` maps claim index to score and ``details`` to a short explanation; a claim
    without a score was not scored (its layer is recorded unavailable for it). A layer that
    did not run at all has no scores and says why in ``unavailable``. ``labels`` is the
    decision a classifying layer (``nli``: SUPPORT, CONTRADICT, NEUTRAL) took per claim.
    """

    name: str
    scores: Mapping[int, float] = field(default_factory=dict, hash=False)
    details: Mapping[int, str] = field(default_factory=dict, hash=False)
    unavailable: str = ""
    labels: Mapping[int, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if self.name not in MODEL_LAYERS:
            raise InputRejected("UNKNOWN_LAYER", f"no model layer named {self.name!r}")
        if self.unavailable and self.scores:
            raise InputRejected("INCONSISTENT_LAYER",
                                f"layer {self.name} has scores but says it is unavailable")
        object.__setattr__(self, "scores", MappingProxyType(dict(sorted(self.scores.items()))))
        object.__setattr__(self, "details", MappingProxyType(dict(sorted(self.details.items()))))
        object.__setattr__(self, "labels", MappingProxyType(dict(sorted(self.labels.items()))))

    @classmethod
    def missing(cls, name: str, reason: str) -> LayerInput:
        """A layer that did not run, and why."""
        return cls(name=name, unavailable=reason or "not available")

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger (claim indexes become string keys in JSON); ``labels``
        only when the layer classifies, so older records keep their shape."""
        data: dict[str, Any] = {"name": self.name, "unavailable": self.unavailable,
                                "scores": {str(i): s for i, s in self.scores.items()},
                                "details": {str(i): d for i, d in self.details.items()}}
        if self.labels:
            data["labels"] = {str(i): label for i, label in self.labels.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LayerInput:
        """The value :meth:`to_dict` recorded."""
        return cls(
            name=str(data["name"]),
            scores={int(i): float(s) for i, s in dict(data.get("scores", {})).items()},
            details={int(i): str(d) for i, d in dict(data.get("details", {})).items()},
            unavailable=str(data.get("unavailable", "")),
            labels={int(i): str(v) for i, v in dict(data.get("labels", {})).items()},
        )


NO_MODEL = "no_model"
WORKSHOP = "workshop"
CLEAN_ROOM = "clean_room"


def provider_tier(provider: object) -> str:
    """The spec 003 deployment tier an answer was made in, for the ledger.

    ``clean_room``: a model run in process (self-hosted, no network; log-probabilities,
    seeded draws and hidden states all available, so L1-L4). ``workshop``: a model behind an
    API (L4 not available; L1, Δ and L3 where the API allows). ``no_model``: the extractive
    provider, which quotes evidence and has no model signal at all.
    """
    tier = getattr(provider, "tier", None)
    if isinstance(tier, str) and tier:
        return tier
    return NO_MODEL if getattr(provider, "name", "") == "extractive" else WORKSHOP
