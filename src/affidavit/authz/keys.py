"""Service API keys: issued once, stored as a salted hash, resolved inside their tenant.

A key reads ``afd.<tenant>.<key_id>.<secret>``, the tenant base64url-encoded. The tenant in
the key only says where to look: the row found there must carry the key id and the hash of
the secret, so editing the tenant part of a key finds nothing. Secrets are 256 random bits,
so one HMAC-SHA256 keyed with a per-key salt is enough (no password stretching is needed for
a secret nobody chose). A key counts only while the policy trail holds its creation and not
its revocation: a row written straight into ``api_keys`` authenticates nobody
(:mod:`affidavit.audit.replay`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from affidavit.audit.events import LIBRARY_ACTOR
from affidavit.audit.replay import ReplayCache, key_in_force
from affidavit.authz import parse_principal
from affidavit.config.service import ROLES as ROLES
from affidavit.errors import AuthenticationError, InputRejected
from affidavit.store.protocol import ApiKeyRecord, Store

KEY_PREFIX = "afd"


@dataclass(frozen=True)
class IssuedKey:
    """A new key: ``key`` is shown once and never stored."""

    key: str
    tenant: str
    record: ApiKeyRecord

    def to_dict(self) -> dict[str, object]:
        return {"key": self.key, "tenant": self.tenant, **describe(self.record)}


def describe(record: ApiKeyRecord) -> dict[str, object]:
    """What ``keys list`` shows of a stored key (never its hash or salt)."""
    return {"key_id": record.key_id, "principal": record.principal, "role": record.role,
            "created_at": record.created_at, "expires_at": record.expires_at,
            "revoked_at": record.revoked_at}


def secret_hash(salt: str, secret: str) -> str:
    return hmac.new(salt.encode(), secret.encode(), hashlib.sha256).hexdigest()


def parse_expiry(text: str | None) -> str | None:
    """``YYYY-MM-DD`` (the key stops working at the start of that day, UTC) or an ISO time."""
    if text is None or not text.strip():
        return None
    raw = text.strip()
    try:
        if len(raw) == 10:
            moment = datetime.combine(date.fromisoformat(raw), time(0), tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(raw)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
    except ValueError as exc:
        raise InputRejected("MALFORMED_EXPIRY", f"{text!r} is not a date (YYYY-MM-DD)") from exc
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def issue_key(store: Store, tenant: str, principal: str, *, role: str = "reader",
              expires: str | None = None, now: datetime | None = None,
              actor: str = LIBRARY_ACTOR) -> IssuedKey:
    """Create a key for ``principal`` in ``tenant``; only its salted hash is stored, with
    an ``api_key.create`` event by ``actor``."""
    if role not in ROLES:
        raise InputRejected("UNKNOWN_ROLE", f"role must be one of {', '.join(ROLES)}")
    who = parse_principal(principal)
    at = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    key_id, secret, salt = secrets.token_hex(8), secrets.token_urlsafe(32), secrets.token_hex(16)
    record = ApiKeyRecord(key_id=key_id, principal=who, role=role, salt=salt,
                          secret_hash=secret_hash(salt, secret), created_at=at,
                          expires_at=parse_expiry(expires))
    store.ensure_tenant(tenant)
    store.add_api_key(tenant, record, actor=actor)
    return IssuedKey(f"{KEY_PREFIX}.{_encode(tenant)}.{key_id}.{secret}", tenant, record)


def looks_like_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX + ".")


def resolve_key(store: Store, token: str, *, now: datetime | None = None,
                trail: ReplayCache | None = None) -> tuple[str, ApiKeyRecord]:
    """The tenant and stored record of a presented key; AuthenticationError otherwise.
    ``trail`` keeps the replayed policy trail between calls.

    Every failure says the same thing, so that a caller cannot probe which part was wrong.
    """
    refused = AuthenticationError("the API key is not valid")
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != KEY_PREFIX:
        raise refused
    _, encoded, key_id, secret = parts
    tenant = _decode(encoded)
    if tenant is None or not key_id or not secret:
        raise refused
    try:
        record = store.get_api_key(tenant, key_id)
    except InputRejected:  # a tenant name the store refuses to look up
        raise refused from None
    if record is None or not hmac.compare_digest(record.secret_hash,
                                                 secret_hash(record.salt, secret)):
        raise refused
    moment = now or datetime.now(UTC)
    if record.revoked_at is not None:
        raise refused
    if record.expires_at is not None and moment >= datetime.fromisoformat(record.expires_at):
        raise refused
    if not key_in_force(record, (trail or ReplayCache()).state(store, tenant)):
        raise refused
    return tenant, record


def _encode(tenant: str) -> str:
    return base64.urlsafe_b64encode(tenant.encode()).decode().rstrip("=")


def _decode(encoded: str) -> str | None:
    try:
        padded = encoded + "=" * (-len(encoded) % 4)
        tenant = base64.urlsafe_b64decode(padded.encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return tenant if tenant and tenant.isprintable() else None


def issue_api_key(store: Store, tenant: str, principal: str, *, role: str,
                  expires: str | None, actor: str) -> IssuedKey:
    """Create an API key; the event names the key id, principal, role and expiry, never the
    secret or its hash."""
    return issue_key(store, tenant, principal, role=role, expires=expires, actor=actor)


def revoke_api_key(store: Store, tenant: str, key_id: str, *, actor: str) -> bool:
    """Revoke an API key; False when there is no active key with that id."""
    at = datetime.now(UTC).isoformat(timespec="seconds")
    return store.revoke_api_key(tenant, key_id, at=at, actor=actor)
