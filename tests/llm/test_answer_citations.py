"""Citation tags and fabricated-id stripping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affidavit.llm.citations import (
    LOOSE_SRC_PATTERN,
    SRC_PATTERN,
    canonical_tags,
    cited_ids,
    src_id,
    strip_fabricated,
)
from affidavit.llm.claims import extract_claims

VALID = ("a1b2c3d4", "b2c3d4e5")


def test_src_pattern_matches_well_formed_tags_only() -> None:
    assert SRC_PATTERN.findall("x [src:a1B2c3D4] [src:a1b2c3d] [src: a1b2c3d4]") == ["a1B2c3D4"]


def test_fabricated_ids_are_stripped_and_reported() -> None:
    text = "Revenue grew 15% [src:a1b2c3d4] [src:deadbeef]. Costs fell [src:zzzz] [SRC:B2C3D4E5]."
    cleaned, stripped = strip_fabricated(text, VALID)
    assert cleaned == "Revenue grew 15% [src:a1b2c3d4]. Costs fell [SRC:B2C3D4E5]."
    assert stripped == ("deadbeef", "zzzz")


def test_spacing_variants_are_recognised() -> None:
    cleaned, stripped = strip_fabricated("A [ src : a1b2c3d4 ]. B [src: 0000 0000].", VALID)
    assert cleaned == "A [ src : a1b2c3d4 ]. B."
    assert stripped == ("00000000",)
    assert cited_ids("A [ src : A1B2C3D4 ] [src:b2c3d4e5] [src:a1b2c3d4]") == VALID


def test_empty_and_duplicate_fabrications_are_reported_once() -> None:
    _, stripped = strip_fabricated("[src:] x [src:ffffffff] y [src:FFFFFFFF]", VALID)
    assert stripped == ("", "ffffffff")


def test_tags_formed_by_stripping_are_stripped_too() -> None:
    cleaned, stripped = strip_fabricated("x [src:[src:11]zz] y", VALID)
    assert cleaned == "x y" and stripped == ("11", "zz")


_TEXT = st.text(alphabet=st.sampled_from(list("[]src: abcdef0123 .\n")), max_size=80)


@given(text=_TEXT)
def test_after_stripping_only_valid_tags_remain(text: str) -> None:
    cleaned, stripped = strip_fabricated(text, VALID)
    assert all(src_id(m) in VALID for m in LOOSE_SRC_PATTERN.finditer(cleaned))
    assert list(stripped) == sorted(set(stripped))
    assert strip_fabricated(cleaned, VALID) == (cleaned, ())


DISGUISED_FABRICATED = [
    "Rates rose [src:dead\u200bbeef].",          # zero-width space inside the id
    "Rates rose [s\u200drc:deadbeef].",          # zero-width joiner inside "src"
    "Rates rose \uff3bsrc\uff1adeadbeef\uff3d.",  # full-width brackets and colon
    "Rates rose \u3010src:deadbeef\u3011.",      # lenticular brackets
    "Rates rose [src:**deadbeef**].",            # emphasis inside the tag
    "Rates rose [src:<b>deadbeef</b>].",         # HTML inside the tag
    "Rates rose [\u00adsrc\u00ad:\u00addeadbeef].",
    "Rates rose [ＳＲＣ:ＤＥＡＤＢＥＥＦ].",
    "Rates rose [\u0455rc:deadbeef].",          # a Cyrillic dze for the "s"
]


@pytest.mark.parametrize("answer", DISGUISED_FABRICATED)
def test_a_disguised_fabricated_citation_is_stripped(answer: str) -> None:
    cleaned, stripped = strip_fabricated(answer, VALID)
    assert cleaned == "Rates rose."
    assert stripped == ("deadbeef",)


@pytest.mark.parametrize("tag", [
    "[src:a1b2\u200bc3d4]", "\uff3bsrc\uff1aa1b2c3d4\uff3d", "\u3010src:A1B2C3D4\u3011",
    "[s\u200drc:a1b2c3d4]", "[src:`a1b2c3d4`]",
])
def test_a_disguised_valid_citation_is_recognised_by_claims_and_verification(tag: str) -> None:
    cleaned, stripped = strip_fabricated(f"Revenue grew 15% {tag}.", VALID)
    assert stripped == ()
    assert cleaned == "Revenue grew 15% [src:a1b2c3d4]."
    (claim,) = extract_claims(cleaned)
    assert claim.citations == ("a1b2c3d4",)
    assert cited_ids(f"Revenue grew 15% {tag}.") == ("a1b2c3d4",)


def test_plain_tags_are_left_as_written() -> None:
    text = "A [ src : a1b2c3d4 ] and [SRC:B2C3D4E5], **bold** ﬂow"
    assert canonical_tags(text) == text


_DISGUISES = st.sampled_from(["\u200b", "\u00ad", "\u200d", "\uff3b", "\uff3d", "\uff1a",
                              "\u3010", "\u3011", "*", "`", "<b>", "</b>", "Ｓ"])
_DISGUISED_TEXT = st.lists(st.one_of(st.sampled_from(list("[]src: abcdef0123 .\n")),
                                     _DISGUISES), max_size=60).map("".join)


@given(text=_DISGUISED_TEXT)
def test_after_stripping_no_tag_survives_even_as_read_through_disguises(text: str) -> None:
    cleaned, _ = strip_fabricated(text, VALID)
    readable = canonical_tags(cleaned)
    assert all(src_id(m) in VALID for m in LOOSE_SRC_PATTERN.finditer(readable))


def test_a_disguised_tag_in_a_stability_draw_is_not_read_as_a_stated_fact() -> None:
    from affidavit.answer.verify.stability import reappears

    (claim,) = extract_claims("The filing number is 20240115.")
    assert reappears(claim, "The filing number is 20240115.")
    assert not reappears(claim, "The filing number is unknown [src:20240115].")
    assert not reappears(claim, "The filing number is unknown \uff3bsrc\uff1a20240115\uff3d.")
