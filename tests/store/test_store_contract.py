"""The store contract: every backend must pass these (see conftest BACKENDS)."""

from __future__ import annotations

import pytest

from affidavit.errors import LedgerError, NotFound, StoreError
from affidavit.ledger import GENESIS_HASH, link_hash, verify_chain
from affidavit.records import AuthzContext, Chunk, ParagraphLabel, RawBlob, SireTuple, sha256_hex
from affidavit.store import QuarantineRecord, RelationTuple, Store, VersionBundle

T = "tenant-a"
NOW = "2026-01-01T00:00:00+00:00"


def bundle(node: str, version: str, texts: list[tuple[str, str, dict[str, int]]], *,
           acl: tuple[str, ...] = ("group:staff#member",), tenant: str = T,
           content: bytes | None = None) -> VersionBundle:
    """A version with chunks given as (label, text, term->tf)."""
    raw = content if content is not None else f"{node}-{version}".encode()
    chunks = tuple(
        Chunk(chunk_id=f"{version}-c{i}".ljust(32, "0"), node_id=node, version_id=version,
              ordinal=i, start=0, end=len(text), text=text, label=label, heading_path=("H",),
              locator=f"{node} | chars 0-{len(text)}", witness="w")
        for i, (label, text, _) in enumerate(texts))
    return VersionBundle(
        tenant=tenant, node_id=node, version_id=version, fingerprint="fp-" + version,
        blob=RawBlob(sha256_hex(raw), raw, "files", node, "rev", NOW), alias=f"{node}.md",
        title=f"Title {node}", metadata_json="{}", declared_label=None,
        normalized_text=" ".join(t for _, t, _ in texts),
        paragraph_labels=tuple((ParagraphLabel(i, label, ("default:INTERNAL",)), 0, 1)
                               for i, (label, _, _) in enumerate(texts)),
        chunks=chunks,
        postings={c.chunk_id: tuple(sorted(tf.items()))
                  for c, (_, _, tf) in zip(chunks, texts, strict=True)},
        chunk_lengths={c.chunk_id: sum(tf.values())
                       for c, (_, _, tf) in zip(chunks, texts, strict=True)},
        acl_tokens=acl, sire=SireTuple("s", ("a",), (), ("hipaa",)), witness="w", run_id="run-1",
        created_at=NOW)


def ctx(tokens: set[str], labels: set[str], tenant: str = T) -> AuthzContext:
    return AuthzContext(tenant, "user:x", frozenset(tokens), frozenset(labels), "pv")


STAFF = ctx({"user:x", "*", "group:staff#member"}, {"PUBLIC", "INTERNAL"})


def test_migrations_are_recorded_and_idempotent(store: Store) -> None:
    assert store.schema_version() >= 1


def test_commit_then_search_applies_authz_inside(store: Store) -> None:
    store.commit_version(bundle("n1", "v1", [("INTERNAL", "alpha beta", {"alpha": 1, "beta": 1}),
                                             ("PII", "alpha secret", {"alpha": 1, "secret": 1})]))
    stats = store.lexical_stats(T)
    assert (stats.n_chunks, stats.total_length) == (2, 4)
    assert store.document_frequencies(T, ["alpha", "zzz"]) == {"alpha": 2, "zzz": 0}
    hits = store.lexical_search(STAFF, {"alpha": 1.0}, k1=1.5, b=0.75, avg_length=2.0, limit=10)
    assert [h.chunk_id[:5] for h in hits] == ["v1-c0"]  # the PII chunk is not granted
    hr = ctx({"user:x", "group:staff#member"}, {"PUBLIC", "PII"})
    hits = store.lexical_search(hr, {"alpha": 1.0}, k1=1.5, b=0.75, avg_length=2.0, limit=10)
    assert [h.chunk_id[:5] for h in hits] == ["v1-c1"]
    outsider = ctx({"user:y", "*"}, {"PUBLIC", "INTERNAL", "PII"})
    assert store.lexical_search(outsider, {"alpha": 1.0}, k1=1.5, b=0.75, avg_length=2.0,
                                limit=10) == []


def test_bm25_score_formula_in_the_query(store: Store) -> None:
    store.commit_version(bundle("n1", "v1", [("INTERNAL", "a a b", {"a": 2, "b": 1}),
                                             ("INTERNAL", "a", {"a": 1})]))
    hits = store.lexical_search(STAFF, {"a": 0.5}, k1=1.2, b=0.75, avg_length=2.0, limit=10)
    expected = {h.chunk_id[:5]: h.score for h in hits}
    assert expected["v1-c0"] == pytest.approx(0.5 * 2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 3 / 2)))
    assert expected["v1-c1"] == pytest.approx(0.5 * 1 / (1 + 1.2 * (1 - 0.75 + 0.75 * 1 / 2)))


