"""Creating, listing and searching references on behalf of a reader.

Only a principal who may read both ends may create a soft reference; it carries the most
severe label of both ends, and the text its creator wrote (reason, location detail) carries
its own label, found by the same deterministic rules as a paragraph. That text is accepted
whatever it names and shown only to readers granted its label: refusing it would tell the
writer which words are restricted. Its creation is a policy event with its actor.

Every refusal here is the one :data:`NO_DOCUMENT` (a document that does not exist and one
the caller may not read are refused alike, by the same reads, before any text is labelled).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from affidavit.errors import InputRejected, NotFound
from affidavit.policy.labels import label_text
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import (
    DOCUMENT,
    AuthzContext,
    Reference,
    checked_direction,
    checked_kind,
    checked_location,
)
from affidavit.references.access import ReadableEnds
from affidavit.store.protocol import Store

MAX_LISTED = 200
MAX_REASON_CHARS = 4000
NO_DOCUMENT = "no such document that you may read"
"""The one refusal of the references surfaces: it never names what the caller asked for."""


def document_label(store: Store, authz: AuthzContext, node_id: str,
                   policy: SensitivityPolicy) -> str:
    """The most severe label of a document's head chunks; call only for a document this
    reader may read (all of its chunks come back)."""
    records = store.get_chunks(authz, store.document_chunk_ids(authz.tenant, node_id))
    return policy.most_severe(r.chunk.label for r in records)


def add_reference(store: Store, authz: AuthzContext, policy: SensitivityPolicy, *,
                  source: str, target: str, kind: str, reason: str, actor: str,
                  location_type: str | None = None,
                  location_detail: dict[str, Any] | None = None) -> Reference:
    """Create a soft reference from document ``source`` to document ``target``; returned
    as its creator may see it.

    Refused with :data:`NO_DOCUMENT` whether an end does not exist or may not be read, so a
    refusal tells nothing about documents the caller cannot see."""
    kind = checked_kind(kind)
    location = checked_location(location_type)
    if len(reason) > MAX_REASON_CHARS:
        raise InputRejected("REFERENCE_REASON", f"reason longer than {MAX_REASON_CHARS}")
    if source == target:
        raise InputRejected("REFERENCE_SELF", "a reference links two different documents")
    ends = ReadableEnds(store, authz)
    if not (ends.document(source) and ends.document(target)):
        raise NotFound(NO_DOCUMENT)
    classification = policy.most_severe([document_label(store, authz, source, policy),
                                         document_label(store, authz, target, policy)])
    reference = Reference(
        ref_id="ref-" + uuid.uuid4().hex[:20], kind=kind, source_type=DOCUMENT,
        source_id=source, target_id=target, target_chunk_id=None, location_type=location,
        location_detail=json.dumps(location_detail or {}, sort_keys=True), label="",
        reason=reason, classification=classification, created_by=actor,
        created_at=datetime.now(UTC).isoformat(timespec="microseconds"),
        text_label=written_text_label(policy, reason, location_detail or {}))
    store.add_reference(authz.tenant, reference)
    audit_reference_created(store, authz.tenant, actor, reference)
    return reference.shown_to(authz.granted_labels)


def written_text_label(policy: SensitivityPolicy, reason: str,
                       location_detail: dict[str, Any]) -> str:
    """The label of the text a reference's creator wrote: its reason and every key and
    value of its location detail, each labelled like a paragraph with no declared label."""
    pieces = [reason, *(str(p) for item in location_detail.items() for p in item)]
    return policy.most_severe(
        label_text(piece, policy=policy, declared=None, path="", fallback=policy.default_level)
        for piece in pieces)


def audit_reference_created(store: Store, tenant: str, actor: str,
                            reference: Reference) -> None:
    """The one place a reference's creation enters the policy audit trail; identifiers
    only (never the reason's text)."""
    from affidavit.audit import REFERENCE_ADD, record_policy_event

    record_policy_event(store, tenant, REFERENCE_ADD, actor, None, {
        "ref_id": reference.ref_id, "kind": reference.kind,
        "source": reference.source_id, "target": reference.target_id,
        "classification": reference.classification})


def list_references(store: Store, authz: AuthzContext, node_id: str, *,
                    direction: str = "both", limit: int = MAX_LISTED) -> list[Reference]:
    """References of a document this reader may read, each with both ends readable."""
    direction = checked_direction(direction)
    ends = ReadableEnds(store, authz)
    if not ends.document(node_id):
        return []
    found = store.references_touching(authz.tenant, [node_id], direction=direction,
                                      labels=authz.granted_labels, limit=limit,
                                      viewer=authz.principal)
    return ends.visible(found)


def search_references(store: Store, authz: AuthzContext, text: str, *,
                      limit: int = MAX_LISTED) -> list[Reference]:
    """References whose label or reason contains ``text``, among those this reader sees;
    text whose label the reader is not granted is never matched."""
    found = store.search_references(authz.tenant, text, labels=authz.granted_labels,
                                    limit=limit, viewer=authz.principal)
    return ReadableEnds(store, authz).visible(found)


def resolve_document(store: Store, authz: AuthzContext, document: str) -> str:
    """The node id of ``document`` (a node id or a head document's path) if this reader
    may read it; one refusal, reached by the same reads, for missing and unreadable alike."""
    named = [h.node_id for h in store.heads(authz.tenant) if document in (h.node_id, h.alias)]
    ends = ReadableEnds(store, authz)
    # A name no document has is checked as a node id, as a hidden document's id is.
    for node_id in named or [document]:
        if ends.document(node_id):
            return node_id
    raise NotFound(NO_DOCUMENT)
