"""The in-memory accelerated index: BM25 and exact cosine over numpy arrays, governed.

One :class:`TenantIndex` per tenant and corpus generation, built from an
:class:`~affidavit.index.snapshot.IndexSnapshot`; :class:`MemoryIndex` keeps them and
rebuilds one when its tenant's generation changes, so a query never sees a stale corpus.

The authz filter is a boolean row mask computed from the request's
:class:`~affidavit.records.AuthzContext` (label granted, an ACL token of the chunk's version
in the context) and applied *inside* scoring: only permitted postings accumulate a score,
only permitted vectors are compared. The score of a permitted row is computed by the same
operations in the same order whatever else is permitted, so the filter removes rows from a
ranking and never reorders the rest. Scores equal the SQL path's
(:meth:`~affidavit.store.protocol.Store.lexical_search`) up to floating-point summation order.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from affidavit.errors import StoreError
from affidavit.index.bm25 import idf
from affidavit.index.snapshot import IndexSnapshot, SnapshotSource
from affidavit.records import AuthzContext
from affidavit.store.protocol import ChunkRecord, LexicalHit, Store, VectorHit

Mask = npt.NDArray[np.bool_]
MASK_CACHE_SIZE = 128
# Chunk records kept per index (one corpus generation) for the hits read back again and again.
RECORD_CACHE_SIZE = 8192


def top_rows(scores: npt.NDArray[np.float64], rows: npt.NDArray[np.int64],
             limit: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The best ``limit`` of ``rows`` by ``scores`` (parallel arrays), ties by row."""
    if limit <= 0 or rows.size == 0:
        return rows[:0], scores[:0]
    if rows.size > limit:
        threshold = -np.partition(-scores, limit - 1)[limit - 1]
        keep = scores >= threshold  # keeps every tie at the threshold for the tie-break
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[:limit]
    return rows[order], scores[order]


@dataclass(frozen=True)
class _Bm25Weights:
    """Per posting ``idf(t) * tf / (tf + k1 * (1 - b + b * len / avgdl))`` for one (k1, b)."""

    weights: npt.NDArray[np.float64]


