from __future__ import annotations

import dataclasses
from typing import Any

from affidavit.ledger import GENESIS_HASH, link_hash, record_hash, verify_chain
from affidavit.store import LedgerEntry

T = "acme"


def chain(payloads: list[str], tenant: str = T) -> list[LedgerEntry]:
    prev, out = GENESIS_HASH, []
    for i, payload in enumerate(payloads, start=1):
        digest = link_hash(tenant=tenant, seq=i, record_id=f"r{i}", request_id=f"q{i}",
                           created_at="t", prev_hash=prev, payload=payload)
        out.append(LedgerEntry(i, f"r{i}", f"q{i}", "t", payload, prev, digest, 2))
        prev = digest
    return out


def test_intact_chain_verifies_and_names_its_head() -> None:
    entries = chain(["{}", '{"a":1}', '{"b":2}'])
    report = verify_chain(entries, tenant=T)
    assert report.ok and report.checked == 3
    assert (report.head_seq, report.head_hash) == (3, entries[-1].record_hash)


def test_an_empty_chain_has_the_genesis_head() -> None:
    report = verify_chain([], tenant=T)
    assert report.ok and (report.head_seq, report.head_hash) == (0, GENESIS_HASH)


def test_any_changed_byte_is_found_and_named() -> None:
    entries = chain(["{}", '{"a":1}', '{"b":2}'])
    entries[1] = dataclasses.replace(entries[1], payload='{"a":2}')
    report = verify_chain(entries, tenant=T)
    assert not report.ok
    assert (report.first_bad_seq, report.first_bad_record, report.checked) == (2, "r2", 1)


def test_every_column_is_bound_into_the_hash() -> None:
    edits: list[tuple[str, Any]] = [("record_id", "rX"), ("request_id", "qX"),
                                    ("created_at", "tX"), ("seq", 7)]
    for column, value in edits:
        entries = chain(["{}", '{"a":1}'])
        entries[1] = dataclasses.replace(entries[1], **{column: value})
        report = verify_chain(entries, tenant=T)
        assert not report.ok and report.checked == 1, column


def test_a_chain_verified_as_another_tenants_fails() -> None:
    report = verify_chain(chain(["{}"], tenant="other"), tenant=T)
    assert not report.ok and report.first_bad_seq == 1


def test_dropped_record_is_found() -> None:
    entries = chain(["{}", '{"a":1}', '{"b":2}'])
    report = verify_chain([entries[0], entries[2]], tenant=T)
    assert not report.ok and report.first_bad_seq == 3


def test_a_chain_ending_before_an_anchor_is_truncated() -> None:
    entries = chain(["{}", '{"a":1}', '{"b":2}'])
    report = verify_chain(entries[:2], tenant=T, anchors={3: entries[2].record_hash})
    assert not report.ok and report.first_bad_seq == 3
    assert report.reason is not None and report.reason.startswith("truncated")


def test_legacy_link_format_hashes_payload_and_prev_hash_only() -> None:
    digest = record_hash(GENESIS_HASH, "{}")
    entry = LedgerEntry(1, "r1", "q1", "t", "{}", GENESIS_HASH, digest)
    assert entry.link_format == 1
    assert verify_chain([entry], tenant=T).ok
