"""The classifier's prompt template is an epoch: chunks labelled under one prompt are not
served under another until requalified, against a scripted model server on 127.0.0.1."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from tests.answer.answer_fake_openai import FakeOpenAI, chat, fake_openai

from affidavit.config.settings import AclSettings, ModelClassifierSettings, Settings
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sires
from affidavit.ingest.requalify import Requalifier
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore

__all__ = ["fake_openai"]

TENANT = "acme"
BODY = b"# Yard\n\nThe harbour crane lifts containers onto the quay every morning.\n"


def settings(fake: FakeOpenAI, prompt: str) -> Settings:
    base = Settings(tenant=TENANT, acl=AclSettings(default=("*",)),
                    grants={"user:reader": ("INTERNAL",)})
    model = ModelClassifierSettings(enabled=True, base_url=fake.base_url, model="labeller",
                                    prompt=prompt)
    return base.replace(sensitivity=replace(base.sensitivity, model=model))


def served(store: SQLiteStore, current: Settings) -> list[str]:
    return [h.source_id for h in Engine(store, current).search("user:reader", "harbour crane")]


def test_a_new_classifier_prompt_withholds_chunks_labelled_under_the_old_one(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.defaults["/v1/chat/completions"] = chat(json.dumps({}))
    first, second = (settings(fake_openai, f"{verb} each paragraph as one of {{labels}}.")
                     for verb in ("Label", "Classify"))
    store = SQLiteStore(tmp_path / "a.db")
    try:
        document = SourceDocument("memory", "yard", sha256_hex(BODY), BODY, "yard.md",
                                  DocumentMetadata(source_id="yard", title="yard"))
        Ingestor(store, first).run([StaticSource([document])])
        approve_sires(store, TENANT, [r.sire_id for r in store.list_sire(TENANT)],
                      by="user:curator", at=datetime.now(UTC).isoformat())
        assert served(store, first) == ["yard"]
        assert served(store, second) == []
        plan = Requalifier(store, second).plan()
        assert "prompt_template" in plan["stale_by_epoch"]
        assert Requalifier(store, second).roll()["failed"] == []
        assert served(store, second) == ["yard"]
    finally:
        store.close()
