"""Reference-aware retrieval: the recall gain of ``reference_depth=1`` and its cost.

    python benchmarks/references.py [--topics 60] [--k 3] [--runs 3]

Generates a corpus where each question's answer lives in a document the query barely
matches, linked by a reference from the document it does match:

* per topic ``t`` (a harbour with a made-up name): an overview that matches the question
  well ("berth fee", "harbour", the harbour's name, several times) and a tariff sheet that
  holds the answer (the fee) and names the harbour once;
* a SupportedBy reference from each overview to its tariff sheet (created through
  :func:`affidavit.references.links.add_reference`, as a reader of both ends);
* per topic, three notices that match the question as well as the overview does and
  hold no answer: they fill the first pass's top ``k``.

For each topic it asks "What is the berth fee at harbour <name>?" through
``Engine.search`` with ``reference_depth`` 0 and 1 and prints recall@k (the tariff sheet
among the top ``k`` hits) and the mean and p95 search time in ms. Fixed names and numbers:
every run measures the same data.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.policy.policy import SensitivityPolicy
from affidavit.references.links import add_reference
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

READER = "user:bench"
NOTICES = 3
SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po")


def harbour_name(topic: int) -> str:
    a, b, c = topic % 10, (topic // 10) % 10, (topic // 100) % 10
    return (SYLLABLES[a] + SYLLABLES[b] + SYLLABLES[c] + "port").capitalize()


def write_corpus(root: Path, topics: int) -> None:
    root.mkdir(parents=True)
    head = '---\nacl: ["*"]\nclassification: PUBLIC\n---\n'
    for t in range(topics):
        name = harbour_name(t)
        (root / f"overview-{t:03d}.md").write_text(
            f"{head}# Harbour {name} overview\n\nHarbour {name}: berth fee policy, berth "
            f"fee reviews and harbour berth fee notices for harbour {name}. The berth fee is "
            "set in the tariff sheet.\n", encoding="utf-8")
        for n in range(NOTICES):
            (root / f"notice-{t:03d}-{n}.md").write_text(
                f"{head}# Harbour {name} notice {n}\n\nHarbour {name} berth fee notice {n}: "
                f"harbour {name} berth fee changes are announced here.\n", encoding="utf-8")
        (root / f"tariff-{t:03d}.md").write_text(
            f"{head}# Tariff sheet {t}\n\nFor {name} the fee is {40 + t} euros per night.\n",
            encoding="utf-8")


def build(root: Path, db: Path, topics: int) -> SQLiteStore:
    write_corpus(root, topics)
    store = SQLiteStore(db)
    settings = Settings()
    Ingestor(store, settings).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    proposed = [r.sire_id for r in store.list_sire(settings.tenant, state="PROPOSED")]
    store.activate_sire(settings.tenant, proposed, by="user:bench", at="2026-01-01")
    store.grant(settings.tenant, READER, ["INTERNAL"], at="2026-01-01")
    engine = Engine(store, settings)
    authz = engine.authz_context(READER)
    policy = SensitivityPolicy.from_settings(settings.sensitivity)
    nodes = {h.alias: h.node_id for h in store.heads(settings.tenant)}
    for t in range(topics):
        add_reference(store, authz, policy, source=nodes[f"overview-{t:03d}.md"],
                      target=nodes[f"tariff-{t:03d}.md"], kind="SupportedBy",
                      reason="the fee quoted in the overview", actor=READER)
    return store


def measure(engine: Engine, nodes: dict[str, str], topics: int, k: int, depth: int,
            runs: int) -> tuple[float, float, float]:
    found, times = 0, []
    for t in range(topics):
        question = f"What is the berth fee at harbour {harbour_name(t)}?"
        for run in range(runs):
            start = time.perf_counter()
            hits = engine.search(READER, question, limit=k, reference_depth=depth)
            times.append((time.perf_counter() - start) * 1000)
            if run == 0:
                found += nodes[f"tariff-{t:03d}.md"] in {h.doc_id for h in hits}
    times.sort()
    return found / topics, statistics.fmean(times), times[int(0.95 * (len(times) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=60)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = build(Path(tmp) / "corpus", Path(tmp) / "bench.db", args.topics)
        try:
            engine = Engine(store, Settings())
            nodes = {h.alias: h.node_id for h in store.heads("default")}
            print(f"{args.topics} topics, {(2 + NOTICES) * args.topics} documents, "
                  f"{args.topics} references; recall@{args.k} of the answer document")
            for depth in (0, 1):
                recall, mean, p95 = measure(engine, nodes, args.topics, args.k, depth,
                                            args.runs)
                print(f"reference_depth={depth}: recall@{args.k} {recall:.3f}  "
                      f"search mean {mean:.2f} ms  p95 {p95:.2f} ms")
        finally:
            store.close()


if __name__ == "__main__":
    main()
