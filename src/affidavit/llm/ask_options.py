"""What a caller may ask of one answer (spec 003 §8.1, §9.1), and what each choice does.

* ``model_role``: ``authoritative`` (default: ``[answer] role``) or ``advisory``. Advisory
  compiles an advisory Policy zone, is evaluated at L1-L2 only, and its output state is
  capped at NARRATIVE_ONLY (BLOCKED and REQUIRES_SPEC stay what they are).
* ``response_mode``: ``governed`` (default) or ``narrative``. Narrative asks for an advisory
  answer: it makes the role advisory, with the same ceiling. A request can lower its own
  authority, never raise it: ``authoritative`` with ``narrative`` is advisory.
* ``inference_profile``: ``reliability`` (default) or ``deep_reasoning``. Deep reasoning
  asks the model for ``[answer] deep_reasoning_draws`` stability draws (L3, and L4 where
  the model runs in process) when fewer are configured; a provider with no model (the
  extractive default) has nothing to draw, so there it changes nothing, and the ledger
  says so. It never changes what evidence is retrieved or how the gate decides.
* ``subject_scope``: SIRE subjects; evidence from a source whose ACTIVE SIRE Subject is not
  among them is dropped before the prompt (a gate of its own in the ledger). Empty: no
  scope. Subjects are compared in their normalized form (``Access Control`` is
  ``access_control``).

Every choice, and its effect, is recorded in the ledger record (``request``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from affidavit.errors import InputRejected

AUTHORITATIVE = "authoritative"
ADVISORY = "advisory"
MODEL_ROLES = (AUTHORITATIVE, ADVISORY)
GOVERNED = "governed"
NARRATIVE = "narrative"
RESPONSE_MODES = (GOVERNED, NARRATIVE)
RELIABILITY = "reliability"
DEEP_REASONING = "deep_reasoning"
INFERENCE_PROFILES = (RELIABILITY, DEEP_REASONING)
MAX_SCOPE_SUBJECTS = 64


@dataclass(frozen=True)
class AskOptions:
    """One request's choices; ``model_role`` None takes the deployment's default role."""

    model_role: str | None = None
    response_mode: str = GOVERNED
    inference_profile: str = RELIABILITY
    subject_scope: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _one_of("model_role", self.model_role, MODEL_ROLES, optional=True)
        _one_of("response_mode", self.response_mode, RESPONSE_MODES)
        _one_of("inference_profile", self.inference_profile, INFERENCE_PROFILES)
        if len(self.subject_scope) > MAX_SCOPE_SUBJECTS:
            raise InputRejected("INVALID_SUBJECT_SCOPE",
                                f"subject_scope names at most {MAX_SCOPE_SUBJECTS} subjects")
        if any(not subject.strip() for subject in self.subject_scope):
            raise InputRejected("INVALID_SUBJECT_SCOPE", "subject_scope has an empty subject")

    def role(self, default: str) -> str:
        """The role the answer is made in: advisory if either field asks for it."""
        if self.model_role == ADVISORY or self.response_mode == NARRATIVE:
            return ADVISORY
        return self.model_role or default

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger: what the caller asked for."""
        return {"model_role": self.model_role, "response_mode": self.response_mode,
                "inference_profile": self.inference_profile,
                "subject_scope": list(self.subject_scope)}


def _one_of(name: str, value: str | None, allowed: tuple[str, ...], *,
            optional: bool = False) -> None:
    if value is None and optional:
        return
    if value not in allowed:
        raise InputRejected(f"INVALID_{name.upper()}",
                            f"{name} must be one of {', '.join(allowed)}")
