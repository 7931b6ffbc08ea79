"""A generated world for the permissions oracle: corpus, population, policy, and the oracle.

Everything comes from one seed. The corpus is written as real Markdown files with front
matter (title, classification, acl); the policy (tuples and grants) is kept here as plain
sets and written to the store through its public methods. The oracle answers "may this
principal read this document?" by plain set logic over those sets, walking *up* from the
document through its containers, which is the other direction from the implementation
(it walks *down* from the principal); it never calls :mod:`affidavit.authz`.

Every sentence of a document carries the document's marker (``mk<tenant><nnn>x``), so any
excerpt of any output can be traced back to the document it came from. Its title carries a
title marker (``tt<tenant><nnn>x``) and each section heading a heading marker
(``hh<tenant><nnn><s>x``); about half of them also carry a keyword that the universe's
sensitivity settings (:data:`KEYWORDS`) put at a more severe label than the document's, so
a title or a heading can be less readable than the paragraphs under it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from affidavit.config.settings import DEFAULT_LABELS
from affidavit.records import node_id_for
from affidavit.store.protocol import RelationTuple, Store

SOURCE_SYSTEM = "files"
MARKER = re.compile(r"mk([ab])(\d{3})x")  # also inside identifiers: record_mka017x_
# Any marker: a document's (mk), its title's (tt) or one of its headings' (hh + section).
DERIVED_MARKER = re.compile(r"(mk|tt|hh)([ab])(\d{3})(\d?)x")
# A keyword per label: letters the vocabulary never uses, so only titles and headings match.
KEYWORDS = {"FINANCIAL": "quixfund", "PII_SENSITIVE": "kythwax", "SECRET": "hawkwyx",
            "RESTRICTED": "wyvernqx"}
FOLDERS = ("", "policies", "policies/hr", "policies/finance", "hr", "hr/cases", "finance",
           "finance/reports", "board", "legal/contracts", "archive/2023", "archive/2023/hr",
           "public")
COLLECTIONS = ("collection:c0", "collection:c1", "collection:c2", "collection:c3")
AT = "2026-01-01T00:00:00+00:00"

Triple = tuple[str, str, str]


def vocabulary(rng: random.Random, size: int = 160) -> list[str]:
    """Pronounceable letter-only words that are neither stop words nor detector bait."""
    consonants, vowels = "bcdfglmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < size:
        syllables = rng.randint(2, 4)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables)))
    return sorted(words)


def most_severe(*labels: str) -> str:
    return max(labels, key=DEFAULT_LABELS.index)


@dataclass(frozen=True)
class Section:
    heading: str
    label: str  # the heading's own: the document's, or its keyword's if more severe
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class Doc:
    tenant_key: str
    index: int
    alias: str
    label: str
    acl: tuple[str, ...]
    title: str
    title_label: str
    sections: tuple[Section, ...]

    @property
    def marker(self) -> str:
        return f"mk{self.tenant_key}{self.index:03d}x"

    @property
    def node_id(self) -> str:
        return node_id_for(SOURCE_SYSTEM, self.alias)

    def labelled_markers(self) -> dict[str, str]:
        """Every marker of the document and the label of the text that carries it."""
        found = {self.marker: self.label, f"tt{self.tenant_key}{self.index:03d}x": self.title_label}
        for number, section in enumerate(self.sections):
            found[f"hh{self.tenant_key}{self.index:03d}{number}x"] = section.label
        return found

    def markdown(self) -> str:
        acl = "[" + ", ".join(f'"{s}"' for s in self.acl) + "]"
        head = f"---\ntitle: {self.title}\nclassification: {self.label}\nacl: {acl}\n---\n\n"
        body = [f"# {self.title}"]
        for section in self.sections:
            body += [f"## {section.heading}", *section.paragraphs]
        return head + "\n\n".join(body) + "\n"


@dataclass
class World:
    """One tenant's corpus, population and (mutable) policy."""

    tenant: str
    key: str
    docs: list[Doc]
    users: list[str]
    groups: list[str]
    tuples: set[Triple] = field(default_factory=set)
    grants: dict[str, set[str]] = field(default_factory=dict)

    @property
    def by_marker(self) -> dict[str, Doc]:
        return {d.marker: d for d in self.docs}

    def marker_labels(self) -> dict[str, tuple[Doc, str]]:
        """Any marker (document, title, heading) -> its document and its text's label."""
        return {marker: (doc, label) for doc in self.docs
                for marker, label in doc.labelled_markers().items()}

    def write_corpus(self, root: Path) -> None:
        for doc in self.docs:
            path = root / doc.alias
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(doc.markdown(), encoding="utf-8")

    def write_policy(self, store: Store) -> None:
        for obj, relation, subject in sorted(self.tuples):
            store.add_tuple(self.tenant, RelationTuple(obj, relation, subject, "oracle"), at=AT)
        for subject, labels in sorted(self.grants.items()):
            store.grant(self.tenant, subject, sorted(labels), at=AT)


