"""The permissions oracle: every path checked against plain set logic, exhaustively.

Two tenants of 120 generated documents each (all labels, folders, collections, documents
with no ACL of their own), 80 (tenant, principal) pairs in nested and cyclic groups, tuples
and grants written through the store. For randomized (principal, query) pairs, every item
that leaves the engine is checked against the oracle of ``oracle_world``:

* ``search_result``: one search hit (its document may be read, its text carries that
  document's markers only, its label is that of the text it holds);
* ``derived_text``: one marker anywhere in a search hit as ``--json`` prints it (title,
  locator with its heading path, source id, text): the principal may read the document
  *and* the label of the title or heading that carries the marker;
* ``marker_recall``: a query naming one marker (of a document, a title or a heading)
  returns it exactly when the oracle says it may be seen (no over-filtering either);
* ``forbidden_equals_missing``: for a document the caller may not read, or one of another
  tenant, the answer is the same empty list as for a marker that does not exist;
* ``ask_citation`` / ``ask_excerpt``: one citation (its chunk, and every marker of its title
  and locator), or one marker in the answer or its claims, of ``Engine.ask``;
* ``provider_evidence``: one evidence item sent to the provider (readable, not RESTRICTED),
  or one marker in the prompt: never of a title or heading labelled RESTRICTED, even for a
  principal granted RESTRICTED;
* ``ledger_excerpt``: one marker (document, title, heading; SIRE terms included) or chunk
  id in a ``ledger show`` view;
* ``ledger_not_found``: someone else's record reads exactly like an id never issued;
* ``sire_view``: one marker in the SIRE records a principal is shown (``sire list --as``):
  titles, paths, Subjects and terms;
* ``vector_result``: one hit of the store's vector search (every chunk has a seeded random
  vector): its chunk may be read; ``vector_exact``: the hits are exactly the nearest
  readable chunks by plain cosine over the oracle's readable set (no over-filtering);
  ``vector_walk_result`` (PostgreSQL): one hit of the same search by the HNSW walk, which
  ``[store] exact_vector_threshold = 0`` gives every caller: its chunk may be read.

Then a sixth of the tuples and a third of the grant holders lose something, some tuples are
added, and everything runs again (including ``ledger show`` of the records made before):
the very next request must follow the new policy.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from affidavit.engine.query import SearchHit
from affidavit.identity.sire_labels import sire_records_for
from affidavit.policy.derived import HEADING_WITHHELD, TITLE_WITHHELD
from tests.oracle.conftest import Universe
from tests.oracle.oracle_world import (
    DERIVED_MARKER,
    Oracle,
    World,
    most_severe,
    mutate,
    vocabulary,
)

SEARCH_LIMIT = 50
SEARCHES_PER_PHASE = 2400
ASKS_PER_PHASE = 150
SIRE_VIEWS_PER_PHASE = 16
VECTOR_SEARCHES_PER_PHASE = 120
VECTOR_MODEL, VECTOR_DIM, VECTOR_LIMIT = "oracle-random", 16, 10

pytestmark = pytest.mark.slow


class Checks:
    """Counts verifications by kind and keeps the first violations."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.violations: list[str] = []

    def check(self, kind: str, ok: bool, detail: str) -> None:
        self.counts[kind] += 1
        if not ok:
            self.violations.append(f"{kind}: {detail}")

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def report(self) -> str:
        lines = [f"  {kind:<26} {n:>8}" for kind, n in sorted(self.counts.items())]
        return "\n".join(["permissions oracle: one check = one (principal, item) verification"
                          " (see the module docstring for the kinds)", *lines,
                          f"  {'total checks':<26} {self.total:>8}",
                          f"  {'violations':<26} {len(self.violations):>8}"])


