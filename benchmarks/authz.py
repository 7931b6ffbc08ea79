"""Authorization cost: context build time, and query latency with the filter on and off.

    python benchmarks/authz.py [--docs 100000] [--runs 300] [--queries 200]
                               [--doc-tuples 20000] [--db PATH]

Writes ``--docs`` synthetic document versions (one chunk each, through the SQLite store's
own row writers, many per transaction; ACL tokens of groups, users, the doc: object and
the folder: path) into one store. Then prints:

* the authz-context build time (p50/p99) of a principal in 20 nested groups: the whole
  request-time step (read tuples and grants from the store, expand, hash the policy), and
  the pure expansion alone; three times, as the tenant's policy grows: the 20 nested
  groups only, plus an organisation (3,000 people in 200 groups, folder and doc viewers),
  plus ``--doc-tuples`` per-document shares. The default authorizer reads every tuple of
  the tenant on every request, so the build grows with the tenant's policy;
* search p50/p99 for that principal (the filter admits a fraction of the corpus) and for a
  principal who may read everything, over the same queries: ``Engine.search`` end to end,
  and the filtered BM25 retrieval alone.

Everything is generated from fixed seeds, so every run measures the same data.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from affidavit.authz import StoreAuthorizer, expand_tokens
from affidavit.authz.tuples import document_object_tokens
from affidavit.config.settings import DEFAULT_LABELS, Settings
from affidavit.engine.query import Engine
from affidavit.index import term_frequencies
from affidavit.records import (
    AuthzContext,
    Chunk,
    ParagraphLabel,
    RawBlob,
    SireTuple,
    node_id_for,
    sha256_hex,
)
from affidavit.store import RelationTuple, SQLiteStore, VersionBundle
from affidavit.store.sqlite.vectors import visibility_sql
from affidavit.text.tokenize import Tokenizer

TENANT = "bench"
NESTED = 20
GROUPS = 200
FOLDERS = [f"dept{d:02d}/team{t:02d}" for d in range(20) for t in range(10)]
PRINCIPAL = "user:nested"
EVERYTHING = "user:auditor"
AT = "2026-01-01T00:00:00+00:00"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice("bcdfgklmnprstvz") + rng.choice("aeiou")
                          for _ in range(rng.randint(2, 4))))
    return sorted(words)


def bundle(i: int, rng: random.Random, vocab: list[str], weights: list[float],
           tokenizer: Tokenizer) -> VersionBundle:
    alias = f"{rng.choice(FOLDERS)}/doc-{i:06d}.md"
    node = node_id_for("bench", alias)
    text = " ".join(rng.choices(vocab, weights=weights, k=40)).capitalize() + "."
    label = rng.choice(DEFAULT_LABELS[:6])
    acl = {f"group:g{rng.randrange(GROUPS):03d}#member", f"user:u{rng.randrange(5000):04d}",
           "group:all#member", *document_object_tokens(node, alias)}
    version = sha256_hex(f"{alias}:{text}".encode())[:32]
    tokens = tokenizer.tokenize(text)
    chunk = Chunk(version[:32], node, version, 0, 0, len(text), text, label, (),
                  f"{alias} | chars 0-{len(text)}", "w")
    return VersionBundle(
        tenant=TENANT, node_id=node, version_id=version, fingerprint=version, alias=alias,
        blob=RawBlob(sha256_hex(text.encode()), text.encode(), "bench", alias, "1", AT),
        title=f"Document {i}", metadata_json="{}", declared_label=label, normalized_text=text,
        paragraph_labels=((ParagraphLabel(0, label, ()), 0, len(text)),), chunks=(chunk,),
        postings={chunk.chunk_id: tuple(sorted(term_frequencies(tokens).items()))},
        chunk_lengths={chunk.chunk_id: len(tokens)}, acl_tokens=tuple(sorted(acl)),
        sire=SireTuple("s", (), (), ()), witness="w", run_id="run-bench", created_at=AT)


def load_corpus(store: SQLiteStore, n_docs: int, vocab: list[str]) -> list[str]:
    rng = random.Random(3)
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    tokenizer = Tokenizer("english", True, ())
    nodes: list[str] = []
    started = time.perf_counter()
    with store._write() as conn:
        # Without it every commit counts a node's aliases by scanning the whole table.
        conn.execute("CREATE INDEX IF NOT EXISTS aliases_node ON aliases (tenant_id, node_id)")
    batch: list[VersionBundle] = []
    for i in range(n_docs):
        batch.append(bundle(i, rng, vocab, weights, tokenizer))
        nodes.append(batch[-1].node_id)
        if len(batch) == 2000 or i == n_docs - 1:
            commit_batch(store, batch)
            batch = []
    print(f"corpus: {n_docs} documents written in {time.perf_counter() - started:.0f} s")
    return nodes


def commit_batch(store: SQLiteStore, bundles: list[VersionBundle]) -> None:
    """Many versions in one transaction, through the store's own row writers (ingestion
    commits one version per transaction, which would take most of the run here)."""
    with store._write() as conn:
        store._ensure_tenant(conn, TENANT)
        for b in bundles:
            store._write_blob_and_node(conn, b)
            store._write_version_rows(conn, b)
            store._move_head(conn, TENANT, b.node_id, b.version_id, b.blob.raw_digest,
                             b.run_id, b.created_at)


def add_tuples(store: SQLiteStore, texts: list[str]) -> None:
    for text in texts:
        obj, _, subject = text.partition("@")
        o, _, relation = obj.partition("#")
        store.add_tuple(TENANT, RelationTuple(o, relation, subject, "bench"), at=AT)


def write_nested_policy(store: SQLiteStore) -> None:
    """The measured principal: in n19, which is in n18, ... in n00 (20 nested groups), and
    through them in two of the groups documents name, and a viewer of one department."""
    rel = [f"group:n{i:02d}#member@group:n{i + 1:02d}#member" for i in range(NESTED - 1)]
    rel += [f"group:n{NESTED - 1:02d}#member@{PRINCIPAL}", "group:g010#member@group:n05#member",
            "group:g077#member@group:n12#member", "folder:dept03#viewer@group:n00#member",
            f"group:all#member@{EVERYTHING}"]
    add_tuples(store, rel)
    store.grant(TENANT, "group:n03#member", ["INTERNAL", "CONFIDENTIAL", "FINANCIAL"], at=AT)
    store.grant(TENANT, EVERYTHING, list(DEFAULT_LABELS), at=AT)


def write_organisation(store: SQLiteStore, nodes: list[str]) -> None:
    """Everyone else: 3,000 people in 200 groups, nested groups, folder and doc viewers."""
    rng = random.Random(5)
    rel = [f"group:g{rng.randrange(GROUPS):03d}#member@user:u{u:04d}" for u in range(3000)]
    for _ in range(100):
        inner, outer = sorted(rng.sample(range(GROUPS), 2))
        rel.append(f"group:g{outer:03d}#member@group:g{inner:03d}#member")
    rel += [f"folder:{f}#viewer@group:g{rng.randrange(GROUPS):03d}#member"
            for f in rng.sample(FOLDERS, 60)]
    rel += [f"doc:{n}#viewer@user:u{rng.randrange(5000):04d}" for n in rng.sample(nodes, 500)]
    add_tuples(store, rel)
    for g in range(GROUPS):
        store.grant(TENANT, f"group:g{g:03d}#member", rng.sample(DEFAULT_LABELS[1:6], 2), at=AT)


def add_share_tuples(store: SQLiteStore, nodes: list[str], n: int) -> None:
    rng = random.Random(9)
    for node in rng.sample(nodes, min(n, len(nodes))):
        store.add_tuple(TENANT, RelationTuple(f"doc:{node}", "viewer",
                                              f"user:u{rng.randrange(5000):04d}", "bench"), at=AT)


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    fn()  # warm
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def report_context(store: SQLiteStore, settings: Settings, runs: int, label: str) -> None:
    authorizer = StoreAuthorizer(store, settings)
    context = authorizer.context_for(TENANT, PRINCIPAL)
    n_tuples = len(authorizer.all_tuples(TENANT))
    build = timed(lambda: authorizer.context_for(TENANT, PRINCIPAL), runs)
    tuples = authorizer.all_tuples(TENANT)
    expand = timed(lambda: expand_tokens(PRINCIPAL, tuples), runs)
    print(f"authz context ({label}: {n_tuples} tuples; {len(context.tokens)} tokens for "
          f"{PRINCIPAL}): build p50 {percentile(build, 50):.2f} ms, p99 "
          f"{percentile(build, 99):.2f} ms; expansion alone p50 {percentile(expand, 50):.2f} "
          f"ms, p99 {percentile(expand, 99):.2f} ms")


def report_queries(engine: Engine, store: SQLiteStore, queries: list[str]) -> None:
    """Engine.search end to end (context, filtered BM25, SIRE lookup of the hits), and the
    filtered BM25 retrieval alone under a context built once."""
    for principal in (PRINCIPAL, EVERYTHING):
        authz = engine.authz_context(principal)
        hits = 0
        engine.search(principal, queries[0], limit=10)  # warm
        full: list[float] = []
        lexical: list[float] = []
        for query in queries:
            t0 = time.perf_counter()
            hits += len(engine.search(principal, query, limit=10))
            t1 = time.perf_counter()
            engine.retriever.search(authz, query, limit=10)
            full.append((t1 - t0) * 1000)
            lexical.append((time.perf_counter() - t1) * 1000)
        print(f"search as {principal:<12} ({readable_share(store, authz)}): Engine.search p50 "
              f"{percentile(full, 50):.1f} ms, p99 {percentile(full, 99):.1f} ms; filtered "
              f"BM25 alone p50 {percentile(lexical, 50):.1f} ms, p99 "
              f"{percentile(lexical, 99):.1f} ms; {hits} hits over {len(queries)} queries")


def readable_share(store: SQLiteStore, authz: AuthzContext) -> str:
    clause, params = visibility_sql(authz)
    total = int(str(store._read("SELECT COUNT(*) FROM chunks c WHERE c.tenant_id = ?",
                                (TENANT,))[0][0]))
    seen = int(str(store._read(f"SELECT COUNT(*) FROM chunks c WHERE c.tenant_id = ? AND "
                               f"{clause}", (TENANT, *params))[0][0]))
    return f"reads {100 * seen / max(total, 1):.1f}% of {total} chunks"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--doc-tuples", type=int, default=20_000)
    parser.add_argument("--db", default=None, help="database file (default: a temp dir)")
    args = parser.parse_args()
    settings = Settings(tenant=TENANT)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(args.db) if args.db else Path(tmp) / "authz.db")
        vocab = vocabulary(random.Random(1))
        nodes = load_corpus(store, args.docs, vocab)
        write_nested_policy(store)
        report_context(store, settings, args.runs, "20 nested groups only")
        write_organisation(store, nodes)
        report_context(store, settings, args.runs, "plus an organisation")
        rng = random.Random(11)
        queries = [" ".join(rng.choices(vocab[20:2000], k=rng.randint(2, 3)))
                   for _ in range(args.queries)]
        report_queries(Engine(store, settings), store, queries)
        add_share_tuples(store, nodes, args.doc_tuples)
        report_context(store, settings, args.runs, f"plus {args.doc_tuples} doc shares")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
