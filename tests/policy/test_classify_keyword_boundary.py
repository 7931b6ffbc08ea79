"""The keyword boundary class is compiled without IGNORECASE (compiling a case-insensitive
class over the CJK ranges is slow, and every search builds the keyword sets); it must match
exactly the characters the case-insensitive class matched, or a keyword would fire (or not)
where it did not before."""

from __future__ import annotations

import re

from affidavit.policy.keywords import _BOUNDED_WORD_CHAR, _CJK_RANGES, KeywordSet


def test_bounded_word_class_matches_the_same_characters_as_the_case_insensitive_one() -> None:
    case_insensitive = re.compile(f"[^\\W{_CJK_RANGES}]", re.IGNORECASE)
    scoped = re.compile(_BOUNDED_WORD_CHAR, re.IGNORECASE)
    differing = [code for code in range(0x110000)
                 if (case_insensitive.fullmatch(chr(code)) is None)
                 != (scoped.fullmatch(chr(code)) is None)]
    assert differing == []


def test_keyword_ends_still_meet_word_boundaries_in_every_script() -> None:
    keywords = KeywordSet(["pii", "Salary", "給与"])
    assert keywords.found_in("PII here") == ["pii"]
    assert keywords.found_in("piie and salaryman") == []  # inside a longer Latin word
    assert keywords.found_in("pii_x") == []  # an underscore joins words
    assert keywords.found_in("月給与額") == ["給与"]  # CJK ends match inside CJK text
    assert keywords.found_in("給与SALARY") == ["Salary", "給与"]  # CJK next to Latin
    assert keywords.found_in("中pii文") == ["pii"]  # CJK is a boundary for Latin
    # Fullwidth letters are word characters too: bounded like the Latin they fold to.
    assert keywords.found_in("ｐｉｉ") == ["pii"]
    assert keywords.found_in("ＰＩＩＥ") == []
