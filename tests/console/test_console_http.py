"""The console over plain HTTP (no browser): the session cookie, CSRF on every form, a
revoked key, tenant isolation, escaping, and no canary on any page a principal without the
grant receives."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from affidavit.config.settings import OidcSettings
from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from tests.canary.conftest import CANARIES, canaries_except
from tests.console.conftest import MIX_CANARY, PDF_CANARY
from tests.service.conftest import Deployment, RunningService

FINDS = {"handbook.md": "travel bookings quarter", "hr/case-017.md": "grumbleflax",
         "finance/q3-results.md": "moneywhistle", "board/minutes.md": "lanternfish",
         "legal/contracts/supplier.md": "quillocrat", "mixed.md": "printers",
         "printers.pdf": "printers"}
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture(scope="module")
def console(console_deployment: Deployment) -> Iterator[RunningService]:
    with console_deployment.serve() as running:
        yield running


_CLIENTS: list[httpx.Client] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def signed_in(console: RunningService, key: str) -> tuple[httpx.Client, str]:
    """A client holding a console session (closed after the test), and its CSRF token."""
    client = httpx.Client(base_url=console.base_url, follow_redirects=True, timeout=60)
    _CLIENTS.append(client)
    login = client.get("/ui/login")
    token = CSRF.search(login.text)
    assert token is not None
    page = client.post("/ui/login", data={"csrf": token.group(1), "api_key": key})
    assert page.status_code == 200 and page.url.path == "/ui/ask", page.text
    csrf = CSRF.search(page.text)
    assert csrf is not None
    return client, csrf.group(1)


def doc_ids(console: RunningService, deployment: Deployment) -> dict[str, str]:
    """Every document's id, each found with search by someone who may read it."""
    ids: dict[str, str] = {}
    for who in ("grace", "helen", "dana", "farid"):
        with console.client(deployment.keys[who]) as client:
            for alias, query in FINDS.items():
                hits = client.post("/v1/search", json={"query": query, "limit": 100}
                                   ).json()["hits"]
                for hit in hits:
                    if hit["locator"].startswith(alias):
                        ids[alias] = hit["doc_id"]
    assert sorted(ids) == sorted(FINDS)
    return ids


def test_the_session_cookie_is_httponly_strict_and_never_the_key(
        console: RunningService, console_deployment: Deployment) -> None:
    key = console_deployment.keys["sam"]
    with httpx.Client(base_url=console.base_url) as client:
        csrf = CSRF.search(client.get("/ui/login").text)
        assert csrf is not None
        response = client.post("/ui/login", data={"csrf": csrf.group(1), "api_key": key})
    assert response.status_code == 303
    cookies = response.headers.get_list("set-cookie")
    session = [c for c in cookies if c.startswith("affidavit_console=")]
    assert len(session) == 1
    assert "HttpOnly" in session[0] and "SameSite=strict" in session[0].replace(
        "SameSite=Strict", "SameSite=strict")
    secret = key.rsplit(".", 1)[-1]
    assert all(key not in c and secret not in c for c in cookies)


def test_a_form_without_the_csrf_token_is_refused_and_asks_nothing(
        console: RunningService, console_deployment: Deployment) -> None:
    client, csrf = signed_in(console, console_deployment.keys["sam"])
    store = SQLiteStore(console_deployment.db, create=False)
    try:
        before = sum(1 for _ in store.iter_ledger(console_deployment.settings.tenant))
        refused = [client.post("/ui/ask", data={"question": "printers?"}),
                   client.post("/ui/ask", data={"question": "printers?", "csrf": csrf[:-2]}),
                   client.post("/ui/ask/stream", json={"query": "printers?"})]
        after = sum(1 for _ in store.iter_ledger(console_deployment.settings.tenant))
    finally:
        store.close()
    assert [r.status_code for r in refused] == [403, 403, 403]
    assert after == before
    with httpx.Client(base_url=console.base_url) as fresh:
        login = fresh.post("/ui/login", data={"api_key": console_deployment.keys["sam"]})
    assert login.status_code == 403 and "affidavit_console=" not in str(login.headers)
    streamed = client.post("/ui/ask/stream", json={"query": "printers?"},
                           headers={"X-CSRF-Token": csrf})
    assert streamed.status_code == 200 and '"type": "envelope"' in streamed.text


def test_a_revoked_key_ends_its_console_session(
        console: RunningService, console_deployment: Deployment) -> None:
    store = SQLiteStore(console_deployment.db, create=False)
    tenant = console_deployment.settings.tenant
    try:
        issued = issue_key(store, tenant, "user:sam")
        client, _ = signed_in(console, issued.key)
        assert client.get("/ui/ledger").url.path == "/ui/ledger"
        assert store.revoke_api_key(tenant, issued.record.key_id, at="2026-01-02T00:00:00+00:00")
    finally:
        store.close()
    assert client.get("/ui/ledger").url.path == "/ui/login"


QUESTIONS = ("What did the quarterly review find?", "What is the acquisition budget?",
             "Which items are open this quarter?", "When are the printers replaced?")