class Phase:
    """One pass of searches and asks under the current policy of every world."""

    def __init__(self, universe: Universe, rng: random.Random, checks: Checks):
        self.u = universe
        self.rng = rng
        self.checks = checks
        self.oracles = {t: Oracle(w) for t, w in universe.worlds.items()}
        self.vocab = vocabulary(random.Random(7))
        self.records: list[tuple[str, str, str, str]] = []  # tenant, principal, id, question
        self.withheld: Counter[str] = Counter()  # stand-ins seen: the world exercises them

    def principal(self, world: World) -> str:
        return self.rng.choice(world.users)

    def allowed(self, tenant: str, principal: str, marker: str) -> bool:
        return marker in self.oracles[tenant].readable(principal)

    def chunk_allowed(self, tenant: str, principal: str, chunk_id: str) -> bool:
        """The chunk's document admits the principal and its label (the document's, or a
        more severe title's or heading's for the chunk holding it) is granted."""
        doc = self.u.worlds[tenant].by_marker.get(self.u.chunk_marker.get((tenant, chunk_id), ""))
        label = self.u.chunk_label.get((tenant, chunk_id))
        return (doc is not None and label is not None
                and self.oracles[tenant].may_read(principal, doc, label))

    def markers_allowed(self, tenant: str, principal: str, text: str, kind: str,
                        asked: str = "", *, model: bool = False) -> None:
        """Every marker in ``text`` (of a document, a title or a heading) may be seen by the
        principal, or, for a model, also is not RESTRICTED (or was in the question: what
        the caller typed comes back to it in its prompt and its ledger record)."""
        supplied = {"".join(m) + "x" for m in DERIVED_MARKER.findall(asked)}
        oracle = self.oracles[tenant]
        for found in sorted({"".join(m) + "x" for m in DERIVED_MARKER.findall(text)}
                            - supplied):
            self.checks.check(kind, oracle.may_see(principal, found, model=model),
                              f"{tenant} {principal} received {found}")

    # ---------------------------------------------------------------- search
    def query(self, tenant: str) -> tuple[str, str | None]:
        world = self.u.worlds[tenant]
        roll = self.rng.random()
        words = " ".join(self.rng.sample(self.vocab, self.rng.randint(1, 3)))
        if roll < 0.45:
            return words, None
        if roll < 0.7:
            return self.rng.choice(world.docs).marker, tenant
        if roll < 0.85:  # a title's or a heading's marker
            return self.rng.choice(sorted(world.marker_labels())), tenant
        if roll < 0.95:
            other = next(w for t, w in self.u.worlds.items() if t != tenant)
            return self.rng.choice(other.docs).marker, other.tenant
        return f"mk{world.key}{self.rng.randint(500, 999)}x", None

    def run_searches(self, n: int) -> None:
        tenants = sorted(self.u.worlds)
        for i in range(n):
            tenant = tenants[i % len(tenants)]
            principal = self.principal(self.u.worlds[tenant])
            query, owner = self.query(tenant)
            hits = self.u.engines[tenant].search(principal, query, limit=SEARCH_LIMIT)
            for hit in hits:
                self.check_hit(tenant, principal, hit, query)
            if DERIVED_MARKER.fullmatch(query):
                self.check_marker_query(tenant, principal, query, owner, hits)

    def check_hit(self, tenant: str, principal: str, hit: SearchHit, query: str) -> None:
        world = self.u.worlds[tenant]
        marker = self.u.chunk_marker.get((tenant, hit.chunk_id), "")
        doc = world.by_marker.get(marker)
        labels = doc.labelled_markers() if doc is not None else {}
        found = {"".join(m) + "x" for m in DERIVED_MARKER.findall(hit.text)}
        ok = (doc is not None and hit.doc_id == doc.node_id and bool(found)
              and found <= labels.keys()
              and hit.label == most_severe(*(labels[m] for m in found))
              and all(self.oracles[tenant].may_see(principal, m) for m in found))
        self.checks.check("search_result", ok, f"{tenant} {principal} got {hit.chunk_id}")
        self.markers_allowed(tenant, principal, json.dumps(hit.to_dict(), ensure_ascii=False),
                             "derived_text", query)
        if hit.title == TITLE_WITHHELD or hit.title == hit.source_id:
            self.withheld["title"] += 1
        if HEADING_WITHHELD in hit.locator:
            self.withheld["heading"] += 1

    def check_marker_query(self, tenant: str, principal: str, marker: str, owner: str | None,
                           hits: list[SearchHit]) -> None:
        readable = owner == tenant and self.oracles[tenant].may_see(principal, marker)
        if readable:
            ok = bool(hits) and all(marker in h.text for h in hits)
            self.checks.check("marker_recall", ok, f"{principal} cannot find {marker}")
            return
        missing = self.u.engines[tenant].search(principal, "mk" + tenant[0] + "999999x",
                                                limit=SEARCH_LIMIT)
        self.checks.check("forbidden_equals_missing", hits == missing == [],
                          f"{principal} saw {len(hits)} hits for {marker}")

    # ---------------------------------------------------------------- vector search
    def run_vector_searches(self, n: int, vectors: dict[tuple[str, str], np.ndarray]) -> None:
        tenants = sorted(self.u.worlds)
        for i in range(n):
            tenant = tenants[i % len(tenants)]
            principal = self.principal(self.u.worlds[tenant])
            authz = self.u.engines[tenant].authz_context(principal)
            query = np.asarray([self.rng.gauss(0.0, 1.0) for _ in range(VECTOR_DIM)])
            hits = self.u.store.vector_search(authz, VECTOR_MODEL, query.tolist(),
                                              limit=VECTOR_LIMIT)
            for hit in hits:
                self.checks.check("vector_result",
                                  self.chunk_allowed(tenant, principal, hit.chunk_id),
                                  f"{tenant} {principal} vector hit {hit.chunk_id}")
            readable = sorted(cid for (t, cid) in vectors if t == tenant
                              and self.chunk_allowed(tenant, principal, cid))
            scores = [float(vectors[(tenant, cid)] @ query
                            / (np.linalg.norm(vectors[(tenant, cid)]) * np.linalg.norm(query)))
                      for cid in readable]
            nearest = sorted(range(len(readable)), key=lambda j: (-scores[j], readable[j]))
            expected = [readable[j] for j in nearest[:VECTOR_LIMIT]]
            self.checks.check("vector_exact", [h.chunk_id for h in hits] == expected,
                              f"{tenant} {principal} vector hits differ from the exact top-k")
            for hit in self.walked(authz, query):
                self.checks.check("vector_walk_result",
                                  self.chunk_allowed(tenant, principal, hit.chunk_id),
                                  f"{tenant} {principal} HNSW walk hit {hit.chunk_id}")

    def walked(self, authz: Any, query: np.ndarray) -> list[Any]:
        """The same search by the HNSW walk, which ``[store] exact_vector_threshold = 0``
        gives every caller (PostgreSQL only; SQLite always scans exactly)."""
        store = self.u.store
        if not hasattr(store, "exact_vector_threshold"):
            return []
        threshold = store.exact_vector_threshold
        store.exact_vector_threshold = 0
        try:
            hits: list[Any] = store.vector_search(authz, VECTOR_MODEL, query.tolist(),
                                                  limit=VECTOR_LIMIT)
            return hits
        finally:
            store.exact_vector_threshold = threshold

    # ---------------------------------------------------------------- sire list --as
    def run_sire_views(self, n: int) -> None:
        tenants = sorted(self.u.worlds)
        for i in range(n):
            tenant = tenants[i % len(tenants)]
            principal = self.principal(self.u.worlds[tenant])
            authz = self.u.engines[tenant].authz_context(principal)
            records = sire_records_for(self.u.store, authz, self.u.store.list_sire(tenant))
            shown = [{"title": r.title, "alias": r.alias, **r.sire.to_dict()} for r in records]
            self.markers_allowed(tenant, principal, json.dumps(shown, ensure_ascii=False),
                                 "sire_view")

    # ---------------------------------------------------------------- ask + ledger
    def run_asks(self, n: int) -> None:
        tenants = sorted(self.u.worlds)
        for i in range(n):
            tenant = tenants[i % len(tenants)]
            world = self.u.worlds[tenant]
            principal = self.principal(world)
            words = " ".join(self.rng.sample(self.vocab, 2))
            question = f"What is said about {words} in {self.rng.choice(world.docs).marker}?"
            provider = self.u.providers[tenant]
            sent = len(provider.requests)
            result = self.u.engines[tenant].ask(principal, question)
            for citation in result.citations:
                self.checks.check("ask_citation",
                                  self.chunk_allowed(tenant, principal, citation["chunk_id"]),
                                  f"{principal} cited {citation['chunk_id']}")
                self.markers_allowed(tenant, principal, json.dumps(citation), "ask_citation")
            texts = [result.answer, *(str(c["text"]) for c in result.claims)]
            # A refusal may name the asker's own words back (what it did not find); an
            # answer built from evidence is held to every marker, typed or not.
            echoed = question if not result.citations else ""
            self.markers_allowed(tenant, principal, "\n".join(texts), "ask_excerpt", echoed)
            for request in provider.requests[sent:]:
                self.check_provider_request(tenant, principal, request.prompt, question)
            self.records.append((tenant, principal, result.ledger_record_id, question))
            self.check_ledger(tenant, principal, result.ledger_record_id, question)

    def check_provider_request(self, tenant: str, principal: str, prompt: Any,
                               question: str) -> None:
        for item in prompt.evidence:
            ok = (item.label != "RESTRICTED"
                  and self.chunk_allowed(tenant, principal, item.chunk_id))
            self.checks.check("provider_evidence", ok, f"{principal} prompt had {item.chunk_id}")
        self.markers_allowed(tenant, principal, prompt.text, "provider_evidence", question,
                             model=True)

    def check_ledger(self, tenant: str, principal: str, record_id: str, question: str) -> None:
        view = self.u.ledger_show(tenant, principal, record_id)
        self.checks.check("ledger_excerpt", view is not None, f"{principal} lost {record_id}")
        if view is not None:
            self.check_view(tenant, principal, view, question)
        others = [p for p in self.u.worlds[tenant].users if p != principal]
        stranger = self.rng.choice(others)
        hidden = self.u.ledger_show(tenant, stranger, record_id)
        never = self.u.ledger_show(tenant, stranger, "led-" + "0" * 20)
        self.checks.check("ledger_not_found", hidden is None and never is None,
                          f"{stranger} could open {principal}'s {record_id}")
        elsewhere = next(t for t in self.u.worlds if t != tenant)
        self.checks.check("ledger_not_found",
                          self.u.ledger_show(elsewhere, principal, record_id) is None,
                          f"{record_id} of {tenant} opened in {elsewhere}")

    def check_view(self, tenant: str, principal: str, view: dict[str, Any],
                   question: str) -> None:
        text = json.dumps(view, ensure_ascii=False)
        self.markers_allowed(tenant, principal, text, "ledger_excerpt", question)
        record = view["record"]
        ids = {c["chunk_id"] for c in record.get("citations", [])}
        ids |= {r["chunk_id"] for r in record.get("retrieved", [])}
        for gate in record.get("gates", []):
            ids |= set(gate.get("kept", [])) | {d["chunk_id"] for d in gate.get("dropped", [])}
        for chunk_id in sorted(ids):
            self.checks.check("ledger_excerpt", self.chunk_allowed(tenant, principal, chunk_id),
                              f"{principal} ledger names {chunk_id}")


