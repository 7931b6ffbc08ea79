"""Reading what :mod:`affidavit.authz.explain` decides on from a store: a document's head
version, its ACL tokens, its chunks' labels and its SIRE state; a principal's groups,
grants and the share of the corpus the live filter lets it read.

These are operator views (whoever can open the database): they name chunks by id, label
and ordinal, never by text, title or heading, so a RESTRICTED string cannot pass through
them even when the principal asked about may not read it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from affidavit.authz.context import FailClosedAuthorizer, StoreAuthorizer
from affidavit.authz.expand import PolicyIndex
from affidavit.authz.explain import (
    AccessExplanation,
    ChunkFacts,
    DocumentFacts,
    explain_access,
    label_grants,
    principal_is_known,
)
from affidavit.authz.tuples import parse_principal
from affidavit.config.settings import PUBLIC, Settings
from affidavit.errors import NotFound
from affidavit.index.epochs import serving_epoch
from affidavit.store.protocol import HeadInfo, RelationTuple, Store

_BATCH = 500


def _policy(store: Store, settings: Settings,
            tenant: str) -> tuple[list[RelationTuple], dict[str, set[str]]]:
    authorizer = StoreAuthorizer(store, settings)
    return authorizer.all_tuples(tenant), authorizer.all_grants(tenant)


def _metadata(store: Store, tenant: str, head: HeadInfo) -> dict[str, Any]:
    raw = store.version_metadata(tenant, head.version_id)
    data = json.loads(raw) if raw else {}
    return data if isinstance(data, dict) else {}


def find_document(store: Store, tenant: str, doc: str) -> HeadInfo:
    """The head version named by alias (path), node id, ``doc:`` object or source id."""
    heads = store.heads(tenant)
    wanted = doc.removeprefix("doc:")
    matches = [h for h in heads if h.alias == doc] or [h for h in heads if h.node_id == wanted]
    if not matches:
        matches = [h for h in heads if _metadata(store, tenant, h).get("source_id") == doc]
    if len(matches) > 1:
        raise NotFound(f"{doc!r} names {len(matches)} documents; give a node id: "
                       + ", ".join(h.node_id for h in matches))
    if not matches:
        raise NotFound(f"no current document {doc!r} in tenant {tenant!r} "
                       "(give its path as ingested, its node id or its source id)")
    return matches[0]


def _head_chunks(store: Store, settings: Settings, tenant: str,
                 head: HeadInfo, source_id: str) -> tuple[ChunkFacts, ...]:
    ids = store.source_chunk_ids(tenant, source_id)
    found: list[ChunkFacts] = []
    for label in settings.sensitivity.labels:
        found += [ChunkFacts(c.chunk_id, c.ordinal, c.label)
                  for c in store.chunks_with_label(tenant, ids, label)
                  if c.node_id == head.node_id and c.version_id == head.version_id]
    return tuple(sorted(found, key=lambda c: c.ordinal))


def document_facts(store: Store, settings: Settings, tenant: str, head: HeadInfo) -> DocumentFacts:
    """What the store holds about one head version, for :func:`explain_access`."""
    metadata = _metadata(store, tenant, head)
    sire = [r for r in store.list_sire(tenant) if r.version_id == head.version_id]
    stale = {h.node_id for h in store.label_stale_heads(tenant, serving_epoch(settings, tenant))}
    return DocumentFacts(
        node_id=head.node_id, version_id=head.version_id, alias=head.alias,
        acl_tokens=tuple(sorted(str(t) for t in metadata.get("acl", []))),
        chunks=_head_chunks(store, settings, tenant, head, str(metadata.get("source_id", ""))),
        sire_state=sire[0].state if sire else None, labels_current=head.node_id not in stale)


def explain_document(store: Store, settings: Settings, tenant: str, principal: str,
                     doc: str) -> AccessExplanation:
    """``authz explain``: the decision for ``principal`` on the document ``doc``, and why."""
    who = parse_principal(principal)
    if not store.tenant_exists(tenant):
        raise NotFound(f"no tenant {tenant!r} in this database")
    tuples, grants = _policy(store, settings, tenant)
    facts = document_facts(store, settings, tenant, find_document(store, tenant, doc))
    return explain_access(tenant, who, tuples, grants, facts)


def all_acl_tokens(store: Store, tenant: str) -> Iterator[str]:
    """Every token in the ACL of any current document of the tenant."""
    for head in store.heads(tenant):
        yield from (str(t) for t in _metadata(store, tenant, head).get("acl", []))


def is_known_principal(store: Store, settings: Settings, tenant: str, principal: str) -> bool:
    """Whether the principal appears in any tuple, grant or current document ACL."""
    tuples, grants = _policy(store, settings, tenant)
    return principal_is_known(principal, tuples, grants, all_acl_tokens(store, tenant))


def unknown_principal_warning(principal: str, tenant: str) -> str:
    return (f"warning: {principal} appears in no tuple, no grant and no document ACL of "
            f"tenant {tenant!r}; check the spelling (it reads only what '*' may read)")


@dataclass(frozen=True)
class PrincipalSummary:
    """``whoami``: who the principal is to the tenant's policy and what it can read."""

    tenant: str
    principal: str
    known: bool
    groups: tuple[str, ...]
    viewed_objects: tuple[str, ...]
    grants: dict[str, tuple[str, ...]]
    readable_documents: int
    total_documents: int
    readable_chunks: int
    total_chunks: int
    policy_version: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def readable_share(self) -> float:
        return self.readable_chunks / self.total_chunks if self.total_chunks else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "principal": self.principal, "known": self.known,
                "groups": list(self.groups), "viewed_objects": list(self.viewed_objects),
                "grants": {k: list(v) for k, v in self.grants.items()},
                "readable_documents": self.readable_documents,
                "total_documents": self.total_documents,
                "readable_chunks": self.readable_chunks, "total_chunks": self.total_chunks,
                "readable_share": round(self.readable_share, 4),
                "policy_version": self.policy_version, "notes": list(self.notes)}