class TenantIndex:
    """The served corpus of one tenant at one generation, immutable once built."""

    def __init__(self, snapshot: IndexSnapshot) -> None:
        self.snapshot = snapshot
        self.generation = snapshot.generation
        self._n = len(snapshot.chunk_ids)
        self._term_ids = {term: i for i, term in enumerate(snapshot.terms)}
        self._starts: list[int] = snapshot.term_starts.tolist()
        self._labels = sorted(set(snapshot.labels))
        label_ids = {label: i for i, label in enumerate(self._labels)}
        self._row_label = np.array([label_ids[x] for x in snapshot.labels], dtype=np.int64)
        versions = sorted(set(snapshot.version_ids))
        version_ids = {v: i for i, v in enumerate(versions)}
        self._n_versions = len(versions)
        self._row_version = np.array([version_ids[v] for v in snapshot.version_ids],
                                     dtype=np.int64)
        by_token: dict[str, list[int]] = {}
        for version, tokens in snapshot.acl_tokens.items():
            if version in version_ids:
                for token in tokens:
                    by_token.setdefault(token, []).append(version_ids[version])
        self._token_versions = {t: np.array(sorted(v), dtype=np.int64)
                                for t, v in by_token.items()}
        self._label_ids = label_ids
        self._row_epoch = np.array(snapshot.label_epochs or [""] * self._n, dtype=np.str_)
        self._weights: dict[tuple[float, float], _Bm25Weights] = {}
        self._masks: OrderedDict[tuple[frozenset[str], frozenset[str], str | None], Mask] = (
            OrderedDict())
        # (granted labels, chunk id) -> the record the store returned for a reader granted
        # those labels: its derived text depends on them and on this generation's rows only.
        self._records: OrderedDict[tuple[frozenset[str], str], ChunkRecord] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """Number of head chunks."""
        return self._n

    def row_of(self) -> Mapping[str, int]:
        """Chunk id to row."""
        return {cid: i for i, cid in enumerate(self.snapshot.chunk_ids)}

    def row(self, chunk_id: str) -> int | None:
        """The row of a head chunk (chunk ids ascend with the rows), None if not one."""
        ids = self.snapshot.chunk_ids
        i = bisect_left(ids, chunk_id)
        return i if i < self._n and ids[i] == chunk_id else None

    # ------------------------------------------------------------------ authz
    def visibility(self, authz: AuthzContext) -> Mask:
        """Rows the context may read: label granted, an ACL token of the version held, and
        (when the context pins one) labelled under the context's label epoch."""
        if authz.tenant != self.snapshot.tenant:
            return np.zeros(self._n, dtype=np.bool_)
        key = (authz.tokens, authz.granted_labels, authz.label_epoch)
        with self._lock:
            cached = self._masks.get(key)
            if cached is not None:
                self._masks.move_to_end(key)
                return cached
        mask = self._compute_mask(authz)
        with self._lock:
            self._masks[key] = mask
            while len(self._masks) > MASK_CACHE_SIZE:
                self._masks.popitem(last=False)
        return mask

    def _compute_mask(self, authz: AuthzContext) -> Mask:
        labels = np.zeros(len(self._labels), dtype=np.bool_)
        for label in authz.granted_labels:
            if label in self._label_ids:
                labels[self._label_ids[label]] = True
        versions = np.zeros(self._n_versions, dtype=np.bool_)
        for token in authz.tokens:
            held = self._token_versions.get(token)
            if held is not None:
                versions[held] = True
        mask: Mask = labels[self._row_label] & versions[self._row_version]
        if authz.label_epoch is not None and self._n:
            # Labels computed under another sensitivity policy may be stale: not served.
            mask &= self._row_epoch == authz.label_epoch
        mask.setflags(write=False)
        return mask

    # ------------------------------------------------------------------ read back
    def read_back(self, authz: AuthzContext, chunk_ids: Sequence[str],
                  store: Store) -> list[ChunkRecord]:
        """The :meth:`Store.get_chunks` contract for this generation: a chunk is returned
        only if the context's mask admits its row, the mask its search was scored under.

        A record is read through ``store.get_chunks`` (authz applied in the store too) the
        first time a reader with these granted labels asks for it, and kept with this index:
        nothing it holds changes without a new corpus generation, which is a new index. The
        reader's tokens, labels and epoch decide through the mask on every read, so a reader
        whose access was revoked gets nothing from records another reader left here."""
        mask = self.visibility(authz)
        labels = authz.granted_labels
        found: dict[str, ChunkRecord] = {}
        missing: list[str] = []
        with self._lock:
            for chunk_id in dict.fromkeys(chunk_ids):
                row = self.row(chunk_id)
                if row is None or not mask[row]:
                    continue
                record = self._records.get((labels, chunk_id))
                if record is None:
                    missing.append(chunk_id)
                else:
                    self._records.move_to_end((labels, chunk_id))
                    found[chunk_id] = record
        if missing:
            fetched = store.get_chunks(authz, missing)
            with self._lock:
                for record in fetched:
                    found[record.chunk.chunk_id] = record
                    self._records[(labels, record.chunk.chunk_id)] = record
                while len(self._records) > RECORD_CACHE_SIZE:
                    self._records.popitem(last=False)
        return [found[c] for c in chunk_ids if c in found]

    # ------------------------------------------------------------------ lexical
    def lexical_search(self, terms: Sequence[str], mask: Mask, *, k1: float, b: float,
                       limit: int) -> list[LexicalHit]:
        """BM25 over permitted rows; each distinct term counted once, as the SQL path does."""
        ids = [self._term_ids[t] for t in sorted(set(terms)) if t in self._term_ids]
        if not ids or limit <= 0 or self._n == 0:
            return []
        snap = self.snapshot
        weights = self._bm25(k1, b).weights
        starts = self._starts
        spans = [(starts[t], starts[t + 1]) for t in ids]
        rows = np.concatenate([snap.posting_rows[s:e] for s, e in spans])
        contrib = np.concatenate([weights[s:e] for s, e in spans])
        permitted = mask[rows]
        rows, contrib = rows[permitted], contrib[permitted]
        if rows.size == 0:
            return []
        # Per row, contributions add up in term order whatever else the mask lets through.
        # copy=False: they are float64 and int64 already (a copy is one dense pass more).
        scores = np.bincount(rows, weights=contrib, minlength=self._n).astype(np.float64,
                                                                             copy=False)
        candidates = np.flatnonzero(scores > 0).astype(np.int64, copy=False)
        best, best_scores = top_rows(scores[candidates], candidates, limit)
        chunk_ids = snap.chunk_ids
        return [LexicalHit(chunk_ids[r], s) for r, s in zip(best.tolist(), best_scores.tolist(),
                                                            strict=True)]

    def _bm25(self, k1: float, b: float) -> _Bm25Weights:
        key = (float(k1), float(b))
        found = self._weights.get(key)
        if found is None:
            found = self._compute_bm25(*key)
            with self._lock:
                self._weights[key] = found
        return found

    def _compute_bm25(self, k1: float, b: float) -> _Bm25Weights:
        snap = self.snapshot
        if self._n == 0 or snap.posting_rows.size == 0:
            return _Bm25Weights(np.zeros(0, dtype=np.float64))
        avg_length = float(snap.lengths.sum()) / self._n
        dfs = np.diff(snap.term_starts)
        term_idf = np.array([idf(self._n, int(df)) for df in dfs], dtype=np.float64)
        posting_idf = np.repeat(term_idf, dfs)
        tf = snap.posting_tfs
        lengths = snap.lengths[snap.posting_rows].astype(np.float64)
        weights = posting_idf * tf / (tf + k1 * (1.0 - b + b * lengths / avg_length))
        return _Bm25Weights(weights)


