"""The permissions oracle: every path checked against plain set logic, exhaustively.

Two tenants of 120 generated documents each (all labels, folders, collections, documents
with no ACL of their own), 80 (tenant, principal) pairs in nested and cyclic groups, tuples
and grants written through the store. For randomized (principal, query) pairs, every item
that leaves the engine is checked against the oracle of ``oracle_world``:

* ``search_result``: one search hit (its document may be read, its text and title carry
  that document's marker only, its label is the document's);
* ``marker_recall``: a query naming one document's marker returns that document exactly
  when the oracle says it may be read (no over-filtering either);
* ``forbidden_equals_missing``: for a document the caller may not read, or one of another
  tenant, the answer is the same empty list as for a marker that does not exist;
* ``ask_citation`` / ``ask_excerpt``: one citation, or one document marker in the answer
  or its claims, of ``Engine.ask``;
* ``provider_evidence``: one evidence item sent to the provider (readable, not RESTRICTED);
* ``ledger_excerpt``: one document marker or chunk id in a ``ledger show`` view;
* ``ledger_not_found``: someone else's record reads exactly like an id never issued.

Then a sixth of the tuples and a third of the grant holders lose something, some tuples are
added, and everything runs again (including ``ledger show`` of the records made before):
the very next request must follow the new policy.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

from affidavit.query import SearchHit
from tests.oracle.conftest import Universe
from tests.oracle.oracle_world import MARKER, Oracle, World, mutate, vocabulary

SEARCH_LIMIT = 50
SEARCHES_PER_PHASE = 2400
ASKS_PER_PHASE = 150

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

    def principal(self, world: World) -> str:
        return self.rng.choice(world.users)

    def allowed(self, tenant: str, principal: str, marker: str) -> bool:
        return marker in self.oracles[tenant].readable(principal)

    def markers_allowed(self, tenant: str, principal: str, text: str, kind: str,
                        asked: str = "") -> None:
        """Every marker in ``text`` is of a readable document (or was in the question:
        what the caller typed comes back to it in its prompt and its ledger record)."""
        supplied = set(MARKER.findall(asked))
        for key, number in sorted(set(MARKER.findall(text)) - supplied):
            marker = f"mk{key}{number}x"
            self.checks.check(kind, self.allowed(tenant, principal, marker),
                              f"{tenant} {principal} received {marker}")

    # ---------------------------------------------------------------- search
    def query(self, tenant: str) -> tuple[str, str | None]:
        world = self.u.worlds[tenant]
        roll = self.rng.random()
        words = " ".join(self.rng.sample(self.vocab, self.rng.randint(1, 3)))
        if roll < 0.55:
            return words, None
        if roll < 0.85:
            return self.rng.choice(world.docs).marker, tenant
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
                self.check_hit(tenant, principal, hit)
            if query.startswith("mk"):
                self.check_marker_query(tenant, principal, query, owner, hits)

    def check_hit(self, tenant: str, principal: str, hit: SearchHit) -> None:
        world = self.u.worlds[tenant]
        marker = self.u.chunk_marker.get((tenant, hit.chunk_id), "")
        doc = world.by_marker.get(marker)
        found = set(MARKER.findall(hit.text + " " + hit.title))
        ok = (doc is not None and hit.doc_id == doc.node_id and hit.label == doc.label
              and {f"mk{k}{n}x" for k, n in found} == {marker}
              and self.allowed(tenant, principal, marker))
        self.checks.check("search_result", ok, f"{tenant} {principal} got {hit.chunk_id}")

    def check_marker_query(self, tenant: str, principal: str, marker: str, owner: str | None,
                           hits: list[SearchHit]) -> None:
        readable = owner == tenant and self.allowed(tenant, principal, marker)
        if readable:
            ok = bool(hits) and all(marker in h.text for h in hits)
            self.checks.check("marker_recall", ok, f"{principal} cannot find {marker}")
            return
        missing = self.u.engines[tenant].search(principal, "mk" + tenant[0] + "999999x",
                                                limit=SEARCH_LIMIT)
        self.checks.check("forbidden_equals_missing", hits == missing == [],
                          f"{principal} saw {len(hits)} hits for {marker}")

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
                marker = self.u.chunk_marker.get((tenant, citation["chunk_id"]), "?")
                self.checks.check("ask_citation", self.allowed(tenant, principal, marker),
                                  f"{principal} cited {citation['chunk_id']}")
            texts = [result.answer, *(str(c["text"]) for c in result.claims)]
            self.markers_allowed(tenant, principal, "\n".join(texts), "ask_excerpt")
            for request in provider.requests[sent:]:
                self.check_provider_request(tenant, principal, request.prompt, question)
            self.records.append((tenant, principal, result.ledger_record_id, question))
            self.check_ledger(tenant, principal, result.ledger_record_id, question)

    def check_provider_request(self, tenant: str, principal: str, prompt: Any,
                               question: str) -> None:
        for item in prompt.evidence:
            marker = self.u.chunk_marker.get((tenant, item.chunk_id), "?")
            ok = item.label != "RESTRICTED" and self.allowed(tenant, principal, marker)
            self.checks.check("provider_evidence", ok, f"{principal} prompt had {item.chunk_id}")
        self.markers_allowed(tenant, principal, prompt.text, "provider_evidence", question)

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
            marker = self.u.chunk_marker.get((tenant, chunk_id), "?")
            self.checks.check("ledger_excerpt", self.allowed(tenant, principal, marker),
                              f"{principal} ledger names {chunk_id}")


def test_permissions_oracle_over_every_output_path(universe: Universe) -> None:
    rng = random.Random(20260101)
    checks = Checks()
    first = Phase(universe, rng, checks)
    first.run_searches(SEARCHES_PER_PHASE)
    first.run_asks(ASKS_PER_PHASE)
    for world in universe.worlds.values():
        mutate(world, rng, universe.store)
    second = Phase(universe, rng, checks)
    second.run_searches(SEARCHES_PER_PHASE)
    second.run_asks(ASKS_PER_PHASE)
    for tenant, principal, record_id, question in first.records:  # read under the new policy
        view = universe.ledger_show(tenant, principal, record_id)
        if view is not None:
            second.check_view(tenant, principal, view, question)
    print("\n" + checks.report())
    assert not checks.violations, "\n".join(checks.violations[:20])
    assert checks.total >= 100_000, checks.report()
    assert min(checks.counts[k] for k in ("marker_recall", "forbidden_equals_missing",
                                          "ask_citation", "ledger_not_found")) > 50
