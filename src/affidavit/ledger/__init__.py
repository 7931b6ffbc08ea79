"""The Claim Ledger: append-only, hash-chained records of every answer, and their replay."""

from affidavit.ledger.chain import GENESIS_HASH, ChainReport, record_hash, verify_chain
from affidavit.ledger.replay import ReplayReport, replay

__all__ = ["GENESIS_HASH", "ChainReport", "ReplayReport", "record_hash", "replay", "verify_chain"]
