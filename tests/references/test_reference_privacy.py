"""Another person's answer stays theirs, and a refusal is no oracle (issue 30, classes 4 and
6), on every backend: a citation reference is shown only to whoever may view its ledger
record; text a caller writes is accepted, labelled and shown only to readers of its label;
a document that is missing and one that is hidden are refused alike, by the same reads."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from affidavit.cli.main import main
from affidavit.config.settings import SensitivitySettings, Settings
from affidavit.engine.query import Engine
from affidavit.errors import AffidavitError, NotFound
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import CITATION, REASON_WITHHELD
from affidavit.references.links import (
    NO_DOCUMENT,
    add_reference,
    list_references,
    resolve_document,
    search_references,
)
from affidavit.retrieval.reference_expansion import traverse
from affidavit.store import SQLiteStore
from affidavit.store.protocol import Store
from tests.references.world import (
    BACKENDS,
    FINANCE_READER,
    PLAIN_READER,
    ingest,
    node_of,
    store_opener,
    write_doc,
)

NIGHTJAR = "Nightjar bid depends on the tides"
MISSING_NODE = "0123456789abcdef0123456789abcdef"
KEEPER = "user:rex"


@pytest.fixture(params=BACKENDS)
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    return store_opener(request, tmp_path)


def _corpus(root: Path) -> None:
    write_doc(root, "pilots.md", "The harbour pilot guides ships into the harbour at night.")
    write_doc(root, "tides.md", "Tide tables for the harbour are published weekly.")
    write_doc(root, "budget.md", "Budget line 4471: pilot fees of 88000 euros.",
              label="FINANCIAL")


def _settings() -> Settings:
    return Settings(sensitivity=SensitivitySettings(restricted_keywords=("nightjar",)))


def _world(root: Path, store: Store, settings: Settings | None = None) -> Engine:
    _corpus(root)
    settings = settings or _settings()
    ingest(store, root, settings)
    store.grant(settings.tenant, KEEPER, ["RESTRICTED", "INTERNAL"], at="now")
    return Engine(store, settings)


def test_citation_references_shown_only_to_viewers_of_their_ledger_record(
        open_store: Callable[[], Store], tmp_path: Path) -> None:
    """Alice and Fiona may both read every piece of evidence of Alice's answer; only Alice
    sees its citations, and for Fiona they take no place under a listing's limit."""
    store = open_store()
    try:
        engine = _world(tmp_path / "corpus", store)
        result = engine.ask(PLAIN_READER, "Who guides ships into the harbour at night?")
        assert result.citations, result.to_dict()
        pilots, tides = node_of(store, "pilots.md"), node_of(store, "tides.md")
        policy = SensitivityPolicy.from_settings(engine.settings.sensitivity)
        # Made after the answer: under a limit of one, the older citations come first.
        later = add_reference(store, engine.authz_context(FINANCE_READER), policy,
                              source=tides, target=pilots, kind="BuildsOn",
                              reason="tides decide when pilots sail", actor=FINANCE_READER)
        asker, other = (engine.authz_context(PLAIN_READER),
                        engine.authz_context(FINANCE_READER))
        asker_sees = list_references(store, asker, pilots)
        other_sees = list_references(store, other, pilots)
        other_first = list_references(store, other, pilots, limit=1)
        other_finds = search_references(store, other, "harbour")
        asker_finds = search_references(store, asker, "harbour")
        other_walks = traverse(store, other, [pilots], depth=2).references
    finally:
        store.close()
    citations = [r for r in asker_sees if r.kind == CITATION]
    assert citations and {r.source_id for r in citations} == {result.ledger_record_id}
    assert [r.kind for r in asker_finds if r.kind == CITATION]
    assert [r.ref_id for r in other_sees] == [later.ref_id]
    assert [r.ref_id for r in other_first] == [later.ref_id]
    assert other_finds == []
    assert all(r.kind != CITATION for r in other_walks)


