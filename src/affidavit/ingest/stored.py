"""A head version rebuilt from the blob plane: the source document made again from its stored
bytes and the metadata it was ingested with (:func:`stored_document`), and derived again
through the ordinary ingestion path (:func:`relabel_one`). Re-labelling
(:mod:`affidavit.ingest.relabel`), requalification (:mod:`affidavit.ingest.derivation`) and
the boundary gate all start from here; nothing is fetched again."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from affidavit.authz.tuples import is_subject
from affidavit.extract import extract
from affidavit.ingest.outcomes import QUARANTINED, DocumentOutcome
from affidavit.records import DocumentMetadata, SourceDocument
from affidavit.store.protocol import HeadInfo, QuarantineRecord

if TYPE_CHECKING:
    from affidavit.ingest.run import Ingestor


RELABEL_FAILED = "RELABEL_FAILED"


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


def relabel_one(ingestor: Ingestor, head: HeadInfo, run_id: str, at: str) -> DocumentOutcome:
    """Derive one head again from its stored bytes and commit it (quarantined when they
    are missing)."""
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
