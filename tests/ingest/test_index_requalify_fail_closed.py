"""A requalification that only compares writes nothing, by construction: the store it
derives through lets the reads of a derivation pass and refuses every other call, so a
store method added later cannot write through a plan or a canary."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import cast

import pytest

from affidavit.config.settings import AclSettings, Settings, VectorSettings
from affidavit.errors import GovernanceError
from affidavit.identity.lifecycle import approve_sires
from affidavit.ingest.requalify import Requalifier, _DerivingStore
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store.protocol import ApiKeyRecord, Store

TENANT = "acme"
SETTINGS = Settings(tenant=TENANT, acl=AclSettings(default=("*",)),
                    vectors=VectorSettings(backend="hash", dimensions=32))
CHANGED = SETTINGS.replace(sensitivity=replace(SETTINGS.sensitivity,
                                               restricted_keywords=("harbour crane",)))
KEY = ApiKeyRecord("key-1", "user:mallory", "admin", "salt", "hash",
                   datetime.now(UTC).isoformat())


def doc(source_id: str, text: str) -> SourceDocument:
    body = text.encode()
    return SourceDocument("memory", source_id, sha256_hex(body), body, f"{source_id}.txt",
                          DocumentMetadata(source_id=source_id, title=source_id))


def test_a_store_write_no_list_names_is_refused_by_a_dry_derivation(store: Store) -> None:
    deriving = _DerivingStore(store)
    # add_api_key is a write the old deny-list did not name: it used to pass through.
    with pytest.raises(GovernanceError):
        cast(Store, deriving).add_api_key(TENANT, KEY)
    with pytest.raises(GovernanceError):
        deriving.purge_tenant_added_later(TENANT)
    assert deriving.refused_write == "add_api_key"
    assert store.list_api_keys(TENANT) == []
    # A read a derivation makes still passes.
    assert cast(Store, deriving).heads(TENANT) == []


def test_a_writing_derivation_still_reaches_the_store(store: Store) -> None:
    cast(Store, _DerivingStore(store, write=True)).add_api_key(TENANT, KEY)
    assert [k.key_id for k in store.list_api_keys(TENANT)] == ["key-1"]


def test_plan_and_canary_derive_through_reads_only(store: Store) -> None:
    Ingestor(store, SETTINGS).run([StaticSource([
        doc("crane", "The harbour crane lifts containers onto the quay every morning."),
        doc("travel", "Staff book hotel rooms through the travel desk for every trip.")])])
    approve_sires(store, TENANT, [r.sire_id for r in store.list_sire(TENANT)],
                  by="user:curator", at=datetime.now(UTC).isoformat())
    events = len(list(store.iter_policy_events(TENANT)))
    requalifier = Requalifier(store, CHANGED)
    assert requalifier.plan()["affected"] == ["crane.txt"]
    assert len(requalifier.canary(2)["sample"]) == 1
    assert len(list(requalifier.assess_all(force=True))) == 2  # a rebuild's plan too
    assert len(list(store.iter_policy_events(TENANT))) == events
    assert {r.state for r in store.list_sire(TENANT)} == {"ACTIVE"}
