"""Attacks on how the service decides who the caller is: forged, confused, stale and
misdirected OIDC tokens, and an identity header sent by a peer that is not the trusted
proxy. Each is refused as unauthenticated; none acts as anyone."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from jwt.algorithms import RSAAlgorithm

from affidavit.config.settings import OidcSettings, ProxyIdentitySettings
from affidavit.errors import ConfigurationError
from affidavit.service.api.oidc import OidcVerifier
from tests.canary.conftest import CANARIES
from tests.service.conftest import OTHER_CANARY, OTHER_TENANT, Deployment, RunningService
from tests.service.test_service_oidc import (
    AUDIENCE,
    ISSUER,
    OTHER_KEY,
    SIGNING_KEY,
    token,
    unsigned,
)

FINANCE_CANARY = CANARIES["finance/q3-results.md"][0]
PROXY = "10.9.8.7"  # the one address allowed to send the identity header


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def hmac_signed(secret: bytes, **overrides: Any) -> str:
    """An HS256 token signed with ``secret`` (PyJWT refuses to make one with a PEM key)."""
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "oscar", "iat": now, "exp": now + 300,
              "tid": "canary", **overrides}
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode())
    body = _b64(json.dumps(claims).encode())
    signature = hmac.new(secret, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(signature)}"


def unsigned_as(alg: str) -> str:
    """A token with no signature under an ``alg`` spelled as a careless parser may allow."""
    now = int(time.time())
    header = _b64(json.dumps({"alg": alg, "typ": "JWT", "kid": "k1"}).encode())
    body = _b64(json.dumps({"iss": ISSUER, "aud": AUDIENCE, "sub": "oscar",
                            "exp": now + 300, "tid": "canary"}).encode())
    return f"{header}.{body}."


def public_pem() -> bytes:
    return SIGNING_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


@pytest.fixture(scope="module")
def attacked(deployment: Deployment, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[RunningService]:
    """OIDC with a tenant claim, and a proxy identity header believed from PROXY only."""
    jwks = tmp_path_factory.mktemp("jwks") / "jwks.json"
    public = json.loads(RSAAlgorithm.to_jwk(SIGNING_KEY.public_key()))
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "k1", "use": "sig",
                                          "alg": "RS256"}]}), encoding="utf-8")
    settings = deployment.with_settings(
        oidc=OidcSettings(issuer=ISSUER, audience=AUDIENCE, jwks_file=str(Path(jwks)),
                          groups_claim="groups", tenant_claim="tid", algorithms=("RS256",)),
        proxy=ProxyIdentitySettings(header="X-Remote-User", tenant_header="X-Remote-Tenant",
                                    trusted_proxies=(PROXY,), role="admin"))
    with deployment.serve(settings) as running:
        yield running


def search(service: RunningService, bearer: str | None, query: str = "hotel bookings",
           headers: dict[str, str] | None = None) -> Any:
    with service.client(bearer, headers=headers or {}) as client:
        return client.post("/v1/search", json={"query": query})


def assert_unauthenticated(response: Any) -> None:
    assert response.status_code == 401, response.text
    assert response.json()["type"] == "urn:affidavit:problem:unauthenticated"


@pytest.mark.parametrize("case", [
    "alg_none", "alg_none_capitalised", "hs256_with_the_public_key_pem",
    "hs256_with_the_public_jwk", "wrong_audience", "wrong_issuer", "expired",
    "not_yet_valid", "issued_in_the_future", "missing_tenant_claim", "empty_tenant_claim",
    "forged_groups_other_key"])
def test_a_token_an_attacker_made_is_refused(attacked: RunningService, case: str) -> None:
    now = int(time.time())
    jwk = json.dumps(json.loads(RSAAlgorithm.to_jwk(SIGNING_KEY.public_key()))).encode()
    made = {
        "alg_none": lambda: unsigned(tid="canary"),
        "alg_none_capitalised": lambda: unsigned_as("None"),
        "hs256_with_the_public_key_pem": lambda: hmac_signed(public_pem()),
        "hs256_with_the_public_jwk": lambda: hmac_signed(jwk),
        "wrong_audience": lambda: token(tid="canary", aud="someone-else"),
        "wrong_issuer": lambda: token(tid="canary", iss="https://evil.example.test/"),
        "expired": lambda: token(tid="canary", exp=now - 3600, iat=now - 7200),
        "not_yet_valid": lambda: token(tid="canary", nbf=now + 3600),
        "issued_in_the_future": lambda: token(tid="canary", iat=now + 3600,
                                              exp=now + 7200),
        "missing_tenant_claim": lambda: token(),
        "empty_tenant_claim": lambda: token(tid="  "),
        "forged_groups_other_key": lambda: token(OTHER_KEY, tid="canary",
                                                 groups=["finance", "board"]),
    }
    response = search(attacked, made[case](), "quarterly review moneywhistle")
    assert_unauthenticated(response)
    assert FINANCE_CANARY not in response.text


def test_an_hmac_algorithm_cannot_be_configured_for_oidc() -> None:
    with pytest.raises(ConfigurationError):
        OidcVerifier(OidcSettings(issuer=ISSUER, audience=AUDIENCE, jwks_file="x.json",
                                  algorithms=("RS256", "HS256")))


def test_a_token_cannot_name_a_tenant_it_is_not_allowed(
        attacked: RunningService) -> None:
    """The tenant claim is believed for the tenants the service is configured to admit
    tokens to (by default the one it serves), never for any tenant the store holds."""
    response = search(attacked, token(tid=OTHER_TENANT), "quarterly review travel")
    assert_unauthenticated(response)
    assert OTHER_CANARY not in response.text


def test_token_groups_do_not_make_the_bearer_an_administrator(
        attacked: RunningService) -> None:
    bearer = token(tid="canary", groups=["admin", "admins", "affidavit-admin"],
                   role="admin")
    with attacked.client(bearer) as client:
        refused = client.get("/v1/admin/runs")
    assert refused.status_code == 403, refused.text


def test_the_proxy_header_from_a_peer_that_is_not_the_proxy_is_ignored(
        attacked: RunningService) -> None:
    asserted = {"X-Remote-User": "farid", "X-Remote-Tenant": "canary"}
    # The test client's peer address is 127.0.0.1, not the proxy's.
    assert_unauthenticated(search(attacked, None, headers=asserted))
    # Nor does a forwarding header naming the proxy make a peer the proxy.
    for forwarded in ({"X-Forwarded-For": PROXY}, {"X-Forwarded-For": f"203.0.113.9, {PROXY}"},
                      {"Forwarded": f"for={PROXY}"}, {"X-Real-IP": PROXY}):
        response = search(attacked, None, "quarterly review moneywhistle",
                          headers={**asserted, **forwarded})
        assert_unauthenticated(response)
        assert FINANCE_CANARY not in response.text
    # A forwarding header sent twice is read as one list by the server: every copy counts.
    with attacked.client() as client:
        response = client.post("/v1/search", json={"query": "quarterly review moneywhistle"},
                               headers=[*asserted.items(), ("X-Forwarded-For", "203.0.113.9"),
                                        ("X-Forwarded-For", PROXY)])
    assert_unauthenticated(response)
    assert FINANCE_CANARY not in response.text


def test_the_proxy_header_from_the_proxy_is_believed(deployment: Deployment) -> None:
    """The control: from the proxy's own address the header names the caller."""
    settings = deployment.with_settings(proxy=ProxyIdentitySettings(
        header="X-Remote-User", trusted_proxies=("127.0.0.1",), role="reader"))
    with deployment.serve(settings) as running:
        believed = search(running, None, "quarterly review moneywhistle",
                          headers={"X-Remote-User": "farid"})
    assert believed.status_code == 200 and FINANCE_CANARY in believed.text
