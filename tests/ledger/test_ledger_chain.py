from __future__ import annotations

import dataclasses

from affidavit.ledger import GENESIS_HASH, record_hash, verify_chain
from affidavit.store import LedgerEntry


def chain(payloads: list[str]) -> list[LedgerEntry]:
    prev, out = GENESIS_HASH, []
    for i, payload in enumerate(payloads, start=1):
        digest = record_hash(prev, payload)
        out.append(LedgerEntry(i, f"r{i}", f"q{i}", "t", payload, prev, digest))
        prev = digest
    return out


def test_intact_chain_verifies() -> None:
    report = verify_chain(chain(["{}", '{"a":1}', '{"b":2}']))
    assert report.ok and report.checked == 3


def test_any_changed_byte_is_found_and_named() -> None:
    entries = chain(["{}", '{"a":1}', '{"b":2}'])
    entries[1] = dataclasses.replace(entries[1], payload='{"a":2}')
    report = verify_chain(entries)
    assert not report.ok
    assert (report.first_bad_seq, report.first_bad_record, report.checked) == (2, "r2", 1)


def test_dropped_record_is_found() -> None:
    entries = chain(["{}", '{"a":1}', '{"b":2}'])
    report = verify_chain([entries[0], entries[2]])
    assert not report.ok and report.first_bad_seq == 3
