"""Every error path of the engine and the service, run in one process whose spans go over
OTLP to ``argv[2]`` and whose logs go, as the service writes them, to stderr.

``python -m tests.observability.error_paths WORKDIR ENDPOINT``. Its own interpreter: the global
tracer provider can be set only once per process. Every document, query and principal
name holds a canary (:data:`DOCUMENT_CANARY`, :data:`QUERY_CANARY`,
:data:`PRINCIPAL_CANARY`) that no exported byte and no log line may contain.
"""

from __future__ import annotations

import contextlib
import logging.config
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import APIRouter

from affidavit.config import loader as config
from affidavit.config.settings import ProviderSettings, Settings, TelemetrySettings
from affidavit.engine.query import Engine
from affidavit.errors import InputRejected
from affidavit.extract import guard
from affidavit.identity.lifecycle import approve_sires
from affidavit.ingest.run import Ingestor
from affidavit.observability import traces as telemetry
from affidavit.observability.logs import service_log_config
from affidavit.service import create_app, issue_key
from affidavit.sources import source_for
from affidavit.store import SQLiteStore
from tests.answer.answer_fake_openai import FakeOpenAI, Scripted
from tests.observability.refused_documents import BUILDERS

DOCUMENT_CANARY = "CNRYDOCTEXT5150"
QUERY_CANARY = "CNRYQUERYTEXT8086"
PRINCIPAL_CANARY = "cnryprincipal6502"
PRINCIPAL = f"user:{PRINCIPAL_CANARY}"
QUESTION = f"Who approves hotel bookings for trip {QUERY_CANARY}?"
ANSWERABLE = "Who approves hotel bookings for every review trip?"
SETTINGS = f"""tenant = "acme"
[authz]
tuples = ["group:staff#member@{PRINCIPAL}"]
[grants]
"group:staff#member" = ["INTERNAL"]
"""
GOOD_DOCUMENT = (f"---\nacl: [\"group:staff#member\"]\n---\n# Travel {DOCUMENT_CANARY}\n\n"
                 f"The travel desk approves hotel bookings for every review trip "
                 f"{DOCUMENT_CANARY}.\n")


def quarantine_every_reason(workdir: Path, settings: Settings) -> None:
    """Ingest one refused document per reason code, grouped by the limits each needs."""
    groups: dict[tuple[tuple[str, Any], ...], list[tuple[str, bytes]]] = {}
    for code, build in BUILDERS.items():
        document = build(DOCUMENT_CANARY)
        groups.setdefault(tuple(sorted(document.limits.items())), []).append(
            (f"{code.lower()}-{document.filename}", document.content))
    store = SQLiteStore(Path(settings.store.db))
    try:
        for number, (limits, documents) in enumerate(groups.items()):
            folder = workdir / f"refused-{number}"
            folder.mkdir()
            for name, content in documents:
                (folder / name).write_bytes(content)
            limited = settings.replace(ingest=replace(settings.ingest, **dict(limits)))
            # A source system per folder: a folder's run withdraws only what it held.
            Ingestor(store, limited, tenant=settings.tenant).run(
                [source_for(str(folder), limited, source_system=folder.name)])
    finally:
        store.close()


def refuse_inside_the_guard() -> None:
    """The refusals no document reaches (``RAISED_IN_GUARD``), through the real guard inside
    an extraction stage, as a parser that broke would raise them."""
    def broken() -> None:
        raise ValueError(f"parser bug near {DOCUMENT_CANARY}")

    def bloated() -> None:
        raise MemoryError(f"while reading {DOCUMENT_CANARY}")

    def malformed() -> None:
        raise InputRejected("MALFORMED_HTML", f"unreadable markup at {DOCUMENT_CANARY}")

    for task in (broken, bloated, malformed):
        try:
            with telemetry.stage("extract.html"):
                guard.parse_isolated(task, timeout_seconds=10,
                                     memory_bytes=guard.MIN_MEMORY_BUDGET_BYTES)
        except InputRejected:
            pass


def engine_refusals(settings: Settings) -> None:
    """A principal that is not one, and an unknown tenant: the authz context fails closed."""
    store = SQLiteStore(Path(settings.store.db))
    try:
        Engine(store, settings).ask(f"{PRINCIPAL} {DOCUMENT_CANARY}", QUESTION)
        # Any refusal will do: only what its telemetry says is looked at.
        with contextlib.suppress(Exception):
            Engine(store, settings, tenant=f"tenant-{PRINCIPAL_CANARY}").ask(PRINCIPAL,
                                                                              QUESTION)
    finally:
        store.close()


boom = APIRouter()


@boom.get("/v1/test/unhandled")
def unhandled() -> None:
    """A bug whose message quotes a document: it reaches only the problem handler."""
    raise RuntimeError(f"unexpected state while reading {DOCUMENT_CANARY}")


