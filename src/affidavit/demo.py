"""``affidavit demo``: the bundled example corpus, end to end, in a temporary database."""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from affidavit import config as config_module
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest import Ingestor
from affidavit.query import Engine
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

DEFAULT_PRINCIPAL = "user:sam.reed"
DEFAULT_QUESTION = "What is the nightly hotel limit for business travel?"


def examples_root() -> Path:
    """The example corpus folder: from an installed package or from a source checkout."""
    packaged = Path(str(resources.files("affidavit_examples")))
    if (packaged / "corpus").is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "examples"


def run_demo(*, question: str | None, principal: str | None, as_json: bool) -> int:
    root = examples_root()
    settings = config_module.load(root / "affidavit.toml")
    question = question or DEFAULT_QUESTION
    principal = principal or DEFAULT_PRINCIPAL
    with tempfile.TemporaryDirectory(prefix="affidavit-demo-") as tmp:
        store = SQLiteStore(Path(tmp) / "affidavit.db")
        try:
            store.ensure_tenant(settings.tenant)
            source = LocalFolderSource(root / "corpus", source_system="examples",
                                       max_document_bytes=settings.ingest.max_document_bytes)
            summary = Ingestor(store, settings).run([source])
            now = datetime.now(UTC).isoformat(timespec="seconds")
            for record in store.list_sire(settings.tenant, state="PROPOSED"):
                approve_sire(store, settings.tenant, record.sire_id, by="demo", at=now)
            result = Engine(store, settings).ask(principal, question)
        finally:
            store.close()
    if as_json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, sort_keys=True))
        return 0
    data = summary.to_dict()
    print(f"ingested {data['ingested']} documents ({data['chunks_written']} chunks) from "
          f"{root / 'corpus'}", file=sys.stderr)
    print(f"Q ({principal}): {question}\n")
    print(result.answer)
    print(f"\noutput state: {result.output_state}")
    for citation in result.citations:
        print(f"  [src:{citation['src']}] {citation['title']} - {citation['locator']}")
    print(f"ledger record {result.ledger_record_id} hash {result.ledger_record_hash[:16]}")
    return 0
