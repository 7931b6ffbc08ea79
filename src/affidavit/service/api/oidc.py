"""OIDC bearer tokens: JWTs checked against the configured issuer, audience and keys.

Verification is PyJWT's; this module decides what is acceptable around it: only the
configured asymmetric algorithms (never ``none``, never an HMAC algorithm that would let a
public key act as a shared secret), a key found in the issuer's JWKS by ``kid``, and the
claims ``exp``, ``iss``, ``aud`` and ``sub`` required.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt

from affidavit.config.settings import OidcSettings
from affidavit.errors import AuthenticationError, ConfigurationError

_ASYMMETRIC = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256",
                         "ES384", "ES512", "EdDSA"})
_MIN_REFETCH_SECONDS = 30.0


@dataclass(frozen=True)
class VerifiedToken:
    """What a verified token says about its bearer."""

    subject: str
    claims: Mapping[str, Any]


class OidcVerifier:
    """Verifies tokens of one issuer. ``fetch`` reads a JWKS URL (replaceable in tests)."""

    def __init__(self, settings: OidcSettings, *,
                 fetch: Callable[[str], Mapping[str, Any]] | None = None,
                 clock: Callable[[], float] = time.time):
        unsafe = [a for a in settings.algorithms if a not in _ASYMMETRIC]
        if unsafe:
            raise ConfigurationError(f"algorithm {unsafe[0]!r} is not accepted for OIDC "
                                     "tokens", key="service.oidc.algorithms")
        if not settings.audience:
            raise ConfigurationError("an OIDC issuer needs an audience",
                                     key="service.oidc.audience")
        if bool(settings.jwks_file) == bool(settings.jwks_url):
            raise ConfigurationError("set exactly one of jwks_file and jwks_url",
                                     key="service.oidc")
        self.settings = settings
        self._fetch = fetch or _fetch_jwks
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: tuple[float, jwt.PyJWKSet] | None = None

    def verify(self, token: str) -> VerifiedToken:
        """The token's subject and claims; AuthenticationError for anything unacceptable."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise AuthenticationError("the bearer token is not a JWT") from exc
        algorithm = header.get("alg")
        if algorithm not in self.settings.algorithms:
            raise AuthenticationError("the bearer token's algorithm is not accepted")
        key = self._signing_key(header.get("kid"))
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key.key, algorithms=[str(algorithm)], audience=self.settings.audience,
                issuer=self.settings.issuer, leeway=self.settings.leeway_seconds,
                options={"require": ["exp", "iss", "aud", "sub"]})
        except jwt.ExpiredSignatureError as exc:
            raise AuthenticationError("the bearer token has expired") from exc
        except jwt.PyJWTError as exc:
            raise AuthenticationError(f"the bearer token does not verify "
                                      f"({type(exc).__name__})") from exc
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject.strip():
            raise AuthenticationError("the bearer token names no subject")
        return VerifiedToken(subject.strip(), claims)

    def _signing_key(self, kid: object) -> jwt.PyJWK:
        for refresh in (False, True):
            keys = self._key_set(refresh=refresh)
            for candidate in keys.keys:
                if kid is None or candidate.key_id == kid:
                    return candidate
            if self.settings.jwks_file:
                break
        raise AuthenticationError("the bearer token was signed by an unknown key")

    def _key_set(self, *, refresh: bool) -> jwt.PyJWKSet:
        with self._lock:
            now = self._clock()
            cached = self._keys
            fresh = cached is not None and now - cached[0] < self.settings.jwks_cache_seconds
            if cached is not None and ((fresh and not refresh)
                                       or now - cached[0] < _MIN_REFETCH_SECONDS):
                # An unknown kid refetches the set, but not more often than this: a
                # stream of forged kids must not turn into a stream of fetches.
                return cached[1]
            data = (json.loads(Path(self.settings.jwks_file).read_text(encoding="utf-8"))
                    if self.settings.jwks_file else self._fetch(self.settings.jwks_url))
            try:
                keys = jwt.PyJWKSet.from_dict(dict(data))
            except jwt.PyJWTError as exc:
                raise AuthenticationError("the issuer's key set cannot be read") from exc
            self._keys = (now, keys)
            return keys


def _fetch_jwks(url: str) -> Mapping[str, Any]:
    try:
        response = httpx.get(url, timeout=10.0, follow_redirects=False)
        response.raise_for_status()
        data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise AuthenticationError("the issuer's key set is unavailable") from exc
    if not isinstance(data, dict):
        raise AuthenticationError("the issuer's key set is not a JSON object")
    return data
