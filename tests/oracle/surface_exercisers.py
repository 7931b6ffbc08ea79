"""One exerciser per registered route and command of :mod:`affidavit.service.surfaces` (console
pages and signals: :mod:`tests.oracle.surface_pages`), each calling its surface as random
principals of the oracle world and screening every reply (:meth:`Driver.screen`)."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.oracle.surface_drivers import Driver, exercises, markers

SEARCHES = 2000
CLI_SEARCHES = 60
ASKS = 40
STREAMS = 12
DOCUMENTS = 150
LIMIT = 50
BROKEN = "---\nclassification: NOPE\n---\n# unlabelled {marker}\n\nSome text about {marker}.\n"


def query_for(d: Driver, tenant: str) -> str:
    """Plain words, a marker of the tenant (document, title, heading) or of the other."""
    roll = d.rng.random()
    world = d.u.worlds[tenant]
    if roll < 0.4:
        return " ".join(d.rng.sample(d.vocab, d.rng.randint(1, 3)))
    if roll < 0.9:
        return str(d.rng.choice(sorted(world.marker_labels())))
    other = next(w for t, w in d.u.worlds.items() if t != tenant)
    return other.docs[d.rng.randrange(len(other.docs))].marker


def question_for(d: Driver, tenant: str) -> str:
    words = " ".join(d.rng.sample(d.vocab, 2))
    return f"What is said about {words} in {d.doc(tenant).marker}?"


def echoed(question: str, result: dict[str, Any]) -> str:
    """A refusal may name the asker's own words back; an answer with evidence may not."""
    return question if not result.get("citations") else ""


# ---------------------------------------------------------------------- search and ask

@exercises("POST /v1/search")
def search_route(d: Driver) -> None:
    for i in range(SEARCHES):
        tenant = d.tenants()[i % 2]
        principal, query = d.principal(tenant), query_for(d, tenant)
        d.request("POST /v1/search", tenant, principal, "POST", "/v1/search",
                  json={"query": query, "limit": LIMIT}, supplied=query)


@exercises("affidavit search")
def search_command(d: Driver) -> None:
    for i in range(CLI_SEARCHES):
        tenant = d.tenants()[i % 2]
        principal, query = d.principal(tenant), query_for(d, tenant)
        code, out = d.cli(tenant, "search", query, "--as", principal, "--json",
                          "--limit", str(LIMIT))
        d.checks.check("affidavit search", code == 0, out[-300:])
        d.screen("affidavit search", tenant, principal, out, query)


def _answered(d: Driver, name: str, tenant: str, principal: str, question: str,
              result: dict[str, Any]) -> None:
    text = json.dumps(result, ensure_ascii=False)
    d.screen(name, tenant, principal, text, echoed(question, result))
    for citation in result.get("citations", []):
        doc = d.by_node[tenant].get(citation.get("doc_id", ""))
        if doc is not None:
            d.checks.check(name, d.oracles[tenant].may_access(principal, doc),
                           f"{principal} cited {citation.get('chunk_id')}")
    if result.get("ledger_record_id"):
        d.records.append((tenant, principal, result["ledger_record_id"], question))


@exercises("POST /v1/query")
def query_route(d: Driver) -> None:
    for i in range(ASKS):
        tenant = d.tenants()[i % 2]
        principal, question = d.principal(tenant), question_for(d, tenant)
        response = d.request("POST /v1/query", tenant, principal, "POST", "/v1/query",
                             json={"query": question}, supplied=question)
        if response.status_code == 200:
            _answered(d, "POST /v1/query", tenant, principal, question, response.json())