def test_supersede_serves_only_the_head_version(store: Store) -> None:
    store.commit_version(bundle("n1", "v1", [("INTERNAL", "old text", {"old": 1, "text": 1})]))
    result = store.commit_version(bundle("n1", "v2", [("INTERNAL", "new", {"new": 1})],
                                         content=b"other"))
    assert result.superseded == "v1"
    assert store.head(T, "n1") is not None and store.head(T, "n1").version_id == "v2"  # type: ignore[union-attr]
    assert store.document_frequencies(T, ["old"]) == {"old": 0}
    assert store.lexical_stats(T).n_chunks == 1
    old_ids = ["v1-c0".ljust(32, "0")]
    assert store.get_chunks(STAFF, old_ids) == []


def test_withdraw_removes_from_search(store: Store) -> None:
    store.commit_version(bundle("n1", "v1", [("INTERNAL", "gone", {"gone": 1})]))
    assert store.withdraw(T, "n1", run_id="r", at=NOW)
    assert store.head(T, "n1") is None
    assert store.lexical_stats(T).n_chunks == 0
    assert not store.withdraw(T, "n1", run_id="r", at=NOW)


def test_failed_commit_leaves_nothing(store: Store) -> None:
    store.commit_version(bundle("n1", "v1", [("INTERNAL", "x", {"x": 1})]))
    before = {t: store.count_rows(T, t) for t in ("blobs", "versions", "chunks", "postings")}
    with pytest.raises(StoreError):
        store.commit_version(bundle("n2", "v1", [("INTERNAL", "y", {"y": 1})]))
    after = {t: store.count_rows(T, t) for t in ("blobs", "versions", "chunks", "postings")}
    assert before == after


def test_tenants_are_isolated(store: Store) -> None:
    store.commit_version(bundle("n1", "v1", [("INTERNAL", "shared", {"shared": 1})]))
    store.commit_version(bundle("n1", "v1b", [("INTERNAL", "shared", {"shared": 1})],
                                tenant="tenant-b"))
    b_ctx = ctx({"user:x", "group:staff#member"}, {"PUBLIC", "INTERNAL"}, tenant="tenant-b")
    hits = store.lexical_search(b_ctx, {"shared": 1.0}, k1=1.5, b=0.75, avg_length=1, limit=10)
    assert [h.chunk_id[:3] for h in hits] == ["v1b"]
    assert store.lexical_stats(T).n_chunks == 1
    assert store.get_chunks(b_ctx, ["v1-c0".ljust(32, "0")]) == []


def test_tuples_and_grants(store: Store) -> None:
    rel = RelationTuple("group:hr", "member", "user:helen", "cli")
    assert store.add_tuple(T, rel, at=NOW)
    assert not store.add_tuple(T, rel, at=NOW)
    assert [str(t) for t in store.list_tuples(T)] == ["group:hr#member@user:helen"]
    assert store.list_tuples("tenant-b") == []
    assert store.grant(T, "group:hr#member", ["PII", "PII"], at=NOW) == 1
    assert store.list_grants(T) == {"group:hr#member": ("PII",)}
    assert store.revoke(T, "group:hr#member", ["PII"]) == 1
    assert store.list_grants(T) == {}
    assert store.remove_tuple(T, rel)
    assert not store.remove_tuple(T, rel)


def test_every_tuple_or_grant_change_moves_the_policy_generation(store: Store) -> None:
    store.ensure_tenant(T)
    store.ensure_tenant("tenant-b")
    seen = [store.policy_generation(T)]
    rel = RelationTuple("group:hr", "member", "user:helen", "cli")
    store.add_tuple(T, rel, at=NOW)
    seen.append(store.policy_generation(T))
    store.grant(T, "group:hr#member", ["PII"], at=NOW)
    seen.append(store.policy_generation(T))
    store.revoke(T, "group:hr#member", ["PII"])
    seen.append(store.policy_generation(T))
    store.remove_tuple(T, rel)
    seen.append(store.policy_generation(T))
    assert None not in seen and len(set(seen)) == len(seen)
    # A write that changes nothing, and another tenant's change, leave it where it is.
    store.revoke(T, "group:hr#member", ["PII"])
    store.grant("tenant-b", "user:x", ["PII"], at=NOW)
    assert store.policy_generation(T) == seen[-1]
    assert store.policy_generation("no-such-tenant") is None


