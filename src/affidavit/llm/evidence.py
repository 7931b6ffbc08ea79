"""The evidence the answering stage works with: one retrieved chunk, tagged for citation."""

from __future__ import annotations

import re
from collections.abc import Set
from dataclasses import dataclass, replace
from typing import Any

from affidavit.errors import InputRejected
from affidavit.policy.derived import shown_to
from affidavit.records import ScoredChunk

_SRC_TAG = re.compile(r"[0-9a-f]{8}")


@dataclass(frozen=True)
class EvidenceItem:
    """One chunk as the prompt shows it.

    ``src`` is the 8-hex citation tag (lower case); ``zone`` is empty until the prompt
    compiler places the item in a CFPO zone.
    """

    src: str
    chunk_id: str
    node_id: str
    title: str
    locator: str
    text: str
    label: str
    heading_path: tuple[str, ...] = ()
    zone: str = ""

    def __post_init__(self) -> None:
        if not _SRC_TAG.fullmatch(self.src):
            raise InputRejected("INVALID_SRC_TAG",
                                f"src tag must be 8 lower-case hex: {self.src!r}")

    def with_zone(self, zone: str) -> EvidenceItem:
        """The same item placed in ``zone``."""
        return replace(self, zone=zone)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger."""
        return {
            "src": self.src,
            "chunk_id": self.chunk_id,
            "node_id": self.node_id,
            "title": self.title,
            "locator": self.locator,
            "label": self.label,
            "heading_path": list(self.heading_path),
            "zone": self.zone,
        }


def evidence_from_chunk(scored: ScoredChunk, model_labels: Set[str]) -> EvidenceItem:
    """The evidence item for a retrieved chunk (tag = first 8 hex of its chunk id).

    Its title, locator and heading path are those a reader granted ``model_labels`` may see
    (:func:`affidavit.policy.derived.model_labels`: never RESTRICTED), whatever the
    caller itself may read: the model is a reader too.
    """
    chunk = shown_to(scored.chunk, model_labels)
    assert chunk.derived is not None  # shown_to always sets it
    return EvidenceItem(
        src=chunk.src.lower(),
        chunk_id=chunk.chunk_id,
        node_id=chunk.node_id,
        title=chunk.derived.title,
        locator=chunk.locator,
        text=chunk.text,
        label=chunk.label,
        heading_path=chunk.heading_path,
    )
