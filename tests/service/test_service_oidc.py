"""OIDC bearer tokens: each way a token can be wrong is refused; a valid one maps its
subject, groups and tenant claims onto the request (and only that request)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from affidavit.config.settings import OidcSettings
from tests.canary.conftest import CANARIES
from tests.service.conftest import Deployment, RunningService

ISSUER = "https://login.example.test/"
AUDIENCE = "affidavit-api"
FINANCE_CANARY = CANARIES["finance/q3-results.md"][0]


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


SIGNING_KEY = new_key()
OTHER_KEY = new_key()


def token(key: rsa.RSAPrivateKey = SIGNING_KEY, *, kid: str = "k1", **overrides: Any) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "oscar", "iat": now, "exp": now + 300,
              **overrides}
    claims = {k: v for k, v in claims.items() if v is not None}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


def unsigned(**claims: Any) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "oscar", "exp": now + 300, **claims}
    return f"{part({'alg': 'none', 'typ': 'JWT', 'kid': 'k1'})}.{part(body)}."


@pytest.fixture(scope="module")
def oidc_service(deployment: Deployment, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[RunningService]:
    jwks = tmp_path_factory.mktemp("jwks") / "jwks.json"
    public = json.loads(RSAAlgorithm.to_jwk(SIGNING_KEY.public_key()))
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "k1", "use": "sig",
                                          "alg": "RS256"}]}), encoding="utf-8")
    settings = deployment.with_settings(oidc=OidcSettings(
        issuer=ISSUER, audience=AUDIENCE, jwks_file=str(Path(jwks)), groups_claim="groups",
        tenant_claim="tid", algorithms=("RS256",)))
    with deployment.serve(settings) as running:
        yield running


def search(service: RunningService, bearer: str, query: str = "hotel bookings") -> Any:
    with service.client(bearer) as client:
        return client.post("/v1/search", json={"query": query})


@pytest.mark.parametrize("case", ["expired", "wrong_audience", "wrong_issuer", "alg_none",
                                  "other_key", "no_subject", "no_tenant", "garbage"])
def test_a_token_that_does_not_verify_is_refused(oidc_service: RunningService,
                                                 case: str) -> None:
    cases: dict[str, Callable[[], str]] = {
        "expired": lambda: token(tid="canary", exp=int(time.time()) - 3600,
                                 iat=int(time.time()) - 7200),
        "wrong_audience": lambda: token(tid="canary", aud="someone-else"),
        "wrong_issuer": lambda: token(tid="canary", iss="https://evil.example.test/"),
        "alg_none": lambda: unsigned(tid="canary"),
        "other_key": lambda: token(OTHER_KEY, tid="canary"),
        "no_subject": lambda: token(tid="canary", sub=None),
        "no_tenant": lambda: token(),
        "garbage": lambda: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln",
    }
    bad = cases[case]()
    response = search(oidc_service, bad)
    assert response.status_code == 401, response.text
    assert response.json()["type"] == "urn:affidavit:problem:unauthenticated"


def test_a_valid_token_acts_as_user_sub_in_the_claimed_tenant(
        oidc_service: RunningService) -> None:
    bearer = token(tid="canary", groups=["staff"])
    with oidc_service.client(bearer) as client:
        asked = client.post("/v1/query", json={"query": "Who approves hotel bookings?"})
        assert asked.status_code == 200, asked.text
        record = client.get(f"/v1/ledger/{asked.json()['request_id']}").json()["record"]
    assert record["principal"] == "user:oscar"
    assert record["authz"]["tenant"] == "canary"


def test_token_groups_grant_membership_for_that_request_only(
        oidc_service: RunningService) -> None:
    query = "quarterly review moneywhistle"
    member = search(oidc_service, token(tid="canary", groups=["finance"]), query)
    outsider = search(oidc_service, token(tid="canary", groups=["sales"]), query)
    after = search(oidc_service, token(tid="canary"), query)
    assert member.status_code == outsider.status_code == after.status_code == 200
    assert FINANCE_CANARY in member.text
    assert FINANCE_CANARY not in outsider.text and FINANCE_CANARY not in after.text


def test_a_group_claim_cannot_inject_a_tuple(oidc_service: RunningService) -> None:
    query = "quarterly review moneywhistle"
    injected = search(oidc_service, token(tid="canary", groups=[
        "sales#member@user:oscar", "finance#member", "x@group:finance#member"]), query)
    assert injected.status_code == 200
    assert FINANCE_CANARY not in injected.text


def test_keys_are_fetched_from_a_jwks_url(deployment: Deployment) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    public = json.loads(RSAAlgorithm.to_jwk(SIGNING_KEY.public_key()))
    payload = json.dumps({"keys": [{**public, "kid": "k1"}]}).encode()
    fetched: list[str] = []

    class Jwks(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetched.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Jwks)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
        settings = deployment.with_settings(oidc=OidcSettings(
            issuer=ISSUER, audience=AUDIENCE, jwks_url=url, algorithms=("RS256",)))
        with deployment.serve(settings) as service:
            good = [search(service, token()) for _ in range(3)]
            forged = search(service, token(OTHER_KEY, kid="k2"))
    finally:
        server.shutdown()
        server.server_close()
    assert [r.status_code for r in good] == [200, 200, 200]
    assert forged.status_code == 401
    assert fetched == ["/jwks.json"]  # cached; an unknown kid does not refetch at once
