"""A node's owner is the principal that submitted its first version: the store contract
for document submitters (every backend; affidavit.ingest.supersession reads it)."""

from __future__ import annotations

from dataclasses import replace

from tests.store.test_store_contract import T, bundle

from affidavit.store import Store, VersionBundle


def submitted(version: str, submitter: str | None) -> VersionBundle:
    return replace(bundle("n1", version, [("INTERNAL", "alpha", {"alpha": 1})]),
                   alias="upload/a.md", submitted_by=submitter)


def test_the_first_submitter_owns_the_node_and_a_later_one_does_not(store: Store) -> None:
    assert store.first_submitter(T, "n1") is None
    store.commit_version(submitted("v1", "user:helen"))
    store.commit_version(submitted("v2", "user:grace"))
    assert store.first_submitter(T, "n1") == "user:helen"
    assert store.first_submitter("tenant-b", "n1") is None


def test_a_node_an_operator_ingested_has_no_owner(store: Store) -> None:
    store.commit_version(submitted("v1", None))
    store.commit_version(submitted("v2", "user:grace"))
    assert store.first_submitter(T, "n1") is None
