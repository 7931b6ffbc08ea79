"""The service under test: the real application under uvicorn on 127.0.0.1, and a deployment
holding the canary corpus of the permissions suite with one API key per person.

Reuse: ``running_service(settings, store_opener)`` starts any app built by ``create_app``
(``routers=`` adds routers) on a free port and stops it at the end; ``deployment`` gives a
ready corpus, keys and an httpx client per person.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import APIRouter

from affidavit.config import loader as config
from affidavit.config.settings import Settings
from affidavit.identity.lifecycle import approve_sires
from affidavit.ingest.run import Ingestor
from affidavit.service import create_app, issue_key
from affidavit.sources import source_for
from affidavit.store import SQLiteStore, Store
from affidavit.store.protocol import RelationTuple
from tests.canary.conftest import SETTINGS, write_corpus

NOW = "2026-01-01T00:00:00+00:00"
PEOPLE = ("sam", "helen", "farid", "grace", "dana", "nobody")
OTHER_TENANT = "other"
OTHER_CANARY = "CNRY-OTHER-5A5A"


@dataclass
class RunningService:
    base_url: str
    server: uvicorn.Server

    def client(self, key: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        headers.update(kwargs.pop("headers", {}))
        return httpx.Client(base_url=self.base_url, headers=headers,
                            timeout=kwargs.pop("timeout", 30.0), **kwargs)


@contextmanager
def running_service(settings: Settings, store_opener: Callable[[], Store], *,
                    routers: Sequence[APIRouter] = ()) -> Iterator[RunningService]:
    """The app under uvicorn in a thread, on 127.0.0.1 and a port the OS picked."""
    app = create_app(settings, store_opener, routers=routers)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the service did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield RunningService(f"http://127.0.0.1:{port}", server)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@dataclass
class Deployment:
    """The canary corpus in a store (a SQLite file, or a PostgreSQL DSN), its settings, and
    a key per person."""

    root: Path
    db: Path
    settings: Settings
    keys: dict[str, str] = field(default_factory=dict)
    dsn: str | None = None

    def open_store(self) -> Store:
        if self.dsn is not None:
            from affidavit.store.postgres.store import PostgresStore

            return PostgresStore(self.dsn)
        return SQLiteStore(self.db, create=False)

    def opener(self) -> Callable[[], Store]:
        return self.open_store

    def with_settings(self, **service: Any) -> Settings:
        """These settings with some ``[service]`` values changed."""
        from dataclasses import replace

        return self.settings.replace(service=replace(self.settings.service, **service))

    @contextmanager
    def serve(self, settings: Settings | None = None, *,
              routers: Sequence[APIRouter] = ()) -> Iterator[RunningService]:
        with running_service(settings or self.settings, self.opener(),
                             routers=routers) as service:
            yield service


def build_deployment(root: Path, extra_settings: str = "", *, dsn: str | None = None
                     ) -> Deployment:
    (root / "affidavit.toml").write_text(SETTINGS + extra_settings, encoding="utf-8")
    write_corpus(root / "corpus")
    # A figure the model can contradict (a BLOCKED answer needs a contradicted claim).
    (root / "corpus" / "travel-policy.md").write_text(
        "---\nclassification: INTERNAL\nacl: [\"group:staff#member\"]\n---\n# travel policy"
        "\n\nThe nightly hotel limit is 180 euros for every review trip.\n", encoding="utf-8")
    settings = config.load(root / "affidavit.toml", environ={})
    db = root / "service.db"
    settings = settings.replace(store=settings.store.__class__(db=str(db)))
    store: Store = SQLiteStore(db)
    if dsn is not None:
        from affidavit.store.postgres.store import PostgresStore

        store.close()
        store = PostgresStore(dsn)
    try:
        Ingestor(store, settings, tenant=settings.tenant).run(
            [source_for(str(root / "corpus"), settings, source_system="files")])
        proposed = [r.sire_id for r in store.list_sire(settings.tenant, state="PROPOSED")]
        approve_sires(store, settings.tenant, proposed, by="user:curator", at=NOW)
        keys = {who: issue_key(store, settings.tenant, f"user:{who}").key for who in PEOPLE}
        _other_tenant(store, settings, root)
        keys["olga"] = issue_key(store, OTHER_TENANT, "user:olga").key
        # Same principal name in the other tenant: a tenant is part of who you are.
        keys["sam@other"] = issue_key(store, OTHER_TENANT, "user:sam").key
    finally:
        store.close()
    return Deployment(root, db, settings, keys, dsn)


def _other_tenant(store: Store, settings: Settings, root: Path) -> None:
    """A second tenant with one document about the same topic and its own canary."""
    folder = root / "other-corpus"
    folder.mkdir()
    (folder / "travel.md").write_text(
        "---\nclassification: INTERNAL\nacl: [\"user:olga\", \"user:sam\"]\n---\n# travel\n\n"
        f"The quarterly review of travel bookings found item {OTHER_CANARY} open. The "
        "travel desk approves hotel bookings for every review trip.\n", encoding="utf-8")
    store.ensure_tenant(OTHER_TENANT)
    store.grant(OTHER_TENANT, "user:olga", ["INTERNAL"], at=NOW)
    store.grant(OTHER_TENANT, "user:sam", ["INTERNAL"], at=NOW)
    store.add_tuple(OTHER_TENANT, RelationTuple("group:staff", "member", "user:olga", "cli"),
                    at=NOW)
    Ingestor(store, settings, tenant=OTHER_TENANT).run(
        [source_for(str(folder), settings, source_system="files")])
    proposed = [r.sire_id for r in store.list_sire(OTHER_TENANT, state="PROPOSED")]
    approve_sires(store, OTHER_TENANT, proposed, by="user:curator", at=NOW)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    """One canary deployment per test module (tests must not change its corpus)."""
    return build_deployment(tmp_path_factory.mktemp("service"))


@pytest.fixture(scope="module")
def service(deployment: Deployment) -> Iterator[RunningService]:
    """The canary deployment served with its default settings."""
    with deployment.serve() as running:
        yield running


def sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any] | str]:
    """Parsed server-sent events: the JSON of each ``data:`` event, or ``":comment"``."""
    data: list[str] = []
    for line in lines:
        if line.startswith(":"):
            yield line
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            yield json.loads("\n".join(data))
            data = []
    if data:
        yield json.loads("\n".join(data))
