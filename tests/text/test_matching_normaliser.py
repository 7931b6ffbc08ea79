"""The one text normaliser every matcher reads through (affidavit.text.matching)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.text.matching import fold_literal, mapped_for_matching, normalize_for_matching


@pytest.mark.parametrize(("text", "expected"), [
    ("**Project** Lighthouse", "project lighthouse"),
    ("Ｐｒｏｊｅｃｔ", "project"),
    ("Light\u00adhouse", "lighthouse"),
    ("Light\u200dhouse", "lighthouse"),
    ("\ufb02ow \ufb01le \ufb00 \ufb03 \ufb04 \ufb05 \ufb06", "flow file ff ffi ffl st st"),
    ("Encyclop\u00e6dia, \u0152uvre", "encyclopaedia, oeuvre"),
    ("Stra\u00dfe", "strasse"),
    ("Light-\nhouse", "lighthouse"),
    ("Light-\r\n   house", "lighthouse"),
    ("Light\u00ad\nhouse", "lighthouse"),
    ("2019-\n2020", "2019-\n2020"),           # numbers are not hyphenated words
    ("<b>x</b> <em class='a'>y</em>", "x y"),
    ("a<br>b<p>c", "a b c"),
    ("`code` _x_ ~~gone~~", "code x gone"),
    ("snake_case __init__", "snake_case init"),
    ("caf\u200be\u0301", "caf\u00e9"),           # an invisible character does not block composition
    ("&#x50;roject&nbsp;&amp;", "project &"),
    ("\u202eevil\u202c", "evil"),              # bidi controls
])
def test_each_rule_of_the_normaliser(text: str, expected: str) -> None:
    assert normalize_for_matching(text) == expected


def test_globs_keep_their_syntax_when_folded() -> None:
    assert fold_literal("*ＳＥＣＲＥＴ_\u200b?.PDF") == "*secret_?.pdf"


@settings(max_examples=500, deadline=None)
@given(text=st.text())
def test_the_mapped_form_reads_exactly_like_the_fast_form(text: str) -> None:
    mapped = mapped_for_matching(text)
    assert mapped.text == normalize_for_matching(text)
    assert len(mapped.starts) == len(mapped.ends) == len(mapped.text)
    assert all(0 <= s < e <= len(text) for s, e in zip(mapped.starts, mapped.ends, strict=True))
    assert list(mapped.starts) == sorted(mapped.starts)


def test_source_spans_point_at_what_was_written() -> None:
    text = "Ask **Ｎｏｒｔｈ\u00adwind** now"
    mapped = mapped_for_matching(text)
    start = mapped.text.index("northwind")
    first, last = mapped.source_span(start, start + len("northwind"))
    assert text[first:last] == "Ｎｏｒｔｈ\u00adwind"


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab _*`~-\n<>/\u00ad\u200bＡ\ufb02")),
                    max_size=40))
def test_normalising_twice_changes_nothing(text: str) -> None:
    once = normalize_for_matching(text)
    assert normalize_for_matching(once) == once
