"""The storage contract every backend implements.

One logical schema, several backends (SQLite now, PostgreSQL later). Every method takes the
tenant explicitly and reads or writes only that tenant's rows; the contract tests in
``tests/store/`` run against every backend.

Retrieval methods take an :class:`~affidavit.records.AuthzContext` and apply it *inside* the
query: a chunk is returned only if its label is granted, one of its ACL tokens is in the
context, and it belongs to the head version of its node.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from affidavit.records import AuthzContext, Chunk, ParagraphLabel, RawBlob, Reference
from affidavit.store.values import CHUNK_INSERT_COLUMNS as CHUNK_INSERT_COLUMNS
from affidavit.store.values import IDENTITY_COLLISION as IDENTITY_COLLISION
from affidavit.store.values import KEEP as KEEP
from affidavit.store.values import TAKE_OVER as TAKE_OVER
from affidavit.store.values import ApiKeyRecord as ApiKeyRecord
from affidavit.store.values import ChunkRecord as ChunkRecord
from affidavit.store.values import CommitResult as CommitResult
from affidavit.store.values import HeadInfo as HeadInfo
from affidavit.store.values import IdentityResolution as IdentityResolution
from affidavit.store.values import LedgerEntry as LedgerEntry
from affidavit.store.values import LexicalHit as LexicalHit
from affidavit.store.values import LexicalStats as LexicalStats
from affidavit.store.values import PolicyEvent as PolicyEvent
from affidavit.store.values import QuarantineRecord as QuarantineRecord
from affidavit.store.values import RelationTuple as RelationTuple
from affidavit.store.values import RunRecord as RunRecord
from affidavit.store.values import SireRecord as SireRecord
from affidavit.store.values import VectorHit as VectorHit
from affidavit.store.values import VersionBundle as VersionBundle
from affidavit.store.values import identity_collision as identity_collision


class IngestLock(Protocol):
    """A tenant's ingestion lock, held until :meth:`release`."""

    def release(self) -> None: ...


