"""Sentence spans and content terms used across answering."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from affidavit.llm.text import _sentence_spans, clean_control_chars, content_terms


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in _sentence_spans(text)]


def test_splits_on_enders_and_keeps_closers() -> None:
    text = 'He said "stop." Then he left! Was it late? Yes.'
    assert _sentences(text) == ['He said "stop."', "Then he left!", "Was it late?", "Yes."]


def test_no_split_inside_decimals_clause_ids_or_abbreviations() -> None:
    text = ("Uptime was 99.95 percent under CC6.1 and § 164.312. Costs, e.g. licences, rose "
            "vs. plan. See No. 5 of the list. It is no. Sales in the U.S. market grew.")
    assert _sentences(text) == [
        "Uptime was 99.95 percent under CC6.1 and § 164.312.",
        "Costs, e.g. licences, rose vs. plan.",
        "See No. 5 of the list.",
        "It is no.",
        "Sales in the U.S. market grew.",
    ]


def test_cjk_enders_split_without_spaces() -> None:
    text = "访问权限必须每季度审查一次。数据保留30天；是否加密？是的！"
    assert _sentences(text) == [
        "访问权限必须每季度审查一次。", "数据保留30天；", "是否加密？", "是的！"]


def test_blank_lines_and_list_items_end_sentences() -> None:
    text = "Heading without stop\n\nFirst line\ncontinues here\n- item one\n- item two"
    assert _sentences(text) == ["Heading without stop", "First line\ncontinues here",
                                "- item one", "- item two"]


@given(st.text(max_size=200))
def test_spans_are_ordered_trimmed_and_inside_text(text: str) -> None:
    spans = _sentence_spans(text)
    previous_end = 0
    for start, end in spans:
        assert previous_end <= start < end <= len(text)
        assert not text[start].isspace() and not text[end - 1].isspace()
        previous_end = end


def test_content_terms_stem_drop_stop_words_and_use_cjk_bigrams() -> None:
    assert content_terms("What are the reviewed policies of 2025?") == ["review", "polici"]
    assert content_terms("数据保留") == ["数据", "据保", "保留"]
    assert content_terms("审") == ["审"]
    assert content_terms("Q4 revenue数据") == ["q4", "revenu", "数据"]


def test_clean_control_chars_drops_invisible_characters() -> None:
    assert clean_control_chars("a\u200bb\r\nc\x00d\te") == "ab\ncd\te"
