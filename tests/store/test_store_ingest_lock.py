"""The store contract for ingestion locks: one run per tenant at a time, on every backend."""

from __future__ import annotations

from affidavit.store import Store


def test_one_ingestion_lock_per_tenant_until_released(store: Store) -> None:
    first = store.try_ingest_lock("tenant-a")
    assert first is not None
    assert store.try_ingest_lock("tenant-a") is None  # held, even within one process
    other = store.try_ingest_lock("tenant-b")
    assert other is not None  # another tenant's runs are not held up
    first.release()
    again = store.try_ingest_lock("tenant-a")
    assert again is not None
    again.release()
    other.release()
    first.release()  # releasing twice is harmless


def test_any_tenant_id_gets_a_lock_of_its_own(store: Store) -> None:
    odd = store.try_ingest_lock("../../etc/x y")
    assert odd is not None
    assert store.try_ingest_lock("../../etc/x y") is None
    plain = store.try_ingest_lock("etc")
    assert plain is not None
    odd.release()
    plain.release()
