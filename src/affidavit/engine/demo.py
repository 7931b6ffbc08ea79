"""``affidavit demo``: the bundled example corpus, end to end, in a temporary database."""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from affidavit.config import loader as config_module
from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

DEFAULT_PRINCIPAL = "user:sam.reed"
DEFAULT_QUESTION = "What is the nightly hotel limit for business travel?"
LOCAL_STABILITY_DRAWS = 2
"""Seeded draws the demo asks the local model for, so that L3 and L4 run."""
SMALL_TEMPLATE = "cfpo-small-v1"
_SHOWN_LAYERS = (("l1_confidence", "L1"), ("contrastive", "Δ"), ("l3_stability", "L3"),
                 ("l4_representation", "L4"))


def examples_root() -> Path:
    """The example corpus folder: from an installed package or from a source checkout."""
    packaged = Path(str(resources.files("affidavit_examples")))
    if (packaged / "corpus").is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "examples"


def demo_settings(root: Path, model: str | None) -> Settings:
    """The example's settings; with ``model``, answered by that provider instead."""
    settings = config_module.load(root / "affidavit.toml")
    if model is None:
        return settings
    settings = settings.replace(answer=dataclasses.replace(settings.answer, provider=model))
    if model == "local":
        settings = local_model_settings(settings)
    return settings


def local_model_settings(settings: Settings) -> Settings:
    """``settings`` made for the small default local model: its short prompt template,
    three evidence items (its context and its attention span are small), answers of at
    most 128 tokens, and two seeded stability draws so that L3 and L4 run."""
    return settings.replace(
        answer=dataclasses.replace(settings.answer, provider="local", template=SMALL_TEMPLATE,
                                   max_evidence=min(settings.answer.max_evidence, 3)),
        local=dataclasses.replace(settings.local, max_tokens=min(settings.local.max_tokens,
                                                                 128)),
        provider=dataclasses.replace(settings.provider, stability_draws=max(
            settings.provider.stability_draws, LOCAL_STABILITY_DRAWS)))


def run_demo(*, question: str | None, principal: str | None, as_json: bool,
             model: str | None = None) -> int:
    root = examples_root()
    settings = demo_settings(root, model)
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
            started = time.perf_counter()
            result = Engine(store, settings).ask(principal, question)
            seconds = time.perf_counter() - started
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
    if model is not None:
        print(f"\nanswered by {settings.answer.provider} in {seconds:.1f} s")
        for claim in result.claims:
            print(f"  claim {claim['index']}: {claim['status']}  {_layer_figures(claim)}")
    print(f"ledger record {result.ledger_record_id} hash {result.ledger_record_hash[:16]}")
    return 0


def _layer_figures(claim: dict[str, object]) -> str:
    """The model layers' scores of one claim, ``-`` where a layer did not run."""
    layers = claim.get("layers")
    shown = []
    for name, short in _SHOWN_LAYERS:
        layer = layers.get(name) if isinstance(layers, dict) else None
        score = layer.get("score") if isinstance(layer, dict) else None
        shown.append(f"{short} {score:.3f}" if isinstance(score, float) else f"{short} -")
    return "  ".join(shown)