@contextmanager
def serving(settings: Settings) -> Iterator[str]:
    """The app under uvicorn with the log configuration of ``affidavit serve``."""
    app = create_app(settings, lambda: SQLiteStore(Path(settings.store.db), create=False),
                     routers=[boom])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           log_config=service_log_config(), lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the service did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextmanager
def ledger_refusing_writes(db: Path) -> Iterator[None]:
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TRIGGER refuse_ledger BEFORE INSERT ON ledger "
                     "BEGIN SELECT RAISE(ABORT, 'ledger unavailable'); END")
    try:
        yield
    finally:
        with sqlite3.connect(db) as conn:
            conn.execute("DROP TRIGGER refuse_ledger")


def service_failures(settings: Settings, key: str) -> None:
    """Authentication, limits, a bug, and a stream whose ledger write fails."""
    short = settings.replace(service=replace(settings.service, max_query_chars=40))
    with serving(short) as base, httpx.Client(base_url=base, timeout=60) as client:
        client.post("/v1/query", json={"query": QUESTION})
        client.post("/v1/query", json={"query": QUESTION},
                    headers={"Authorization": f"Bearer afd.{PRINCIPAL_CANARY}.x"})
        client.post("/v1/query", json={"query": QUESTION * 3},
                    headers={"Authorization": f"Bearer {key}"})
        client.get("/v1/test/unhandled", headers={"Authorization": f"Bearer {key}"})
    headers = {"Authorization": f"Bearer {key}"}
    with serving(settings) as base, httpx.Client(base_url=base, timeout=60) as client, \
            ledger_refusing_writes(Path(settings.store.db)), \
            client.stream("POST", "/v1/query/stream", json={"query": ANSWERABLE},
                          headers=headers) as response:
        for _ in response.iter_lines():
            pass


def provider_failures(settings: Settings, key: str) -> None:
    """A model server that fails, echoing the prompt (as some servers do), and a provider
    without the settings it needs."""
    fake = FakeOpenAI()
    fake.echo_model = None
    failing = Scripted(status=500, body={"error": {"message": f"bad prompt: {ANSWERABLE} "
                                                              f"{DOCUMENT_CANARY}"}})
    fake.defaults["/v1/chat/completions"] = failing
    fake.defaults["/v1/completions"] = failing
    fake.thread.start()
    try:
        openai = settings.replace(
            answer=replace(settings.answer, provider="openai"),
            provider=ProviderSettings(base_url=fake.base_url, model="scripted",
                                      timeout_seconds=5, max_retries=0, logprobs=False))
        misconfigured = settings.replace(answer=replace(settings.answer, provider="openai"),
                                         provider=ProviderSettings())
        for each in (openai, misconfigured):
            with serving(each) as base, httpx.Client(base_url=base, timeout=60) as client:
                headers = {"Authorization": f"Bearer {key}"}
                client.post("/v1/query", json={"query": QUESTION}, headers=headers)
                with client.stream("POST", "/v1/query/stream", json={"query": QUESTION},
                                   headers=headers) as response:
                    for _ in response.iter_lines():
                        pass
    finally:
        fake.server.shutdown()
        fake.server.server_close()


def load_settings(workdir: Path) -> Settings:
    (workdir / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    settings = config.load(workdir / "affidavit.toml", environ={})
    return settings.replace(store=replace(settings.store, db=str(workdir / "paths.db")))


def prepare(workdir: Path, settings: Settings) -> str:
    """The answerable corpus, ingested last: runs under other limits leave its epochs
    behind."""
    corpus = workdir / "corpus"
    corpus.mkdir()
    (corpus / "travel.md").write_text(GOOD_DOCUMENT, encoding="utf-8")
    store = SQLiteStore(Path(settings.store.db))
    try:
        Ingestor(store, settings, tenant=settings.tenant).run(
            [source_for(str(corpus), settings, source_system="files")])
        proposed = [r.sire_id for r in store.list_sire(settings.tenant, state="PROPOSED")]
        approve_sires(store, settings.tenant, proposed, by="user:curator",
                      at="2026-01-01T00:00:00+00:00")
        key = issue_key(store, settings.tenant, PRINCIPAL).key
    finally:
        store.close()
    return key


def main(workdir: Path, endpoint: str) -> None:
    logging.config.dictConfig(service_log_config("INFO"))
    telemetry.configure(TelemetrySettings(exporter="otlp", endpoint=endpoint))
    settings = load_settings(workdir)
    quarantine_every_reason(workdir, settings)
    key = prepare(workdir, settings)
    refuse_inside_the_guard()
    engine_refusals(settings)
    service_failures(settings, key)
    provider_failures(settings, key)
    telemetry.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
