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
(:func:`stale_documents`, used by :func:`affidavit.ingest.worker.enqueue_local_folder`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from affidavit.ingest.derivation import requalify_label_stale, restamp_unaffected
from affidavit.ingest.outcomes import DocumentOutcome
from affidavit.ingest.stored import RELABEL_FAILED as RELABEL_FAILED
from affidavit.ingest.stored import relabel_one as relabel_one
from affidavit.ingest.stored import stored_document
from affidavit.records import SourceDocument
from affidavit.store.protocol import HeadInfo

if TYPE_CHECKING:  # ingest imports this module at run time
    from affidavit.ingest.run import Ingestor

def relabel_stale(ingestor: Ingestor, run_id: str, at: str) -> list[DocumentOutcome]:
    """Requalify every head labelled under another epoch; one outcome per document derived
    again. A head whose derivation under the current policy gives the same labels, chunks
    and SIRE proposal is only marked current, in place (its approval, ids and vectors stay),
    and has no outcome: only what the change affects is derived again
    (:mod:`affidavit.ingest.requalify`)."""
    return requalify_label_stale(ingestor, run_id, at)


def stale_documents(ingestor: Ingestor) -> list[tuple[HeadInfo, SourceDocument | None]]:
    """Each head labelled under another epoch than the ingestor's that the change affects,
    with the document to ingest again (from its stored bytes), or None when those bytes
    are missing. Heads it does not affect are marked current in place here and left out
    (:func:`affidavit.ingest.requalify.restamp_unaffected`)."""
    stale = ingestor.store.label_stale_heads(ingestor.tenant, ingestor.label_epoch)
    return [(head, stored_document(ingestor, head))
            for head in restamp_unaffected(ingestor, stale)]
