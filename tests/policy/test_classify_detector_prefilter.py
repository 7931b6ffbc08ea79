"""The identifier detectors answer a text without an ASCII digit (or, for e-mail, without
an ``@``) at once: that is sound only while no pattern can match such a text, which these
tests pin for texts made of everything the patterns read, disguises included."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.config.settings import SensitivitySettings
from affidavit.policy.detectors import (
    _CARD,
    _CN_RESIDENT_ID,
    _EMAIL,
    _IBAN,
    _NINO,
    _PHONE_RUN,
    _SSN,
    DETECTORS,
)
from affidavit.policy.labels import classify_paragraphs
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import ExtractedDocument, Paragraph

DIGIT_PATTERNS: tuple[re.Pattern[str], ...] = (_PHONE_RUN, _SSN, _NINO, _CN_RESIDENT_ID, _IBAN,
                                               _CARD)
# Letters, separators and look-alike digits (full-width, Arabic-Indic, superscript), no ASCII one.
NO_ASCII_DIGIT = st.text(alphabet=st.sampled_from(
    list("ABCDGHJKXZabxz +-().,/@_%$€£¥\u200b\u00ad") + [chr(0xFF10 + i) for i in range(10)]
    + [chr(0x0660 + i) for i in range(10)] + ["\u00b2", "\u2460"]), max_size=60)


@settings(max_examples=300, deadline=None)
@given(NO_ASCII_DIGIT)
def test_no_digit_pattern_matches_a_text_without_an_ascii_digit(text: str) -> None:
    assert not re.search(r"[0-9]", text)
    assert all(pattern.search(text) is None for pattern in DIGIT_PATTERNS)
    assert all(detect(text) == [] for detect in DETECTORS.values())


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab.-_%+9 \uff20\ufe6b")), max_size=60))
def test_the_email_pattern_never_matches_a_text_without_an_at_sign(text: str) -> None:
    assert "@" not in text
    assert _EMAIL.search(text) is None


@pytest.mark.parametrize(("text", "label"), [
    ("SSN \uff12\uff11\uff12-\uff14\uff15-\uff17\uff17\uff18\uff11 on file", "PII_SENSITIVE"),
    ("write to alice\uff20example.com", "PII"),
    ("card \uff14\uff11\uff11\uff11 1111 1111 1111", "FINANCIAL"),
])
def test_an_identifier_in_look_alike_characters_is_still_found(text: str, label: str) -> None:
    # The text as written has no ASCII digit or @ and is answered at once; its unmasked form
    # (NFKC) has them and is scanned.
    doc = ExtractedDocument(text, (Paragraph(0, 0, len(text), "paragraph"),), "markdown")
    policy = SensitivityPolicy.from_settings(SensitivitySettings())
    (found,) = classify_paragraphs(doc, policy=policy, declared=None, path="notes.md")
    assert found.label == label, found.reasons
