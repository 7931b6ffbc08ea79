"""Declared model egress: which labels' text may leave the process toward a model.

``[egress] answer_labels`` bounds what the answer model and the rerank judge (the same
provider) may be sent; ``[egress] embedding_labels`` what the embedding backend may be sent
(enforced where chunks are read for embedding: the others get no vector and stay
lexical-only). RESTRICTED is never in either; the settings refuse it.

On the answering path the declaration is applied twice, like the RESTRICTED rule it
generalises: :meth:`ModelEgress.gate` takes undeclared candidates out before rerank and
context assembly (RESTRICTED keeps its own two exits), and :meth:`ModelEgress.guard` builds
the provider guard that refuses, on every outbound call, evidence of an undeclared label
and any fragment of an undeclared candidate's text. The policy in force is recorded in
every ledger record (:meth:`ModelEgress.to_dict`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from affidavit.config.settings import RESTRICTED, Settings
from affidavit.llm.guard import RestrictedGuard
from affidavit.records import ScoredChunk
from affidavit.retrieval.gates import GateDrop, GateResult, is_restricted

OUTSIDE_MODEL_EGRESS = "OUTSIDE_MODEL_EGRESS"


@dataclass(frozen=True)
class ModelEgress:
    """The labels whose text may be sent to the answer model and to the embedding backend."""

    answer_labels: frozenset[str]
    embedding_labels: frozenset[str]

    @classmethod
    def from_settings(cls, settings: Settings) -> ModelEgress:
        """The declared egress; RESTRICTED is removed even if a caller forged it in."""
        egress = settings.egress
        return cls(frozenset(egress.answer_labels) - {RESTRICTED},
                   frozenset(egress.embedding_labels) - {RESTRICTED})

    def may_answer(self, label: str) -> bool:
        """Whether text of ``label`` may be sent to the answer model."""
        return not is_restricted(label) and label in self.answer_labels

    def gate(self, candidates: Sequence[ScoredChunk]) -> GateResult:
        """Candidates the answer model may be shown, and RESTRICTED ones (handled by their
        own exits, which record them); the rest are dropped."""
        kept: list[ScoredChunk] = []
        dropped: list[GateDrop] = []
        for candidate in candidates:
            label = candidate.chunk.label
            if is_restricted(label) or self.may_answer(label):
                kept.append(candidate)
            else:
                dropped.append(GateDrop(candidate.chunk.chunk_id, OUTSIDE_MODEL_EGRESS))
        return GateResult("model_egress", tuple(kept), tuple(dropped))

    def guard(self, candidates: Sequence[ScoredChunk],
              also: Iterable[str] = ()) -> RestrictedGuard:
        """A provider guard refusing any text of a candidate the model may not see (and the
        strings in ``also``, derived text of such labels), and evidence of other labels."""
        withheld = [c.chunk.text for c in candidates if not self.may_answer(c.chunk.label)]
        return RestrictedGuard([*withheld, *also], allowed_labels=self.answer_labels)

    def to_dict(self) -> dict[str, Any]:
        """The egress policy in force, for the ledger."""
        return {"answer_labels": sorted(self.answer_labels),
                "embedding_labels": sorted(self.embedding_labels)}
