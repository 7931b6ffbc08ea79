"""Scores a caller sees do not tell whether documents it may not read contain a term.

A BM25 score uses the tenant's term statistics, hidden documents included: adding hidden
documents that contain a query term lowers that term's idf and so every visible score. The
caller's view of a hit is its rank and fused (RRF) score, which only depend on rankings
among what the caller may read; the raw channel scores are the operator's (``--explain``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

VISIBLE = {
    "harbour.md": "The lighthouse keeper logs the harbour lights every night.",
    "coast.md": "Coastal lighthouse maintenance is scheduled twice a year; lighthouse lamps "
                "are replaced in spring.",
    "menu.md": "The canteen menu changes weekly.",
}
HIDDEN = {f"board-{n}.md": "Lighthouse acquisition: lighthouse bid, lighthouse terms."
          for n in range(6)}
RAW_KEYS = {"lexical_score", "lexical_rank", "vector_score", "vector_rank", "fused_score"}


def _write(root: Path, files: dict[str, str], acl: str) -> None:
    root.mkdir(exist_ok=True)
    for name, body in files.items():
        (root / name).write_text(f"---\nacl: [\"{acl}\"]\nclassification: PUBLIC\n---\n"
                                 f"# {name}\n\n{body}\n", encoding="utf-8")


def _ingest(store: SQLiteStore, root: Path) -> None:
    Ingestor(store, Settings()).run([LocalFolderSource(root, max_document_bytes=1 << 20)])


def _caller_view(engine: Engine) -> list[dict[str, Any]]:
    return [hit.to_dict() for hit in engine.search("user:alice", "lighthouse keeper")]


def test_caller_visible_scores_do_not_change_when_hidden_documents_contain_the_term(
        tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    _write(root, VISIBLE, "*")
    store = SQLiteStore(tmp_path / "scores.db")
    try:
        _ingest(store, root)
        engine = Engine(store, Settings())
        before = _caller_view(engine)
        operator_before = [h.to_dict(operator=True)["lexical_score"]
                           for h in engine.search("user:alice", "lighthouse keeper")]
        _write(root, HIDDEN, "user:board")
        _ingest(store, root)
        after = _caller_view(engine)
        operator_after = [h.to_dict(operator=True)["lexical_score"]
                          for h in engine.search("user:alice", "lighthouse keeper")]
    finally:
        store.close()
    assert [h["title"] for h in after] == [h["title"] for h in before]
    assert after == before, "a caller-visible field moved with documents the caller cannot read"
    assert operator_after != operator_before, "the raw statistics do move: operator data only"
    assert [h["rank"] for h in after] == list(range(1, len(after) + 1))
    assert all(not RAW_KEYS & set(hit) for hit in after)
