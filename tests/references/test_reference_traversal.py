"""Reference-aware retrieval: breadth-first, cycle-safe, capped, and never through a
document or reference the caller may not read; kind salience moves ranking."""

from __future__ import annotations

import json
from pathlib import Path

from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.records import Reference
from affidavit.retrieval.reference_expansion import (
    MAX_DOCUMENTS_PER_HOP,
    MAX_REFERENCES,
    traverse,
)
from affidavit.store import SQLiteStore
from affidavit.store.protocol import Store
from tests.references.world import (
    FINANCE_READER,
    NOW,
    PLAIN_READER,
    ingest,
    node_of,
    write_doc,
)

SPOKES = 70


def _link(store: Store, n: int, source: str, target: str, kind: str = "CrossReference",
          label: str = "PUBLIC") -> None:
    store.add_reference("default", Reference(
        f"ref-{n:05d}", kind, "document", source, target, None, None, "{}", "",
        f"link {n}", label, "user:test", NOW))


def _graph(tmp_path: Path) -> tuple[SQLiteStore, Engine, dict[str, str]]:
    """A hub with 70 spokes (each linked 4 times: 280 references), a 3-cycle and a chain
    of 8."""
    root = tmp_path / "corpus"
    names = ["hub", *[f"spoke{i}" for i in range(SPOKES)], "c0", "c1", "c2",
             *[f"a{i}" for i in range(8)]]
    for name in names:
        write_doc(root, f"{name}.md", f"Document {name} about topic{name}.")
    store = SQLiteStore(tmp_path / "graph.db")
    ingest(store, root)
    nodes = {name: node_of(store, f"{name}.md") for name in names}
    n = 0
    for _copy in range(4):
        for i in range(SPOKES):
            n += 1
            _link(store, n, nodes["hub"], nodes[f"spoke{i}"])
    for a, b in (("c0", "c1"), ("c1", "c2"), ("c2", "c0")):
        n += 1
        _link(store, n, nodes[a], nodes[b])
    for i in range(7):
        n += 1
        _link(store, n, nodes[f"a{i}"], nodes[f"a{i + 1}"])
    return store, Engine(store, Settings()), nodes


def test_traversal_holds_depth_cycles_and_caps_on_a_generated_graph(tmp_path: Path) -> None:
    store, engine, nodes = _graph(tmp_path)
    try:
        authz = engine.authz_context(PLAIN_READER)
        hub = traverse(store, authz, [nodes["hub"]], depth=3)
        cycle = traverse(store, authz, [nodes["c0"]], depth=5)
        chain = traverse(store, authz, [nodes["a0"]], depth=2)
        chain_both_ways = traverse(store, authz, [nodes["a4"]], depth=2)
    finally:
        store.close()
    assert len(hub.references) <= MAX_REFERENCES
    assert len(hub.reached) == MAX_DOCUMENTS_PER_HOP
    assert set(cycle.reached) == {nodes["c1"], nodes["c2"]}
    assert len(cycle.references) == 3, "each reference of the cycle read once"
    assert set(chain.reached) == {nodes["a1"], nodes["a2"]}
    assert set(chain_both_ways.reached) == {nodes[f"a{i}"] for i in (2, 3, 5, 6)}


def _guarded_corpus(root: Path) -> None:
    write_doc(root, "harbour.md", "The harbour pilot: harbour pilot duties, harbour pilot rota.")
    for n in range(5):
        write_doc(root, f"filler{n}.md", f"Pilot notes {n}: the pilot boards by ladder.")
    write_doc(root, "budget.md", "Ledger entry for the tugboat fleet, fuel, moorings, crew "
              "and insurance; the pilot fee is 88000 euros.", label="FINANCIAL")
    write_doc(root, "lagoon.md", "The lagoon dredging schedule.")