def test_reference_reason_naming_a_restricted_keyword_is_stored_labelled_not_refused(
        open_store: Callable[[], Store], tmp_path: Path) -> None:
    """A reader without RESTRICTED writes a reason (and a section) naming a RESTRICTED
    keyword between two PUBLIC documents: accepted, stored with the label RESTRICTED, shown
    only to a reader granted it, and never matched by anyone else's search."""
    store = open_store()
    try:
        engine = _world(tmp_path / "corpus", store)
        policy = SensitivityPolicy.from_settings(engine.settings.sensitivity)
        pilots, tides = node_of(store, "pilots.md"), node_of(store, "tides.md")
        created = add_reference(store, engine.authz_context(PLAIN_READER), policy,
                                source=pilots, target=tides, kind="CrossReference",
                                reason=NIGHTJAR, actor=PLAIN_READER, location_type="Section",
                                location_detail={"section": "Nightjar appendix"})
        stored = store.references_touching("default", [tides], direction="in",
                                           labels=policy.labels, limit=10)
        seen = {who: list_references(store, engine.authz_context(who), tides)
                for who in (PLAIN_READER, FINANCE_READER, KEEPER)}
        found = {(who, text): len(search_references(store, engine.authz_context(who), text))
                 for who in (PLAIN_READER, FINANCE_READER, KEEPER)
                 for text in ("nightjar", "appendix", "zzqx")}
        events = [e for e in store.iter_policy_events("default") if e.kind == "reference.add"]
    finally:
        store.close()
    assert created.classification == "PUBLIC"
    assert created.reason == REASON_WITHHELD and created.to_dict()["location_detail"] == {}
    assert [(r.reason, r.text_label) for r in stored] == [(NIGHTJAR, "RESTRICTED")]
    assert [r.reason for r in seen[KEEPER]] == [NIGHTJAR]
    assert seen[KEEPER][0].to_dict()["location_detail"] == {"section": "Nightjar appendix"}
    for reader in (PLAIN_READER, FINANCE_READER):
        assert [(r.reason, r.to_dict()["location_detail"]) for r in seen[reader]] == [
            (REASON_WITHHELD, {})]
        assert NIGHTJAR.lower() not in json.dumps([r.to_dict() for r in seen[reader]]).lower()
    assert found[(KEEPER, "nightjar")] == 1
    assert {n for (who, _), n in found.items() if who != KEEPER} == {0}
    assert [e.actor for e in events] == [PLAIN_READER]
    assert "nightjar" not in events[0].after_json.lower()


def _refusal(call: Callable[[], object]) -> str:
    with pytest.raises(NotFound) as refused:
        call()
    return str(refused.value)


def test_refusals_do_not_differ_by_what_the_caller_cannot_read(
        open_store: Callable[[], Store], tmp_path: Path) -> None:
    """Alice may not read budget.md (FINANCIAL): naming it, by path or id, as the document
    to list or as an end of a new reference, is refused exactly like naming nothing."""
    store = open_store()
    try:
        engine = _world(tmp_path / "corpus", store)
        policy = SensitivityPolicy.from_settings(engine.settings.sensitivity)
        alice = engine.authz_context(PLAIN_READER)
        budget, pilots = node_of(store, "budget.md"), node_of(store, "pilots.md")
        resolved = {name: _refusal(partial(resolve_document, store, alice, name))
                    for name in ("budget.md", budget, "nope.md", MISSING_NODE)}
        added = {target: _refusal(partial(
            add_reference, store, alice, policy, source=pilots, target=target,
            kind="BuildsOn", reason="Nightjar 4471", actor=PLAIN_READER))
            for target in (budget, MISSING_NODE)}
        listed = [list_references(store, alice, node) for node in (budget, MISSING_NODE)]
        events = [e for e in store.iter_policy_events("default") if e.kind == "reference.add"]
    finally:
        store.close()
    assert set(resolved.values()) == set(added.values()) == {NO_DOCUMENT}
    assert listed == [[], []]
    assert events == []


# ---- the same work for every refusal (SQLite: each statement the store executes) ----------

_LITERAL = re.compile(r"'(?:[^']|'')*'|\b\d+\b")
_LIST = re.compile(r"\?(?:\s*,\s*\?)+")


def _shape(sql: str) -> str:
    """A statement with its values taken out and every value list of any length as one."""
    return _LIST.sub("?...", _LITERAL.sub("?", sql))


