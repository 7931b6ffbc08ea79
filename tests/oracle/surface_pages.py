"""Exercisers of the console pages (each through a signed-in session of its own key) and of
the exported signals (spans, metrics and log fields captured while every other surface ran)."""

from __future__ import annotations

import fnmatch
import json
import logging
import re
import time
from dataclasses import replace
from typing import Any

from starlette.testclient import TestClient

from affidavit.engine.query import Engine
from affidavit.errors import NotFound, StoreError
from affidavit.observability.metrics import REGISTRY, SPECS, prometheus_name
from affidavit.service import create_app
from affidavit.service.surfaces import SURFACES, Kind
from tests.oracle.surface_drivers import Driver, exercises, span_text
from tests.oracle.surface_exercisers import BROKEN, echoed, question_for

PAGES = 10
REQUEST_ID = re.compile(r"request_id=([\w-]+)")


@exercises("GET /ui", "GET /ui/login", "POST /ui/login", "GET /ui/static/{name}")
def anonymous_pages(d: Driver) -> None:
    tenant = d.tenants()[0]
    for url in ("/ui", "/ui/login", "/ui/static/console.css", "/ui/static/console.js"):
        name = "GET /ui/static/{name}" if "static" in url else f"GET {url}"
        d.request(name, tenant, None, "GET", url, follow_redirects=False)
    d.request("POST /ui/login", tenant, None, "POST", "/ui/login",
              data={"csrf": "x", "api_key": "not-a-key"})


@exercises("GET /ui/ask", "POST /ui/ask", "GET /ui/ask/result/{request_id}",
           "POST /ui/ask/stream", "GET /ui/ledger", "GET /ui/ledger/{request_id}",
           "POST /ui/ledger/{request_id}/replay", "GET /ui/history")
def ask_pages(d: Driver) -> None:
    for i in range(PAGES):
        tenant = d.tenants()[i % 2]
        principal, question = d.principal(tenant), question_for(d, tenant)
        client, csrf = d.session(tenant, principal)
        d.request("GET /ui/ask", tenant, principal, "GET", "/ui/ask", client=client)
        posted = d.request("POST /ui/ask", tenant, principal, "POST", "/ui/ask", client=client,
                           data={"csrf": csrf, "question": question}, supplied=question)
        found = REQUEST_ID.search(posted.headers.get("location", ""))
        d.checks.check("POST /ui/ask", found is not None, posted.text[:300])
        if found is None:
            continue
        request_id = found.group(1)
        # Every page of a recorded answer shows its asker the question it typed.
        echo = question
        for name, method, url in (
                ("GET /ui/ask", "GET", f"/ui/ask?request_id={request_id}"),
                ("GET /ui/ask/result/{request_id}", "GET", f"/ui/ask/result/{request_id}"),
                ("GET /ui/ledger", "GET", "/ui/ledger"),
                ("GET /ui/history", "GET", "/ui/history"),
                ("GET /ui/ledger/{request_id}", "GET", f"/ui/ledger/{request_id}")):
            d.request(name, tenant, principal, method, url, client=client, supplied=echo)
        d.request("POST /ui/ledger/{request_id}/replay", tenant, principal, "POST",
                  f"/ui/ledger/{request_id}/replay", client=client, data={"csrf": csrf},
                  supplied=echo)
        stranger = next(p for p in d.u.worlds[tenant].users if p != principal)
        other, _ = d.session(tenant, stranger)
        for name, url in (("GET /ui/ask/result/{request_id}", f"/ui/ask/result/{request_id}"),
                          ("GET /ui/ledger/{request_id}", f"/ui/ledger/{request_id}")):
            theirs = d.request(name, tenant, stranger, "GET", url, client=other)
            d.checks.check(name, theirs.status_code == 404, f"{stranger} opened {request_id}")
        streamed = d.request("POST /ui/ask/stream", tenant, principal, "POST", "/ui/ask/stream",
                             client=client, headers={"X-CSRF-Token": csrf},
                             json={"query": question}, supplied=question)
        envelope = _envelope(streamed.text)
        d.screen("POST /ui/ask/stream", tenant, principal, streamed.text,
                 echoed(question, envelope))


