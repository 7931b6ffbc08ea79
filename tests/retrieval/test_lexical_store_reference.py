"""The governed lexical path (SQL scoring inside the store) equals bm25s on the same tokens."""

from __future__ import annotations

import bm25s
import pytest
from tests.index.test_bm25_reference import CORPUS, QUERIES

from affidavit.config.settings import AclSettings, Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore
from affidavit.text.tokenize import Tokenizer


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("corpus")
    for i, text in enumerate(t for t in CORPUS if t.strip()):
        (root / f"doc{i:02d}.txt").write_text(text + "\n", encoding="utf-8")
    settings = Settings(acl=AclSettings(default=("*",)), grants={"*": ("INTERNAL",)})
    store = SQLiteStore(tmp_path_factory.mktemp("db") / "ref.db")
    summary = Ingestor(store, settings).run([LocalFolderSource(root, max_document_bytes=10**6)])
    assert summary.count("ingested") == len([t for t in CORPUS if t.strip()])
    return Engine(store, settings)


@pytest.mark.parametrize("query", QUERIES)
def test_store_scores_equal_bm25s(engine: Engine, query: str) -> None:
    hits = engine.search("user:anyone", query, limit=1000)
    ids = [str(row[0]) for row in engine.store._read(  # type: ignore[attr-defined]
        "SELECT chunk_id FROM chunks WHERE is_head = 1 ORDER BY chunk_id")]
    texts = [r.chunk.text for r in engine.store.get_chunks(engine.authz_context("user:anyone"),
                                                           ids)]
    assert len(texts) == len(ids)
    tokenizer = Tokenizer()
    docs = [tokenizer.tokenize(t) for t in texts]
    terms = sorted(set(tokenizer.tokenize(query)))  # the engine scores each query term once
    reference = bm25s.BM25(k1=1.5, b=0.75, method="lucene", dtype="float64")
    reference.index(docs, show_progress=False)
    expected = {texts[i]: float(s) for i, s in enumerate(reference.get_scores(terms))
                if s > 0} if terms else {}
    got = {h.text: h.explain["lexical_score"] for h in hits}
    assert set(got) == set(expected)
    for text, score in expected.items():
        assert got[text] == pytest.approx(score, abs=1e-6, rel=0)
    ordered = [h.explain["lexical_score"] for h in hits]
    assert ordered == sorted(ordered, reverse=True)
