"""Identity is never taken over: the store contract for identity claims (every backend)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.store.test_store_contract import STAFF, T, bundle

from affidavit.errors import InputRejected
from affidavit.store import Store, VersionBundle
from affidavit.store.protocol import IDENTITY_COLLISION, KEEP, TAKE_OVER, IdentityResolution

LATER = "2026-01-02T00:00:00+00:00"


def owned_by(alias: str, node: str = "n1", version: str = "v1",
             text: str = "alpha") -> VersionBundle:
    return replace(bundle(node, version, [("INTERNAL", text, {text: 1})]), alias=alias)


def texts(store: Store) -> list[str]:
    hits = store.lexical_search(STAFF, {"alpha": 1.0, "intruder": 1.0}, k1=1.5, b=0.75,
                                avg_length=1.0, limit=10)
    return [r.chunk.text for r in store.get_chunks(STAFF, [h.chunk_id for h in hits])]


def test_the_first_path_to_commit_a_node_owns_its_identity(store: Store) -> None:
    assert store.identity_owner(T, "n1") is None
    store.commit_version(owned_by("docs/a.md"))
    assert store.identity_owner(T, "n1") == "docs/a.md"
    # the same path editing its document supersedes as before
    store.commit_version(owned_by("docs/a.md", version="v2"))
    assert store.identity_owner(T, "n1") == "docs/a.md"


def test_a_commit_from_another_path_is_an_identity_collision_and_changes_nothing(
        store: Store) -> None:
    store.commit_version(owned_by("docs/a.md"))
    before = {t: store.count_rows(T, t) for t in ("versions", "chunks", "acl_tokens", "sire")}
    intruder = replace(owned_by("docs/b.md", version="v2", text="intruder"), acl_tokens=("*",))
    with pytest.raises(InputRejected) as refused:
        store.commit_version(intruder)
    assert refused.value.reason_code == IDENTITY_COLLISION
    # the claimant learns nothing of the owner: its path is another document's text
    assert "docs/b.md" in refused.value.detail and "docs/a.md" not in refused.value.detail
    assert {t: store.count_rows(T, t) for t in before} == before
    assert texts(store) == ["alpha"]
    head = store.head(T, "n1")
    assert head is not None and head.version_id == "v1"


def test_a_withdrawn_node_stays_owned_by_its_path(store: Store) -> None:
    store.commit_version(owned_by("docs/a.md"))
    assert store.withdraw(T, "n1", run_id="run-2", at=LATER)
    with pytest.raises(InputRejected):
        store.commit_version(owned_by("docs/b.md", version="v2"))
    assert store.identity_owner(T, "n1") == "docs/a.md"


def test_a_recorded_take_over_hands_the_node_to_the_claimant(store: Store) -> None:
    store.commit_version(owned_by("docs/a.md"))
    decision = IdentityResolution("n1", "n1", "docs/b.md", "docs/a.md", TAKE_OVER, "ops:ann",
                                  LATER, "moved")
    store.resolve_identity(T, decision)
    assert store.identity_owner(T, "n1") == "docs/b.md"
    assert store.list_identity_resolutions(T) == [decision]
    store.commit_version(owned_by("docs/b.md", version="v2", text="intruder"))
    assert texts(store) == ["intruder"]
    with pytest.raises(InputRejected):  # the old path is now the one refused
        store.commit_version(owned_by("docs/a.md", version="v3"))


def test_a_keep_decision_changes_no_owner_and_a_stale_decision_is_refused(store: Store) -> None:
    store.commit_version(owned_by("docs/a.md"))
    store.resolve_identity(T, IdentityResolution("n1", "n1", "docs/b.md", "docs/a.md", KEEP,
                                                 "ops:ann", LATER))
    assert store.identity_owner(T, "n1") == "docs/a.md"
    stale = IdentityResolution("n1", "n1", "docs/c.md", "docs/elsewhere.md", TAKE_OVER,
                               "ops:ann", LATER)
    with pytest.raises(InputRejected):
        store.resolve_identity(T, stale)
    assert store.identity_owner(T, "n1") == "docs/a.md"
    assert [r.decision for r in store.list_identity_resolutions(T)] == [KEEP]


def test_identity_claims_are_per_tenant(store: Store) -> None:
    store.commit_version(owned_by("docs/a.md"))
    other = replace(owned_by("docs/b.md"), tenant="tenant-b")
    store.commit_version(other)
    assert store.identity_owner("tenant-b", "n1") == "docs/b.md"
    assert store.identity_owner(T, "n1") == "docs/a.md"
