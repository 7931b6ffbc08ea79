"""Titles, headings and locators are labelled like paragraphs and withheld like them.

A title (front matter, HTML ``<title>``, JSON/YAML ``title``, DOCX core properties, a first
H1) and every heading get a
label from the same signals as a paragraph; a reader who may not read that label sees a
neutral stand-in in search output, citations and ledger views, and a model never sees a
RESTRICTED one, even when the asker may read it.
"""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docx
import pytest

from affidavit.config.settings import DEFAULT_LABELS, SensitivitySettings, Settings
from affidavit.engine.ledger_record import redact_for
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.llm.providers import ExtractiveProvider, ProviderRequest, ProviderResponse
from affidavit.policy.derived import HEADING_WITHHELD, TITLE_WITHHELD
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore
from affidavit.store.protocol import RelationTuple

NOW = "2026-01-01T00:00:00+00:00"
TENANT = "default"
ACL = 'acl: ["group:staff#member"]'
SECRET = "Lighthouse"  # a RESTRICTED keyword
MONEY = "acquisition"  # a FINANCIAL keyword
BODY = "The office printers on the third floor are replaced in spring by the facilities team."

CORPUS = {
    # front matter title and an H2 heading, each more sensitive than the paragraphs
    "plan.md": f"---\ntitle: {SECRET} {MONEY} plan\n{ACL}\n---\n\n"
               f"Printers overview. {BODY}\n\n## {SECRET} {MONEY} timeline\n\n{BODY}\n",
    # a first H1 as the title
    "memo.md": f"---\n{ACL}\n---\n\n# {SECRET} memo\n\nPrinters memo. {BODY}\n",
    "page.html": f"<html><head><title>Quarterly {MONEY} review</title></head><body>"
                 f"<p>Printers page. {BODY}</p></body></html>",
    "data.json": json.dumps({"title": f"{SECRET} dossier", "body": f"Printers data. {BODY}"}),
    "data.yaml": f"title: {SECRET} register\nbody: Printers register. {BODY}\n",
}
SIDECAR_ACL = {"page.html", "data.json", "data.yaml", "brief.docx"}


def word_document() -> bytes:
    """A DOCX whose core-properties title and one heading are sensitive."""
    document = docx.Document()
    document.core_properties.title = f"{SECRET} brief"
    document.add_paragraph(f"Printers brief. {BODY}")
    document.add_heading(f"Quarterly {MONEY} outlook", 1)
    document.add_paragraph(BODY)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


class RecordingProvider:
    """Answers like the extractive provider and keeps every request it was sent."""

    name = "recording"
    model_id = "recording-1"

    def __init__(self) -> None:
        self.requests: list[ProviderRequest] = []
        self.inner = ExtractiveProvider()

    def generate(self, request: ProviderRequest) -> ProviderResponse:
        self.requests.append(request)
        return self.inner.generate(request)


@dataclass
class Deployment:
    store: SQLiteStore
    settings: Settings
    engine: Engine
    provider: RecordingProvider


def settings() -> Settings:
    return Settings(sensitivity=SensitivitySettings(restricted_keywords=(SECRET,),
                                                    keywords={"FINANCIAL": (MONEY,)}))


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "brief.docx").write_bytes(word_document())
    for name in sorted(SIDECAR_ACL | CORPUS.keys()):
        if name in CORPUS:
            (root / name).write_text(CORPUS[name], encoding="utf-8")
        if name in SIDECAR_ACL:
            (root / f"{name}.meta.yaml").write_text(ACL + "\n", encoding="utf-8")
    config = settings()
    store = SQLiteStore(tmp_path / "a.db")
    summary = Ingestor(store, config).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    assert summary.count("ingested") == len(CORPUS) + 1, summary.to_dict()
    for user in ("user:ann", "user:bo"):
        store.add_tuple(TENANT, RelationTuple("group:staff", "member", user, "test"), at=NOW)
    store.grant(TENANT, "user:ann", ["INTERNAL"], at=NOW)
    store.grant(TENANT, "user:bo", ["INTERNAL", "FINANCIAL", "RESTRICTED"], at=NOW)
    for record in store.list_sire(TENANT, state="PROPOSED"):
        approve_sire(store, TENANT, record.sire_id, by="tester", at=NOW)
    provider = RecordingProvider()
    yield Deployment(store, config, Engine(store, config, provider=provider), provider)
    store.close()


def stored_chunks(store: SQLiteStore) -> list:
    ids = [cid for node in store.heads(TENANT) for cid in _node_chunk_ids(store, node.node_id)]
    return [c for label in DEFAULT_LABELS for c in store.chunks_with_label(TENANT, ids, label)]


def _node_chunk_ids(store: SQLiteStore, node_id: str) -> list[str]:
    with sqlite3.connect(store.path) as conn:
        return [r[0] for r in conn.execute(
            "SELECT chunk_id FROM chunks WHERE node_id = ? AND is_head = 1", (node_id,))]