@pytest.mark.parametrize("who", ["sam", "nobody", "dana"])
def test_no_console_page_carries_a_canary_the_principal_may_not_read(
        who: str, console: RunningService, console_deployment: Deployment) -> None:
    readable = {"dana": ("legal/contracts/supplier.md",)}.get(who, ())
    forbidden = [*canaries_except(*readable), MIX_CANARY, PDF_CANARY]
    client, csrf = signed_in(console, console_deployment.keys[who])
    seen = []
    for question in QUESTIONS:
        asked = client.post("/ui/ask", data={"csrf": csrf, "question": question})
        request_id = str(asked.url.params.get("request_id"))
        seen += [asked.text, client.get(f"/ui/ask/result/{request_id}").text,
                 client.get(f"/ui/ledger/{request_id}").text,
                 client.post(f"/ui/ledger/{request_id}/replay", data={"csrf": csrf}).text]
    for doc_id in doc_ids(console, console_deployment).values():
        seen += [client.get(f"/ui/documents/{doc_id}").text,
                 client.get(f"/ui/documents/{doc_id}/original").text]
    seen += [client.get(path).text for path in
             ("/ui/ledger", "/ui/review", "/ui/permissions?principal=user:grace&doc=mixed.md",
              "/ui/history", "/ui/documents", "/ui/upload")]
    text = "\n".join(seen).lower()
    assert [c for c in forbidden if c.lower() in text] == []
    for alias in readable:  # the sweep sees what the principal may read
        assert all(c.lower() in text for c in CANARIES[alias])


def test_markup_in_a_question_is_shown_as_text(
        console: RunningService, console_deployment: Deployment) -> None:
    client, csrf = signed_in(console, console_deployment.keys["sam"])
    page = client.post("/ui/ask", data={"csrf": csrf, "question":
                                        "<script>alert(1)</script> printers replaced?"})
    request_id = page.url.params["request_id"]
    record = client.get(f"/ui/ledger/{request_id}")
    assert "<script>alert(1)</script>" not in record.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in record.text
    assert "script-src 'self'" in record.headers["content-security-policy"]


def test_another_tenant_reads_this_tenants_ids_like_unknown_ones(
        console: RunningService, console_deployment: Deployment) -> None:
    sam, csrf = signed_in(console, console_deployment.keys["sam"])
    asked = sam.post("/ui/ask", data={"csrf": csrf, "question": "printers replaced?"})
    request_id = asked.url.params["request_id"]
    olga, _ = signed_in(console, console_deployment.keys["olga"])
    mixed = doc_ids(console, console_deployment)["mixed.md"]
    assert olga.get(f"/ui/ledger/{request_id}").status_code == 404
    assert olga.get(f"/ui/documents/{mixed}").status_code == 404
    assert olga.get("/ui/documents/no-such-document").status_code == 404
    assert sam.get("/ui/static/..%2F..%2Fapp.py").status_code == 404


def test_an_oidc_token_signs_in_as_its_subject_with_its_groups(
        console_deployment: Deployment, tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "k1", "use": "sig",
                                          "alg": "RS256"}]}), encoding="utf-8")
    issuer, audience = "https://login.example.test/", "affidavit-console"
    settings = console_deployment.with_settings(oidc=OidcSettings(
        issuer=issuer, audience=audience, jwks_file=str(jwks), groups_claim="groups",
        algorithms=("RS256",)))
    now = int(time.time())
    token = jwt.encode({"iss": issuer, "aud": audience, "sub": "oscar", "iat": now,
                        "exp": now + 300, "groups": ["finance"]}, key, algorithm="RS256",
                       headers={"kid": "k1"})
    with console_deployment.serve(settings) as running, \
            httpx.Client(base_url=running.base_url, follow_redirects=True) as client:
        csrf = CSRF.search(client.get("/ui/login").text)
        assert csrf is not None
        page = client.post("/ui/login", data={"csrf": csrf.group(1), "token": token})
        forged = client.post("/ui/login", data={"csrf": csrf.group(1),
                                                "token": token[:-4] + "AAAA"})
    assert page.url.path == "/ui/ask"
    assert '<dd id="me-principal">user:oscar</dd>' in page.text
    assert "FINANCIAL" in page.text  # the token's group grants it while signed in
    assert forged.status_code in (401, 403) and "me-principal" not in forged.text


def test_only_an_admin_may_use_the_explainer_and_only_a_reviewer_may_decide(
        console: RunningService, console_deployment: Deployment) -> None:
    sam, csrf = signed_in(console, console_deployment.keys["sam"])
    helen, _ = signed_in(console, console_deployment.keys["helen"])
    query = "?principal=user:sam&doc=mixed.md"
    assert sam.get(f"/ui/permissions{query}").status_code == 403
    assert sam.get(f"/ui/permissions.json{query}").status_code == 403
    assert helen.get(f"/ui/permissions.json{query}").status_code == 403
    store = SQLiteStore(console_deployment.db, create=False)
    try:
        proposed = store.list_sire(console_deployment.settings.tenant, state="PROPOSED")
    finally:
        store.close()
    refused = sam.post(f"/ui/review/sire/{proposed[0].sire_id}",
                       data={"csrf": csrf, "decision": "approve"})
    assert refused.status_code == 403
    grace, _ = signed_in(console, console_deployment.keys["grace"])
    twin = grace.get(f"/ui/permissions.json{query}").json()
    assert twin["decision"] == "PARTIAL" and twin["principal"] == "user:sam"