class TenantVectors:
    """Unit-normalised vectors of one tenant's head chunks for one model, by row."""

    def __init__(self, index: TenantIndex, model_id: str, chunk_ids: Sequence[str],
                 blobs: Sequence[bytes]) -> None:
        self.model_id = model_id
        self.generation = index.generation
        row_of = index.row_of()
        pairs = sorted((row_of[c], blob) for c, blob in zip(chunk_ids, blobs, strict=True)
                       if c in row_of)
        self.complete = len(pairs) == index.size
        self._rows = np.array([r for r, _ in pairs], dtype=np.int64)
        self._ids = index.snapshot.chunk_ids
        if pairs:
            matrix = np.vstack([np.frombuffer(blob, dtype=np.float32) for _, blob in pairs])
        else:
            matrix = np.zeros((0, 0), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True) if pairs else np.ones((0, 1))
        norms[norms == 0] = 1.0
        self._matrix = np.ascontiguousarray(matrix / norms, dtype=np.float32)

    @property
    def dimensions(self) -> int:
        """Vector length (0 when there are no vectors)."""
        return int(self._matrix.shape[1]) if self._matrix.size else 0

    def search(self, query: Sequence[float], mask: Mask, *, limit: int) -> list[VectorHit]:
        """Exact cosine top ``limit`` over permitted rows; ties by chunk id."""
        if limit <= 0 or self._rows.size == 0:
            return []
        q = np.asarray(query, dtype=np.float32)
        if q.ndim != 1 or q.shape[0] != self._matrix.shape[1]:
            raise StoreError(f"query has {q.shape} dimensions, vectors have "
                             f"{self._matrix.shape[1]}")
        norm = float(np.linalg.norm(q))
        q = q / norm if norm > 0 else q
        permitted = np.flatnonzero(mask[self._rows])
        sub = self._matrix if permitted.size == self._rows.size else self._matrix[permitted]
        # einsum (not BLAS) reduces each row the same way whichever rows are present, so a
        # filtered ranking is the unfiltered one with hidden rows removed, bit for bit.
        scores = np.einsum("ij,j->i", sub, q, optimize=False).astype(np.float64)
        best, best_scores = top_rows(scores, self._rows[permitted], limit)
        return [VectorHit(self._ids[r], float(s)) for r, s in zip(best, best_scores,
                                                                  strict=True)]


