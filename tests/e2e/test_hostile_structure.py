"""Hostile structure is bounded at ingest: over a cap is a quarantine with its reason code.

Runs a real ingestion into a real SQLite file. A 40 KB JSON document that used to become
tens of thousands of chunks is quarantined (EXPANSION_LIMIT), a document that would make
more chunks than ``[ingest] max_chunks_per_document`` is quarantined (TOO_MANY_CHUNKS), and
neither leaves a version, a chunk or its text behind.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from pathlib import Path

from affidavit.config.settings import IngestSettings, Settings
from affidavit.ingest.run import Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore
from tests.fixtures.hostile.build import long_key_spine_json

SECRET_KEY = "Lighthouse acquisition price"


def run_ingest(folder: Path, database: Path, ingest: IngestSettings) -> tuple[dict, float]:
    settings = Settings(ingest=ingest)
    store = SQLiteStore(database)
    started = time.monotonic()
    try:
        source = LocalFolderSource(folder, max_document_bytes=ingest.max_document_bytes)
        summary = Ingestor(store, settings).run([source])
    finally:
        store.close()
    return summary.to_dict(), time.monotonic() - started


def stored(database: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(database) as conn:
        return list(conn.execute(sql))


def test_hostile_structure_is_quarantined_and_leaves_nothing_behind(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "spine.json").write_bytes(long_key_spine_json())
    secret_spine = {SECRET_KEY * 300: {f"k{i}": 0 for i in range(3000)}}
    (corpus / "secret.json").write_text(json.dumps(secret_spine), encoding="utf-8")
    (corpus / "vendors.json").write_text(json.dumps({"vendors": [
        {"name": "Acme", "tier": 1}, {"name": "Bolt", "tier": 2}]}), encoding="utf-8")
    for name in ("spine.json", "secret.json", "vendors.json"):
        (corpus / f"{name}.meta.yaml").write_text('acl: ["*"]\n', encoding="utf-8")
    database = tmp_path / "store.db"

    summary, seconds = run_ingest(corpus, database, IngestSettings())

    reasons = {q["alias"]: q["reason_code"] for q in summary["quarantined"]}
    assert reasons == {"spine.json": "EXPANSION_LIMIT", "secret.json": "EXPANSION_LIMIT"}
    assert summary["ingested"] == 1
    assert seconds < 10
    assert stored(database, "SELECT alias FROM versions") == [("vendors.json",)]
    # Every stored text: chunks, and the deflated blobs and versions' texts they may be
    # spans of.
    texts = " ".join([*(row[0] for row in stored(database, "SELECT text FROM chunks")), *(
        (zlib.decompress(row[0]) if row[1] == "zlib" else bytes(row[0])).decode("utf-8", "replace")
        for row in stored(database, "SELECT content, encoding FROM blobs")), *(
        zlib.decompress(row[0]).decode() for row in stored(
            database, "SELECT text FROM version_texts"))])
    messages = " ".join(row[0] for row in stored(database, "SELECT message FROM quarantine"))
    assert SECRET_KEY not in texts and SECRET_KEY not in messages


def test_a_document_over_the_chunk_cap_is_quarantined(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    paragraphs = "\n\n".join(f"Paragraph {i} " + "word " * 100 for i in range(40))
    (corpus / "long.md").write_text('---\nacl: ["*"]\n---\n' + paragraphs, encoding="utf-8")
    (corpus / "short.md").write_text('---\nacl: ["*"]\n---\nOne paragraph.', encoding="utf-8")
    database = tmp_path / "store.db"

    summary, _ = run_ingest(corpus, database, IngestSettings(max_chunks_per_document=39))

    assert [(q["alias"], q["reason_code"]) for q in summary["quarantined"]] == [
        ("long.md", "TOO_MANY_CHUNKS")]
    assert stored(database, "SELECT alias FROM versions") == [("short.md",)]
    summary, _ = run_ingest(corpus, tmp_path / "roomy.db",
                            IngestSettings(max_chunks_per_document=40))
    assert summary["quarantined"] == [] and summary["chunks_written"] == 40 + 1
