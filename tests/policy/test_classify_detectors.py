"""Detectors: what must fire, and the look-alikes (years, dates, amounts, ids) that must not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.policy.detectors import (
    DETECTORS,
    Detection,
    find_emails,
    find_ibans,
    find_national_ids,
    find_payment_cards,
    find_phones,
    is_valid_cn_resident_id,
    is_valid_iban,
    luhn_valid,
    run_detectors,
)


def spans(found: list[Detection], text: str) -> list[str]:
    return [text[d.start : d.end] for d in found]


def test_registry_names_every_builtin_detector() -> None:
    assert list(DETECTORS) == ["email", "phone", "national_id", "iban", "payment_card"]
    for name, detect in DETECTORS.items():
        assert all(d.name == name for d in detect("x@example.com +44 7700 900461 212-45-7781"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Personal email jordan.whitcombe@example.com, mobile", ["jordan.whitcombe@example.com"]),
        ("priya.natarajan@harbourline.example", ["priya.natarajan@harbourline.example"]),
        ("write to x@y.co.uk.", ["x@y.co.uk"]),
        ("邮箱jordan@example.cn。", ["jordan@example.cn"]),
        ("a@b and user@localhost are not addresses", []),
        ("no address here", []),
    ],
)
def test_email(text: str, expected: list[str]) -> None:
    assert spans(find_emails(text), text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mobile +44 7700 900461.", ["+44 7700 900461"]),
        ("desk phone +44 117 496 0732", ["+44 117 496 0732"]),
        ("Tel:+1 415 555 2671", ["+1 415 555 2671"]),
        ("+44 (0)20 7946 0958", ["+44 (0)20 7946 0958"]),
        ("+8613812345678", ["+8613812345678"]),
        ("call (555) 123-4567 today", ["(555) 123-4567"]),
        ("555-123-4567 or 555.765.4321", ["555-123-4567", "555.765.4321"]),
        ("London 020 7946 0958", ["020 7946 0958"]),
        ("北京 010-12345678。", ["010-12345678"]),
        ("手机13812345678，", ["13812345678"]),
        ("(call 020 7946 0958)", ["020 7946 0958"]),
        ("(mobile +44 7700 900461)", ["+44 7700 900461"]),
    ],
)
def test_phone_formats(text: str, expected: list[str]) -> None:
    assert spans(find_phones(text), text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "In 2024 revenue grew.",
        "Opened 2024-09-04 and closed 15.01.2024 14:00.",
        "Loan of GBP 1,284,500.00 and $1,234,567.89.",
        "A total of 1 234 567 890 units.",
        "Control CC6.1 and § 164.312(a) apply; see 1.2.3.4.5.6.7.8.9.",
        "Order id 1234567890123 shipped.",
        "Card 4111 1111 1111 1111 on file.",
        "SSN 212-45-7781.",
        "IBAN DE89 3704 0044 0532 0130 00.",
        "Reference ER-2024-017-0001234.",
        "ratio 37.5 hours, 44.8 percent",
    ],
)
def test_phone_ignores_numbers_that_are_not_phones(text: str) -> None:
    assert find_phones(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("His US Social Security number, 212-45-7781, remains", ["212-45-7781"]),
        ("SSN 123 45 6789.", ["123 45 6789"]),
        ("NINO AB 12 34 56 C and AB123456C", ["AB 12 34 56 C", "AB123456C"]),
        ("身份证号11010519491231002X。", ["11010519491231002X"]),
    ],
)
def test_national_id(text: str, expected: list[str]) -> None:
    assert spans(find_national_ids(text), text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "000-12-3456",  # area 000
        "666-12-3456",  # area 666
        "912-12-3456",  # area 9xx
        "123-00-4567",  # group 00
        "123-45-0000",  # serial 0000
        "123-45 6789",  # mixed separators
        "QQ123456C",  # prefix letters never issued
        "GB123456A",  # administrative prefix
        "AB123456E",  # suffix beyond D
        "AB12 34 56C",  # inconsistent spacing
        "110105194912310021",  # bad check code
        "110105194913310027",  # month 13
        "x11010519491231002X",  # glued to a word
    ],
)
def test_national_id_rejects_invalid(text: str) -> None:
    assert find_national_ids(text) == []


def test_cn_resident_id_checksum() -> None:
    assert is_valid_cn_resident_id("11010519491231002X")
    assert is_valid_cn_resident_id("11010519491231002x")
    assert not is_valid_cn_resident_id("110105194912310023")
    assert not is_valid_cn_resident_id("11010519490230002X")  # 30 February


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("due to IBAN GB33BUKB20201555555555. The", ["GB33BUKB20201555555555"]),
        ("DE89 3704 0044 0532 0130 00 SEE BELOW", ["DE89 3704 0044 0532 0130 00"]),
        ("FR14 2004 1010 0505 0001 3M02 606", ["FR14 2004 1010 0505 0001 3M02 606"]),
        ("GB34BUKB20201555555555", []),  # check digits off by one
        ("DE8937040044053201300", []),  # one character short for DE
        ("ISO27001 and AB12CDEFGHIJKLMNOP", []),
    ],
)
def test_iban(text: str, expected: list[str]) -> None:
    assert spans(find_ibans(text), text) == expected


def test_iban_mod97() -> None:
    assert is_valid_iban("GB82 WEST 1234 5698 7654 32")
    assert not is_valid_iban("GB82 WEST 1234 5698 7654 33")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("card 4111 1111 1111 1111 on file", ["4111 1111 1111 1111"]),
        ("card 4111-1111-1111-1111.", ["4111-1111-1111-1111"]),
        ("Amex 378282246310005", ["378282246310005"]),
        ("MC 5555 5555 5555 4444 123", ["5555 5555 5555 4444"]),
        ("4111 1111 1111 1112", []),  # Luhn fails
        ("4111-1111 1111 1111", []),  # mixed separators
        ("1234 5678 9012 3452", []),  # Luhn-valid but no issuer starts with 1
        ("79927398713000", []),
        ("v4111111111111111", []),  # glued to a word
    ],
)
def test_payment_card(text: str, expected: list[str]) -> None:
    assert spans(find_payment_cards(text), text) == expected


def test_luhn() -> None:
    assert luhn_valid("79927398713")
    assert not luhn_valid("79927398710")
    assert luhn_valid("1234567890123452")


def test_run_detectors_orders_by_position() -> None:
    text = "Card 4111 1111 1111 1111, mail a@example.com, SSN 212-45-7781."
    found = run_detectors(text, ["national_id", "email", "payment_card"])
    assert [d.name for d in found] == ["payment_card", "email", "national_id"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789 -.()+@abcXZ", max_size=300))
def test_detectors_return_ordered_spans_inside_text(text: str) -> None:
    for detect in DETECTORS.values():
        found = detect(text)
        assert found == sorted(found, key=lambda d: (d.start, d.end))
        assert all(0 <= d.start < d.end <= len(text) for d in found)


def test_detectors_stay_fast_on_hostile_input() -> None:
    hostile = ("1-" * 20_000) + ("a." * 20_000) + ("AB12 " * 5_000) + ("x@" * 10_000)
    for detect in DETECTORS.values():
        detect(hostile)
