"""What a reader may see of references: never one whose either end it may not read.

A document is readable when every one of its head chunks is (the same rule the FAQ cache
uses for a vetted answer's source): a reference's label and reason may be drawn from any
part of either end. A citation's source is an answer's ledger record: it is shown only to
whoever may view that record (:func:`~affidavit.authz.ledger_view.may_view_record`, the
rule of ``/v1/ledger/{id}``), and then only while all of the record's evidence is readable;
for anyone else the citation reads exactly like none. The store has already filtered on the
reference's own classification inside its query; these checks run before anything leaves,
and what leaves has its own text withheld unless that text's label is granted.

Whether a document is readable costs the same store reads whether it exists or not, so a
refusal built on it takes one path whatever its hidden cause.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from affidavit.authz.ledger_view import may_view_record
from affidavit.ledger.contents import evidence_chunk_ids
from affidavit.records import DOCUMENT, LEDGER_RECORD, AuthzContext, Reference
from affidavit.store.protocol import Store


class ReadableEnds:
    """Memoised readability of documents and ledger records for one reader."""

    def __init__(self, store: Store, authz: AuthzContext):
        self.store = store
        self.authz = authz
        self._documents: dict[str, bool] = {}
        self._records: dict[str, bool] = {}

    def document(self, node_id: str) -> bool:
        if node_id not in self._documents:
            ids = self.store.document_chunk_ids(self.authz.tenant, node_id)
            # No outline (no such document) is read back like one: ``node_id`` names no
            # chunk, and the same filtered read runs as for a document the reader may not see.
            shown = self.store.get_chunks(self.authz, ids or [node_id])
            self._documents[node_id] = bool(ids) and len(shown) == len(ids)
        return self._documents[node_id]

    def documents(self, node_ids: Iterable[str]) -> list[str]:
        return [n for n in node_ids if self.document(n)]

    def record(self, record_id: str) -> bool:
        if record_id not in self._records:
            entry = self.store.get_ledger(self.authz.tenant, record_id)
            record = json.loads(entry.payload) if entry is not None else {}
            readable = False
            if record and may_view_record(record, self.authz):
                ids = evidence_chunk_ids(record)
                readable = len(self.store.get_chunks(self.authz, ids)) == len(ids)
            self._records[record_id] = readable
        return self._records[record_id]

    def chunk(self, chunk_id: str) -> bool:
        return len(self.store.get_chunks(self.authz, [chunk_id])) == 1

    def reference(self, reference: Reference) -> bool:
        """Whether this reader may see ``reference`` at all (its label is granted, and it
        may read both ends now)."""
        if reference.classification not in self.authz.granted_labels:
            return False
        if reference.source_type == LEDGER_RECORD:
            source = self.record(reference.source_id)
        else:
            source = reference.source_type == DOCUMENT and self.document(reference.source_id)
        if not source:
            return False
        if reference.target_chunk_id is not None:
            return self.chunk(reference.target_chunk_id)
        return self.document(reference.target_id)

    def visible(self, references: Sequence[Reference]) -> list[Reference]:
        """The references this reader may see, each as it may see it."""
        return [r.shown_to(self.authz.granted_labels) for r in references
                if self.reference(r)]