def _envelope(stream: str) -> dict[str, Any]:
    for line in stream.splitlines():
        if line.startswith("data:"):
            event = json.loads(line[5:])
            if event.get("type") == "envelope":
                return dict(event)
    return {}


@exercises("GET /ui/documents/{doc_id}", "GET /ui/documents/{doc_id}/original",
           "GET /ui/documents")
def document_pages(d: Driver) -> None:
    for i in range(PAGES * 4):
        tenant = d.tenants()[i % 2]
        principal, doc = d.principal(tenant), d.doc(tenant)
        client, _ = d.session(tenant, principal)
        if i < PAGES:  # the list of what the principal may read: titles screened as above
            d.request("GET /ui/documents", tenant, principal, "GET", "/ui/documents",
                      client=client)
        d.request("GET /ui/documents/{doc_id}", tenant, principal, "GET",
                  f"/ui/documents/{doc.node_id}", client=client)
        d.request("GET /ui/documents/{doc_id}/original", tenant, principal, "GET",
                  f"/ui/documents/{doc.node_id}/original", client=client)


@exercises("GET /ui/upload", "POST /ui/upload", "GET /ui/upload/{run_id}")
def upload_pages(d: Driver) -> None:
    """An ingester uploads a file quoting a marker it wrote (quarantined: its label is
    undeclared); another ingester's view of the run never names it."""
    for i in range(4):
        tenant = d.tenants()[i % 2]
        submitter, other = d.rng.sample(d.u.worlds[tenant].users, 2)
        unreadable = [doc for doc in d.u.worlds[tenant].docs
                      if not d.oracles[tenant].may_read(other, doc)]
        hidden = d.rng.choice(unreadable).marker if unreadable else "none"
        name, body = f"console-upload-{i}-{d.rng.randrange(10**6)}.md", BROKEN.format(
            marker=hidden)
        client, csrf = d.session(tenant, submitter, "ingester")
        d.request("GET /ui/upload", tenant, submitter, "GET", "/ui/upload", client=client)
        posted = d.request("POST /ui/upload", tenant, submitter, "POST", "/ui/upload",
                           client=client, data={"csrf": csrf}, supplied=body + name,
                           files=[("files", (name, body.encode(), "text/markdown"))])
        location = posted.headers.get("location", "")
        d.checks.check("POST /ui/upload", location.startswith("/ui/upload/"), posted.text[:300])
        run_id = location.rsplit("/", 1)[-1]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and d.http.get(
                f"/v1/ingest/{run_id}", headers=d.headers(tenant, submitter, "ingester")
        ).json().get("status") == "RUNNING":
            time.sleep(0.05)
        d.request("GET /ui/upload/{run_id}", tenant, submitter, "GET", location,
                  client=client, supplied=body + name)
        theirs, _ = d.session(tenant, other, "ingester")
        seen = d.request("GET /ui/upload/{run_id}", tenant, other, "GET", location,
                         client=theirs)
        d.checks.check("GET /ui/upload/{run_id}", name not in seen.text,
                       f"{other} saw the name {name} that {submitter} uploaded")


@exercises("GET /ui/review", "POST /ui/review/sire/{sire_id}",
           "POST /ui/review/quarantine/release", "GET /ui/permissions",
           "GET /ui/permissions.json", "POST /ui/logout")
