"""SQLite FTS5 against the store's own postings on SciFact: size, index time, governed q/s.

    python benchmarks/fts5_compare.py --data ../shared/data/scifact [--db PATH]

Both indexes get the same tokens (the store's tokenizer: English stemming and stop words,
written space-separated for FTS5's ``unicode61``), so the comparison is of the index, not
of the analysis. FTS5 is contentless (``content=''``, text stored nowhere again) and its
governed query joins the chunk rows and the ACL tokens *inside the same query* as the store's
postings query does (``visibility_sql``): no top-k taken first and filtered after. Both are
timed for a principal who may read everything and one who may read about half. Prints, per
index: bytes (dbstat), bytes per byte of text, index seconds, q/s and p50 for each reader,
and whether FTS5's top 10 equals the postings' top 10.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import beir  # the SciFact loader, settings and ingest of benchmarks/beir.py

from affidavit.authz import StoreAuthorizer
from affidavit.index import idf
from affidavit.records import AuthzContext
from affidavit.store import SQLiteStore
from affidavit.store.protocol import LexicalHit
from affidavit.store.sqlite.vectors import visibility_sql
from affidavit.text.tokenize import Tokenizer


def table_bytes(conn: sqlite3.Connection, like: tuple[str, ...]) -> int:
    clause = " OR ".join("name LIKE ?" for _ in like)
    row = conn.execute(f"SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE {clause}",
                       like).fetchone()
    return int(row[0])


def head_chunks(conn: sqlite3.Connection, store: SQLiteStore, tenant: str
                ) -> list[tuple[int, str]]:
    rows = conn.execute("SELECT chunk_key, chunk_id FROM chunks WHERE tenant_id = ? "
                        "AND is_head = 1 ORDER BY chunk_key", (tenant,)).fetchall()
    keys = {str(cid): int(key) for key, cid in rows}
    texts: list[tuple[int, str]] = []
    for version_id, in conn.execute("SELECT DISTINCT version_id FROM chunks WHERE "
                                    "tenant_id = ? AND is_head = 1", (tenant,)):
        for chunk in store.version_chunks(tenant, str(version_id)):
            if chunk.chunk_id in keys:
                texts.append((keys[chunk.chunk_id], chunk.text))
    return sorted(texts)


def build_postings(conn: sqlite3.Connection, docs: list[tuple[int, list[str]]]) -> float:
    """The store's postings layout (migration 10) in fresh tables; seconds."""
    conn.executescript(
        "CREATE TABLE cmp_terms (term_key INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, "
        "term TEXT NOT NULL); CREATE UNIQUE INDEX cmp_terms_by_term ON cmp_terms "
        "(tenant_id, term); CREATE TABLE cmp_postings (term_key INTEGER NOT NULL, "
        "chunk_key INTEGER NOT NULL, tf INTEGER NOT NULL, PRIMARY KEY (term_key, chunk_key)) "
        "WITHOUT ROWID;")
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    for key, tokens in docs:
        counts = Counter(tokens)
        conn.executemany("INSERT OR IGNORE INTO cmp_terms (tenant_id, term) VALUES ('t', ?)",
                         [(t,) for t in sorted(counts)])
        term_keys = dict(conn.execute(
            f"SELECT term, term_key FROM cmp_terms WHERE tenant_id = 't' AND term IN "
            f"({','.join('?' * len(counts))})", sorted(counts)).fetchall()) if counts else {}
        conn.executemany("INSERT INTO cmp_postings VALUES (?, ?, ?)",
                         sorted((term_keys[t], key, n) for t, n in counts.items()))
    conn.execute("COMMIT")
    return time.perf_counter() - t0


def build_fts5(conn: sqlite3.Connection, docs: list[tuple[int, list[str]]], detail: str
               ) -> float:
    conn.execute(f"CREATE VIRTUAL TABLE fts_{detail} USING fts5(body, content='', "
                 f"detail={detail}, tokenize='unicode61')")
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany(f"INSERT INTO fts_{detail} (rowid, body) VALUES (?, ?)",
                     [(key, " ".join(tokens)) for key, tokens in docs])
    conn.execute("COMMIT")
    return time.perf_counter() - t0


def fts5_search(conn: sqlite3.Connection, detail: str, authz: AuthzContext,
                tokens: list[str], limit: int = 10) -> list[tuple[int, float]]:
    terms = sorted(set(tokens))
    if not terms:
        return []
    visible, params = visibility_sql(authz)
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    sql = (f"SELECT c.chunk_key, bm25(fts_{detail}) AS s FROM fts_{detail} "
           f"CROSS JOIN chunks c ON c.chunk_key = fts_{detail}.rowid "
           f"WHERE fts_{detail} MATCH ? AND c.tenant_id = ? AND {visible} "
           "ORDER BY s, c.chunk_id LIMIT ?")
    return [(int(k), -float(s)) for k, s in conn.execute(sql, (match, authz.tenant, *params,
                                                               limit))]


