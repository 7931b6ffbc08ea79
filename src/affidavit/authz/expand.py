"""Token expansion: from a principal and the tenant's tuples to the ACL tokens that admit it.

Pure functions over values, computed on every request (no cache, so a removed tuple counts
on the very next request). One pass indexes the tuples; then three closures:

1. **Subjects**: the principal, ``*`` (everyone in the tenant), and every group userset it
   belongs to, transitively (``group:a#member@group:b#member``). Cycles end the walk.
2. **Viewed objects**: every ``doc:``, ``folder:`` or ``collection:`` object with a
   ``viewer`` tuple naming one of the subjects.
3. **Containment**: an object placed in a viewed container by a ``parent`` tuple is viewed
   too, transitively. Path-implied containment composes with explicit ``parent`` tuples:
   viewing ``folder:policies`` also covers whatever a ``parent`` tuple places in
   ``folder:policies/hr``, because ``policies/hr`` lies under ``policies``. Documents need no
   walk down their own path: their chunks already carry a token per folder of their path.

The result is the principal's subjects plus the objects it views. Grants of labels go only
to subjects (:func:`granted_labels`): viewing a folder admits documents, never labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from affidavit.authz.tuples import EVERYONE, PARENT, VIEWER, folder_ancestors
from affidavit.config.settings import PUBLIC
from affidavit.records import canonical_json, stable_hash
from affidavit.store.protocol import RelationTuple

_VIEWABLE_PREFIXES = ("doc:", "folder:", "collection:")


@dataclass
class PolicyIndex:
    """The tuples of one policy, indexed for the three closures (built once per request)."""

    usersets_of: dict[str, list[str]] = field(default_factory=dict)
    viewed_by: dict[str, list[str]] = field(default_factory=dict)
    children_under: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, tuples: Iterable[RelationTuple]) -> PolicyIndex:
        index = cls()
        for rel in tuples:
            obj = rel.object
            if obj.startswith("group:"):
                index.usersets_of.setdefault(rel.subject, []).append(f"{obj}#{rel.relation}")
            elif not obj.startswith(_VIEWABLE_PREFIXES):
                continue
            elif rel.relation == VIEWER:
                index.viewed_by.setdefault(rel.subject, []).append(obj)
            elif rel.relation == PARENT:
                # Indexed under the container and every folder above it, so that viewing
                # any ancestor reaches the child in one lookup.
                for container in folder_ancestors(rel.subject):
                    index.children_under.setdefault(container, []).append(obj)
        return index

    def subjects(self, principal: str) -> frozenset[str]:
        """The principal, ``*`` and every userset it belongs to, transitively."""
        return _closure((principal, EVERYONE), self.usersets_of)

    def viewed(self, subjects: Iterable[str]) -> frozenset[str]:
        """Objects the subjects view directly, then everything contained in those."""
        direct = {obj for s in subjects for obj in self.viewed_by.get(s, ())}
        return _closure(direct, self.children_under) if direct else frozenset()


def _closure(start: Iterable[str], edges: Mapping[str, list[str]]) -> frozenset[str]:
    found = set(start)
    frontier = list(found)
    while frontier:
        for nxt in edges.get(frontier.pop(), ()):
            if nxt not in found:
                found.add(nxt)
                frontier.append(nxt)
    return frozenset(found)


def subject_tokens(principal: str, tuples: Iterable[RelationTuple]) -> frozenset[str]:
    """The principal, ``*`` and every group userset it belongs to (nested, cycle-safe)."""
    return PolicyIndex.build(tuples).subjects(principal)


def viewed_objects(subjects: Iterable[str], tuples: Iterable[RelationTuple]) -> frozenset[str]:
    """Objects the subjects may view: by ``viewer`` tuples, then down ``parent`` tuples."""
    return PolicyIndex.build(tuples).viewed(subjects)


def expand_tokens(principal: str, tuples: Iterable[RelationTuple]) -> frozenset[str]:
    """Every ACL token that admits the principal: its subjects and the objects it views."""
    index = PolicyIndex.build(tuples)
    subjects = index.subjects(principal)
    return subjects | index.viewed(subjects)


def granted_labels(tokens: Iterable[str], grants: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """Union of the labels granted to any of the tokens; PUBLIC always. Never by severity."""
    labels = {PUBLIC}
    for token in tokens:
        labels.update(grants.get(token, ()))
    return frozenset(labels)


def policy_version(tuples: Iterable[RelationTuple], grants: Mapping[str, Iterable[str]]) -> str:
    """A hash of the whole policy a decision was made under; recorded in the ledger.

    Independent of the order tuples and grants come in. Tuples are joined by newlines, which
    no valid object, relation or subject contains.
    """
    lines = sorted(f"{t.object}#{t.relation}@{t.subject}" for t in tuples)
    labels = {k: sorted(set(v)) for k, v in sorted(grants.items())}
    return stable_hash("policy", "\n".join(lines), canonical_json(labels))[:16]
