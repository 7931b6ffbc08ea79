"""Re-labelling from the blob plane after a sensitivity policy change.

Chunks are stored with the label epoch they were labelled under
(:mod:`affidavit.classify.epoch`), and readers admit only chunks of their own epoch, so a
changed policy hides every chunk labelled under the old one on the very next request.
This module brings them back: at the start of each ingestion run, every head version with
a chunk of another epoch is derived again from its stored raw bytes (the blob plane is the
authority; nothing is fetched again), with the metadata and ACL subjects it was ingested
with, through the same path as any document. The result supersedes the stale version.

A document that cannot be derived again (its bytes are now refused, say) is quarantined
like any other and stays hidden: it is never served with a label of the old policy.
PostgreSQL ingestion workers get the same documents queued with every run
(:func:`stale_documents`, used by :func:`affidavit.worker.enqueue_local_folder`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from affidavit.authz.tuples import is_subject
from affidavit.extract import extract
from affidavit.records import DocumentMetadata, SourceDocument
from affidavit.store.base import HeadInfo, QuarantineRecord

if TYPE_CHECKING:  # ingest imports this module at run time
    from affidavit.ingest import DocumentOutcome, Ingestor

RELABEL_FAILED = "RELABEL_FAILED"


def relabel_stale(ingestor: Ingestor, run_id: str, at: str) -> list[DocumentOutcome]:
    """Requalify every head labelled under another epoch; one outcome per document derived
    again. A head whose derivation under the current policy gives the same labels, chunks
    and SIRE proposal is only marked current, in place (its approval, ids and vectors stay),
    and has no outcome: only what the change affects is derived again
    (:mod:`affidavit.index.requalify`)."""
    from affidavit.index.requalify import requalify_label_stale

    return requalify_label_stale(ingestor, run_id, at)


def stored_document(ingestor: Ingestor, head: HeadInfo) -> SourceDocument | None:
    """The head version as a source document rebuilt from its stored bytes and the metadata
    it was ingested with; ``None`` when those are missing."""
    store, tenant = ingestor.store, ingestor.tenant
    blob = store.blob(tenant, head.raw_digest)
    stored = store.version_metadata(tenant, head.version_id)
    if blob is None or stored is None:
        return None
    metadata = _declared_metadata(json.loads(stored), blob.content, head.alias, ingestor)
    return SourceDocument(source_system=blob.source_system, source_id=blob.source_id,
                          source_rev=blob.source_rev, content=blob.content,
                          alias=head.alias, metadata=metadata)


def stale_documents(ingestor: Ingestor) -> list[tuple[HeadInfo, SourceDocument | None]]:
    """Each head labelled under another epoch than the ingestor's that the change affects,
    with the document to ingest again (from its stored bytes), or None when those bytes
    are missing. Heads it does not affect are marked current in place here and left out
    (:func:`affidavit.index.requalify.restamp_unaffected`)."""
    from affidavit.index.requalify import restamp_unaffected

    stale = ingestor.store.label_stale_heads(ingestor.tenant, ingestor.label_epoch)
    return [(head, stored_document(ingestor, head))
            for head in restamp_unaffected(ingestor, stale)]


def relabel_one(ingestor: Ingestor, head: HeadInfo, run_id: str, at: str) -> DocumentOutcome:
    """Derive one head again from its stored bytes and commit it (quarantined when they
    are missing)."""
    from affidavit.ingest import QUARANTINED, DocumentOutcome

    document = stored_document(ingestor, head)
    if document is None:
        outcome = DocumentOutcome(head.alias, head.node_id, QUARANTINED, RELABEL_FAILED,
                                  "the stored bytes of its head version are missing")
        ingestor.store.record_quarantine(ingestor.tenant, QuarantineRecord(
            run_id, head.alias, head.node_id, RELABEL_FAILED, outcome.message or "", at))
        return outcome
    return ingestor.ingest_one(document, run_id)


def _declared_metadata(stored: dict[str, Any], content: bytes, alias: str,
                       ingestor: Ingestor) -> DocumentMetadata:
    """What the version was ingested with, as sidecar metadata for its own bytes.

    The stored ACL holds the resolved tokens; its subjects are what was declared (or the
    default then in force). They are declared again unless the bytes carry their own ACL
    (front matter), which the parser reads again and which must not be contradicted.
    """
    front = extract(content, filename=alias, limits=ingestor.settings.ingest).metadata
    acl = stored.get("acl")
    subjects = (tuple(sorted(t for t in acl if isinstance(t, str) and is_subject(t)))
                if isinstance(acl, list) and front.acl is None else None)
    return DocumentMetadata(
        source_id=_text(stored.get("source_id")) if front.source_id is None else None,
        title=_text(stored.get("title")),
        acl=subjects,
        classification=(_text(stored.get("classification"))
                        if front.classification is None else None),
        oracle_id=_text(stored.get("oracle_id")),
        frameworks=tuple(str(f) for f in stored.get("frameworks") or ()),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
