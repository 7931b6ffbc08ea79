"""The Reference: a typed link between a document (or a ledger record) and a document.

Kinds and location types follow spec 004. A reference's ``classification`` is the most
severe label of what the link itself was derived from (both ends); the store filters on it
inside the query, and :mod:`affidavit.references.access` checks that the reader may read
both ends before any reference leaves. The text written with it (its label, reason and
location detail) carries a label of its own, ``text_label``, found by the same detectors as
a paragraph: a reader not granted that label sees the reference with that text withheld
(:meth:`Reference.shown_to`), and a search never matches text its reader may not see.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

from affidavit.errors import InputRejected

CITATION = "Citation"
SOFT_KINDS = ("CrossReference", "DerivedFrom", "Supersedes", "BuildsOn", "Contradicts",
              "UpdateOf", "SupportedBy", "Bookmark")
KINDS = (CITATION, *SOFT_KINDS)
LOCATION_TYPES = ("Page", "Section", "Chunk")

DOCUMENT = "document"
LEDGER_RECORD = "ledger"

LABEL_CHARS = 100
"""A citation's label: the first characters of the cited text (spec 004)."""

LABEL_WITHHELD = "[label withheld]"
REASON_WITHHELD = "[reason withheld]"
"""Stand-ins (PUBLIC) for a reference's text whose label the reader is not granted."""

DIRECTIONS = ("in", "out", "both")


@dataclass(frozen=True)
class Reference:
    """One stored reference. ``source_type`` is ``document`` or ``ledger`` (a citation's
    answer record); the target is always a document, ``target_chunk_id`` narrowing it.
    ``text_label`` labels ``label``, ``reason`` and ``location_detail`` (None: unknown, so
    any of that text is never shown)."""

    ref_id: str
    kind: str
    source_type: str
    source_id: str
    target_id: str
    target_chunk_id: str | None
    location_type: str | None
    location_detail: str
    label: str
    reason: str
    classification: str
    created_by: str
    created_at: str
    text_label: str | None = None

    def shown_to(self, granted: Collection[str]) -> Reference:
        """This reference as a reader granted ``granted`` may see it: its own text replaced
        by stand-ins unless its label is granted (empty text has nothing to withhold)."""
        if self.text_label is not None and self.text_label in granted:
            return self
        return replace(
            self, label=LABEL_WITHHELD if self.label else "",
            reason=REASON_WITHHELD if self.reason else "",
            location_detail="{}", text_label=None)

    def to_dict(self) -> dict[str, Any]:
        return {"ref_id": self.ref_id, "kind": self.kind, "source_type": self.source_type,
                "source_id": self.source_id, "target_id": self.target_id,
                "target_chunk_id": self.target_chunk_id, "location_type": self.location_type,
                "location_detail": json.loads(self.location_detail or "{}"),
                "label": self.label, "reason": self.reason,
                "classification": self.classification, "created_by": self.created_by,
                "created_at": self.created_at}

    def row(self) -> tuple[object, ...]:
        """The stored columns, in :data:`REFERENCE_COLUMNS` order."""
        return (self.ref_id, self.kind, self.source_type, self.source_id, self.target_id,
                self.target_chunk_id, self.location_type, self.location_detail, self.label,
                self.reason, self.classification, self.created_by, self.created_at,
                self.text_label)

    def other_end(self, node_id: str) -> str | None:
        """The document at the other end from ``node_id`` (None for a citation's record)."""
        if self.source_type == DOCUMENT and self.target_id == node_id:
            return self.source_id
        if self.source_type == DOCUMENT and self.source_id == node_id:
            return self.target_id
        return None


REFERENCE_COLUMNS = ("ref_id, kind, source_type, source_id, target_id, target_chunk_id, "
                     "location_type, location_detail, label, reason, classification, "
                     "created_by, created_at, text_label")


def reference_from_row(row: tuple[object, ...] | Any) -> Reference:
    values = [None if v is None else str(v) for v in row]
    return Reference(
        ref_id=str(values[0]), kind=str(values[1]), source_type=str(values[2]),
        source_id=str(values[3]), target_id=str(values[4]), target_chunk_id=values[5],
        location_type=values[6], location_detail=str(values[7] or "{}"),
        label=str(values[8]), reason=str(values[9]), classification=str(values[10]),
        created_by=str(values[11]), created_at=str(values[12]), text_label=values[13])


def checked_kind(kind: str, *, soft: bool = True) -> str:
    """``kind`` spelled as stored; a citation is made only by the answer path."""
    allowed = SOFT_KINDS if soft else KINDS
    for name in allowed:
        if name.casefold() == kind.strip().casefold():
            return name
    raise InputRejected("REFERENCE_KIND",
                        f"unknown reference kind {kind!r}; one of {', '.join(allowed)}")


def checked_location(location_type: str | None) -> str | None:
    if location_type is None or not location_type.strip():
        return None
    for name in LOCATION_TYPES:
        if name.casefold() == location_type.strip().casefold():
            return name
    raise InputRejected("REFERENCE_LOCATION",
                        f"unknown location type {location_type!r}; one of "
                        f"{', '.join(LOCATION_TYPES)}")


def checked_direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise InputRejected("REFERENCE_DIRECTION",
                            f"direction must be one of {', '.join(DIRECTIONS)}")
    return direction