def test_titles_and_headings_are_classified_like_paragraphs(deployment: Deployment) -> None:
    chunks = stored_chunks(deployment.store)
    titles = {c.derived.alias: (c.derived.title, c.derived.title_label) for c in chunks}
    assert titles["plan.md"] == (f"{SECRET} {MONEY} plan", "RESTRICTED")  # front matter
    assert titles["memo.md"] == (f"{SECRET} memo", "RESTRICTED")  # first H1
    assert titles["page.html"] == (f"Quarterly {MONEY} review", "FINANCIAL")  # <title>
    assert titles["data.json"] == (f"{SECRET} dossier", "RESTRICTED")  # JSON title
    assert titles["data.yaml"] == (f"{SECRET} register", "RESTRICTED")  # YAML title
    assert titles["brief.docx"] == (f"{SECRET} brief", "RESTRICTED")  # DOCX core properties
    headings = {h: lab for c in chunks
                for h, lab in zip(c.heading_path, c.derived.heading_labels, strict=True)}
    assert headings[f"{SECRET} {MONEY} timeline"] == "RESTRICTED"
    assert headings[f"Quarterly {MONEY} outlook"] == "FINANCIAL"
    # The paragraph under that heading keeps its own label: only the heading is sensitive.
    under = [c for c in chunks if f"{SECRET} {MONEY} timeline" in c.heading_path
             and c.text.strip().startswith("The office printers")]
    assert under and all(c.label == "INTERNAL" for c in under)


def _leaks(text: str, *words: str) -> list[str]:
    return [w for w in words if w.casefold() in text.casefold()]


def test_withheld_heading_shows_stand_in_in_search_and_prompt(deployment: Deployment) -> None:
    engine = deployment.engine
    hits = engine.search("user:ann", "printers office spring")
    assert {h.label for h in hits} == {"INTERNAL"}
    assert len({h.doc_id for h in hits}) == len(CORPUS) + 1
    shown = json.dumps([h.to_dict() for h in hits])
    assert _leaks(shown, SECRET, MONEY) == []
    assert HEADING_WITHHELD in shown
    by_title = {h.title for h in hits}
    # The source's own path stands in for a title the reader may not see.
    assert set(CORPUS) | {"brief.docx"} == by_title
    result = engine.ask("user:ann", "When are the office printers replaced?")
    assert deployment.provider.requests, result.to_dict()
    for request in deployment.provider.requests:
        assert _leaks(request.prompt.text, SECRET, MONEY) == []
    assert result.citations and _leaks(json.dumps(result.to_dict()), SECRET, MONEY) == []
    entry = deployment.store.get_ledger(TENANT, result.ledger_record_id)
    assert entry is not None
    view = redact_for(entry, engine.authz_context("user:ann"), deployment.store)
    assert _leaks(json.dumps(view), SECRET, MONEY) == []


def test_restricted_heading_never_reaches_a_model_even_for_a_granted_reader(
        deployment: Deployment) -> None:
    engine = deployment.engine
    hits = engine.search("user:bo", "printers office spring")
    shown = json.dumps([h.to_dict() for h in hits])
    assert f"{SECRET} {MONEY} timeline" in shown and f"{SECRET} {MONEY} plan" in shown
    result = engine.ask("user:bo", "When are the office printers replaced?")
    assert deployment.provider.requests, result.to_dict()
    for request in deployment.provider.requests:
        assert _leaks(request.prompt.text, SECRET) == []
        assert all(SECRET not in " ".join((e.title, e.locator, *e.heading_path))
                   for e in request.prompt.evidence)
    # FINANCIAL is the reader's and may go to the model: the HTML title is not withheld.
    assert any(f"Quarterly {MONEY} review" in r.prompt.text for r in deployment.provider.requests)
    # The caller's own citations show what the caller may read.
    assert any(SECRET in c["title"] or SECRET in c["locator"] for c in result.citations)


def test_ledger_view_withholds_derived_text_after_a_grant_is_revoked(
        deployment: Deployment) -> None:
    engine = deployment.engine
    result = engine.ask("user:bo", "When are the office printers replaced?")
    entry = deployment.store.get_ledger(TENANT, result.ledger_record_id)
    assert entry is not None
    before = json.dumps(redact_for(entry, engine.authz_context("user:bo"), deployment.store))
    assert MONEY in before
    deployment.store.revoke(TENANT, "user:bo", ["FINANCIAL", "RESTRICTED"])
    after = redact_for(entry, engine.authz_context("user:bo"), deployment.store)
    assert _leaks(json.dumps(after), SECRET, MONEY) == []


def test_chunks_stored_before_derived_labels_show_only_stand_ins(
        deployment: Deployment) -> None:
    with sqlite3.connect(deployment.store.path) as conn:
        conn.execute("UPDATE chunks SET derived_json = NULL")
    hits = deployment.engine.search("user:bo", "printers office spring")
    assert hits
    assert {h.title for h in hits} == {TITLE_WITHHELD}
    assert all(h.locator.startswith("[source withheld]") for h in hits)
    assert _leaks(json.dumps([h.to_dict() for h in hits]), SECRET, MONEY) == []