# --------------------------------------------------------------------------- generation


def _paragraph(rng: random.Random, vocab: list[str], marker: str) -> str:
    sentences = []
    for _ in range(rng.randint(2, 4)):
        words = rng.choices(vocab, k=rng.randint(6, 11))
        words.insert(rng.randrange(len(words) + 1), marker)
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


def _doc(rng: random.Random, vocab: list[str], key: str, index: int, users: list[str],
         groups: list[str]) -> Doc:
    folder = rng.choice(FOLDERS)
    name = f"{rng.choice(vocab)}-{index:03d}.md"
    roll = rng.random()
    if roll < 0.2:
        acl: tuple[str, ...] = ()  # readable only through doc:/folder: viewer tuples
    elif roll < 0.25:
        acl = ("*",)
    else:
        pool = [f"{g}#member" for g in groups] + users
        acl = tuple(sorted(set(rng.sample(pool, rng.randint(1, 3)))))
    marker = f"mk{key}{index:03d}x"
    label = DEFAULT_LABELS[index % len(DEFAULT_LABELS)]
    title, title_label = _derived(rng, vocab, f"Record tt{key}{index:03d}x", label)
    sections = []
    for number in range(rng.randint(1, 3)):
        heading, heading_label = _derived(rng, vocab, f"Section hh{key}{index:03d}{number}x",
                                          label)
        paragraphs = tuple(_paragraph(rng, vocab, marker) for _ in range(rng.randint(1, 2)))
        sections.append(Section(heading, heading_label, paragraphs))
    return Doc(key, index, f"{folder}/{name}" if folder else name, label, acl, title,
               title_label, tuple(sections))


def _derived(rng: random.Random, vocab: list[str], start: str, label: str) -> tuple[str, str]:
    """A title or heading; half of them carry a keyword of a (maybe) more severe label."""
    text = f"{start} {rng.choice(vocab)}"
    if rng.random() < 0.5:
        keyword_label = rng.choice(sorted(KEYWORDS))
        return f"{text} {KEYWORDS[keyword_label]}", most_severe(label, keyword_label)
    return text, label


def generate_world(tenant: str, key: str, *, seed: int, n_docs: int = 120,
                   n_users: int = 30, n_groups: int = 12,
                   shared_users: Iterable[str] = ()) -> World:
    rng = random.Random(seed)
    vocab = vocabulary(random.Random(7))  # one vocabulary for both tenants
    users = [f"user:{key}-u{i:02d}" for i in range(n_users)] + list(shared_users)
    groups = [f"group:{key}g{i:02d}" for i in range(n_groups)]
    docs = [_doc(rng, vocab, key, i, users, groups) for i in range(n_docs)]
    world = World(tenant, key, docs, users, groups)
    _memberships(world, rng)
    _object_tuples(world, rng)
    _grants(world, rng)
    return world


def _memberships(world: World, rng: random.Random) -> None:
    groups = world.groups
    # A nesting chain g00 <- g01 <- ... so that membership runs deep, a cycle, and extras.
    for inner, outer in zip(groups[1:], groups[:-1], strict=True):
        if rng.random() < 0.7:
            world.tuples.add((outer, "member", f"{inner}#member"))
    world.tuples.add((groups[0], "member", f"{groups[-1]}#member"))  # closes a cycle
    for _ in range(4):
        a, b = rng.sample(groups, 2)
        world.tuples.add((a, "member", f"{b}#member"))
    world.tuples.add((groups[-2], "member", "*"))  # everyone in the tenant
    for user in world.users:
        for group in rng.sample(groups, rng.randint(0, 3)):
            world.tuples.add((group, "member", user))


def _subject(world: World, rng: random.Random) -> str:
    if rng.random() < 0.6:
        return f"{rng.choice(world.groups)}#member"
    return rng.choice(world.users)


def _object_tuples(world: World, rng: random.Random) -> None:
    folders = sorted({f for f in FOLDERS if f} | {"legal", "archive"})
    for folder in rng.sample(folders, 7):
        world.tuples.add((f"folder:{folder}", "viewer", _subject(world, rng)))
    for doc in rng.sample(world.docs, 15):
        world.tuples.add((f"doc:{doc.node_id}", "viewer", _subject(world, rng)))
    for doc in rng.sample(world.docs, 8):
        world.tuples.add((f"doc:{doc.node_id}", "parent", rng.choice(COLLECTIONS)))
    world.tuples.update({
        ("folder:archive/2023/hr", "parent", "folder:hr"),
        ("folder:hr/cases", "parent", "collection:c1"),
        ("collection:c0", "parent", "folder:board"),
        ("collection:c2", "parent", "collection:c3"),  # a containment cycle
        ("collection:c3", "parent", "collection:c2"),
        ("collection:c1", "viewer", _subject(world, rng)),
        ("collection:c3", "viewer", _subject(world, rng)),
    })