def review_pages(d: Driver) -> None:
    for i in range(PAGES):
        tenant = d.tenants()[i % 2]
        reviewer = d.principal(tenant)
        for role in ("reviewer", "ingester"):
            client, csrf = d.session(tenant, reviewer, role)
            d.request("GET /ui/review", tenant, reviewer, "GET", "/ui/review", client=client)
        client, csrf = d.session(tenant, reviewer, "reviewer")
        sire_id = d.u.store.list_sire(tenant)[i].sire_id
        d.request("POST /ui/review/sire/{sire_id}", tenant, reviewer, "POST",
                  f"/ui/review/sire/{sire_id}", client=client,
                  data={"csrf": csrf, "decision": "approve"})
        client, csrf = d.session(tenant, reviewer, "ingester")
        d.request("POST /ui/review/quarantine/release", tenant, reviewer, "POST",
                  "/ui/review/quarantine/release", client=client,
                  data={"csrf": csrf, "run_id": "run-none", "alias": "none.md"})
    for tenant in d.tenants():
        admin = d.principal(tenant)
        client, csrf = d.session(tenant, admin, "admin")
        for _ in range(4):
            principal, doc = d.principal(tenant), d.doc(tenant)
            query = f"principal={principal}&doc={doc.alias}"
            for name in ("GET /ui/permissions", "GET /ui/permissions.json"):
                d.request(name, tenant, admin, "GET", f"{name.split(' ')[1]}?{query}",
                          client=client, supplied=doc.alias)
        d.request("POST /ui/logout", tenant, admin, "POST", "/ui/logout", client=client,
                  data={"csrf": csrf})


# ---------------------------------------------------------------------- signals

def signal_sources(d: Driver) -> None:
    """What only some settings emit: a rerank and a vector channel (``query.rerank``,
    ``query.retrieve.vector``), and the service's scheduled canary run (its log line)."""
    settings = d.settings
    wider = settings.replace(retrieval=replace(settings.retrieval, rerank=True),
                             vectors=replace(settings.vectors, backend="hash"))
    for tenant in d.tenants():
        engine = Engine(d.u.store, wider, tenant=tenant, provider=d.u.providers[tenant])
        for _ in range(3):
            principal, question = d.principal(tenant), question_for(d, tenant)
            result = engine.ask(principal, question).to_dict()
            d.screen("POST /v1/query", tenant, principal, json.dumps(result),
                     echoed(question, result))
    scheduled = settings.replace(telemetry=replace(
        settings.telemetry, canary_interval_seconds=0.05, canary_tenant="oracle-canary"))
    # An exception logged with its traceback (as a server logs one a request raised): the
    # line says its type and reason code, never its message, which here quotes a document.
    hidden = d.u.worlds[d.tenants()[0]].docs[0]
    try:
        raise NotFound(f"no document {hidden.marker} at {hidden.alias}")
    except NotFound:
        logging.getLogger("affidavit.service").exception("request failed")
    # A run that completes logs its counts; one whose store fails logs the failure's kind.
    for opener, event in ((d._open_store, '"canary run"'), (_no_store, "canary run failed")):
        with TestClient(create_app(scheduled, opener)):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and event not in d.log_text():
                time.sleep(0.05)


def _no_store() -> Any:
    raise StoreError("no store for this run")


def signal_exerciser(d: Driver, spans: list[Any], log_text: str) -> None:
    """Screen every captured span, log field and metric line as the surface it belongs to."""
    tenant = d.tenants()[0]
    for registered in (s for s in SURFACES if s.kind is Kind.SIGNAL):
        sort, name = registered.name.split(" ", 1)
        if sort == "span":
            for span in spans:
                # The request's span is renamed "METHOD /route" once the route is known.
                server = "http.request.method" in (span.attributes or {})
                if server if name == "* request" else fnmatch.fnmatchcase(span.name, name):
                    d.checks.check(registered.name, True, "")
                    d.screen(registered.name, tenant, None, span_text(span))
        elif sort == "log":
            for line in log_text.splitlines():
                value = json.loads(line).get(name)
                if value is not None:
                    d.checks.check(registered.name, True, "")
                    d.screen(registered.name, tenant, None, str(value))
        else:
            family = prometheus_name(SPECS[name]).removesuffix("_total")
            for line in REGISTRY.prometheus_text().splitlines():
                if line.startswith(family) or f" {family} " in line:
                    d.checks.check(registered.name, True, "")
                    d.screen(registered.name, tenant, None, line)