class MemoryIndex:
    """Per-tenant in-memory indexes, keyed by corpus generation; thread-safe.

    Every call reads the tenant's generation from the source first (one small query), so a
    committed, superseded or withdrawn document is reflected by the very next search. Inside
    :meth:`pinned` the calls of one thread share one read: a search ranks and reads back at
    one generation.
    """

    def __init__(self, source: SnapshotSource, store: Store) -> None:
        self.source = source
        self.store = store
        self._tenants: dict[str, TenantIndex] = {}
        self._vectors: dict[tuple[str, str], TenantVectors] = {}
        self._lock = threading.Lock()
        self._pins = threading.local()

    @contextmanager
    def pinned(self, tenant: str) -> Iterator[TenantIndex]:
        """This thread's calls for ``tenant`` use the index current on entry until exit:
        every channel of one search and its read-back see one corpus generation (and the
        generation is read once, not once per call)."""
        pins: dict[str, TenantIndex] | None = getattr(self._pins, "pins", None)
        if pins is None:
            pins = self._pins.pins = {}
        if tenant in pins:  # nested: the outer pin holds
            yield pins[tenant]
            return
        pins[tenant] = index = self.tenant_index(tenant)
        try:
            yield index
        finally:
            del pins[tenant]

    def tenant_index(self, tenant: str) -> TenantIndex:
        """The current index of ``tenant``, rebuilt when its generation moved (or the
        thread's pinned one, see :meth:`pinned`)."""
        pins: dict[str, TenantIndex] | None = getattr(self._pins, "pins", None)
        if pins:
            pinned = pins.get(tenant)
            if pinned is not None:
                return pinned
        generation = self.source.corpus_generation(tenant)
        current = self._tenants.get(tenant)
        if current is not None and current.generation == generation:
            return current
        with self._lock:
            current = self._tenants.get(tenant)
            if current is None or current.generation != generation:
                current = TenantIndex(self.source.index_snapshot(tenant))
                self._tenants[tenant] = current
        return current

    def lexical_search(self, authz: AuthzContext, terms: Sequence[str], *, k1: float, b: float,
                       limit: int) -> list[LexicalHit]:
        """Governed BM25: the :meth:`Store.lexical_search` contract, from memory."""
        index = self.tenant_index(authz.tenant)
        return index.lexical_search(terms, index.visibility(authz), k1=k1, b=b, limit=limit)

    def get_chunks(self, authz: AuthzContext, chunk_ids: Sequence[str]) -> list[ChunkRecord]:
        """Readable head chunks by id: the :meth:`Store.get_chunks` contract for hits of
        this index (:meth:`TenantIndex.read_back`)."""
        return self.tenant_index(authz.tenant).read_back(authz, chunk_ids, self.store)

    def vector_search(self, authz: AuthzContext, model_id: str, query: Sequence[float], *,
                      limit: int) -> list[VectorHit]:
        """Governed exact cosine: the :meth:`Store.vector_search` contract, from memory."""
        index = self.tenant_index(authz.tenant)
        vectors = self.tenant_vectors(index, model_id)
        return vectors.search(query, index.visibility(authz), limit=limit)

    def tenant_vectors(self, index: TenantIndex, model_id: str) -> TenantVectors:
        """The vectors of ``index``'s corpus; reloaded while some head chunk lacks one."""
        key = (index.snapshot.tenant, model_id)
        current = self._vectors.get(key)
        if current is not None and current.generation == index.generation and current.complete:
            return current
        ids, blobs = self.store.head_vectors(index.snapshot.tenant, model_id)
        current = TenantVectors(index, model_id, ids, blobs)
        with self._lock:
            self._vectors[key] = current
        return current