def test_sire_lifecycle_records_approver(store: Store) -> None:
    store.commit_version(bundle("n1", "v1", [("INTERNAL", "x", {"x": 1})]))
    [proposal] = store.list_sire(T, state="PROPOSED")
    assert proposal.sire.excluded == ("hipaa",)
    assert store.active_sire(T, ["v1"]) == {}
    record = store.set_sire_state(T, proposal.sire_id, state="ACTIVE", by="alice", at=NOW)
    assert (record.state, record.approved_by) == ("ACTIVE", "alice")
    assert set(store.active_sire(T, ["v1"])) == {"v1"}
    with pytest.raises(NotFound):
        store.set_sire_state(T, "nope", state="ACTIVE", by="a", at=NOW)


def test_active_sire_versions_are_those_with_an_active_record_of_the_tenant(
        store: Store) -> None:
    store.commit_version(bundle("n1", "v1", [("INTERNAL", "x", {"x": 1})]))
    store.commit_version(bundle("n2", "v2", [("INTERNAL", "y", {"y": 1})]))
    assert store.active_sire_versions(T, ["v1", "v2", "v-none"]) == set()
    [first] = [r for r in store.list_sire(T, state="PROPOSED") if r.version_id == "v1"]
    store.set_sire_state(T, first.sire_id, state="ACTIVE", by="alice", at=NOW)
    assert store.active_sire_versions(T, ["v1", "v2", "v-none"]) == {"v1"}
    assert store.active_sire_versions("tenant-b", ["v1"]) == set()
    store.set_sire_state(T, first.sire_id, state="PROPOSED", by="alice", at=NOW)
    assert store.active_sire_versions(T, ["v1"]) == set()


def test_every_sire_change_moves_the_policy_generation(store: Store) -> None:
    """SIRE states are remembered per policy generation (affidavit.identity.active): every
    write to a tenant's SIRE rows, by any path, must move it, and only that tenant's."""
    store.ensure_tenant(T)
    store.ensure_tenant("tenant-b")
    other = store.policy_generation("tenant-b")
    seen = [store.policy_generation(T)]
    store.commit_version(bundle("n1", "v1", [("INTERNAL", "x", {"x": 1})]))  # proposes one
    store.commit_version(bundle("n2", "v2", [("INTERNAL", "y", {"y": 1})]))
    seen.append(store.policy_generation(T))
    ids = sorted(r.sire_id for r in store.list_sire(T, state="PROPOSED"))
    store.set_sire_state(T, ids[0], state="ACTIVE", by="alice", at=NOW)
    seen.append(store.policy_generation(T))
    store.activate_sire(T, ids, by="alice", at=NOW)  # both in one statement
    seen.append(store.policy_generation(T))
    store.set_sire_state(T, ids[0], state="PROPOSED", by="alice", at=NOW)
    seen.append(store.policy_generation(T))
    assert None not in seen and len(set(seen)) == len(seen)
    assert store.policy_generation("tenant-b") == other


def test_remembered_sire_states_follow_every_change(store: Store) -> None:
    from affidavit.identity.active import ActiveSireStates

    store.commit_version(bundle("n1", "v1", [("INTERNAL", "x", {"x": 1})]))
    store.commit_version(bundle("n2", "v2", [("INTERNAL", "y", {"y": 1})]))
    states = ActiveSireStates(store)
    assert states.active(T, ["v1", "v2", "v-none"]) == set()
    by_version = {r.version_id: r.sire_id for r in store.list_sire(T, state="PROPOSED")}
    store.set_sire_state(T, by_version["v1"], state="ACTIVE", by="alice", at=NOW)
    assert states.active(T, ["v1", "v2"]) == {"v1"}  # the very next read
    assert states.active(T, ["v2", "v1"]) == {"v1"}  # remembered, same answer
    store.set_sire_state(T, by_version["v1"], state="PROPOSED", by="alice", at=NOW)
    store.activate_sire(T, [by_version["v2"]], by="alice", at=NOW)
    assert states.active(T, ["v1", "v2"]) == {"v2"}
    assert states.active("tenant-b", ["v2"]) == set()
    assert states.active(T, []) == set()


def test_ledger_chain_and_append_only(store: Store) -> None:
    first = store.append_ledger(T, record_id="r1", request_id="q1", created_at=NOW, payload="{}")
    second = store.append_ledger(T, record_id="r2", request_id="q2", created_at=NOW,
                                 payload='{"a":1}')
    assert first.prev_hash == GENESIS_HASH
    assert second.prev_hash == first.record_hash
    assert second.record_hash == link_hash(tenant=T, seq=2, record_id="r2", request_id="q2",
                                           created_at=NOW, prev_hash=first.record_hash,
                                           payload='{"a":1}')
    assert second.link_format == 2
    assert verify_chain(store.iter_ledger(T), tenant=T).ok
    assert store.get_ledger(T, "q2") == second
    assert store.get_ledger("tenant-b", "r1") is None
    with pytest.raises(LedgerError):
        store.append_ledger(T, record_id="r1", request_id="q3", created_at=NOW, payload="{}")


