"""How PostgreSQL search plans by what the caller may read: vector and lexical.

Vector search answers exactly below a readable-row threshold and sizes its HNSW walk by
the readable fraction above it, saying which it did; lexical search probes every
posting or first drops the postings of versions the caller cannot read, whichever costs
less, with the same hits either way (the same as SQLite's).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from affidavit.records import AuthzContext
from affidavit.store import SQLiteStore, VersionBundle
from affidavit.store.postgres.store import PostgresStore
from affidavit.store.postgres.vectors import EF_SEARCH_MAX, plan_vector_search
from tests.pg_fixture import PgCluster
from tests.postgres.conftest import edited_keeping_chunks, make_bundle

T = "tenant-plans"
VERSIONS, CHUNKS = 40, 60  # 2,400 chunks: "alpha" has more postings than SMALL_POSTINGS


def tokens(*groups: int) -> frozenset[str]:
    return frozenset(f"group:g{g}#member" for g in groups)


NARROW = AuthzContext(T, "user:narrow", tokens(3), frozenset({"INTERNAL"}), "pv")
WIDE = AuthzContext(T, "user:wide", tokens(*range(VERSIONS)), frozenset({"INTERNAL"}), "pv")
# Version 3's chunks are all the narrow reader's tokens admit; version 4 carries its token
# too but is RESTRICTED, a label nobody here is granted.
SECRET_VERSION = 4


def corpus() -> list[VersionBundle]:
    """Chunk lengths differ by version, so BM25 scores differ and order the hits."""
    out = []
    for v in range(VERSIONS):
        groups = (3,) if v == SECRET_VERSION else (v,)
        label = "RESTRICTED" if v == SECRET_VERSION else "INTERNAL"
        terms = ("alpha", *(f"w{j}" for j in range(v % 5)))
        out.append(make_bundle(T, f"n{v}", f"v{v:03d}", CHUNKS, label=label, terms=terms,
                               acl=tuple(f"group:g{g}#member" for g in groups)))
    return out


@pytest.fixture(scope="module")
def stores(pg_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory,
           ) -> Iterator[tuple[PostgresStore, SQLiteStore]]:
    pg = PostgresStore(pg_cluster.new_database("plans"))
    lite = SQLiteStore(Path(tmp_path_factory.mktemp("plans")) / "plans.db")
    for bundle in corpus():
        pg.commit_version(bundle)
        lite.commit_version(bundle)
    try:
        yield pg, lite
    finally:
        pg.close()
        lite.close()


# ---------------------------------------------------------------------- vector planner


def test_a_caller_reading_one_percent_of_a_million_chunks_gets_the_exact_top_k() -> None:
    plan = plan_vector_search(10_000, 1_000_000, 10, exact_threshold=20_000, ef_search=200)
    assert plan.exact
    assert plan.readable_fraction == pytest.approx(0.01)


def test_the_hnsw_walk_grows_as_the_readable_fraction_falls() -> None:
    def walk(readable: int) -> tuple[bool, int, int]:
        plan = plan_vector_search(readable, 1_000_000, 10, exact_threshold=20_000,
                                  ef_search=200)
        return plan.exact, plan.ef_search, plan.max_scan_tuples

    everyone, half, tenth = walk(1_000_000), walk(500_000), walk(100_000)
    assert everyone[:2] == (False, 200)
    assert half[:2] == (False, 400)
    assert tenth[:2] == (False, EF_SEARCH_MAX)  # pgvector's bound
    # The walk may visit enough tuples to hold its candidate list of readable rows.
    assert tenth[2] >= EF_SEARCH_MAX * 10
    assert everyone[2] <= half[2] <= tenth[2]


def test_a_capped_count_sizes_the_walk_for_fewer_readers_never_more() -> None:
    # Counting stops at threshold + 1: the fraction is a lower bound, the walk larger.
    capped = plan_vector_search(20_001, 1_000_000, 10, exact_threshold=20_000,
                                ef_search=200)
    assert not capped.exact
    assert capped.readable_fraction <= 0.1
    assert capped.ef_search == EF_SEARCH_MAX


def test_a_walk_never_holds_fewer_candidates_than_the_limit() -> None:
    plan = plan_vector_search(50, 50, 500, exact_threshold=0, ef_search=10)
    assert plan.ef_search >= 500


# ---------------------------------------------------------------------- lexical plans


def plan_name(store: PostgresStore, authz: AuthzContext, terms: dict[str, float]) -> str:
    return store.explain_lexical(authz, terms, k1=1.2, b=0.75, avg_length=3.0,
                                 limit=10)[0].split(":")[0]


def hits(store: PostgresStore | SQLiteStore, authz: AuthzContext,
         terms: dict[str, float]) -> list[tuple[str, float]]:
    found = store.lexical_search(authz, terms, k1=1.2, b=0.75, avg_length=3.0, limit=25)
    return [(h.chunk_id, round(h.score, 9)) for h in found]


@pytest.mark.postgres
def test_a_narrow_caller_is_searched_from_its_readable_versions(stores: tuple) -> None:
    pg, lite = stores
    terms = {"alpha": 0.3, "w1": 1.1, "w3": 2.0}
    assert plan_name(pg, NARROW, terms) == "plan by readable version"
    found = hits(pg, NARROW, terms)
    assert found == hits(lite, NARROW, terms)
    narrow_ids = {c.chunk_id for c in corpus()[3].chunks}
    assert len(found) == 25 and {cid for cid, _ in found} <= narrow_ids


@pytest.mark.postgres
def test_restricted_chunks_stay_out_of_the_readable_side(stores: tuple) -> None:
    pg, _ = stores
    secret = {c.chunk_id for c in corpus()[SECRET_VERSION].chunks}
    # "w3" is in version 3 (readable) and version 4's vocabulary is w0..w3 as well.
    for who in (NARROW, WIDE):
        found = pg.lexical_search(who, {"alpha": 1.0, "w3": 1.0}, k1=1.2, b=0.75,
                                  avg_length=3.0, limit=10_000)
        assert found and not {h.chunk_id for h in found} & secret


@pytest.mark.postgres
def test_a_wide_caller_with_rare_terms_is_searched_by_posting(
        stores: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    pg, lite = stores
    # Count readers even for few postings, so the comparison itself is exercised; here a
    # version holds 60 postings of a term, so a caller counts as wide when it reads more
    # versions than a sixtieth of the postings.
    monkeypatch.setattr("affidavit.store.postgres.lexical.SMALL_POSTINGS", 0)
    monkeypatch.setattr("affidavit.store.postgres.lexical.VERSIONS_PER_POSTING", 1 / 60)
    terms = {"w3": 1.0}  # 8 versions x 60 postings; the wide caller reads 40 versions
    assert plan_name(pg, WIDE, terms) == "plan by posting"
    assert hits(pg, WIDE, terms) == hits(lite, WIDE, terms)
    assert plan_name(pg, NARROW, terms) == "plan by readable version"
    assert hits(pg, NARROW, terms) == hits(lite, NARROW, terms) == []


@pytest.mark.postgres
def test_both_lexical_plans_rank_a_wide_caller_alike(stores: tuple,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pg, lite = stores
    terms = {"alpha": 0.2, "w0": 0.7, "w2": 1.5}
    by_readable = hits(pg, WIDE, terms)
    assert plan_name(pg, WIDE, terms) == "plan by readable version"
    monkeypatch.setattr("affidavit.store.postgres.lexical.SMALL_POSTINGS", 10**9)
    assert plan_name(pg, WIDE, terms) == "plan by posting"
    assert hits(pg, WIDE, terms) == by_readable == hits(lite, WIDE, terms)


@pytest.mark.postgres
def test_a_posting_naming_a_readable_version_admits_no_other_versions_chunk(
        pg_cluster: PgCluster) -> None:
    """The version on a posting only narrows: were it wrong (here: forged to name the
    narrow caller's version), the chunk row it names must still be head and readable."""
    import psycopg

    dsn = pg_cluster.new_database("forged")
    pg = PostgresStore(dsn)
    try:
        for bundle in corpus():
            pg.commit_version(bundle)
        secret = sorted(c.chunk_id for c in corpus()[SECRET_VERSION].chunks)
        other = sorted(c.chunk_id for c in corpus()[7].chunks)  # group 7, INTERNAL
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("UPDATE postings SET version_id = 'v003' WHERE chunk_id = ANY(%s)",
                         (secret + other,))
        for name in ("by readable version", "by posting"):
            small = 0 if name == "by readable version" else 10**9
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr("affidavit.store.postgres.lexical.SMALL_POSTINGS", small)
                assert plan_name(pg, NARROW, {"alpha": 1.0, "w2": 1.0}) == f"plan {name}"
                found = {h.chunk_id for h in pg.lexical_search(
                    NARROW, {"alpha": 1.0, "w2": 1.0}, k1=1.2, b=0.75, avg_length=3.0,
                    limit=10_000)}
            assert found == {c.chunk_id for c in corpus()[3].chunks}, name
    finally:
        pg.close()


@pytest.mark.postgres
def test_an_unchanged_chunk_is_found_under_the_new_heads_acl_only(
        pg_cluster: PgCluster) -> None:
    """An edit keeps an unchanged chunk's id; its postings then name the new head version,
    whose ACL decides, on both plans."""
    pg = PostgresStore(pg_cluster.new_database("reacl"))
    try:
        first = make_bundle(T, "doc", "v-old", 30, terms=("alpha", "beta"),
                            acl=("group:g3#member",))
        pg.commit_version(first)
        # The same chunk ids in the new version (an unchanged document body).
        pg.commit_version(edited_keeping_chunks(first, "v-new", ("group:g5#member",)))
        old_reader = AuthzContext(T, "user:old", tokens(3), frozenset({"INTERNAL"}), "pv")
        new_reader = AuthzContext(T, "user:new", tokens(5), frozenset({"INTERNAL"}), "pv")
        ids = {c.chunk_id for c in first.chunks}
        for small in (0, 10**9):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr("affidavit.store.postgres.lexical.SMALL_POSTINGS", small)
                terms = {"alpha": 1.0, "beta": 1.0}
                assert pg.lexical_search(old_reader, terms, k1=1.2, b=0.75, avg_length=3.0,
                                         limit=100) == []
                found = pg.lexical_search(new_reader, terms, k1=1.2, b=0.75,
                                          avg_length=3.0, limit=100)
                assert {h.chunk_id for h in found} == ids
    finally:
        pg.close()


@pytest.mark.postgres
def test_both_plans_admit_only_chunks_of_the_pinned_label_epoch(
        stores: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    """The readable side checks ACLs in its version hash and everything else on the probe:
    a caller pinned to another label epoch than the chunks' reads nothing on either plan,
    and one pinned to theirs reads what SQLite gives it."""
    pg, lite = stores
    terms = {"alpha": 0.3, "w1": 1.1}
    stale = replace(NARROW, label_epoch="epoch-not-the-chunks")
    current = replace(NARROW, label_epoch="")  # the epoch the bundles were written under
    for small, name in ((0, "plan by readable version"), (10**9, "plan by posting")):
        monkeypatch.setattr("affidavit.store.postgres.lexical.SMALL_POSTINGS", small)
        assert plan_name(pg, stale, terms) == name
        assert hits(pg, stale, terms) == []
        assert hits(pg, current, terms) == hits(lite, current, terms) != []


@pytest.mark.postgres
def test_a_version_reached_by_two_of_the_callers_tokens_is_scored_once(
        pg_cluster: PgCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pg = PostgresStore(pg_cluster.new_database("twotokens"))
    lite = SQLiteStore(tmp_path / "twotokens.db")
    try:
        bundle = make_bundle(T, "shared", "v-two", 20, terms=("alpha", "gamma"),
                             acl=("group:g1#member", "group:g2#member"))
        for store in (pg, lite):
            store.commit_version(bundle)
        both = AuthzContext(T, "user:both", tokens(1, 2), frozenset({"INTERNAL"}), "pv")
        monkeypatch.setattr("affidavit.store.postgres.lexical.SMALL_POSTINGS", 0)
        terms = {"alpha": 0.5, "gamma": 1.5}
        assert plan_name(pg, both, terms) == "plan by readable version"
        found = hits(pg, both, terms)
        assert len(found) == 20 and found == hits(lite, both, terms)
    finally:
        pg.close()
        lite.close()
