"""Citation tags and fabricated-id stripping."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from affidavit.answer import SRC_PATTERN, cited_ids, strip_fabricated
from affidavit.answer.citations import LOOSE_SRC_PATTERN, src_id

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
