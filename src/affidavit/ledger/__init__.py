"""The Claim Ledger: append-only, hash-chained records of every answer, signed checkpoints
of each chain's end, and replay."""

from typing import Any

from affidavit.ledger.chain import GENESIS_HASH, ChainReport, link_hash, record_hash, verify_chain

__all__ = ["GENESIS_HASH", "ChainReport", "Checkpoint", "ReplayReport", "link_hash",
           "record_hash", "replay", "verify_anchored", "verify_chain"]

_LAZY = {"ReplayReport": "affidavit.engine.replay",
         "replay": "affidavit.engine.replay",
         "Checkpoint": "affidavit.ledger.checkpoint",
         "verify_anchored": "affidavit.ledger.checkpoint"}


def __getattr__(name: str) -> Any:
    # Replay runs the query path, which reads the store, which imports the chain from this
    # package: loading it on first use keeps that from being an import cycle. Checkpoints
    # load the crypto library, which only the commands that sign or check them need.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'affidavit.ledger' has no attribute {name!r}")
