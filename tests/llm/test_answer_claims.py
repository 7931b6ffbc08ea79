"""Pass 2: claim extraction with exact offsets and atoms."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import affidavit.answer
from affidavit.llm.atoms import extract_atoms
from affidavit.llm.claims import Claim, extract_claims

ENGLISH = (
    "Breaches must be reported no later than 31 January 2025 under § 164.312(a) and "
    "Article 32 [src:a1b2c3d4]. The liability cap is $4M. [src:b2c3d4e5] [src:a1b2c3d4] "
    "Fees of EUR 1,200 are due within 30 days [src:b2c3d4e5], and revenue grew 15% in "
    "March 2026 [src:c3d4e5f6]. ISO 27001 A.9.2 applies to CC6.1 controls."
)
CHINESE = (
    "赔偿上限为400万美元[src:a1b2c3d4]。数据必须在30天以内删除[src:b2c3d4e5]。"
    "该政策自2025年3月起生效。"
)


def _atoms(claim: Claim) -> list[tuple[str, str, str]]:
    return [(a.kind, a.text, a.value) for a in claim.atoms]


def test_english_claims_split_cite_and_keep_exact_offsets() -> None:
    claims = extract_claims(ENGLISH)
    assert [c.text for c in claims] == [
        "Breaches must be reported no later than 31 January 2025 under § 164.312(a) and "
        "Article 32.",
        "The liability cap is $4M.",
        "Fees of EUR 1,200 are due within 30 days",
        "revenue grew 15% in March 2026.",
        "ISO 27001 A.9.2 applies to CC6.1 controls.",
    ]
    assert [c.citations for c in claims] == [
        ("a1b2c3d4",), ("b2c3d4e5", "a1b2c3d4"), ("b2c3d4e5",), ("c3d4e5f6",), ()]
    assert [c.index for c in claims] == [0, 1, 2, 3, 4]
    assert ENGLISH[claims[0].start : claims[0].end].endswith("Article 32 [src:a1b2c3d4].")
    assert ENGLISH[claims[1].start : claims[1].end] == (
        "The liability cap is $4M. [src:b2c3d4e5] [src:a1b2c3d4]")
    assert ENGLISH[claims[2].start : claims[2].end] == (
        "Fees of EUR 1,200 are due within 30 days [src:b2c3d4e5]")
    assert ENGLISH[claims[3].start : claims[3].end] == (
        "revenue grew 15% in March 2026 [src:c3d4e5f6].")


def test_english_atoms_kinds_values_and_offsets() -> None:
    claims = extract_claims(ENGLISH)
    assert _atoms(claims[0]) == [
        ("temporal", "no later than", "upper_bound"),
        ("date", "31 January 2025", "2025-01-31"),
        ("regulatory_citation", "§ 164.312(a)", "§164.312(a)"),
        ("regulatory_citation", "Article 32", "article32"),
    ]
    assert _atoms(claims[1]) == [("number", "$4M", "4000000 USD")]
    assert claims[1].atoms[0].noun == "liability" and claims[1].atoms[0].unit == "USD"
    assert _atoms(claims[2]) == [("number", "EUR 1,200", "1200 EUR"),
                                 ("temporal", "within", "upper_bound"),
                                 ("number", "30 days", "30 day")]
    assert claims[2].atoms[0].noun == "fees"
    assert _atoms(claims[3]) == [("number", "15%", "15%"), ("date", "March 2026", "2026-03")]
    assert claims[3].atoms[0].noun == "revenue"
    assert _atoms(claims[4]) == [("regulatory_citation", "ISO 27001 A.9.2", "iso27001a.9.2"),
                                 ("regulatory_citation", "CC6.1", "cc6.1")]
    for claim in claims:
        for atom in claim.atoms:
            assert ENGLISH[atom.start : atom.end] == atom.text
            assert claim.start <= atom.start < atom.end <= claim.end


def test_chinese_claims_and_atoms() -> None:
    claims = extract_claims(CHINESE)
    assert [c.text for c in claims] == ["赔偿上限为400万美元。", "数据必须在30天以内删除。",
                                        "该政策自2025年3月起生效。"]
    assert [c.citations for c in claims] == [("a1b2c3d4",), ("b2c3d4e5",), ()]
    assert _atoms(claims[0]) == [("number", "400万美元", "4000000 USD")]
    assert claims[0].atoms[0].noun == "赔偿上限"
    assert _atoms(claims[1]) == [("number", "30天", "30 day"), ("temporal", "以内", "upper_bound")]
    assert _atoms(claims[2]) == [("date", "2025年3月", "2025-03")]
    for claim in claims:
        for atom in claim.atoms:
            assert CHINESE[atom.start : atom.end] == atom.text


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("on 2025-03-31", "date", "2025-03-31"),
        ("by March 31, 2025", "date", "2025-03-31"),
        ("in 2024", "date", "2024"),
        ("Q4 2025", "date", "2025-Q4"),
        ("2025年3月31日", "date", "2025-03-31"),
        ("USD 4,000,000", "number", "4000000 USD"),
        ("4.50 million users", "number", "4500000"),
        ("10 business days", "number", "10 business day"),
        ("12.5 percent", "number", "12.5%"),
        ("Art. 5(1)(f)", "regulatory_citation", "article5(1)(f)"),
        ("Section 4.2", "regulatory_citation", "section4.2"),
        ("第32条", "regulatory_citation", "第32条"),
        ("not later than", "temporal", "upper_bound"),
        ("之前", "temporal", "upper_bound"),
        ("after", "temporal", "lower_bound"),
    ],
)
def test_atom_normalization(text: str, kind: str, value: str) -> None:
    atoms = [a for a in extract_atoms(text) if a.kind == kind]
    assert [a.value for a in atoms][:1] == [value]


def test_numbers_inside_ids_and_tags_are_not_atoms() -> None:
    claims = extract_claims("Q4 uses 2FA and v2 APIs [src:12345678].")
    assert claims[0].atoms == () and claims[0].citations == ("12345678",)


@pytest.mark.parametrize(
    ("text", "bounds"),
    [
        ("Fees are due within 30 days.", ["within"]),
        ("Access is removed within two weeks.", ["within"]),
        ("Report it within the deadline.", ["within"]),
        ("Pay within a few days.", ["within"]),
        ("Glial cells differentiate within the host animal.", []),
        ("Data stays within the organisation.", []),
        ("Deliver by 2025.", ["by"]),
        ("Deliver by 31 March 2025.", ["by"]),
        ("Deliver by the end of the year.", ["by"]),
        ("Incidence fell by 10% since then.", []),
        ("The score rose by 3 points.", []),
        ("Access ends before a dismissal is communicated.", ["before"]),
    ],
)
def test_a_temporal_bound_is_one_only_before_a_time(text: str, bounds: list[str]) -> None:
    """"within" and "by" bound a time only when one follows: "within the host" and "fell by
    10%" are no deadline, and a claim using them is not held to one the evidence lacks."""
    [claim] = extract_claims(text)
    assert [a.text for a in claim.atoms if a.kind == "temporal"] == bounds