def test_runs_and_quarantine(store: Store) -> None:
    store.start_run(T, "run-1", at=NOW, params_json="{}")
    store.record_quarantine(T, QuarantineRecord("run-1", "bad.md", "bad", "EMPTY_DOCUMENT",
                                                "empty", NOW))
    store.finish_run(T, "run-1", status="DEGRADED", at=NOW, summary_json='{"x":1}')
    run = store.get_run(T, "run-1")
    assert run is not None and run.status == "DEGRADED"
    assert [q.reason_code for q in store.list_quarantine(T, "run-1")] == ["EMPTY_DOCUMENT"]
    assert store.get_run("tenant-b", "run-1") is None


def test_vectors_are_searched_only_among_readable_chunks(store: Store) -> None:
    store.commit_version(bundle("n1", "v1", [("INTERNAL", "a", {"a": 1}),
                                             ("PII", "b", {"b": 1})]))
    store.commit_version(bundle("n2", "v2", [("INTERNAL", "c", {"c": 1})],
                                acl=("group:other#member",)))
    assert [cid[:5] for cid, _ in store.chunks_missing_vectors(T, "m", 10)] == [
        "v1-c0", "v1-c1", "v2-c0"]
    ids = {cid[:5]: cid for cid, _ in store.chunks_missing_vectors(T, "m", 10)}
    # The hidden chunks are the nearest ones: a post-filtered top-1 would return nothing.
    store.put_vectors(T, "m", {ids["v1-c0"]: [0.0, 1.0], ids["v1-c1"]: [1.0, 0.0],
                               ids["v2-c0"]: [1.0, 0.01]})
    assert store.chunks_missing_vectors(T, "m", 10) == []
    hits = store.vector_search(STAFF, "m", [1.0, 0.0], limit=1)
    assert [h.chunk_id for h in hits] == [ids["v1-c0"]]
    assert store.vector_search(STAFF, "other-model", [1.0, 0.0], limit=5) == []
    generation = store.corpus_generation(T)
    store.commit_version(bundle("n1", "v3", [("INTERNAL", "z", {"z": 1})], content=b"new"))
    assert store.corpus_generation(T) > generation
    assert ids["v1-c0"] not in store.head_vectors(T, "m")[0]


def test_bulk_activation_records_the_approver_and_is_all_or_nothing(store: Store) -> None:
    for n in ("n1", "n2", "n3"):
        store.commit_version(bundle(n, "v" + n, [("INTERNAL", "x", {"x": 1})]))
    ids = {r.node_id: r.sire_id for r in store.list_sire(T)}
    store.activate_sire(T, [ids["n1"]], by="alice", at=NOW)
    with pytest.raises(NotFound):
        store.activate_sire(T, [ids["n2"], "nope"], by="bob", at="later")
    assert store.list_sire(T, state="ACTIVE")[0].node_id == "n1", "nothing changed"
    records = store.activate_sire(T, [ids["n3"], ids["n1"], ids["n2"]], by="bob", at="later")
    assert [r.sire_id for r in records] == [ids["n3"], ids["n1"], ids["n2"]]
    assert [(r.state, r.approved_by) for r in records] == [
        ("ACTIVE", "bob"), ("ACTIVE", "alice"), ("ACTIVE", "bob")]
    assert store.activate_sire("tenant-b", [], by="bob", at=NOW) == []
    with pytest.raises(NotFound):
        store.activate_sire("tenant-b", [ids["n1"]], by="mallory", at=NOW)


def test_document_chunk_ids_are_the_head_chunks_in_reading_order_within_the_tenant(
        store: Store) -> None:
    texts = [("INTERNAL", "one", {"one": 1}), ("PII", "two", {"two": 1}),
             ("RESTRICTED", "three", {"three": 1})]
    store.commit_version(bundle("n1", "v1", texts))
    assert store.document_chunk_ids(T, "n1") == [f"v1-c{i}".ljust(32, "0") for i in range(3)]
    store.commit_version(bundle("n1", "v2", texts[:2], content=b"other"))
    assert store.document_chunk_ids(T, "n1") == [f"v2-c{i}".ljust(32, "0") for i in range(2)]
    assert store.document_chunk_ids("tenant-b", "n1") == []
    assert store.document_chunk_ids(T, "unknown") == []
