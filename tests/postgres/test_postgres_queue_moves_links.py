"""The PostgreSQL queue path follows the same identity and link rules as ``ingest``: a
file moved without a ``source_id`` keeps its document (a redirect, not a new node), and
the links of the documents a run ingested are resolved into edges, with the unresolved
ones kept by reason in the run's summary, never by their target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.config.loader import load
from affidavit.config.settings import Settings
from affidavit.identity.moves import MOVE_ACTOR
from affidavit.index.links import LINK_KIND
from affidavit.ingest.worker import Worker, WorkerOptions, enqueue_local_folder
from affidavit.store.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres

TENANT = "acme"
CANARY = "QX7LINKCANARY"
YARD = "# Yard\n\nThe yard opens at six and closes at ten every weekday evening.\n"
GUIDE = ("# Guide\n\nSee the [yard hours](yard.md) before a visit, the [port site]"
         f"(https://port.example/) and the [old plan]({CANARY}.md).\n")


def settings_in(root: Path) -> Settings:
    (root / "affidavit.toml").write_text(f'tenant = "{TENANT}"\n\n[acl]\ndefault = ["*"]\n',
                                         encoding="utf-8")
    return load(root / "affidavit.toml", environ={})


def drain(store: PostgresStore, settings: Settings, docs: Path) -> dict[str, object]:
    run_id = enqueue_local_folder(store, settings, docs, "files")
    report = Worker(store, settings, options=WorkerOptions(once=True)).run()
    assert report.runs_finished == [run_id]
    run = store.get_run(TENANT, run_id)
    assert run is not None
    summary: dict[str, object] = json.loads(run.summary_json)
    return summary


@pytest.fixture
def queued(owner_dsn: str, tmp_path: Path) -> tuple[PostgresStore, Settings, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "yard.md").write_text(YARD, encoding="utf-8")
    (docs / "guide.md").write_text(GUIDE, encoding="utf-8")
    return PostgresStore(owner_dsn), settings_in(tmp_path), docs


def test_a_queued_run_resolves_the_links_of_what_it_ingested(
        queued: tuple[PostgresStore, Settings, Path]) -> None:
    store, settings, docs = queued
    try:
        summary = drain(store, settings, docs)
        links = summary["links"]
        assert isinstance(links, dict)
        assert (links["resolved"], links["external"], links["not_found"]) == (1, 1, 1)
        assert links["unresolved"] == [{"from": "guide.md", "reason": "not_found"}]
        assert CANARY not in json.dumps(summary)  # a target is never reported
        heads = {h.alias: h.node_id for h in store.heads(TENANT)}
        edges = store.references_touching(TENANT, [heads["guide.md"]], direction="out",
                                          labels=settings.sensitivity.labels, limit=10)
        assert [(e.kind, e.target_id) for e in edges] == [(LINK_KIND, heads["yard.md"])]
    finally:
        store.close()


def test_a_file_moved_between_queued_runs_keeps_its_document(
        queued: tuple[PostgresStore, Settings, Path]) -> None:
    store, settings, docs = queued
    try:
        drain(store, settings, docs)
        before = {h.alias: h.node_id for h in store.heads(TENANT)}
        (docs / "ops").mkdir()
        (docs / "yard.md").rename(docs / "ops" / "yard-moved.md")
        summary = drain(store, settings, docs)
        assert summary["moved"] == ["yard.md -> ops/yard-moved.md"]
        assert (summary["ingested"], summary["unchanged"]) == (1, 1)
        after = {h.alias: h.node_id for h in store.heads(TENANT)}
        assert after == {"guide.md": before["guide.md"],
                         "ops/yard-moved.md": before["yard.md"]}
        assert [(r.owner, r.claimant, r.resolved_by)
                for r in store.list_identity_resolutions(TENANT)] == [
            ("yard.md", "ops/yard-moved.md", MOVE_ACTOR)]
        # Queued again unchanged: no second move, nothing derived.
        again = drain(store, settings, docs)
        assert (again["moved"], again["ingested"], again["unchanged"]) == ([], 0, 2)
    finally:
        store.close()
