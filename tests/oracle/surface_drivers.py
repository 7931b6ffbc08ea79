"""How the surface oracle reaches every registered surface of :mod:`affidavit.service.surfaces` and
screens what comes back.

* HTTP routes and console pages: the real application (``create_app``) in process, with an
  API key per (tenant, principal, role) issued in the oracle's store; pages through a signed-in
  console session per key.
* CLI commands: ``affidavit.cli.main.main`` with ``--config``, ``--db`` and ``--tenant`` on the
  oracle's database, its output captured.
* Signals: spans through an in-memory exporter, log lines through the JSON-lines formatter,
  metrics from the process registry's Prometheus text.

:meth:`Driver.screen` checks one output by the surface's declared audience: a caller may
receive a marker (of a document, title or heading) only when the oracle says it may see it,
and a document's path only when it may read the document; an admin or the operator may
receive anything of its own tenant and nothing of another; anyone else, and every exported
signal, nothing of any document and no principal's name.
"""

from __future__ import annotations

import io
import json
import logging
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from affidavit.cli.main import main as cli_main
from affidavit.config import loader as config_module
from affidavit.observability.logs import JsonLineFormatter
from affidavit.service import create_app, issue_key
from affidavit.service.surfaces import Audience, surface
from affidavit.store import SQLiteStore, Store
from tests.oracle.conftest import Universe
from tests.oracle.oracle_world import DERIVED_MARKER, KEYWORDS, Doc, Oracle, vocabulary

# A document's path as the generated world names it (folders, then word-nnn.md).
ALIAS = re.compile(r"(?<![\w/.-])((?:[a-z0-9]+/)*[a-z]+-\d{3}\.md)")
PRINCIPAL_NAME = re.compile(r"user:(?:[ab]-u\d{2}|shared-\d{2})")
CSRF = re.compile(r'name="csrf" value="([^"]+)"')

Exerciser = Callable[["Driver"], None]
EXERCISERS: dict[str, Exerciser] = {}


def exercises(*names: str) -> Callable[[Exerciser], Exerciser]:
    """Register ``fn`` as the exerciser of the surfaces ``names``."""
    def register(fn: Exerciser) -> Exerciser:
        for name in names:
            assert name not in EXERCISERS, f"two exercisers for {name}"
            EXERCISERS[name] = fn
        return fn
    return register


def markers(text: str) -> set[str]:
    return {"".join(m) + "x" for m in DERIVED_MARKER.findall(text)}


class Checks:
    """Counts verifications by surface and keeps the first violations."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.violations: list[str] = []

    def check(self, kind: str, ok: bool, detail: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if not ok:
            self.violations.append(f"{kind}: {detail}")

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def report(self) -> str:
        lines = [f"  {kind:<46} {n:>8}" for kind, n in sorted(self.counts.items())]
        return "\n".join(["surface oracle: one check = one (receiver, string) verification",
                          *lines, f"  {'total checks':<46} {self.total:>8}",
                          f"  {'violations':<46} {len(self.violations):>8}"])


def cli_settings_toml() -> str:
    """The universe's sensitivity settings as a settings file for the CLI."""
    keywords = "\n".join(f'{label} = ["{word}"]' for label, word in sorted(KEYWORDS.items())
                         if label != "RESTRICTED")
    return (f'[sensitivity]\nrestricted_keywords = ["{KEYWORDS["RESTRICTED"]}"]\n\n'
            f"[sensitivity.keywords]\n{keywords}\n")


