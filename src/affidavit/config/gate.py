"""``[gate]``: the proof depth a deployment requires before an answer may be AUTHORIZED.

``required_layers`` names verification layers by their ledger names (``nli``,
``contrastive``, ``l3_stability`` ...) or by the spec's short names: ``L1``, ``L2`` (its
three parts), ``L3``, ``L4``, ``delta`` (contrastive attribution, Δ). An answer any of whose
asserted claims lacks a required layer (it did not run, or could not score the claim) is
at most PARTIAL, with the reason ``REQUIRED_LAYER_NOT_RUN:<layer>`` (see
:mod:`affidavit.answer.verify.proof`).
"""

from __future__ import annotations

from dataclasses import dataclass

from affidavit.errors import ConfigurationError

# The ledger names of every verification layer (affidavit.answer.verify.claims_check writes them).
L2_LAYERS = ("citation", "l2_atoms", "l2_coverage", "l2_polarity")
MODEL_LAYER_NAMES = ("l1_confidence", "contrastive", "l3_stability", "l4_representation",
                     "embedding", "nli")
LAYER_NAMES = (*L2_LAYERS, *MODEL_LAYER_NAMES)
LAYER_ALIASES: dict[str, tuple[str, ...]] = {
    "L1": ("l1_confidence",),
    "L2": ("l2_atoms", "l2_coverage", "l2_polarity"),
    "L3": ("l3_stability",),
    "L4": ("l4_representation",),
    "delta": ("contrastive",),
}


@dataclass(frozen=True)
class GateSettings:
    required_layers: tuple[str, ...] = ()

    def required(self) -> tuple[str, ...]:
        """The ledger names of the required layers, aliases expanded, in ledger order."""
        wanted = {n for name in self.required_layers for n in LAYER_ALIASES.get(name, (name,))}
        return tuple(name for name in LAYER_NAMES if name in wanted)


def validate_gate(gate: GateSettings, source: str) -> None:
    """Every required layer must be one the verifier knows."""
    for name in gate.required_layers:
        if name not in LAYER_NAMES and name not in LAYER_ALIASES:
            raise ConfigurationError(
                f"unknown layer {name!r}; known: {', '.join((*LAYER_NAMES, *LAYER_ALIASES))}",
                key="gate.required_layers", source=source)
