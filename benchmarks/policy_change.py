"""Time-to-serve after a policy change: one RESTRICTED keyword added over a large corpus.

    python benchmarks/policy_change.py [--chunks 50000] [--db PATH]

Ingests the synthetic corpus of ingest_query.py (fixed seed), approves every SIRE, then adds
one RESTRICTED keyword that only a few documents contain. Every head is then label-stale and
withheld. Prints how long the catch-up (:mod:`affidavit.ingest.catch_up`, what the CLI runs
before its next search and the service runs in the background) takes to serve again every
document the change does not affect, how many it restamped and how many it left withheld,
and, as the reference in the same run, how long ``affidavit requalify --roll`` took over a
second such change (before the catch-up, nothing served until an operator ran it). Fails
when the catch-up restamped nothing, left nothing withheld, or the corpus answers no search
afterwards.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import re
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from affidavit.config.settings import AuthzSettings, ChunkingSettings, Settings
from affidavit.engine.query import Engine
from affidavit.ingest.catch_up import catch_up, stale_heads
from affidavit.ingest.requalify import Requalifier
from affidavit.ingest.run import Ingestor
from affidavit.store import SQLiteStore

HERE = Path(__file__).resolve().parent
NOW = "2026-01-01T00:00:00+00:00"


def _ingest_query_module() -> Any:
    """The synthetic corpus of ingest_query.py (one corpus for both benchmarks)."""
    spec = importlib.util.spec_from_file_location("ingest_query", HERE / "ingest_query.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _ingest_query_module()
WORD = re.compile(r"[a-z]+")


def rare_words(documents: list[Any], count: int) -> list[tuple[str, int]]:
    """The ``count`` words found in the fewest documents (ties in alphabetical order), each
    with the number of documents it is in."""
    df: collections.Counter[str] = collections.Counter()
    for document in documents:
        df.update(set(WORD.findall(document.content.decode().lower())))
    return sorted(df.items(), key=lambda item: (item[1], item[0]))[:count]


def with_keywords(settings: Settings, *keywords: str) -> Settings:
    return settings.replace(sensitivity=replace(settings.sensitivity,
                                                restricted_keywords=tuple(keywords)))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chunks", type=int, default=50000)
    parser.add_argument("--db", default=None, help="database file (default: a temp dir)")
    args = parser.parse_args()
    principal = BENCH.PRINCIPAL
    settings = Settings(
        authz=AuthzSettings(tuples=(f"group:g0#member@{principal}",
                                    f"group:g1#member@{principal}")),
        grants={principal: BENCH.LABELS},
    ).replace(chunking=ChunkingSettings(max_chars=700, min_chars=100))
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(args.db) if args.db else Path(tmp) / "bench.db"
        store = SQLiteStore(db)
        store.ensure_tenant(settings.tenant)
        synthetic = BENCH.SyntheticSource(
            n_docs=max(1, args.chunks // (BENCH.PARAGRAPHS_PER_DOC + 1)))
        source = BENCH.GeneratedSource(synthetic)
        t0 = time.perf_counter()
        summary = Ingestor(store, settings).run([source])
        documents = summary.count("ingested")
        print(f"ingest: {summary.chunks_written:,} chunks from {documents:,} documents in "
              f"{time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        proposed = [r.sire_id for r in store.list_sire(settings.tenant, state="PROPOSED")]
        for start in range(0, len(proposed), 1000):
            store.activate_sire(settings.tenant, proposed[start:start + 1000],
                                by="user:curator", at=NOW)
        print(f"approved {len(proposed):,} SIRE records in {time.perf_counter() - t0:.1f} s",
              flush=True)
        (first, in_docs), (second, _) = rare_words(source.documents, 2)

        changed = with_keywords(settings, first)
        stale = len(stale_heads(store, changed))
        print(f"RESTRICTED keyword {first!r} (in {in_docs} documents) added: {stale:,} of "
              f"{documents:,} documents label-stale, withheld", flush=True)
        cpu, t0 = time.process_time(), time.perf_counter()
        report = catch_up(store, changed)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu
        print(f"time-to-serve (catch-up): {seconds:.1f} s (CPU {cpu:.1f} s) for "
              f"{stale:,} documents = {stale / max(seconds, 1e-9):.0f} documents/s; "
              f"{len(report.restamped):,} serve again, {len(report.affected):,} affected "
              f"stay withheld until requalified; load average {os.getloadavg()[0]:.2f}")
        hits = Engine(store, changed).search(principal, " ".join(synthetic.vocab[60:63]),
                                             limit=10)
        print(f"search after the catch-up: {len(hits)} hits")

        # The reference: before the catch-up, nothing served until requalify --roll.
        rolled = with_keywords(settings, first, second)
        t0 = time.perf_counter()
        rolled_report = Requalifier(store, rolled).roll()
        print(f"reference, requalify --roll over a second keyword: "
              f"{time.perf_counter() - t0:.1f} s ({len(rolled_report['restamped']):,} "
              f"restamped, {len(rolled_report['derived']):,} derived again)")
        store.close()
    if not report.restamped or not report.affected or not hits:
        print("measured no real work: nothing restamped, nothing affected or no hits",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
