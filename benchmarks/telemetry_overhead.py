"""The cost of tracing on ``ask``: p50 latency with the exporter off, then on.

    python benchmarks/telemetry_overhead.py [--chunks 50000] [--asks 100]

Ingests the fixed-seed synthetic corpus of ``benchmarks/ingest_query.py`` (``--chunks``
sets its size; the issue's figure is for 50,000), approves every SIRE record, then times
``--asks`` questions twice: with no exporter (the OpenTelemetry API's no-op spans, the
default), and with the SDK exporting every span over OTLP/HTTP to a receiver on 127.0.0.1
(sample ratio 1, the worst case). OpenTelemetry's providers can be installed only once per
process, so "off" is always measured first; the questions are the same in both passes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest_query import (
    LABELS,
    PRINCIPAL,
    SyntheticSource,
    approve_all,
    percentile,
)

from affidavit.config.settings import AuthzSettings, ChunkingSettings, Settings, TelemetrySettings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.observability import traces as telemetry
from affidavit.store import SQLiteStore


class _Sink(BaseHTTPRequestHandler):
    received = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        _Sink.received += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def time_asks(engine: Engine, questions: list[str]) -> tuple[list[float], float]:
    """Each ask's wall time (ms), and the process CPU seconds of the whole pass (the export
    thread's included; neighbours' load on a shared machine excluded)."""
    out = []
    cpu = time.process_time()
    for question in questions:
        start = time.perf_counter()
        engine.ask(PRINCIPAL, question)
        out.append((time.perf_counter() - start) * 1000)
    return out, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=50000)
    parser.add_argument("--asks", type=int, default=100)
    args = parser.parse_args()
    settings = Settings(
        authz=AuthzSettings(tuples=(f"group:g0#member@{PRINCIPAL}",
                                    f"group:g1#member@{PRINCIPAL}")),
        grants={PRINCIPAL: LABELS},
    ).replace(chunking=ChunkingSettings(max_chars=700, min_chars=100))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        store = SQLiteStore(db)
        source = SyntheticSource(n_docs=max(1, args.chunks // 6))
        summary = Ingestor(store, settings).run([source])
        approve_all(db, settings.tenant)
        rng = random.Random(11)
        questions = [" ".join(rng.choices(source.vocab[50:3000], k=rng.randint(2, 4)))
                     for _ in range(args.asks)]
        engine = Engine(store, settings)
        time_asks(engine, questions[:5])  # warm caches
        first, _ = time_asks(engine, questions)  # drift control: the same pass, off
        off, cpu_off = time_asks(engine, questions)
        telemetry.configure(TelemetrySettings(
            exporter="otlp", endpoint=f"http://127.0.0.1:{server.server_address[1]}"))
        time_asks(engine, questions[:5])
        on, cpu_on = time_asks(engine, questions)
        telemetry.flush()
        store.close()
    # The receiver stays up: the exporters send their last batch when the process exits.
    p50_off, p50_on = percentile(off, 50), percentile(on, 50)
    print(f"corpus: {summary.chunks_written} chunks; {args.asks} asks per pass")
    print(f"ask p50 exporter off: {p50_off:.2f} ms (mean {statistics.mean(off):.2f}); "
          f"the pass before it: {percentile(first, 50):.2f} ms (drift between passes)")
    print(f"ask p50 exporter on:  {p50_on:.2f} ms (mean {statistics.mean(on):.2f}); "
          f"{_Sink.received} OTLP requests received")
    print(f"overhead: {p50_on - p50_off:+.2f} ms ({100 * (p50_on / p50_off - 1):+.1f}%) on "
          f"p50; CPU per ask {1000 * cpu_off / len(off):.2f} -> {1000 * cpu_on / len(on):.2f} "
          f"ms ({100 * (cpu_on / cpu_off - 1):+.1f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