class Driver:
    """One universe, its application, its CLI settings and the screen over their outputs."""

    def __init__(self, universe: Universe, root: Path, rng: random.Random, checks: Checks):
        self.u, self.root, self.rng, self.checks = universe, root, rng, checks
        self.oracles = {t: Oracle(w) for t, w in universe.worlds.items()}
        self.by_alias = {t: {d.alias: d for d in w.docs} for t, w in universe.worlds.items()}
        self.by_node = {t: {d.node_id: d for d in w.docs} for t, w in universe.worlds.items()}
        self.vocab = vocabulary(random.Random(7))
        store = universe.store
        assert isinstance(store, SQLiteStore), "the surface oracle runs on the SQLite store"
        self.db = store.path
        self.config = root / "affidavit.toml"
        self.config.write_text(cli_settings_toml(), encoding="utf-8")
        loaded = config_module.load(self.config, environ={})
        assert loaded.sensitivity == universe.settings.sensitivity, "one labelling policy"
        service = replace(universe.settings.service, rate_limit_per_minute=1_000_000)
        self.settings = universe.settings.replace(service=service)
        self.app = create_app(self.settings, self._open_store)
        self.http = TestClient(self.app)
        self._keys: dict[tuple[str, str, str], str] = {}
        self._sessions: dict[tuple[str, str, str], tuple[TestClient, str]] = {}
        # (tenant, principal, ledger record id, question) of answers made on any surface
        self.records: list[tuple[str, str, str, str]] = []

    def log_text(self) -> str:
        """The log lines captured so far (:func:`captured_signals`)."""
        return "".join(buffer.getvalue() for buffer in _captured)

    def _open_store(self) -> Store:
        return SQLiteStore(self.db, create=False)

    def close(self) -> None:
        for client, _ in self._sessions.values():
            client.close()
        self.http.close()
        self.app.state.affidavit.close()

    # ---------------------------------------------------------------- who asks
    def tenants(self) -> list[str]:
        return sorted(self.u.worlds)

    def principal(self, tenant: str) -> str:
        return str(self.rng.choice(self.u.worlds[tenant].users))

    def doc(self, tenant: str) -> Doc:
        docs: list[Doc] = self.u.worlds[tenant].docs
        return docs[self.rng.randrange(len(docs))]

    def readable_docs(self, tenant: str, principal: str) -> list[Doc]:
        oracle = self.oracles[tenant]
        return [d for d in self.u.worlds[tenant].docs if oracle.may_read(principal, d)]

    def key(self, tenant: str, principal: str, role: str = "reader") -> str:
        found = self._keys.get((tenant, principal, role))
        if found is None:
            found = issue_key(self.u.store, tenant, principal, role=role).key
            self._keys[(tenant, principal, role)] = found
        return found

    def headers(self, tenant: str, principal: str, role: str = "reader") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key(tenant, principal, role)}"}

    def session(self, tenant: str, principal: str, role: str = "reader"
                ) -> tuple[TestClient, str]:
        """A console client signed in with the key of (tenant, principal, role), and its
        session's CSRF token."""
        found = self._sessions.get((tenant, principal, role))
        if found is None:
            client = TestClient(self.app, follow_redirects=False)
            form = client.get("/ui/login")
            token = CSRF.search(form.text)
            assert token is not None
            signed = client.post("/ui/login", data={
                "csrf": token.group(1), "api_key": self.key(tenant, principal, role)})
            assert signed.status_code == 303, signed.text
            page = client.get("/ui/ask")
            csrf = CSRF.search(page.text)
            assert csrf is not None, page.text
            found = (client, csrf.group(1))
            self._sessions[(tenant, principal, role)] = found
        return found

    # ---------------------------------------------------------------- the CLI
    def cli(self, tenant: str, *argv: str, db: str | None = None) -> tuple[int, str]:
        """``affidavit --config .. --db .. --tenant TENANT ARGV``: exit code, stdout+stderr."""
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = cli_main(["--config", str(self.config), "--db", db or self.db,
                             "--tenant", tenant, *argv])
        return code, out.getvalue() + err.getvalue()

    # ---------------------------------------------------------------- the screen
    def screen(self, name: str, tenant: str, principal: str | None, text: str,
               supplied: str = "", *, audience: Audience | None = None) -> None:
        """Check every marker, path and principal name in ``text``, one output of surface
        ``name`` received by ``principal`` of ``tenant``; what the receiver itself sent
        (``supplied``) may come back to it."""
        audience = audience or surface(name).audience
        world, oracle = self.u.worlds.get(tenant), self.oracles.get(tenant)
        for marker in sorted(markers(text) - markers(supplied)):
            own = world is not None and marker[2] == world.key
            if audience is Audience.CALLER and principal is not None:
                ok = own and oracle is not None and oracle.may_see(principal, marker)
            elif audience in (Audience.ADMIN, Audience.OPERATOR):
                ok = own
            else:
                ok = False
            self.checks.check(name, ok, f"{tenant} {principal} received {marker}")
        if audience is Audience.CALLER and principal is not None and oracle is not None:
            for alias in sorted(set(ALIAS.findall(text)) - set(ALIAS.findall(supplied))):
                doc = self.by_alias[tenant].get(alias)
                if doc is not None:
                    self.checks.check(name, oracle.may_read(principal, doc),
                                      f"{tenant} {principal} received the path {alias}")
        if audience in (Audience.ANYONE, Audience.EXPORTER):
            for who in sorted(set(PRINCIPAL_NAME.findall(text))):
                self.checks.check(name, False, f"{who} named to {audience}")

    def served(self, name: str, status: int, detail: str = "") -> None:
        """One response of ``name`` was answered without a server error."""
        self.checks.check(name, status < 500, f"status {status} {detail[:300]}")

    def request(self, name: str, tenant: str, principal: str | None, method: str,
                url: str, *, role: str = "reader", supplied: str = "",
                client: TestClient | None = None, **kwargs: Any) -> Any:
        """Call route ``name`` as (tenant, principal, role), screen and return the reply."""
        headers = dict(kwargs.pop("headers", {}))
        if principal is not None and client is None:
            headers.update(self.headers(tenant, principal, role))
        response = (client or self.http).request(method, url, headers=headers, **kwargs)
        text = response.text if _is_text(response) else response.content.decode("latin-1")
        self.served(name, response.status_code, text)
        self.screen(name, tenant, principal, text + json.dumps(dict(response.headers)),
                    supplied)
        return response


def _is_text(response: Any) -> bool:
    kind = response.headers.get("content-type", "")
    return kind.startswith(("text/", "application/json", "application/problem+json"))


# ---------------------------------------------------------------------- signals

_captured: list[io.StringIO] = []  # the log lines of the capture under way

@contextmanager
def captured_signals() -> Iterator[tuple[Any, io.StringIO]]:
    """Spans (an in-memory exporter on the process's SDK tracer provider) and the package's
    log lines (the JSON-lines formatter) written while the block runs."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), "another tracer provider is installed"
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonLineFormatter())
    logger = logging.getLogger("affidavit")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    _captured.append(lines)
    try:
        yield exporter, lines
    finally:
        _captured.remove(lines)
        logger.removeHandler(handler)
        logger.setLevel(level)
        exporter.shutdown()


def span_text(span: Any) -> str:
    """A finished span's name, attributes and events as one string for the screen."""
    events = [{"name": e.name, **dict(e.attributes or {})} for e in span.events]
    return json.dumps({"name": span.name, "attributes": dict(span.attributes or {}),
                       "events": events}, default=str)