class Store(Protocol):
    """Persistence for one deployment. Backends: ``sqlite`` (default), ``postgres``."""

    backend: str

    def close(self) -> None: ...

    def schema_version(self) -> int: ...

    # ---- ingestion -----------------------------------------------------------------
    def head(self, tenant: str, node_id: str) -> HeadInfo | None: ...

    def heads(self, tenant: str) -> list[HeadInfo]: ...

    def commit_version(self, bundle: VersionBundle) -> CommitResult: ...

    def batched(self) -> AbstractContextManager[None]:
        """Within it, this thread's writes may share transactions (fewer, larger commits);
        each document version stays all or nothing, and a crash loses whole versions only.
        A backend that gains nothing from it takes it as a no-op."""
        ...

    def version_metadata(self, tenant: str, version_id: str) -> str | None: ...

    def withdraw(self, tenant: str, node_id: str, *, run_id: str, at: str) -> bool: ...

    def try_ingest_lock(self, tenant: str) -> IngestLock | None:
        """Hold ``tenant``'s ingestion lock until ``release()``; None while another run holds
        it. The lock dies with its holder: a killed run never leaves it held."""
        ...

    def start_run(self, tenant: str, run_id: str, *, at: str, params_json: str) -> None: ...

    def finish_run(self, tenant: str, run_id: str, *, status: str, at: str,
                   summary_json: str) -> None: ...

    def get_run(self, tenant: str, run_id: str) -> RunRecord | None: ...

    def list_runs(self, tenant: str, limit: int = 50) -> list[RunRecord]: ...

    def record_quarantine(self, tenant: str, record: QuarantineRecord) -> None: ...

    def list_quarantine(self, tenant: str, run_id: str | None = None) -> list[QuarantineRecord]: ...

    def release_quarantine(self, tenant: str, run_id: str, alias: str, *, by: str,
                           at: str) -> bool: ...

    def listed_nodes(self, tenant: str, listing: str) -> set[str]:
        """Node ids the last full listing of ``listing`` contained."""
        ...

    def replace_listing(self, tenant: str, listing: str, node_ids: Sequence[str]) -> None: ...

    def count_rows(self, tenant: str, table: str) -> int: ...

    # ---- retrieval (authz applied inside) ------------------------------------------
    def lexical_stats(self, tenant: str) -> LexicalStats: ...

    def document_frequencies(self, tenant: str, terms: Sequence[str]) -> dict[str, int]: ...

    def lexical_search(self, authz: AuthzContext, term_idf: Mapping[str, float], *, k1: float,
                       b: float, avg_length: float, limit: int,
                       postings: int | None = None) -> list[LexicalHit]:
        """BM25 hits the caller may read. ``postings``, when the caller has counted them
        (the sum of the terms' document frequencies), may guide how the search runs; it
        never changes what it returns."""
        ...

    def get_chunks(self, authz: AuthzContext, chunk_ids: Sequence[str]) -> list[ChunkRecord]: ...

    def chunks_with_label(self, tenant: str, chunk_ids: Sequence[str],
                          label: str) -> list[Chunk]: ...

    def source_chunk_ids(self, tenant: str, source_id: str) -> list[str]:
        """Head chunk ids of the node(s) with this source id (any source system)."""
        ...

    def document_chunk_ids(self, tenant: str, node_id: str) -> list[str]:
        """Head chunk ids of one node in reading order (ordinal), whatever their label:
        the document reader's outline, to be read back through :meth:`get_chunks`."""
        ...

    def paragraph_labels(self, tenant: str, version_id: str) -> list[ParagraphLabel]:
        """A version's paragraph labels with their recorded reasons, in paragraph order
        (operator data: the reasons name keywords and detectors, never text)."""
        ...

    def corpus_generation(self, tenant: str) -> int:
        """A counter that changes whenever the served corpus of the tenant changes."""
        ...

    # ---- label epochs (a policy change is in force on the next request) --------------
    def label_stale_heads(self, tenant: str, label_epoch: str) -> list[HeadInfo]:
        """Head versions with a chunk labelled under another epoch than ``label_epoch``."""
        ...

    def blob(self, tenant: str, raw_digest: str) -> RawBlob | None:
        """The stored raw bytes (the authority everything else is derived from)."""
        ...

    # ---- requalification (affidavit.ingest.requalify) ---------------------------------
    def version_chunks(self, tenant: str, version_id: str) -> list[Chunk]:
        """Every chunk of one version in reading order with its derived-text labels,
        whatever its label or epoch: what requalification compares, never served."""
        ...

    def restamp_version(self, tenant: str, version_id: str, *, label_epoch: str, witness: str,
                        fingerprint: str) -> None:
        """Mark a version derived under the current epochs, in place, once a derivation
        under them gave the same labels, chunks and SIRE proposal (its ids and vectors
        stay); the served corpus changes, so its generation does too."""
        ...

    # ---- vectors (one table per deployment, keyed by model id) -----------------------
    def chunks_missing_vectors(self, tenant: str, model_id: str, limit: int, *,
                               labels: Sequence[str] | None = None,
                               label_epoch: str | None = None) -> list[tuple[str, str]]:
        """(chunk_id, text) of head chunks that have no vector for ``model_id`` yet; only
        chunks with one of ``labels`` labelled under ``label_epoch`` when those are given
        (the declared embedding egress: nothing else is sent to the backend)."""
        ...

    def put_vectors(self, tenant: str, model_id: str,
                    vectors: Mapping[str, Sequence[float]]) -> int: ...

    def vector_search(self, authz: AuthzContext, model_id: str, query: Sequence[float], *,
                      limit: int) -> list[VectorHit]:
        """Exact cosine top-``limit`` over the chunks the caller may read (prefiltered)."""
        ...

    def head_vectors(self, tenant: str, model_id: str) -> tuple[list[str], list[bytes]]:
        """All head chunk ids with a vector for ``model_id`` and their float32 bytes."""
        ...

    # ---- identity (who owns a node's source id) --------------------------------------
    def identity_owner(self, tenant: str, node_id: str) -> str | None:
        """The source path that owns the node's identity; None when none claimed it yet.

        The first committed version of a node claims it for its path; ``commit_version``
        refuses, with :func:`identity_collision`, a version from any other path.
        """
        ...

    def first_submitter(self, tenant: str, node_id: str) -> str | None:
        """The principal that submitted the node's first version over the service: its
        owner. None for a node an operator ingested, or claimed before owners were kept."""
        ...

    def resolve_identity(self, tenant: str, resolution: IdentityResolution) -> None:
        """Record an operator's decision (append-only); a take-over hands the node to the
        claimant. Refused with InputRejected when the owner is no longer
        ``resolution.owner``, so a decision never applies to a state it was not made on."""
        ...

    def list_identity_resolutions(self, tenant: str) -> list[IdentityResolution]: ...

    # ---- authorization data --------------------------------------------------------
    # Each tuple or grant change appends its policy event (by ``actor``) in the change's
    # own transaction (affidavit.audit): a row the trail did not put there grants nothing.
    def add_tuple(self, tenant: str, rel: RelationTuple, *, at: str,
                  actor: str = ...) -> bool: ...

    def remove_tuple(self, tenant: str, rel: RelationTuple, *, actor: str = ...) -> bool: ...

    def list_tuples(self, tenant: str) -> list[RelationTuple]: ...

    def grant(self, tenant: str, subject: str, labels: Sequence[str], *, at: str,
              actor: str = ...) -> int: ...

    def revoke(self, tenant: str, subject: str, labels: Sequence[str], *,
               actor: str = ...) -> int: ...

    def list_grants(self, tenant: str) -> dict[str, tuple[str, ...]]: ...

    def policy_generation(self, tenant: str) -> int | None:
        """A counter bumped in the same transaction as every change to the tenant's stored
        tuples or grants; None for an unknown tenant. Authorization contexts are cached by
        it, so a change takes effect on the very next request."""
        ...

    def tenant_exists(self, tenant: str) -> bool: ...

    def ensure_tenant(self, tenant: str) -> None: ...

    # ---- SIRE ----------------------------------------------------------------------
    def list_sire(self, tenant: str, *, state: str | None = None,
                  head_only: bool = True) -> list[SireRecord]: ...

    def set_sire_state(self, tenant: str, sire_id: str, *, state: str, by: str,
                       at: str) -> SireRecord: ...

    def activate_sire(self, tenant: str, sire_ids: Sequence[str], *, by: str,
                      at: str) -> list[SireRecord]:
        """Make these records ACTIVE in one transaction, recorded with who approved and when;
        a record already ACTIVE keeps its approver. NotFound (nothing changed) for an
        unknown id. Returns the records in the order given."""
        ...

    def active_sire(self, tenant: str, version_ids: Sequence[str]) -> dict[str, SireRecord]: ...

    def active_sire_versions(self, tenant: str, version_ids: Sequence[str]) -> set[str]:
        """Which of ``version_ids`` have an ACTIVE SIRE (the search path's gate column,
        without reading the records)."""
        ...

    # ---- service API keys (hashes only) ----------------------------------------------
    def add_api_key(self, tenant: str, record: ApiKeyRecord, *, actor: str = ...) -> None:
        """Store a key and append its ``api_key.create`` event in one transaction."""
        ...

    def get_api_key(self, tenant: str, key_id: str) -> ApiKeyRecord | None: ...

    def list_api_keys(self, tenant: str) -> list[ApiKeyRecord]: ...

    def revoke_api_key(self, tenant: str, key_id: str, *, at: str, actor: str = ...) -> bool:
        """Mark the key revoked, with its ``api_key.revoke`` event in the same transaction;
        False when there is no unrevoked key with that id."""
        ...

    # ---- policy events (affidavit.audit) -------------------------------------------
    def append_policy_event(self, tenant: str, *, kind: str, actor: str, at: str,
                            before_json: str, after_json: str) -> PolicyEvent:
        """Append one event to the tenant's policy chain, serialised with other writers."""
        ...

    def iter_policy_events(self, tenant: str, *, after_seq: int = 0) -> Iterator[PolicyEvent]:
        """The tenant's policy events with ``seq > after_seq``, in sequence order."""
        ...

    def policy_head(self, tenant: str) -> tuple[int, str]:
        """The newest policy event's (seq, event_hash); (0, genesis) when there is none."""
        ...

    # ---- references (affidavit.references) -----------------------------------------
    def add_reference(self, tenant: str, reference: Reference) -> None: ...

    def references_touching(self, tenant: str, node_ids: Sequence[str], *, direction: str,
                            labels: Collection[str], limit: int,
                            viewer: str = "") -> list[Reference]:
        """References whose classification is in ``labels`` and that leave (``out``),
        reach (``in``) or touch (``both``) one of ``node_ids``; oldest first. A citation
        comes back only when ``viewer`` asked its answer (none without a viewer)."""
        ...

    def search_references(self, tenant: str, text: str, *, labels: Collection[str],
                          limit: int, viewer: str = "") -> list[Reference]:
        """References whose classification and text label are in ``labels`` and whose
        label or reason contains ``text`` (case-insensitive); oldest first. Citations as
        in :meth:`references_touching`."""
        ...

    # ---- ledger --------------------------------------------------------------------
    def append_ledger(self, tenant: str, *, record_id: str, request_id: str, created_at: str,
                      payload: str, references: Sequence[Reference] = ()) -> LedgerEntry:
        """Append one record; ``references`` (its citations) commit in the same
        transaction, or neither does."""
        ...

    def get_ledger(self, tenant: str, record_id: str) -> LedgerEntry | None: ...

    def iter_ledger(self, tenant: str) -> Iterator[LedgerEntry]: ...


COUNTABLE_TABLES = (
    "blobs", "nodes", "aliases", "versions", "head_map", "head_history", "paragraph_labels",
    "chunks", "postings", "acl_tokens", "relation_tuples", "label_grants", "sire", "ledger",
    "runs", "quarantine", "vectors", "source_listings",
)