def timed(label: str, calls: list[object]) -> tuple[float, float]:
    best: list[float] = []
    for _ in range(3):
        latencies = []
        for call in calls:
            t0 = time.perf_counter()
            call()  # type: ignore[operator]
            latencies.append(time.perf_counter() - t0)
        if not best or sum(latencies) < sum(best):
            best = latencies
    qps, p50 = len(best) / sum(best), 1000 * statistics.median(best)
    print(f"    {label}: {qps:,.0f} q/s, p50 {p50:.3f} ms")
    return qps, p50


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--db", type=Path, default=None,
                        help="a SciFact store from benchmarks/beir.py (default: ingest anew)")
    args = parser.parse_args()
    data = beir.load(args.data)
    settings = beir.bench_settings("none", 16)
    text_bytes = sum(len(d.content) for d in beir.documents(data.corpus))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fts5.db"
        if args.db is not None:
            shutil.copyfile(args.db, path)
        store = SQLiteStore(path)
        if args.db is None:
            store.ensure_tenant(settings.tenant)
            beir.ingest(store, settings, data)
        store._read("PRAGMA wal_checkpoint(TRUNCATE)")
        return compare(store, path, settings, data, text_bytes)


def compare(store: SQLiteStore, path: Path, settings: beir.Settings, data: beir.Dataset,
            text_bytes: int) -> int:
    tenant = settings.tenant
    half = beir.bench_settings("none", 16, [f"group:doc-{d['_id']}#member@{beir.HALF}"
                                            for d in data.corpus[::2]])
    readers = {"reads all": StoreAuthorizer(store, settings).context_for(tenant, beir.BENCH),
               "reads half": StoreAuthorizer(store, half).context_for(tenant, beir.HALF)}
    tokenizer = Tokenizer.from_settings(settings.lexical)
    conn = sqlite3.connect(path, isolation_level=None)
    docs = [(key, tokenizer.tokenize(text)) for key, text in head_chunks(conn, store, tenant)]
    queries = [tokenizer.tokenize(q) for _, q in data.queries]
    print(f"SciFact: {len(docs)} head chunks, {text_bytes / 1e6:.2f} MB of text, "
          f"{len(queries)} queries")
    stored = table_bytes(conn, ("lexical_postings", "lexical_terms", "lexical_terms_by_term"))
    print(f"  the store's lexical plane as ingested: {stored / 1e6:.2f} MB = "
          f"{stored / text_bytes:.3f} bytes per byte of text")
    name = "store postings layout (rebuilt)"
    seconds = {name: build_postings(conn, docs)}
    sizes = {name: table_bytes(conn, ("cmp_%",))}
    for detail in ("full", "none"):
        name = f"FTS5 contentless detail={detail}"
        seconds[name] = build_fts5(conn, docs, detail)
        sizes[name] = table_bytes(conn, (f"fts_{detail}%",))
    for name in sizes:
        print(f"  {name}: {sizes[name] / 1e6:.2f} MB = {sizes[name] / text_bytes:.3f} bytes "
              f"per byte of text; index {seconds[name]:.2f} s")
    key_of = dict(conn.execute("SELECT chunk_id, chunk_key FROM chunks "
                               "WHERE tenant_id = ?", (tenant,)).fetchall())
    doc_of = {str(key_of[r.chunk.chunk_id]): r.source_id
              for r in store.get_chunks(readers["reads all"], sorted(key_of))}
    idf_of = store_idf(store, tenant)
    for reader, authz in readers.items():
        print(f"  governed top 10, {reader} (the ACL filter inside the query):")
        postings = [lambda q=q, a=authz, i=idf_of: store_search(store, a, q, i)
                    for q in queries]
        timed("store postings, SQL", postings)
        ours = [[key_of[h.chunk_id] for h in store_search(store, authz, q, idf_of)]
                for q in queries]
        print(f"      postings: {sum(1 for r in ours if r)}/{len(queries)} queries with hits, "
              f"nDCG@10 {quality(ours, doc_of, data):.4f}")
        for detail in ("full", "none"):
            calls = [lambda q=q, d=detail, a=authz: fts5_search(conn, d, a, q)
                     for q in queries]
            timed(f"FTS5 detail={detail}", calls)
            theirs = [[k for k, _ in fts5_search(conn, detail, authz, q)] for q in queries]
            same = sum(1 for a, b in zip(ours, theirs, strict=True) if a == b)
            # FTS5's bm25() has its own idf and fixed k1 1.2, b 0.75: not the store's BM25.
            print(f"      FTS5 detail={detail}: top 10 equal to the postings' on {same}/"
                  f"{len(queries)} queries, nDCG@10 {quality(theirs, doc_of, data):.4f}")
    conn.close()
    store.close()
    return 0


def quality(rankings: list[list[int]], doc_of: dict[str, str], data: beir.Dataset) -> float:
    """nDCG@10 over the queries (documents ranked by their best chunk, as beir.py does)."""
    return statistics.mean(
        beir.ndcg_at(beir.to_docs([str(k) for k in ranked], doc_of), data.qrels[qid])
        for (qid, _), ranked in zip(data.queries, rankings, strict=True))


def store_idf(store: SQLiteStore, tenant: str) -> tuple[float, float]:
    stats = store.lexical_stats(tenant)
    return float(stats.n_chunks), stats.total_length / max(stats.n_chunks, 1)


def store_search(store: SQLiteStore, authz: AuthzContext, tokens: list[str],
                 stats: tuple[float, float]) -> list[LexicalHit]:
    """The store's SQL lexical search (postings, the ACL filter inside), idf as the
    retriever computes it."""
    n, avg = stats
    terms = sorted(set(tokens))
    df = store.document_frequencies(authz.tenant, terms)
    term_idf = {t: idf(int(n), df[t]) for t in terms if df[t]}
    return store.lexical_search(authz, term_idf, k1=1.2, b=0.75, avg_length=avg,
                                limit=10)


if __name__ == "__main__":
    sys.exit(main())
