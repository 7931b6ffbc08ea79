"""The embedding step: give every served chunk a vector for the configured model.

Vectors are derived and disposable, stored by ``(chunk_id, model_id)``: a chunk is
embedded once per model, a re-ingest of an unchanged document embeds nothing, and a new
model id (another model, dimension or backend version) re-embeds the vector plane only.
Run at the end of an ingestion run (``[vectors] compute = "ingest"``) or before the first
vector search that needs it (``"lazy"``).

An embedding failure is systemic (spec 003 §10): it raises, no document is quarantined for
it, and the chunks stay without vectors until the next attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from affidavit.errors import ProviderError, StoreError
from affidavit.index.vectors import EmbeddingBackend, Vectors
from affidavit.store.protocol import Store

DEFAULT_FETCH_BATCHES = 16
"""Chunks fetched per round, in backend batches: larger rounds let the backend sort texts by
length before batching, which wastes less padding."""


@dataclass(frozen=True)
class EmbedReport:
    """What one embedding pass did."""

    model_id: str
    embedded: int
    rounds: int
    seconds: float

    @property
    def per_second(self) -> float:
        """Chunks embedded per second of wall time."""
        return self.embedded / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a run summary."""
        return {"model_id": self.model_id, "embedded": self.embedded, "rounds": self.rounds,
                "seconds": round(self.seconds, 3)}


ProgressCallback = Callable[[int], None]


def embed_missing(store: Store, tenant: str, backend: EmbeddingBackend, *,
                  batch_size: int = 64, fetch_batches: int = DEFAULT_FETCH_BATCHES,
                  progress: ProgressCallback | None = None,
                  labels: Sequence[str] | None = None,
                  label_epoch: str | None = None) -> EmbedReport:
    """Embed and store every head chunk of ``tenant`` without a vector for the backend.

    ``labels`` and ``label_epoch`` are the declared embedding egress: when given, only
    chunks with one of those labels, labelled under that epoch, are read and sent; the
    others get no vector and are found by the lexical channel only.
    """
    model_id = backend.model_id
    fetch = max(1, batch_size) * max(1, fetch_batches)
    started = time.perf_counter()
    embedded = rounds = 0
    previous: list[str] = []
    while True:
        missing = store.chunks_missing_vectors(tenant, model_id, fetch, labels=labels,
                                               label_epoch=label_epoch)
        if not missing:
            break
        ids = [chunk_id for chunk_id, _ in missing]
        if ids == previous:  # written but still missing: never loop forever
            raise StoreError(f"vectors for {model_id} were stored but are not found again")
        matrix = checked(backend.embed_texts([text for _, text in missing]), len(ids),
                         backend.dimensions)
        store.put_vectors(tenant, model_id,
                          {cid: row.tolist() for cid, row in zip(ids, matrix, strict=True)})
        embedded += len(ids)
        rounds += 1
        previous = ids
        if progress is not None:
            progress(embedded)
    return EmbedReport(model_id, embedded, rounds, time.perf_counter() - started)


def embed_query(backend: EmbeddingBackend, query: str) -> Vectors:
    """The vector of one query (a single row, checked)."""
    row: Vectors = checked(backend.embed_texts([query]), 1, backend.dimensions)[0]
    return row


def checked(matrix: Vectors, rows: int, dimensions: int) -> Vectors:
    """``matrix`` when it has ``rows`` finite rows of ``dimensions``; else ProviderError."""
    array = np.asarray(matrix, dtype=np.float32)
    if array.shape != (rows, dimensions):
        raise ProviderError(f"backend returned shape {array.shape}, expected "
                            f"{(rows, dimensions)}")
    if not np.all(np.isfinite(array)):
        raise ProviderError("backend returned a vector that is not finite")
    return array