def test_financial_cross_reference_never_surfaces_through_traversal_or_search(
        tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    _guarded_corpus(root)
    store = SQLiteStore(tmp_path / "guard.db")
    try:
        ingest(store, root)
        engine = Engine(store, Settings())
        harbour, budget, lagoon = (node_of(store, f"{n}.md")
                                   for n in ("harbour", "budget", "lagoon"))
        _link(store, 1, harbour, budget, label="FINANCIAL")
        # Mislabelled on purpose: a PUBLIC row whose end is FINANCIAL is still not followed.
        _link(store, 2, budget, lagoon, kind="DerivedFrom", label="PUBLIC")
        plain = engine.authz_context(PLAIN_READER)
        walked = traverse(store, plain, [harbour], depth=3)
        plain_flat = engine.search(PLAIN_READER, "harbour pilot", limit=3)
        plain_hits = engine.search(PLAIN_READER, "harbour pilot", limit=3, reference_depth=3)
        finance_flat = engine.search(FINANCE_READER, "harbour pilot", limit=3)
        finance_hits = engine.search(FINANCE_READER, "harbour pilot", limit=3,
                                     reference_depth=1)
    finally:
        store.close()
    assert walked.reached == {} and walked.references == []
    assert [h.doc_id for h in plain_hits] == [h.doc_id for h in plain_flat]
    assert all(h.via_reference is None for h in plain_hits)
    assert harbour in {h.doc_id for h in finance_flat}
    assert budget not in {h.doc_id for h in finance_flat}, "found only through the reference"
    via = [h for h in finance_hits if h.via_reference is not None]
    assert [h.doc_id for h in via] == [budget]
    assert via[0].via_reference == {"ref_id": "ref-00001", "kind": "CrossReference"}


def test_supersedes_lowers_the_superseded_document(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    write_doc(root, "old.md", "Mooring rules for the marina berths.")
    write_doc(root, "new.md", "Mooring rules for the marina berths.")
    store = SQLiteStore(tmp_path / "sal.db")
    try:
        ingest(store, root)
        engine = Engine(store, Settings())
        old, new = node_of(store, "old.md"), node_of(store, "new.md")
        _link(store, 1, new, old, kind="Supersedes")
        flat = engine.search(PLAIN_READER, "mooring rules marina")
        ranked = engine.search(PLAIN_READER, "mooring rules marina", reference_depth=1)
    finally:
        store.close()
    assert {h.doc_id for h in flat} == {old, new}
    assert [h.doc_id for h in ranked][:2] == [new, old]
    score = {h.doc_id: h.score for h in ranked}
    assert score[new] > score[old]


def test_service_search_follows_references_only_for_readers_of_both_ends(
        tmp_path: Path) -> None:
    from affidavit.service import issue_key
    from tests.service.conftest import running_service

    root = tmp_path / "corpus"
    _guarded_corpus(root)
    db = tmp_path / "svc.db"
    store = SQLiteStore(db)
    try:
        ingest(store, root)
        _link(store, 1, node_of(store, "harbour.md"), node_of(store, "budget.md"),
              label="FINANCIAL")
        keys = {p: issue_key(store, "default", p).key for p in (PLAIN_READER, FINANCE_READER)}
    finally:
        store.close()
    body = {"query": "harbour pilot", "limit": 3, "reference_depth": 1}
    with running_service(Settings(), lambda: SQLiteStore(db)) as service:
        seen = {}
        for principal, key in keys.items():
            with service.client(key) as client:
                response = client.post("/v1/search", json=body)
                assert response.status_code == 200, response.text
                seen[principal] = response.json()["hits"]
    assert [h["via_reference"] for h in seen[PLAIN_READER]] == [None] * len(seen[PLAIN_READER])
    assert "88000" not in json.dumps(seen[PLAIN_READER])
    assert [h["via_reference"]["kind"] for h in seen[FINANCE_READER]
            if h["via_reference"]] == ["CrossReference"]


def test_ledger_record_names_reached_documents_only_to_the_asker(tmp_path: Path) -> None:
    from affidavit.engine.ledger_record import redact_for

    root = tmp_path / "corpus"
    _guarded_corpus(root)
    store = SQLiteStore(tmp_path / "ledger.db")
    try:
        ingest(store, root)
        engine = Engine(store, Settings())
        budget = node_of(store, "budget.md")
        _link(store, 1, node_of(store, "harbour.md"), budget, label="FINANCIAL")
        result = engine.ask(FINANCE_READER, "harbour duties rota", reference_depth=1)
        entry = store.get_ledger("default", result.ledger_record_id)
        assert entry is not None
        own = redact_for(entry, engine.authz_context(FINANCE_READER), store)
        store.grant("default", "user:fred", ["FINANCIAL", "INTERNAL"], at=NOW)
        # Fred may read every piece of evidence, but is not the asker.
        other = redact_for(entry, engine.authz_context("user:fred"), store)
    finally:
        store.close()
    assert budget in own["record"]["references"]["reached"]
    assert "withheld_evidence" not in other["record"]
    assert "references" not in other["record"]
