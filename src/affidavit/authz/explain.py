"""Why a principal may or may not read a document: the decision and its reasons (pure).

Retrieval never asks "may X read Y?" (it filters with an :class:`~affidavit.records.AuthzContext`
inside every query); an operator does, when a search comes back empty. This module answers
that question from values alone, with the same closures the context is built from
(:mod:`affidavit.authz.expand`), so the answer and the filter cannot drift apart:

* **the relationship path**: the shortest chain of tuples from the principal (or ``*``) to
  one of the document's ACL tokens, or, when there is none, the missing link: the tokens
  the document admits and the subjects the principal is;
* **the label grants per chunk**: each chunk's label, and which of the principal's subjects
  is granted it (PUBLIC is always granted); a chunk labelled under another sensitivity
  policy is not served until it is re-labelled;
* **the SIRE state**: only a document version whose SIRE record is ACTIVE is used for
  answers; search shows it either way.

:mod:`affidavit.authz.facts` reads these values from a store; the command line and the web
console print what :func:`explain_access` returns.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from affidavit.authz.expand import PolicyIndex, granted_labels
from affidavit.authz.tuples import EVERYONE, PARENT, VIEWER, folder_ancestors
from affidavit.config.settings import PUBLIC
from affidavit.store.protocol import RelationTuple

READABLE = "READABLE"
PARTIAL = "PARTIAL"
DENIED = "DENIED"
ACTIVE = "ACTIVE"

_VIEWABLE_PREFIXES = ("doc:", "folder:", "collection:")


@dataclass(frozen=True)
class ChunkFacts:
    """What the decision needs to know about one chunk (never its text)."""

    chunk_id: str
    ordinal: int
    label: str


@dataclass(frozen=True)
class DocumentFacts:
    """One document's head version as the store holds it."""

    node_id: str
    version_id: str
    alias: str
    acl_tokens: tuple[str, ...]
    chunks: tuple[ChunkFacts, ...]
    sire_state: str | None
    labels_current: bool = True


@dataclass(frozen=True)
class PathStep:
    """One link of a relationship path: ``via`` (a tuple) takes ``source`` to ``target``."""

    source: str
    target: str
    via: str

    def to_dict(self) -> dict[str, str]:
        return {"from": self.source, "to": self.target, "via": self.via}


@dataclass(frozen=True)
class ChunkAccess:
    chunk_id: str
    ordinal: int
    label: str
    readable: bool
    granted_by: tuple[str, ...]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"chunk_id": self.chunk_id, "ordinal": self.ordinal, "label": self.label,
                "readable": self.readable, "granted_by": list(self.granted_by),
                "reason": self.reason}


@dataclass(frozen=True)
class AccessExplanation:
    tenant: str
    principal: str
    alias: str
    node_id: str
    decision: str
    admitted_by: str | None
    path: tuple[PathStep, ...]
    missing_link: str | None
    chunks: tuple[ChunkAccess, ...]
    sire_state: str | None
    sire_note: str

    @property
    def readable_chunks(self) -> int:
        return sum(1 for c in self.chunks if c.readable)

    def to_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "principal": self.principal, "alias": self.alias,
                "node_id": self.node_id, "decision": self.decision,
                "admitted_by": self.admitted_by, "path": [s.to_dict() for s in self.path],
                "missing_link": self.missing_link,
                "chunks": [c.to_dict() for c in self.chunks],
                "readable_chunks": self.readable_chunks, "total_chunks": len(self.chunks),
                "sire_state": self.sire_state, "sire_note": self.sire_note}


def _edges(tuples: Iterable[RelationTuple]) -> dict[str, list[tuple[str, str]]]:
    """Node -> (next node, the tuple that links them), the graph the closures walk."""
    edges: dict[str, list[tuple[str, str]]] = {}
    for rel in tuples:
        text = f"{rel.object}#{rel.relation}@{rel.subject}"
        if rel.object.startswith("group:"):
            edges.setdefault(rel.subject, []).append((f"{rel.object}#{rel.relation}", text))
        elif not rel.object.startswith(_VIEWABLE_PREFIXES):
            continue
        elif rel.relation == VIEWER:
            edges.setdefault(rel.subject, []).append((rel.object, text))
        elif rel.relation == PARENT:
            for container in folder_ancestors(rel.subject):
                edges.setdefault(container, []).append((rel.object, text))
    for targets in edges.values():
        targets.sort()
    return edges


