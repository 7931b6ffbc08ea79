"""Keyword rules and restricted filename patterns read text through the one normaliser.

Each disguise below once left a paragraph naming a RESTRICTED project at the default
INTERNAL label; the keyword's label must win however the name is written.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.config.settings import SensitivitySettings
from affidavit.policy.labels import classify_paragraphs, restricted_filename_matches
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import ExtractedDocument, Paragraph

POLICY = SensitivityPolicy.from_settings(SensitivitySettings(
    restricted_keywords=("Project Lighthouse", "Overflow"),
    keywords={"CONFIDENTIAL": ("merger", "file plan")},
    restricted_filename_patterns=("*board-minutes*", "secret_*.pdf"),
))


def label_of(text: str, path: str = "docs/report.md") -> str:
    doc = ExtractedDocument(text, (Paragraph(0, 0, len(text), "paragraph"),), "markdown")
    (label,) = classify_paragraphs(doc, policy=POLICY, declared=None, path=path)
    return label.label


@pytest.mark.parametrize("text", [
    "Status of **Project** Lighthouse this week",
    "Status of __Project Lighthouse__ this week",
    "Status of <b>Project</b> <i>Lighthouse</i> this week",
    "Status of `Project Lighthouse` this week",
    "Status of ~~Project~~ Lighthouse this week",
    "Status of Ｐｒｏｊｅｃｔ Ｌｉｇｈｔｈｏｕｓｅ this week",     # full-width letters
    "Status of Project Light\u00adhouse this week",               # soft hyphen
    "Status of Project Light\u200dhouse this week",               # zero-width joiner
    "Status of Project Light\u200bhouse this week",               # zero-width space
    "Status of Pro\u2060ject Lighthouse this week",              # word joiner
    "Status of Project Light-\nhouse this week",                 # hyphenated at a line end
    "Status of Project Light\u00ad\nhouse this week",            # soft hyphen at a line end
    "Status of PROJECT   LIGHTHOUSE this week",
    "Status of Project&nbsp;Light&shy;house this week",          # character references
    "Stack ov\ufb02ow? No: buffer Over\ufb02ow.",                 # the "fl" ligature
    "Status of Project Lighth\u043euse this week",                # a Cyrillic o
    "Status of \u0420r\u043ej\u0435\u0441t Lighthouse this week",   # Cyrillic P, o, e, c
    "Status of PROJECT LIGHTH\u039fUSE this week",                # a Greek capital omicron
])
def test_a_disguised_restricted_keyword_still_labels_its_paragraph_restricted(text: str) -> None:
    assert label_of(text) == "RESTRICTED"


@pytest.mark.parametrize("text", [
    "Talks on a possible \ufb01le plan",          # "fi" ligature inside a keyword phrase
    "The ＭＥＲＧＥＲ is announced",
    "The *merg*er is announced",
])
def test_a_disguised_label_keyword_gets_its_label(text: str) -> None:
    assert label_of(text) == "CONFIDENTIAL"


@pytest.mark.parametrize("text", [
    "\u041f\u0440\u043e\u0435\u043a\u0442 \u0441\u043e\u0440",   # Russian words stay Russian
    "The lighthouse project is a PUBLIC landmark",   # words present, phrase absent
    "Project Lighthouses",                           # a keyword end still needs a boundary
    "snake_case_overflow_counter",                   # "_" between letters is part of a name
])
def test_normalising_does_not_invent_matches(text: str) -> None:
    assert label_of(text) == "INTERNAL"


@pytest.mark.parametrize("path", [
    "minutes/ｂｏａｒｄ-ｍｉｎｕｔｅｓ-2024.md",
    "minutes/board\u200b-minutes.md",
    "minutes/BOARD-MIN\u00adUTES.md",
    "archive/secret_plan.pdf",
    "archive/ＳＥＣＲＥＴ_plan.pdf",
])
def test_restricted_filename_patterns_see_through_disguised_names(path: str) -> None:
    assert restricted_filename_matches(POLICY, path)
    assert label_of("ordinary text", path=path) == "RESTRICTED"


def test_filename_patterns_keep_their_glob_syntax() -> None:
    assert restricted_filename_matches(POLICY, "secret_plan.pdf") == ["secret_*.pdf"]
    assert restricted_filename_matches(POLICY, "secretplan.pdf") == []


_INVISIBLE = st.sampled_from(["\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"])
_KEYWORDED = st.sampled_from([
    "Project Lighthouse", "Overflow", "merger", "file plan", "An ordinary sentence.",
    "MERGER of Project Lighthouse", "nothing to see",
])
_SEVERITY = {"INTERNAL": 0, "CONFIDENTIAL": 1, "RESTRICTED": 2}


def _disguise(text: str, data: st.DataObject) -> str:
    out: list[str] = []
    for char in text:
        if char.isascii() and char.isalpha() and data.draw(st.booleans()):
            char = chr(ord(char) + 0xFEE0)  # its full-width form
        if data.draw(st.booleans()):
            char = char.swapcase()
        out.append(char)
        if data.draw(st.integers(0, 3)) == 0:
            out.append(data.draw(_INVISIBLE))
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(text=_KEYWORDED, data=st.data())
def test_invisible_characters_width_or_case_never_lower_a_label(
        text: str, data: st.DataObject) -> None:
    disguised = _disguise(text, data)
    assert _SEVERITY[label_of(disguised)] >= _SEVERITY[label_of(text)], repr(disguised)


DETECTING = SensitivityPolicy.from_settings(SensitivitySettings())


@pytest.mark.parametrize(("text", "label"), [
    ("SSN \uff11\uff12\uff13-\uff14\uff15-\uff16\uff17\uff18\uff19 on file", "PII_SENSITIVE"),
    ("SSN 123-45-67\u200b89 on file", "PII_SENSITIVE"),
    ("card 4111\u200b1111\u200b1111\u200b1111", "FINANCIAL"),
    ("card 4111 1111 **1111** 1111", "FINANCIAL"),
    ("write to alice\uff20example.com", "PII"),
    ("write to alice&#64;example.com", "PII"),
    ("IBAN GB82\u00adWEST 1234 5698 7654 32", "FINANCIAL"),
])
def test_identifier_detectors_see_through_width_invisible_characters_and_markup(
        text: str, label: str) -> None:
    doc = ExtractedDocument(text, (Paragraph(0, 0, len(text), "paragraph"),), "markdown")
    (found,) = classify_paragraphs(doc, policy=DETECTING, declared=None, path="notes.md")
    assert found.label == label, found.reasons
