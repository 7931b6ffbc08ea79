"""The Claim Ledger: append-only, hash-chained records of every answer, and their replay."""

from typing import Any

from affidavit.ledger.chain import GENESIS_HASH, ChainReport, record_hash, verify_chain

__all__ = ["GENESIS_HASH", "ChainReport", "ReplayReport", "record_hash", "replay", "verify_chain"]


def __getattr__(name: str) -> Any:
    # Replay runs the query path, which reads the store, which imports the chain from this
    # package: loading it on first use keeps that from being an import cycle.
    if name in ("ReplayReport", "replay"):
        import importlib

        return getattr(importlib.import_module("affidavit.ledger.replay_record"), name)
    raise AttributeError(f"module 'affidavit.ledger' has no attribute {name!r}")