def test_mid_sentence_tag_closes_a_claim_and_no_tag_is_inherited() -> None:
    claims = extract_claims("Backups run nightly [src:a1b2c3d4], restores are tested yearly. "
                            "Keys rotate.")
    assert [(c.text, c.citations) for c in claims] == [
        ("Backups run nightly", ("a1b2c3d4",)),
        ("restores are tested yearly.", ()),
        ("Keys rotate.", ()),
    ]


def test_only_a_whole_conjunction_is_skipped() -> None:
    claims = extract_claims("Logs are kept [src:a1b2c3d4], android apps are not [src:b2c3d4e5].")
    assert [c.text for c in claims] == ["Logs are kept", "android apps are not."]


def test_leading_tag_belongs_to_the_first_sentence_and_bare_tags_make_no_claim() -> None:
    assert [(c.text, c.citations) for c in extract_claims("[src:a1b2c3d4] Keys rotate.")] == [
        ("Keys rotate.", ("a1b2c3d4",))]
    assert extract_claims("[src:a1b2c3d4] [src:b2c3d4e5]") == ()
    assert extract_claims("") == ()


_ANSWER = st.text(alphabet=st.sampled_from(list("Ab1 .。,%$[]src:a1b2c3d4\n天年")), max_size=120)


@given(answer=_ANSWER)
def test_claim_offsets_are_exact_and_ordered(answer: str) -> None:
    claims = extract_claims(answer)
    previous_end = 0
    for claim in claims:
        assert previous_end <= claim.start < claim.end <= len(answer)
        span = answer[claim.start : claim.end]
        assert span.strip() == span
        for atom in claim.atoms:
            assert answer[atom.start : atom.end] == atom.text
        previous_end = claim.end
    assert extract_claims(answer) == claims


_SCRIPT = """
import json, sys
from affidavit.llm import extract_claims
text = sys.stdin.read()
print(json.dumps([c.to_dict() for c in extract_claims(text)], ensure_ascii=False, sort_keys=True))
"""


@pytest.mark.invariant
def test_invariant_deterministic_claim_extraction() -> None:
    answer = ENGLISH + " " + CHINESE
    first = [c.to_dict() for c in extract_claims(answer)]
    assert first == [c.to_dict() for c in extract_claims(answer)]
    src = str(Path(affidavit.answer.__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONHASHSEED="977", PYTHONIOENCODING="utf-8",
               PYTHONPATH=os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-c", _SCRIPT], input=answer.encode("utf-8"),
                            capture_output=True, env=env, check=True, timeout=60)
    assert json.loads(result.stdout.decode("utf-8")) == first
