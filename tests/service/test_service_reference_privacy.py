"""``/v1/references`` over HTTP, on every backend: another person's answer stays theirs (its
citations read like none), a reason naming a restricted keyword is accepted and withheld
from readers without its label, and every refusal is the same bytes whatever its hidden
cause (issue 30, classes 4 and 6)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from affidavit.config.settings import SensitivitySettings, Settings
from affidavit.records import CITATION, REASON_WITHHELD
from affidavit.service import issue_key
from tests.references.world import (
    BACKENDS,
    FINANCE_READER,
    PLAIN_READER,
    ingest,
    node_of,
    store_opener,
    write_doc,
)
from tests.service.conftest import RunningService, running_service

KEEPER = "user:rex"
NIGHTJAR = "Nightjar bid depends on the tides"
MISSING_NODE = "0123456789abcdef0123456789abcdef"
QUESTION = "Who guides ships into the harbour at night?"
# Headers that differ between any two requests whatever they ask: the clock and the id the
# service gives each request.
PER_REQUEST = frozenset({"date", "x-request-id"})


@dataclass
class Served:
    service: RunningService
    keys: dict[str, str]
    nodes: dict[str, str]

    def client(self, who: str) -> httpx.Client:
        return self.service.client(self.keys[who])


@pytest.fixture(params=BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    opener = store_opener(request, tmp_path)
    settings = Settings(sensitivity=SensitivitySettings(restricted_keywords=("nightjar",)))
    root = tmp_path / "corpus"
    write_doc(root, "pilots.md", "The harbour pilot guides ships into the harbour at night.")
    write_doc(root, "tides.md", "Tide tables for the harbour are published weekly.")
    write_doc(root, "budget.md", "Budget line 4471: pilot fees of 88000 euros.",
              label="FINANCIAL")
    store = opener()
    try:
        ingest(store, root, settings)
        store.grant(settings.tenant, KEEPER, ["RESTRICTED", "INTERNAL"], at="now")
        keys = {who: issue_key(store, settings.tenant, who).key
                for who in (PLAIN_READER, FINANCE_READER, KEEPER)}
        nodes = {name: node_of(store, f"{name}.md") for name in ("pilots", "tides", "budget")}
    finally:
        store.close()
    with running_service(settings, opener) as service:
        yield Served(service, keys, nodes)


def _bytes(response: httpx.Response) -> tuple[int, bytes, tuple[tuple[str, str], ...]]:
    headers = tuple((k, v) for k, v in response.headers.items() if k.lower() not in PER_REQUEST)
    return response.status_code, response.content, headers


def test_refusals_do_not_differ_by_what_the_caller_cannot_read(served: Served) -> None:
    """Alice may not read budget.md: naming it, by path or id, to list its references or as
    an end of a new one, gets the very bytes that naming nothing gets."""
    budget = served.nodes["budget"]
    with served.client(PLAIN_READER) as client:
        listed = [client.get("/v1/references", params={"document": name})
                  for name in ("budget.md", "nope.md", budget, MISSING_NODE)]
        created = [client.post("/v1/references", json={
            "source": "pilots.md", "target": target, "kind": "BuildsOn", "reason": reason})
            for target in ("budget.md", "nope.md", budget, MISSING_NODE)
            for reason in ("tides", NIGHTJAR)]
    refusals = {_bytes(r) for r in [*listed, *created]}
    assert len(refusals) == 1, refusals
    status, body, _ = refusals.pop()
    assert status == 404
    assert b"budget" not in body and b"nope" not in body and budget.encode() not in body


def test_citation_references_shown_only_to_viewers_of_their_ledger_record(
        served: Served) -> None:
    """Fiona may read every piece of evidence of Alice's answer, yet its citations (who
    asked, when, the record id, the answer's sentences) read for her like none."""
    with served.client(PLAIN_READER) as alice:
        answer = alice.post("/v1/query", json={"query": QUESTION})
        assert answer.status_code == 200, answer.text
        record_id = answer.json()["ledger_record_id"]
        alice_sees = alice.get("/v1/references", params={"document": "pilots.md"}).json()
    with served.client(FINANCE_READER) as fiona:
        record = fiona.get(f"/v1/ledger/{record_id}")
        fiona_sees = fiona.get("/v1/references", params={"document": "pilots.md"})
        fiona_finds = fiona.get("/v1/references/search", params={"text": "harbour"})
    assert [r["source_id"] for r in alice_sees if r["kind"] == CITATION] != []
    assert record.status_code == 404
    assert fiona_sees.status_code == 200 and fiona_sees.json() == []
    assert fiona_finds.status_code == 200 and fiona_finds.json() == []
    assert record_id not in fiona_sees.text + fiona_finds.text


def test_reference_reason_naming_a_restricted_keyword_is_stored_labelled_not_refused(
        served: Served) -> None:
    """Alice (no RESTRICTED) writes a reason naming a RESTRICTED keyword: accepted like any
    other, its reason withheld from her and Fiona, shown to Rex; a search for the keyword
    answers her exactly as a search for a word written nowhere."""
    with served.client(PLAIN_READER) as alice:
        created = alice.post("/v1/references", json={
            "source": "pilots.md", "target": "tides.md", "kind": "CrossReference",
            "reason": NIGHTJAR})
        plain = alice.post("/v1/references", json={
            "source": "tides.md", "target": "pilots.md", "kind": "CrossReference",
            "reason": "the tides decide"})
        searches = [alice.get("/v1/references/search", params={"text": text})
                    for text in ("nightjar", "zzqx")]
    listed = {}
    for who in (FINANCE_READER, KEEPER):
        with served.client(who) as client:
            listed[who] = client.get("/v1/references",
                                     params={"document": "tides.md", "direction": "in"}).json()
    assert created.status_code == plain.status_code == 201, created.text
    assert created.json()["reason"] == REASON_WITHHELD
    assert "nightjar" not in created.text.lower()
    assert [(r["reason"], r["classification"]) for r in listed[FINANCE_READER]] == [
        (REASON_WITHHELD, "PUBLIC")]
    assert [r["reason"] for r in listed[KEEPER]] == [NIGHTJAR]
    assert [_bytes(r)[:2] for r in searches] == [(200, b"[]"), (200, b"[]")]