def _batches(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), _BATCH):
        yield ids[start:start + _BATCH]


def describe_principal(store: Store, settings: Settings, tenant: str,
                       principal: str) -> PrincipalSummary:
    """``whoami``: groups, viewed objects and grants from the live policy; the documents and
    chunks the principal reads counted with the same filter retrieval uses."""
    context = FailClosedAuthorizer(StoreAuthorizer(store, settings)).context_for(tenant,
                                                                               principal)
    tuples, grants = _policy(store, settings, tenant)
    index = PolicyIndex.build(tuples)
    subjects = index.subjects(context.principal)
    heads = store.heads(tenant)
    metadata = {h.node_id: _metadata(store, tenant, h) for h in heads}
    ids = sorted({i for source in sorted({str(m.get("source_id", "")) for m in metadata.values()})
                  for i in store.source_chunk_ids(tenant, source)})
    visible = [r for batch in _batches(ids) for r in store.get_chunks(context, batch)]
    acl = (str(t) for m in metadata.values() for t in m.get("acl", []))
    known = principal_is_known(context.principal, tuples, grants, acl)
    notes = () if known else (unknown_principal_warning(context.principal, tenant),)
    return PrincipalSummary(
        tenant=tenant, principal=context.principal, known=known,
        groups=tuple(sorted(s for s in subjects if s.startswith("group:"))),
        viewed_objects=tuple(sorted(index.viewed(subjects))),
        grants=label_grants(context.principal, tuples, grants),
        readable_documents=len({r.chunk.node_id for r in visible}),
        total_documents=len(heads), readable_chunks=len(visible), total_chunks=len(ids),
        policy_version=context.policy_version, notes=notes)



def default_label_warning(store: Store, settings: Settings, tenant: str) -> str | None:
    """A warning when no subject is granted the default label: every paragraph that no rule
    labels otherwise gets it, so with no grant nobody reads most of the corpus."""
    label = settings.sensitivity.default_level
    if label == PUBLIC:
        return None
    _, grants = _policy(store, settings, tenant)
    if any(label in labels for labels in grants.values()):
        return None
    return (f"warning: no subject of tenant {tenant!r} is granted the default label {label}: "
            f"nobody can read {label} text; grant it, e.g. "
            f"affidavit authz grant 'group:staff#member' {label}")


__all__ = ["PrincipalSummary", "all_acl_tokens", "default_label_warning", "describe_principal",
           "document_facts", "explain_document", "find_document", "is_known_principal",
           "unknown_principal_warning"]
