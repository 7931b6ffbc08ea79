"""Every byte that leaves for a model, over every transport: RESTRICTED canaries hidden in
derived text never reach the answer model, the rerank judge or the embedding endpoint.

The corpus hides one canary per class of leak: in a document title, in a heading, in a
keyword spelled so that a naive matcher misses it, in a word that only a RESTRICTED
paragraph holds (a SIRE term candidate), and in a paragraph that a policy change made
after ingest turns RESTRICTED. The same tree is ingested from a local folder, over HTTPS
and over SFTP; every provider and embedding request of the end-to-end run goes to a local
server on 127.0.0.1 that logs the request bodies, and no logged body may hold a canary.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.model_egress_server import RecordingModelServer

from affidavit.config.loader import load
from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.sources import HttpsSource, LocalFolderSource, SftpSource, Transport
from affidavit.store import SQLiteStore

TITLE_CANARY = "CNRYTITLE4471"
HEADING_CANARY = "CNRYHEAD5582"
VARIANT_CANARIES = ("CNRYVARIANT6693", "CNRYVARIANT6694", "CNRYVARIANT6695")
SIRE_CANARY = "zorblattic"
POLICY_CANARY = "CNRYPOLICY7704"

TREE = {
    "travel/brief.md": (
        f"---\ntitle: Project Lighthouse {TITLE_CANARY}\n---\n"
        "Staff book hotel rooms through the travel desk. The nightly hotel limit for "
        "business travel is 180 pounds.\n"),
    "travel/notes.md": (
        "# Travel notes\n\n"
        f"## Project Lighthouse {HEADING_CANARY}\n\n"
        "The travel desk approves hotel bookings for every review trip.\n"),
    "travel/variants.md": (
        "# Hotel costs\n\n"
        f"The **Project** Lighthouse hotel budget is {VARIANT_CANARIES[0]} per night.\n\n"
        f"The Proj\u00adect Light\u200dhouse travel allowance is {VARIANT_CANARIES[1]}.\n\n"
        f"The \uff30\uff52\uff4f\uff4a\uff45\uff43\uff54 Lighthouse hotel cap is "
        f"{VARIANT_CANARIES[2]}.\n\n"
        "The travel desk books hotel rooms for staff on business travel.\n"),
    "travel/sire.md": (
        "# Hotel programme\n\n"
        "The hotel programme covers business travel for all staff. Hotel bookings go "
        "through the travel desk.\n\n"
        f"Project Lighthouse: the {SIRE_CANARY} plan. The {SIRE_CANARY} budget and the "
        f"{SIRE_CANARY} review stay with the board. {SIRE_CANARY} {SIRE_CANARY} "
        f"{SIRE_CANARY}.\n"),
    "travel/cranes.md": (
        "# Crane hire\n\n"
        f"The harbour crane hire for hotel staff travel costs {POLICY_CANARY} a day.\n"),
}

SETTINGS = """
tenant = "egress"
[acl]
default = ["group:staff#member"]
[authz]
tuples = ["group:staff#member@user:board", "group:staff#member@user:reader"]
[grants]
"group:staff#member" = ["INTERNAL"]
"user:board" = ["CONFIDENTIAL", "FINANCIAL", "SECRET", "RESTRICTED"]
[sensitivity]
restricted_keywords = ["Project Lighthouse"]
[retrieval]
rerank = true
[answer]
provider = "openai"
"""

QUESTIONS = (
    "What is the nightly hotel limit for business travel?",
    "Project Lighthouse hotel budget",
    "What does the travel desk approve for review trips?",
    "crane hire travel cost",
    "What does the hotel programme plan cover?",
)


def _sent(server: RecordingModelServer, since: int = 0) -> str:
    """Every string inside the bodies logged from ``since`` on, decoded (escapes resolved)."""
    return "\n".join(s for _, raw in server.bodies[since:] for s in _strings(json.loads(raw)))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@pytest.fixture
def model_server() -> Iterator[RecordingModelServer]:
    with RecordingModelServer().running() as server:
        yield server


def _settings(tmp_path: Path, server: RecordingModelServer, https_settings: Any,
              sftp_settings: Any) -> Settings:
    text = SETTINGS + (
        f'[vectors]\nbackend = "openai"\nendpoint = "{server.base_url}"\nmodel = "emb"\n'
        f'[provider]\nbase_url = "{server.base_url}"\nmodel = "m"\nmax_retries = 0\n')
    path = tmp_path / "affidavit.toml"
    path.write_text(text, encoding="utf-8")
    return replace(load(path), https=https_settings, sftp=sftp_settings)


def _build(root: Path) -> None:
    for name, text in TREE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    manifest = {"documents": [{"url": name} for name in sorted(TREE)]}
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _with_keyword(settings: Settings, keyword: str) -> Settings:
    sensitivity = replace(settings.sensitivity, restricted_keywords=(
        *settings.sensitivity.restricted_keywords, keyword))
    return replace(settings, sensitivity=sensitivity)


@pytest.mark.invariant
@pytest.mark.parametrize("transport", ["local", "https", "sftp"])
def test_invariant_no_restricted_canary_in_any_model_or_embedding_request(
        transport: str, tmp_path: Path, model_server: RecordingModelServer, https_server: Any,
        https_root: Path, https_settings: Any, sftp_server: Any, sftp_root: Path,
        sftp_settings: Any) -> None:
    settings = _settings(tmp_path, model_server, https_settings, sftp_settings)
    roots = {"local": tmp_path / "local", "https": https_root, "sftp": sftp_root}
    _build(roots[transport])
    limit = settings.ingest.max_document_bytes
    sources: dict[str, Transport] = {
        "local": LocalFolderSource(roots["local"], max_document_bytes=limit),
        "https": HttpsSource(https_server.url("manifest.json"), settings=https_settings,
                             max_document_bytes=limit),
        "sftp": SftpSource(sftp_server.url("/"), settings=sftp_settings,
                           max_document_bytes=limit),
    }
    store = SQLiteStore(tmp_path / "egress.db")
    try:
        Ingestor(store, settings).run([sources[transport]])
        for record in store.list_sire(settings.tenant, state="PROPOSED"):
            approve_sire(store, settings.tenant, record.sire_id, by="user:curator",
                         at="2026-01-01T00:00:00+00:00")
        engine = Engine(store, settings)
        results = [engine.ask("user:board", q) for q in QUESTIONS]
        assert all(r.ledger_record_id for r in results)
        assert "travel desk" in _sent(model_server), "evidence reached the answer model"
        assert model_server.count("/embeddings"), "chunks were embedded"
        # The canaries are in the index: the board member finds them by search, labelled.
        found = {h.label for h in engine.search("user:board", "Lighthouse hotel budget cap",
                                                limit=20)
                 if any(c in h.text for c in VARIANT_CANARIES)}
        assert found == {"RESTRICTED"}

        # The policy changes after ingest: the crane paragraph becomes RESTRICTED, and from
        # the very next request on it reaches no model and no INTERNAL reader.
        changed = _with_keyword(settings, "crane hire")
        mark = len(model_server.bodies)
        engine = Engine(store, changed)
        for question in QUESTIONS:
            engine.ask("user:board", question)
        reader_hits = engine.search("user:reader", "crane hire travel cost", limit=20)
        assert all(POLICY_CANARY not in h.text for h in reader_hits)
        after_change = _sent(model_server, mark)
        assert POLICY_CANARY not in after_change
    finally:
        store.close()

    everything = _sent(model_server)
    for canary in (TITLE_CANARY, HEADING_CANARY, *VARIANT_CANARIES, SIRE_CANARY):
        assert canary not in everything, f"{canary} reached a model or embedding endpoint"