@exercises("affidavit ask")
def ask_command(d: Driver) -> None:
    for i in range(ASKS // 4):
        tenant = d.tenants()[i % 2]
        principal, question = d.principal(tenant), question_for(d, tenant)
        code, out = d.cli(tenant, "ask", question, "--as", principal, "--json")
        d.checks.check("affidavit ask", code in (0, 6), out[-300:])  # 6: refused, recorded
        start = out.find("{")
        result = json.JSONDecoder().raw_decode(out[start:])[0] if start >= 0 else {}
        d.screen("affidavit ask", tenant, principal, out, echoed(question, result))
        if result.get("ledger_record_id"):
            d.records.append((tenant, principal, result["ledger_record_id"], question))


@exercises("POST /v1/query/stream")
def stream_route(d: Driver) -> None:
    for i in range(STREAMS):
        tenant = d.tenants()[i % 2]
        principal, question = d.principal(tenant), question_for(d, tenant)
        response = d.request("POST /v1/query/stream", tenant, principal, "POST",
                             "/v1/query/stream", json={"query": question}, supplied=question)
        events = [json.loads(line[5:]) for line in response.text.splitlines()
                  if line.startswith("data:")]
        envelope = next((e for e in events if e.get("type") == "envelope"), {})
        # Draft tokens may quote the question back as the final answer may.
        d.screen("POST /v1/query/stream", tenant, principal, response.text,
                 echoed(question, envelope))


# ---------------------------------------------------------------------- ledger

@exercises("GET /v1/ledger/{request_id}", "GET /v1/ledger/{request_id}/claims",
           "POST /v1/ledger/{request_id}/verify", "affidavit ledger show")
def ledger_routes(d: Driver) -> None:
    assert d.records, "the ledger surfaces are exercised after answers were recorded"
    for tenant, principal, record_id, question in d.records:
        for method, suffix in (("GET", ""), ("GET", "/claims"), ("POST", "/verify")):
            name = f"{method} /v1/ledger/{{request_id}}{suffix}"
            url = f"/v1/ledger/{record_id}{suffix}"
            mine = d.request(name, tenant, principal, method, url, supplied=question)
            d.checks.check(name, mine.status_code == 200,
                           f"{principal} lost {record_id}: {mine.status_code} {mine.text[:200]}")
            stranger = next(p for p in d.u.worlds[tenant].users if p != principal)
            theirs = d.request(name, tenant, stranger, method, url)
            never = d.request(name, tenant, stranger, method, f"/v1/ledger/led-{'0' * 20}"
                              + suffix)
            d.checks.check(name, theirs.status_code == never.status_code == 404
                           and theirs.json().get("detail", "").replace(record_id, "")
                           == never.json().get("detail", "").replace("led-" + "0" * 20, ""),
                           f"{stranger} told {principal}'s {record_id} from a missing one")
    for tenant, principal, record_id, question in d.records[::3]:
        code, out = d.cli(tenant, "ledger", "show", record_id, "--as", principal, "--json")
        d.checks.check("affidavit ledger show", code == 0, out[-300:])
        d.screen("affidavit ledger show", tenant, principal, out, question)


# ---------------------------------------------------------------------- documents

@exercises("GET /v1/documents/{doc_id}", "GET /v1/documents/{doc_id}/original")
def document_routes(d: Driver) -> None:
    for i in range(DOCUMENTS):
        tenant = d.tenants()[i % 2]
        principal, doc = d.principal(tenant), d.doc(tenant)
        d.request("GET /v1/documents/{doc_id}", tenant, principal, "GET",
                  f"/v1/documents/{doc.node_id}")
        original = d.request("GET /v1/documents/{doc_id}/original", tenant, principal,
                             "GET", f"/v1/documents/{doc.node_id}/original")
        if original.status_code == 200:  # the whole file: every marker in it must be seen
            shown = markers(original.content.decode("utf-8", "replace"))
            d.checks.check("GET /v1/documents/{doc_id}/original",
                           shown == set(doc.labelled_markers())
                           and all(d.oracles[tenant].may_see(principal, m) for m in shown),
                           f"{principal} downloaded {doc.alias}")


# ---------------------------------------------------------------------- ingestion

def _upload(d: Driver, tenant: str, submitter: str, hidden: str, name: str) -> str:
    """A document with an undeclared label (quarantined, never stored) quoting ``hidden``,
    a marker its submitter wrote itself; the run's id."""
    body = BROKEN.format(marker=hidden)
    response = d.request("POST /v1/ingest", tenant, submitter, "POST", "/v1/ingest",
                         role="ingester", supplied=body,
                         files=[("files", (name, body.encode(), "text/markdown"))])
    assert response.status_code == 202, response.text
    run_id = str(response.json()["run_id"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = d.http.get(f"/v1/ingest/{run_id}", headers=d.headers(tenant, submitter,
                                                                         "ingester"))
        if status.json().get("status") != "RUNNING":
            return run_id
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish")


@exercises("POST /v1/ingest", "GET /v1/ingest/{run_id}", "GET /v1/ingest/{run_id}/boundary",
           "GET /v1/admin/runs", "GET /v1/admin/runs/{run_id}", "GET /v1/admin/quarantine",
           "POST /v1/admin/quarantine/release")
def ingest_routes(d: Driver) -> None:
    for i in range(6):
        tenant = d.tenants()[i % 2]
        submitter, other = d.rng.sample(d.u.worlds[tenant].users, 2)
        unreadable = [doc for doc in d.u.worlds[tenant].docs
                      if not d.oracles[tenant].may_read(other, doc)]
        hidden = d.rng.choice(unreadable).marker if unreadable else "none"
        name = f"upload-{i}-{d.rng.randrange(10**6)}.md"
        run_id = _upload(d, tenant, submitter, hidden, name)
        for who, supplied in ((submitter, BROKEN.format(marker=hidden) + name), (other, "")):
            for route, url in (("GET /v1/ingest/{run_id}", f"/v1/ingest/{run_id}"),
                               ("GET /v1/ingest/{run_id}/boundary",
                                f"/v1/ingest/{run_id}/boundary"),
                               ("GET /v1/admin/runs/{run_id}", f"/v1/admin/runs/{run_id}"),
                               ("GET /v1/admin/quarantine", "/v1/admin/quarantine?all=true"),
                               ("GET /v1/admin/runs", "/v1/admin/runs")):
                reply = d.request(route, tenant, who, "GET", url, role="ingester",
                                  supplied=supplied)
                if who == other:
                    d.checks.check(route, name not in reply.text,
                                   f"{other} saw the name {name} that {submitter} uploaded")
        refused = d.request("POST /v1/admin/quarantine/release", tenant, other, "POST",
                            "/v1/admin/quarantine/release", role="ingester",
                            json={"run_id": run_id, "alias": f"upload/{name}"}, supplied=name)
        d.checks.check("POST /v1/admin/quarantine/release", refused.status_code == 404,
                       f"{other} released {submitter}'s entry")
        released = d.request("POST /v1/admin/quarantine/release", tenant, submitter, "POST",
                             "/v1/admin/quarantine/release", role="ingester",
                             json={"run_id": run_id, "alias": f"upload/{name}"},
                             supplied=name)
        d.checks.check("POST /v1/admin/quarantine/release", released.status_code == 200,
                       f"{submitter} could not release its own entry: {released.text}")


# ---------------------------------------------------------------------- administration

@exercises("GET /v1/admin/authz", "POST /v1/admin/authz/tuples",
           "POST /v1/admin/authz/tuples/remove", "POST /v1/admin/authz/grants",
           "POST /v1/admin/authz/grants/revoke")
def authz_routes(d: Driver) -> None:
    for tenant in d.tenants():
        world, admin = d.u.worlds[tenant], d.principal(tenant)
        d.request("GET /v1/admin/authz", tenant, admin, "GET", "/v1/admin/authz", role="admin")
        group, user = world.groups[0], "user:oracle-transient"
        text = f"{group}#member@{user}"
        for name in ("POST /v1/admin/authz/tuples", "POST /v1/admin/authz/tuples/remove"):
            reply = d.request(name, tenant, admin, "POST", name.split(" ")[1], role="admin",
                              json={"tuple": text}, supplied=text)
            d.checks.check(name, reply.status_code == 200, reply.text)
        for name in ("POST /v1/admin/authz/grants", "POST /v1/admin/authz/grants/revoke"):
            reply = d.request(name, tenant, admin, "POST", name.split(" ")[1], role="admin",
                              json={"subject": user, "labels": ["SECRET"]}, supplied=user)
            d.checks.check(name, reply.status_code == 200, reply.text)


@exercises("POST /v1/admin/keys", "GET /v1/admin/keys", "POST /v1/admin/keys/{key_id}/revoke")
def key_routes(d: Driver) -> None:
    for tenant in d.tenants():
        admin = d.principal(tenant)
        made = d.request("POST /v1/admin/keys", tenant, admin, "POST", "/v1/admin/keys",
                         role="admin", json={"principal": "user:oracle-key"})
        d.request("GET /v1/admin/keys", tenant, admin, "GET", "/v1/admin/keys", role="admin")
        key_id = made.json()["key_id"]
        d.request("POST /v1/admin/keys/{key_id}/revoke", tenant, admin, "POST",
                  f"/v1/admin/keys/{key_id}/revoke", role="admin")


@exercises("GET /v1/review/sire", "POST /v1/review/sire/{sire_id}/approve")
def review_routes(d: Driver) -> None:
    for i in range(16):
        tenant = d.tenants()[i % 2]
        reviewer = d.principal(tenant)
        listed = d.request("GET /v1/review/sire", tenant, reviewer, "GET", "/v1/review/sire",
                           role="reviewer")
        visible = {r["sire_id"] for r in listed.json()["sire"]}
        every = d.u.store.list_sire(tenant)
        hidden = [r.sire_id for r in every if r.sire_id not in visible]
        for sire_id in [*sorted(visible)[:1], *hidden[:1]]:
            reply = d.request("POST /v1/review/sire/{sire_id}/approve", tenant, reviewer,
                              "POST", f"/v1/review/sire/{sire_id}/approve", role="reviewer")
            if sire_id not in visible:
                d.checks.check("POST /v1/review/sire/{sire_id}/approve",
                               reply.status_code == 404, f"{reviewer} approved {sire_id}")


@exercises("POST /v1/references", "GET /v1/references", "GET /v1/references/search",
           "affidavit refs add", "affidavit refs list", "affidavit refs search")
def reference_surfaces(d: Driver) -> None:
    made: list[tuple[str, Any, Any]] = []
    for i in range(8):
        tenant = d.tenants()[i % 2]
        author = d.principal(tenant)
        readable = d.readable_docs(tenant, author)
        if len(readable) < 2:
            continue
        source, target = d.rng.sample(readable, 2)
        reason = f"oracle link {i}"
        if i % 2:
            code, out = d.cli(tenant, "refs", "add", source.alias, target.alias, "--as",
                              author, "--kind", "CrossReference", "--reason", reason, "--json")
            d.checks.check("affidavit refs add", code == 0, out[-300:])
            d.screen("affidavit refs add", tenant, author, out, reason + source.alias
                     + target.alias)
        else:
            d.request("POST /v1/references", tenant, author, "POST", "/v1/references",
                      json={"source": source.node_id, "target": target.node_id,
                            "kind": "CrossReference", "reason": reason}, supplied=reason)
        made.append((tenant, source, target))
    for tenant, source, _ in made * 3:
        reader = d.principal(tenant)
        listed = d.request("GET /v1/references", tenant, reader, "GET",
                           f"/v1/references?document={source.node_id}")
        found = d.request("GET /v1/references/search", tenant, reader, "GET",
                          "/v1/references/search?text=oracle")
        for reply, name in ((listed, "GET /v1/references"),
                            (found, "GET /v1/references/search")):
            _both_ends(d, name, tenant, reader, reply.json() if reply.status_code == 200
                       else [])
        for action, arg in (("list", source.alias), ("search", "oracle")):
            code, out = d.cli(tenant, "refs", action, arg, "--as", reader, "--json")
            name = f"affidavit refs {action}"
            # exit 1: a document the reader may not read is one that does not exist
            d.checks.check(name, code in (0, 1), out[-300:])
            d.screen(name, tenant, reader, out, arg)


def _both_ends(d: Driver, name: str, tenant: str, reader: str, refs: list[Any]) -> None:
    for ref in refs if isinstance(refs, list) else []:
        ends = [d.by_node[tenant].get(ref.get(k, "")) for k in ("source_id", "target_id")]
        d.checks.check(name, all(e is not None and d.oracles[tenant].may_read(reader, e)
                                 for e in ends), f"{reader} saw reference {ref.get('ref_id')}")


@exercises("GET /metrics", "GET /v1/openapi.json", "GET /healthz", "GET /readyz",
           "GET /v1/admin/readiness")
def process_routes(d: Driver) -> None:
    for tenant in d.tenants():
        d.request("GET /v1/admin/readiness", tenant, d.principal(tenant), "GET",
                  "/v1/admin/readiness", role="admin")
    deployment = d.settings.tenant
    d.request("GET /metrics", deployment, "user:operator", "GET", "/metrics", role="admin")
    for tenant in d.tenants():
        d.request("GET /metrics", tenant, d.principal(tenant), "GET", "/metrics", role="admin")
    for name in ("GET /v1/openapi.json", "GET /healthz", "GET /readyz"):
        d.request(name, d.tenants()[0], None, "GET", name.split(" ")[1])
