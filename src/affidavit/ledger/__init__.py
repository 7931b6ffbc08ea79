"""The Claim Ledger: append-only, hash-chained records of every answer."""

from affidavit.ledger.chain import GENESIS_HASH, ChainReport, record_hash, verify_chain

__all__ = ["GENESIS_HASH", "ChainReport", "record_hash", "verify_chain"]