def put_random_vectors(universe: Universe) -> dict[tuple[str, str], np.ndarray]:
    """A seeded random vector for every chunk of every tenant, stored for the vector path."""
    rng = np.random.default_rng(20260102)
    vectors = {key: rng.standard_normal(VECTOR_DIM).astype(np.float32)
               for key in sorted(universe.chunk_marker)}
    for tenant in sorted(universe.worlds):
        universe.store.put_vectors(tenant, VECTOR_MODEL, {
            cid: vec.tolist() for (t, cid), vec in vectors.items() if t == tenant})
    return vectors


def test_permissions_oracle_over_every_output_path(universe: Universe) -> None:
    rng = random.Random(20260101)
    checks = Checks()
    vectors = put_random_vectors(universe)
    first = Phase(universe, rng, checks)
    first.run_searches(SEARCHES_PER_PHASE)
    first.run_vector_searches(VECTOR_SEARCHES_PER_PHASE, vectors)
    first.run_asks(ASKS_PER_PHASE)
    first.run_sire_views(SIRE_VIEWS_PER_PHASE)
    for world in universe.worlds.values():
        mutate(world, rng, universe.store)
    second = Phase(universe, rng, checks)
    second.run_searches(SEARCHES_PER_PHASE)
    second.run_vector_searches(VECTOR_SEARCHES_PER_PHASE, vectors)
    second.run_asks(ASKS_PER_PHASE)
    second.run_sire_views(SIRE_VIEWS_PER_PHASE)
    for tenant, principal, record_id, question in first.records:  # read under the new policy
        view = universe.ledger_show(tenant, principal, record_id)
        if view is not None:
            second.check_view(tenant, principal, view, question)
    withheld = first.withheld + second.withheld
    print("\n" + checks.report() + f"\n  stand-ins shown in search hits: {dict(withheld)}")
    assert not checks.violations, "\n".join(checks.violations[:20])
    assert checks.total >= 100_000, checks.report()
    assert min(checks.counts[k] for k in ("marker_recall", "forbidden_equals_missing",
                                          "ask_citation", "ledger_not_found",
                                          "vector_result")) > 50
    assert checks.counts["vector_exact"] == 2 * VECTOR_SEARCHES_PER_PHASE
    if hasattr(universe.store, "exact_vector_threshold"):
        assert checks.counts["vector_walk_result"] > 50
    # The world has sensitive titles and headings, and readers who may not see them.
    assert min(withheld["title"], withheld["heading"], checks.counts["derived_text"]) > 50