class _Recorder:
    """The statements a SQLite store executes and the functions of the package that run,
    while recording."""

    def __init__(self, store: SQLiteStore):
        # Writes go through the store's connection, this thread's reads through its reader.
        reader = store._readers.connection()
        self.connections: list[sqlite3.Connection] = [store._conn, *([reader] if reader else [])]
        self.statements: list[str] = []
        self.functions: list[str] = []

    def _profile(self, frame: FrameType, event: str, _arg: Any) -> None:
        module = str(frame.f_globals.get("__name__", ""))
        if event == "call" and module.startswith("affidavit."):
            self.functions.append(f"{module}.{frame.f_code.co_name}")

    def run(self, call: Callable[[], object]) -> tuple[list[str], list[str]]:
        self.statements, self.functions = [], []
        for connection in self.connections:
            connection.set_trace_callback(lambda sql: self.statements.append(_shape(sql)))
        sys.setprofile(self._profile)
        try:
            call()
        except AffidavitError:  # the refusal: its message is compared elsewhere
            pass
        finally:
            sys.setprofile(None)
            for connection in self.connections:
                connection.set_trace_callback(None)
        return self.statements, self.functions


@pytest.fixture
def sqlite_world(tmp_path: Path) -> Iterator[tuple[SQLiteStore, Engine]]:
    store = SQLiteStore(tmp_path / "refs.db")
    try:
        # The CLI's own settings (no configuration file): the labels it serves are these.
        yield store, _world(tmp_path / "corpus", store, Settings())
    finally:
        store.close()


def test_refusals_of_a_hidden_and_a_missing_document_run_the_same_reads_and_functions(
        sqlite_world: tuple[SQLiteStore, Engine]) -> None:
    """Timing: a hidden document is refused by the same store statements and the same code
    (no labelling, no extra look-up) as one that does not exist."""
    store, engine = sqlite_world
    policy = SensitivityPolicy.from_settings(engine.settings.sensitivity)
    alice = engine.authz_context(PLAIN_READER)
    budget, pilots = node_of(store, "budget.md"), node_of(store, "pilots.md")
    recorder = _Recorder(store)
    pairs: list[tuple[Callable[[], object], Callable[[], object]]] = [
        (lambda: resolve_document(store, alice, "budget.md"),
         lambda: resolve_document(store, alice, "nope.md")),
        (lambda: resolve_document(store, alice, budget),
         lambda: resolve_document(store, alice, MISSING_NODE)),
        (lambda: list_references(store, alice, budget),
         lambda: list_references(store, alice, MISSING_NODE)),
        (lambda: add_reference(store, alice, policy, source=pilots, target=budget,
                               kind="BuildsOn", reason="Nightjar 4471", actor=PLAIN_READER),
         lambda: add_reference(store, alice, policy, source=pilots, target=MISSING_NODE,
                               kind="BuildsOn", reason="Nightjar 4471", actor=PLAIN_READER)),
    ]
    for hidden, missing in pairs:
        recorder.run(hidden)  # warm caches alike, so only the path itself is compared
        recorder.run(missing)
        hidden_path, missing_path = recorder.run(hidden), recorder.run(missing)
        assert hidden_path[0], "the refusal reads the store"
        assert hidden_path == missing_path


def test_refs_cli_refuses_a_hidden_and_a_missing_document_alike_and_hides_others_citations(
        sqlite_world: tuple[SQLiteStore, Engine], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    store, engine = sqlite_world
    result = engine.ask(PLAIN_READER, "Who guides ships into the harbour at night?")
    assert result.citations, result.to_dict()
    db = str(tmp_path / "refs.db")
    codes, errors = [], []
    for name in ("budget.md", "nope.md", node_of(store, "budget.md"), MISSING_NODE):
        codes.append(main(["refs", "list", name, "--as", PLAIN_READER, "--db", db, "--json"]))
        out, err = capsys.readouterr()
        errors.append((out, err))
    listed = {}
    for who in (PLAIN_READER, FINANCE_READER):
        assert main(["refs", "list", "pilots.md", "--as", who, "--db", db, "--json"]) == 0
        listed[who] = [r["kind"] for r in json.loads(capsys.readouterr().out)]
    assert len(set(codes)) == 1 and codes[0] != 0
    assert len(set(errors)) == 1 and "budget" not in errors[0][1]
    assert CITATION in listed[PLAIN_READER] and listed[FINANCE_READER] == []
