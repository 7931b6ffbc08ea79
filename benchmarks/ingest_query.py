"""Ingest a synthetic corpus through the normal ingest path, then time governed queries.

    python benchmarks/ingest_query.py [--chunks 50000] [--queries 200] [--db PATH]

Prints ingest chunks/s and the bytes the ingest wrote (``/proc/self/io``), the database size
per byte of source text, the share of chunks the query principal may read, the full search
path p50/p99 (ms) for that principal twice -- on the SQL postings, as a one-shot CLI process
searches, and on the in-memory index, as the service searches -- ask latency, and how long
``affidavit sire approve --all`` takes. The corpus is generated from a fixed seed, so every
run measures the same data; ``--chunks`` sets its size (the issue's figures are for 50000:
8,333 documents).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from affidavit.config.settings import AuthzSettings, ChunkingSettings, Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.store import SQLiteStore

GROUPS = 20
PARAGRAPHS_PER_DOC = 5
LABELS = ("PUBLIC", "INTERNAL", "CONFIDENTIAL", "FINANCIAL", "PII", "SECRET")
PRINCIPAL = "user:bench"


def vocabulary(rng: random.Random, size: int = 20000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 10))))
    return sorted(words)


class SyntheticSource:
    """A Transport over generated Markdown documents with mixed labels and ACLs."""

    source_system = "bench"

    def __init__(self, n_docs: int, seed: int = 7):
        self.n_docs = n_docs
        self.seed = seed
        rng = random.Random(seed)
        self.vocab = vocabulary(rng)
        # Cumulative weights, given once: choices() with ``weights`` sums all 20,000 of them
        # again for every paragraph (the same draws either way).
        self.cum_weights = list(itertools.accumulate(1.0 / (rank + 1)
                                                     for rank in range(len(self.vocab))))

    def paragraph(self, rng: random.Random) -> str:
        words = rng.choices(self.vocab, cum_weights=self.cum_weights, k=rng.randint(70, 90))
        return " ".join(words).capitalize() + "."

    def list_documents(self) -> Iterator[SourceDocument]:
        rng = random.Random(self.seed + 1)
        for i in range(self.n_docs):
            body = "\n\n".join(self.paragraph(rng) for _ in range(PARAGRAPHS_PER_DOC))
            content = f"# Document {i}\n\n{body}\n".encode()
            group = rng.randrange(GROUPS)
            meta = DocumentMetadata(source_id=f"doc-{i:06d}", title=f"Document {i}",
                                    acl=(f"group:g{group}#member",),
                                    classification=rng.choice(LABELS))
            yield SourceDocument("bench", f"doc-{i:06d}", sha256_hex(content), content,
                                 f"doc-{i:06d}.md", meta)


class GeneratedSource:
    """The documents of a :class:`SyntheticSource`, generated before the clock starts: the
    ingest figures measure the ingest, not the generator."""

    source_system = "bench"

    def __init__(self, source: SyntheticSource):
        self.documents = list(source.list_documents())

    def list_documents(self) -> Iterator[SourceDocument]:
        return iter(self.documents)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


class _Sample:
    """A view of the store that offers only the first ``limit`` chunks to embed."""

    def __init__(self, store: SQLiteStore, limit: int):
        self.store, self.limit = store, limit

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def chunks_missing_vectors(self, tenant: str, model_id: str,
                               limit: int) -> list[tuple[str, str]]:
        return self.store.chunks_missing_vectors(tenant, model_id, min(limit, self.limit))

    def put_vectors(self, tenant: str, model_id: str, vectors: dict) -> int:  # type: ignore[type-arg]
        self.limit -= len(vectors)
        return self.store.put_vectors(tenant, model_id, vectors)


def measure_vectors(store: SQLiteStore, settings: Settings, backend_name: str,
                    sample: int) -> None:
    """Vector ingest throughput: embed (a sample of) the chunks and store the vectors."""
    if backend_name == "none":
        return
    from affidavit.config.settings import VectorSettings
    from affidavit.index.backends import make_backend
    from affidavit.index.embed import embed_missing

    try:
        backend = make_backend(VectorSettings(backend=backend_name, batch_size=64))
    except Exception as exc:
        print(f"vectors ({backend_name}): unavailable: {exc}")
        return
    assert backend is not None
    target = _Sample(store, sample) if sample else store
    report = embed_missing(target, settings.tenant, backend, batch_size=64)  # type: ignore[arg-type]
    print(f"vector ingest ({backend.model_id}): {report.embedded} chunks in "
          f"{report.seconds:.1f} s = {report.per_second:.1f} chunks/s on "
          f"{os.cpu_count()} cores")


def io_counters() -> dict[str, int]:
    """This process's I/O counters (Linux): ``write_bytes`` reached the block layer,
    ``wchar`` went through write(2) whatever the file system."""
    try:
        text = Path("/proc/self/io").read_text()
    except OSError:
        return {}
    return {k: int(v) for k, v in (line.split(": ") for line in text.splitlines())}


def database_bytes(db: Path) -> int:
    """The database file and its write-ahead log, as they sit on disk."""
    return sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists())


def approve_all(db: Path, tenant: str) -> float:
    """``affidavit sire approve --all`` as an operator runs it; returns seconds."""
    from affidavit.cli.main import main as cli_main

    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(["sire", "approve", "--all", "--by", "operator:bench",
                         "--db", str(db), "--tenant", tenant])
    if code != 0:
        raise SystemExit(f"sire approve --all failed with exit code {code}")
    return time.perf_counter() - start


def instrument(engine: Engine) -> dict[str, list[float]]:
    """Wrap the stages of Engine.ask with timers; returns the per-stage times (ms)."""
    import affidavit.engine.answering as answering_module

    stages: dict[str, list[float]] = {}

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                stages.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
        return wrapper

    engine.authorizer.context_for = timed("authz_context", engine.authorizer.context_for)
    engine.retriever.search = timed("retrieve", engine.retriever.search)  # type: ignore[method-assign]
    engine.store.active_sire = timed("sire_lookup", engine.store.active_sire)  # type: ignore[method-assign]
    engine.ledger.append = timed("ledger_append", engine.ledger.append)  # type: ignore[method-assign]
    engine.provider.generate = timed("generate", engine.provider.generate)  # type: ignore[method-assign]
    # The answer stages are called from affidavit.engine.answering, by the names it imported.
    for name in ("compile_prompt", "extract_claims", "verify_claims", "evaluate_layers"):
        setattr(answering_module, name, timed(name, getattr(answering_module, name)))
    return stages


def time_search(engine: Engine, queries: list[str], label: str) -> None:
    """The full search path a caller uses (authz context, lexical BM25 with the filter
    inside, hits read back with their derived text, SIRE state), each query once: p50/p99
    wall time and CPU p50 (on a shared machine the CPU time is the steadier figure)."""
    timings: list[float] = []
    cpu_timings: list[float] = []
    results = 0
    for query in queries:
        t0, c0 = time.perf_counter(), time.process_time()
        results += len(engine.search(PRINCIPAL, query, limit=10))
        timings.append((time.perf_counter() - t0) * 1000)
        cpu_timings.append((time.process_time() - c0) * 1000)
    print(f"{label}: {len(queries)} queries, {results} hits, p50 "
          f"{percentile(timings, 50):.2f} ms, p99 {percentile(timings, 99):.2f} ms, mean "
          f"{statistics.mean(timings):.2f} ms; CPU p50 {percentile(cpu_timings, 50):.2f} ms; "
          f"load average {os.getloadavg()[0]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=50000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--db", default=None, help="database file (default: a temp dir)")
    parser.add_argument("--vectors", default="minilm", choices=["none", "hash", "minilm"],
                        help="embedding backend whose ingest throughput is measured")
    parser.add_argument("--vector-sample", type=int, default=1000,
                        help="chunks embedded for the throughput figure (0: all)")
    parser.add_argument("--stop-after", default="all", choices=["ingest", "search", "all"],
                        help="end after the ingest figures, or after the SQL search figures "
                             "(to measure code from before issue 19, whose approve-all is "
                             "quadratic and which has no in-memory index)")
    args = parser.parse_args()
    settings = Settings(
        authz=AuthzSettings(tuples=(
            f"group:g0#member@{PRINCIPAL}", f"group:g1#member@{PRINCIPAL}")),
        grants={PRINCIPAL: LABELS},
    )
    # Each paragraph is one chunk: paragraphs are ~500 characters and min_chars keeps
    # neighbours from merging.
    settings = settings.replace(chunking=ChunkingSettings(max_chars=700,
                                                                    min_chars=100))
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(args.db) if args.db else Path(tmp) / "bench.db"
        store = SQLiteStore(db)
        store.ensure_tenant(settings.tenant)
        source = SyntheticSource(n_docs=max(1, args.chunks // (PARAGRAPHS_PER_DOC + 1)))
        generated = GeneratedSource(source)
        text_bytes = sum(len(d.content) for d in generated.documents)
        before = io_counters()
        start, start_cpu = time.perf_counter(), time.process_time()
        summary = Ingestor(store, settings).run([generated])
        elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        after = io_counters()
        chunks = summary.chunks_written
        # CPU time too: on a shared machine the wall time also measures the neighbours.
        print(f"ingest: {chunks} chunks from {summary.count('ingested')} documents in "
              f"{elapsed:.1f} s = {chunks / elapsed:.0f} chunks/s (CPU {cpu:.1f} s = "
              f"{chunks / max(cpu, 1e-9):.0f} chunks per CPU second); load average "
              f"{os.getloadavg()[0]:.2f}")
        for counter in ("write_bytes", "wchar"):
            if counter in after:
                written = after[counter] - before[counter]
                print(f"ingest {counter}: {written / 1e6:.1f} MB "
                      f"({written / max(text_bytes, 1):.1f} per byte of text)")
        store._read("PRAGMA wal_checkpoint(TRUNCATE)")  # the log's pages belong to the file
        size = database_bytes(db)
        print(f"database: {size / 1e6:.1f} MB for {text_bytes / 1e6:.1f} MB of text = "
              f"{size / max(text_bytes, 1):.2f} bytes per byte of text")
        if args.stop_after == "ingest":
            store.close()
            return 0
        measure_vectors(store, settings, args.vectors, args.vector_sample)
        engine = Engine(store, settings)
        authz = engine.authz_context(PRINCIPAL)
        visible = store.get_chunks(authz, [])  # warm the connection
        del visible
        readable = store._read(
            "SELECT COUNT(*) FROM chunks c JOIN acl_tokens a ON a.tenant_id = c.tenant_id "
            "AND a.version_id = c.version_id WHERE a.token IN (?, ?)",
            ("group:g0#member", "group:g1#member"))[0][0]
        print(f"principal {PRINCIPAL} may read {readable} of {chunks} chunks "
              f"({100 * int(str(readable)) / max(chunks, 1):.1f}%)")
        rng = random.Random(11)
        queries = [" ".join(rng.choices(source.vocab[50:3000], k=rng.randint(2, 4)))
                   for _ in range(args.queries)]
        time_search(engine, queries, "search, full path, SQL postings (a one-shot CLI "
                    "process: Engine.search with no in-memory index)")
        if args.stop_after == "search":
            store.close()
            return 0
        served = Engine(store, settings, memory_index=True)
        t0 = time.perf_counter()
        served.search(PRINCIPAL, queries[0], limit=10)  # builds the index: not timed below
        print(f"in-memory index built in {time.perf_counter() - t0:.2f} s")
        time_search(served, queries, "search, full path, in-memory index (the service: "
                    "[service] memory_index, default true)")
        seconds = approve_all(db, settings.tenant)
        print(f"sire approve --all: {summary.count('ingested')} records in {seconds:.2f} s")
        stages = instrument(engine)
        ask_timings: list[float] = []
        states: dict[str, int] = {}
        for query in queries[:100]:
            t0 = time.perf_counter()
            result = engine.ask(PRINCIPAL, query)
            ask_timings.append((time.perf_counter() - t0) * 1000)
            states[result.output_state] = states.get(result.output_state, 0) + 1
        print(f"ask (extractive, every SIRE ACTIVE): {len(ask_timings)} questions, "
              f"p50 {percentile(ask_timings, 50):.1f} ms, p99 {percentile(ask_timings, 99):.1f} ms"
              f"; output states {dict(sorted(states.items()))}")
        total = sum(sum(v) for v in stages.values())
        for stage, values in stages.items():
            print(f"  stage {stage:<22} p50 {percentile(values, 50):7.2f} ms  "
                  f"p99 {percentile(values, 99):7.2f} ms  share {100 * sum(values) / total:4.1f}%")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
