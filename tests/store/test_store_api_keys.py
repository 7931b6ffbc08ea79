"""The API-key table on every backend: tenant-scoped, revocable, hashes only."""

from __future__ import annotations

from affidavit.store.protocol import ApiKeyRecord, Store


def record(key_id: str, principal: str = "user:alice") -> ApiKeyRecord:
    return ApiKeyRecord(key_id=key_id, principal=principal, role="reader", salt="s" * 32,
                        secret_hash="h" * 64, created_at=f"2026-01-01T00:00:0{key_id[-1]}")


def test_api_keys_resolve_only_inside_their_tenant(store: Store) -> None:
    store.add_api_key("acme", record("k1"))
    assert store.get_api_key("acme", "k1") == record("k1")
    assert store.get_api_key("globex", "k1") is None
    assert store.list_api_keys("globex") == []


def test_api_keys_list_in_creation_order_and_revoke_once(store: Store) -> None:
    store.add_api_key("acme", record("k2", "user:bob"))
    store.add_api_key("acme", record("k1"))
    assert [r.key_id for r in store.list_api_keys("acme")] == ["k1", "k2"]
    assert store.revoke_api_key("acme", "k1", at="2026-02-01T00:00:00+00:00")
    assert not store.revoke_api_key("acme", "k1", at="2026-02-02T00:00:00+00:00")
    assert not store.revoke_api_key("globex", "k2", at="2026-02-01T00:00:00+00:00")
    revoked = store.get_api_key("acme", "k1")
    assert revoked is not None and revoked.revoked_at == "2026-02-01T00:00:00+00:00"