def _grants(world: World, rng: random.Random) -> None:
    labels = [label for label in DEFAULT_LABELS if label != "PUBLIC"]
    for subject in [f"{g}#member" for g in world.groups] + rng.sample(world.users, 6) + ["*"]:
        chosen = set(rng.sample(labels, rng.randint(0, 3)))
        if chosen:
            world.grants.setdefault(subject, set()).update(chosen)


def mutate(world: World, rng: random.Random, store: Store) -> None:
    """Revoke and add tuples and grants, in the world and in the store alike."""
    removed = rng.sample(sorted(world.tuples), len(world.tuples) // 6)
    for obj, relation, subject in removed:
        world.tuples.discard((obj, relation, subject))
        assert store.remove_tuple(world.tenant, RelationTuple(obj, relation, subject, "oracle"))
    holders = sorted(s for s, labels in world.grants.items() if labels)
    for subject in rng.sample(holders, max(1, len(holders) // 3)):
        label = rng.choice(sorted(world.grants[subject]))
        world.grants[subject].discard(label)
        assert store.revoke(world.tenant, subject, [label]) == 1
    for _ in range(10):
        triple = (f"folder:{rng.choice([f for f in FOLDERS if f])}", "viewer",
                  _subject(world, rng))
        if rng.random() < 0.5:
            triple = (rng.choice(world.groups), "member", rng.choice(world.users))
        if triple not in world.tuples:
            world.tuples.add(triple)
            store.add_tuple(world.tenant, RelationTuple(*triple, "oracle"), at=AT)


# --------------------------------------------------------------------------- the oracle


class Oracle:
    """Who may read which document, by plain set logic over the world's tuples and grants."""

    def __init__(self, world: World):
        self.world = world
        self.tuples = frozenset(world.tuples)
        self._readable: dict[str, frozenset[str]] = {}
        self._markers = world.marker_labels()
        self._seen: dict[tuple[str, str, bool], bool] = {}

    def subjects(self, principal: str) -> set[str]:
        found = {principal, "*"}
        while True:
            more = {f"{obj}#{rel}" for obj, rel, sub in self.tuples
                    if obj.startswith("group:") and sub in found} - found
            if not more:
                return found
            found |= more

    def labels(self, principal: str) -> set[str]:
        granted = {"PUBLIC"}
        for subject in self.subjects(principal):
            granted |= self.world.grants.get(subject, set())
        return granted

    def containers(self, doc: Doc) -> set[str]:
        """The document's object and every container holding it, by path or by tuple."""
        parts = doc.alias.split("/")[:-1]
        found = {f"doc:{doc.node_id}"} | {"folder:" + "/".join(parts[:n])
                                          for n in range(1, len(parts) + 1)}
        while True:
            more = {sub for obj, rel, sub in self.tuples if rel == "parent" and obj in found}
            more |= {c.rsplit("/", 1)[0] for c in found if c.startswith("folder:") and "/" in c}
            more -= found
            if not more:
                return found
            found |= more

    def may_read(self, principal: str, doc: Doc, label: str | None = None) -> bool:
        """Whether the principal may read text of ``doc`` labelled ``label`` (by default
        the document's own label)."""
        if (label or doc.label) not in self.labels(principal):
            return False
        return self.may_access(principal, doc)

    def may_access(self, principal: str, doc: Doc) -> bool:
        """The document's ACL, folders and collections admit the principal (labels aside)."""
        subjects = self.subjects(principal)
        if set(doc.acl) & subjects:
            return True
        return any((c, "viewer", s) in self.tuples
                   for c in self.containers(doc) for s in subjects)

    def may_see(self, principal: str, marker: str, *, model: bool = False) -> bool:
        """Whether text carrying ``marker`` may be shown to the principal, or (``model``) be
        sent to a model on its behalf: never RESTRICTED text."""
        key = (principal, marker, model)
        if key not in self._seen:
            found = self._markers.get(marker)  # a marker of nothing is never allowed
            self._seen[key] = found is not None and (
                (not model or found[1] != "RESTRICTED")
                and self.may_read(principal, found[0], found[1]))
        return self._seen[key]

    def readable(self, principal: str) -> frozenset[str]:
        """Markers of every document the principal may read."""
        if principal not in self._readable:
            self._readable[principal] = frozenset(
                d.marker for d in self.world.docs if self.may_read(principal, d))
        return self._readable[principal]
