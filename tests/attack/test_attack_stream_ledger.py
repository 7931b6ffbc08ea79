"""Attack on the streamed answer: the ledger refuses the record after the draft's tokens have
reached the client. No record, no response: the stream must end with an event that
invalidates every streamed token, and never with an envelope that presents the draft as an
answer. The ledger is made to fail by the database itself (a trigger that aborts every
insert into it), so the real store raises the real error."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.service.conftest import Deployment, build_deployment
from tests.service.model_server import ModelScript
from tests.service.test_service_stream import QUESTION, stream, with_model

DRAFT = ["The travel desk ", "approves hotel ", "bookings for every review trip."]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    return build_deployment(tmp_path_factory.mktemp("attack-stream-ledger"))


@contextmanager
def ledger_refusing_writes(db: Path) -> Iterator[None]:
    """Every insert into the ledger table aborts, as a full disk or a lost lock would."""
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TRIGGER refuse_ledger BEFORE INSERT ON ledger "
                     "BEGIN SELECT RAISE(ABORT, 'ledger unavailable'); END")
    try:
        yield
    finally:
        with sqlite3.connect(db) as conn:
            conn.execute("DROP TRIGGER refuse_ledger")


def ledger_size(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM ledger").fetchone()[0])


def test_a_ledger_failure_after_streamed_tokens_invalidates_them_and_sends_no_envelope(
        deployment: Deployment) -> None:
    before = ledger_size(deployment.db)
    with with_model(deployment, ModelScript(deltas=DRAFT)) as service, \
            ledger_refusing_writes(deployment.db):
        events, request_id = stream(service, deployment.keys["sam"], QUESTION)
    data: list[dict[str, Any]] = [e for e in events if isinstance(e, dict)]
    tokens = [e["text"] for e in data if e["type"] == "token"]
    assert "".join(tokens) == "".join(DRAFT), "the draft's tokens reached the client first"
    assert not [e for e in data if e["type"] == "envelope"], "no record, no answer"
    final = data[-1]
    assert final["type"] == "error", final
    assert final["tokens_invalidated"] is True
    assert final["problem"]["type"] == "urn:affidavit:problem:ledger-unavailable"
    assert final["problem"]["request_id"] == request_id
    assert "detail" not in final["problem"], "a store's message can name paths or evidence"
    assert ledger_size(deployment.db) == before