def relationship_path(principal: str, tuples: Iterable[RelationTuple],
                      acl_tokens: Iterable[str]) -> tuple[str | None, tuple[PathStep, ...]]:
    """The ACL token reached first from ``principal`` (breadth first, so a shortest path)
    and the steps to it; ``(None, ())`` when no token is reachable."""
    goals = set(acl_tokens)
    edges = _edges(tuples)
    came_from: dict[str, PathStep | None] = {principal: None, EVERYONE: None}
    queue = deque([principal, EVERYONE])
    while queue:
        node = queue.popleft()
        if node in goals:
            steps: list[PathStep] = []
            step = came_from[node]
            while step is not None:
                steps.append(step)
                step = came_from[step.source]
            return node, tuple(reversed(steps))
        for nxt, via in edges.get(node, ()):
            if nxt not in came_from:
                came_from[nxt] = PathStep(node, nxt, via)
                queue.append(nxt)
    return None, ()


def _chunk_access(chunk: ChunkFacts, admitted: bool, subjects: frozenset[str],
                  grants: Mapping[str, Iterable[str]], labels_current: bool) -> ChunkAccess:
    granted_by = tuple(sorted(s for s in subjects if chunk.label in set(grants.get(s, ()))))
    if chunk.label == PUBLIC:
        granted_by = ("PUBLIC is always granted",)
    if not admitted:
        reason = "the document's ACL does not admit the principal"
    elif not granted_by:
        reason = f"no subject of the principal is granted {chunk.label}"
    elif not labels_current:
        reason = "labelled under another sensitivity policy: not served until re-labelled"
    else:
        reason = f"{chunk.label} granted"
    readable = admitted and bool(granted_by) and labels_current
    return ChunkAccess(chunk.chunk_id, chunk.ordinal, chunk.label, readable, granted_by, reason)


def _missing_link(principal: str, subjects: frozenset[str], viewed: frozenset[str],
                  acl_tokens: Sequence[str]) -> str:
    people = sorted(t for t in acl_tokens if not t.startswith(_VIEWABLE_PREFIXES))
    objects = sorted(t for t in acl_tokens if t.startswith(_VIEWABLE_PREFIXES))
    admits = (f"subjects {', '.join(people)}" if people else "no subject") + (
        f", and viewers of {', '.join(objects)}" if objects else "")
    mine = sorted(subjects | viewed)
    return (f"the document admits {admits}; {principal} is {', '.join(mine)}; "
            "no tuple links the two (add a membership or a viewer tuple)")


def explain_access(tenant: str, principal: str, tuples: Sequence[RelationTuple],
                   grants: Mapping[str, Iterable[str]],
                   document: DocumentFacts) -> AccessExplanation:
    """The decision for ``principal`` on ``document`` under this policy, and why."""
    index = PolicyIndex.build(tuples)
    subjects = index.subjects(principal)
    token, path = relationship_path(principal, tuples, document.acl_tokens)
    admitted = token is not None
    chunks = tuple(_chunk_access(c, admitted, subjects, grants, document.labels_current)
                   for c in sorted(document.chunks, key=lambda c: c.ordinal))
    readable = sum(1 for c in chunks if c.readable)
    decision = READABLE if chunks and readable == len(chunks) else (
        PARTIAL if readable else DENIED)
    missing = None if admitted else _missing_link(principal, subjects, index.viewed(subjects),
                                                  document.acl_tokens)
    if document.sire_state == ACTIVE:
        note = "SIRE ACTIVE: used for answers"
    else:
        note = (f"SIRE {document.sire_state or 'missing'}: shown by search, excluded from "
                "answers until approved (affidavit sire approve)")
    return AccessExplanation(tenant, principal, document.alias, document.node_id, decision,
                             token, path, missing, chunks, document.sire_state, note)


def label_grants(principal: str, tuples: Sequence[RelationTuple],
                 grants: Mapping[str, Iterable[str]]) -> dict[str, tuple[str, ...]]:
    """Each label the principal holds -> the subjects of the principal granting it."""
    subjects = PolicyIndex.build(tuples).subjects(principal)
    held: dict[str, tuple[str, ...]] = {}
    for label in sorted(granted_labels(subjects, grants)):
        by = tuple(sorted(s for s in subjects if label in set(grants.get(s, ()))))
        held[label] = by or ("always",)
    return held


def principal_is_known(principal: str, tuples: Iterable[RelationTuple],
                       grants: Mapping[str, Iterable[str]], acl_tokens: Iterable[str]) -> bool:
    """Whether ``principal`` appears in any tuple, grant or document ACL of the tenant.

    One that appears nowhere is most likely mistyped: it can read only what ``*`` reads.
    """
    if principal in grants:
        return True
    if any(principal in (rel.subject, rel.object) for rel in tuples):
        return True
    return principal in set(acl_tokens)
