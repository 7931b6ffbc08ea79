"""The values a store reads and writes: a version bundle to commit, head and chunk records,
ledger entries, policy events, runs, identity resolutions, quarantine records, relation tuples
and API keys. Plain frozen data; :mod:`affidavit.store.protocol` re-exports them beside the
:class:`~affidavit.store.protocol.Store` protocol that speaks in them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from affidavit.errors import InputRejected
from affidavit.records import Chunk, ParagraphLabel, RawBlob, SireTuple


@dataclass(frozen=True)
class VersionBundle:
    """Everything derived from one document version, written in one transaction."""

    tenant: str
    node_id: str
    version_id: str
    fingerprint: str
    blob: RawBlob
    alias: str
    title: str
    metadata_json: str
    declared_label: str | None
    normalized_text: str
    paragraph_labels: tuple[tuple[ParagraphLabel, int, int], ...]
    chunks: tuple[Chunk, ...]
    # per chunk: (term, tf) pairs and the chunk's length in tokens
    postings: Mapping[str, tuple[tuple[str, int], ...]]
    chunk_lengths: Mapping[str, int]
    acl_tokens: tuple[str, ...]
    sire: SireTuple
    witness: str
    run_id: str
    created_at: str
    # the sensitivity policy its chunk labels were computed under (classify.epoch)
    label_epoch: str = ""
    # the principal that submitted it over the service (None: an operator's ingest); kept
    # as the node's owner when this is its first version (affidavit.ingest.supersession)
    submitted_by: str | None = None


CHUNK_INSERT_COLUMNS = (
    "tenant_id, chunk_id, version_id, node_id, ordinal, start_offset, end_offset, text, "
    "label, heading_path_json, locator, witness, n_tokens, is_head, label_epoch"
)
"""The chunk columns every backend writes, by name, so that later columns with defaults
never shift a positional insert."""


@dataclass(frozen=True)
class HeadInfo:
    node_id: str
    version_id: str
    raw_digest: str
    fingerprint: str
    alias: str


@dataclass(frozen=True)
class CommitResult:
    version_id: str
    chunks_written: int
    superseded: str | None


@dataclass(frozen=True)
class LexicalStats:
    n_chunks: int
    total_length: int

    @property
    def avg_length(self) -> float:
        return self.total_length / self.n_chunks if self.n_chunks else 0.0


class LexicalHit(NamedTuple):
    """A chunk and its BM25 score (a named tuple: immutable, and made for every hit of
    every search at a third of a frozen dataclass's cost)."""

    chunk_id: str
    score: float


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    score: float  # cosine similarity
    # Whether the list this hit belongs to is the exact top-k of the caller's readable
    # chunks; False only where an approximate index (PostgreSQL's HNSW) answered.
    exact: bool = True


@dataclass(frozen=True)
class ChunkRecord:
    """A stored chunk with the facts of its document version."""

    chunk: Chunk
    title: str
    alias: str
    source_id: str
    source_system: str
    is_head: bool


@dataclass(frozen=True)
class SireRecord:
    sire_id: str
    node_id: str
    version_id: str
    title: str
    alias: str
    sire: SireTuple
    state: str
    proposed_at: str
    approved_by: str | None
    approved_at: str | None
    is_head: bool


@dataclass(frozen=True)
class LedgerEntry:
    seq: int
    record_id: str
    request_id: str
    created_at: str
    payload: str
    prev_hash: str
    record_hash: str
    # How record_hash binds the columns (affidavit.ledger.chain): 1 for records written
    # before every column was bound, 2 since.
    link_format: int = 1


@dataclass(frozen=True)
class PolicyEvent:
    """One append-only change to a tenant's policy (affidavit.audit): who, when, what it was
    and what it became, as canonical JSON, hash-chained to the event before."""

    seq: int
    kind: str
    actor: str
    at: str
    before_json: str
    after_json: str
    prev_hash: str
    event_hash: str


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    status: str
    started_at: str
    finished_at: str | None
    summary_json: str
    params_json: str = "{}"


IDENTITY_COLLISION = "IDENTITY_COLLISION"
TAKE_OVER, KEEP = "take-over", "keep"


@dataclass(frozen=True)
class IdentityResolution:
    """An operator's recorded decision on an identity collision.

    ``claimant`` is the source path that claimed the node's source id, ``owner`` the path
    that held it when the decision was made. ``decision`` is :data:`TAKE_OVER` (the claimant
    becomes the owner; its next ingest supersedes the node) or :data:`KEEP`.
    """

    node_id: str
    source_id: str
    claimant: str
    owner: str
    decision: str
    resolved_by: str
    resolved_at: str
    note: str = ""


def identity_collision(source_id: str, claimant: str,
                       content_sha256: str | None = None) -> InputRejected:
    """The refusal of a document that claims a node another source path owns.

    The message names the claimant only: the owner's path is another document's derived
    text (``affidavit identity resolve`` shows it to the operator); and the sha256 of the
    claimant's bytes, which a take-over is then bound to (affidavit.identity.take_over)."""
    about = f" (bytes sha256:{content_sha256})" if content_sha256 else ""
    return InputRejected(
        IDENTITY_COLLISION,
        f"{claimant} claims source_id {source_id!r}, which another document holds; it keeps "
        f"it until an operator runs 'affidavit identity resolve {claimant} "
        f"--take-over|--keep --by NAME'{about}")


@dataclass(frozen=True)
class QuarantineRecord:
    run_id: str
    alias: str
    source_id: str
    reason_code: str
    message: str
    at: str
    released_by: str | None = None
    released_at: str | None = None


@dataclass(frozen=True)
class RelationTuple:
    object: str
    relation: str
    subject: str
    source: str

    def __str__(self) -> str:
        return f"{self.object}#{self.relation}@{self.subject}"


@dataclass(frozen=True)
class ApiKeyRecord:
    """A service API key as stored: never the key itself, only a salted hash of its secret."""

    key_id: str
    principal: str
    role: str
    salt: str
    secret_hash: str
    created_at: str
    expires_at: str | None = None
    revoked_at: str | None = None
