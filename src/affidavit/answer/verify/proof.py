"""How deep an answer's proof went, for the ledger and for the gate (spec 003 §6.4, §9.2).

Every record says which verification layers ran over every asserted claim, which did not
and why, which layers the deployment requires (``[gate] required_layers``) and which of
those are missing, and what the proof does not cover (its epistemic limits). A required
layer that is missing keeps the answer from AUTHORIZED
(:func:`affidavit.answer.verify.gate.decide`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from affidavit.answer.verify.claims_check import REFUSED, ClaimVerdict
from affidavit.config.gate import LAYER_NAMES

EPISTEMIC_LIMITS = (
    "This record shows which governed evidence each claim was checked against and which "
    "verification layers ran. It proves positive attribution only: it does not prove that "
    "no pre-training knowledge of the model shaped the answer, it bounds the extracted "
    "claims and not the reasoning that connected them, and it does not vouch that the "
    "source documents are themselves correct."
)
NO_CLAIMS = "the answer has no asserted claims"


@dataclass(frozen=True)
class ProofDepth:
    """Layers that ran over every asserted claim, the others with a reason, and the
    required layers among them that are missing."""

    ran: tuple[str, ...]
    unavailable: tuple[tuple[str, str], ...]
    required: tuple[str, ...]

    @property
    def missing_required(self) -> tuple[str, ...]:
        ran = set(self.ran)
        return tuple(name for name in self.required if name not in ran)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {"layers_ran": list(self.ran),
                "layers_unavailable": dict(self.unavailable),
                "required_layers": list(self.required),
                "missing_required": list(self.missing_required),
                "epistemic_limits": EPISTEMIC_LIMITS}


def proof_depth(verdicts: Sequence[ClaimVerdict], required: Sequence[str]) -> ProofDepth:
    """The depth of the proof over the asserted (non-refusal) claims."""
    asserted = [v for v in verdicts if v.status != REFUSED]
    ran: list[str] = []
    unavailable: list[tuple[str, str]] = []
    for name in LAYER_NAMES:
        if not asserted:
            unavailable.append((name, NO_CLAIMS))
            continue
        missing = [v for v in asserted
                   if name not in v.layers or not v.layers[name].available]
        if not missing:
            ran.append(name)
            continue
        layer = missing[0].layers.get(name)
        reason = layer.detail if layer is not None and layer.detail else "not run"
        if len(missing) < len(asserted):
            reason = f"not run for {len(missing)} of {len(asserted)} claims: {reason}"
        unavailable.append((name, reason))
    return ProofDepth(tuple(ran), tuple(unavailable), tuple(required))


def unproven(required: Sequence[str], reason: str) -> dict[str, Any]:
    """The proof entry of a record refused before any claim was verified."""
    return ProofDepth((), tuple((name, reason) for name in LAYER_NAMES),
                      tuple(required)).to_dict()
