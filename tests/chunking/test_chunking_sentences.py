"""Sentence splitting: English and Chinese, with the cases that must not split."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.errors import InputRejected
from affidavit.text.sentences import split_sentences


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Revenue rose 3.5 percent. Costs fell; margins grew! Did they? Yes.",
            ["Revenue rose 3.5 percent.", "Costs fell;", "margins grew!", "Did they?", "Yes."],
        ),
        (
            "See e.g. the policy, i.e. the rules. Mr. Smith met Dr. Jones vs. the board. Done.",
            [
                "See e.g. the policy, i.e. the rules.",
                "Mr. Smith met Dr. Jones vs. the board.",
                "Done.",
            ],
        ),
        (
            "Refer to No. 5 and Art. 12 here. Control CC6.1 applies. Under § 164.312(a). "
            "Rule 1.2.3 holds.",
            [
                "Refer to No. 5 and Art. 12 here.",
                "Control CC6.1 applies.",
                "Under § 164.312(a).",
                "Rule 1.2.3 holds.",
            ],
        ),
        (
            'J. K. Rowling wrote it. He said "stop." Then he left. (See above.) Done',
            ["J. K. Rowling wrote it.", 'He said "stop."', "Then he left.", "(See above.)", "Done"],
        ),
        (
            "Pens, paper, etc. were bought. Apples, pears, etc. The next day came.",
            ["Pens, paper, etc. were bought.", "Apples, pears, etc.", "The next day came."],
        ),
        (
            "The U.S. economy grew. Wait... what? Really?! Yes",
            ["The U.S. economy grew.", "Wait...", "what?", "Really?!", "Yes"],
        ),
        (
            "1. Introduction\n2. Scope of it. It applies.\n\nA new block",
            ["1. Introduction", "2. Scope of it.", "It applies.", "A new block"],
        ),
        ("No ender at all", ["No ender at all"]),
        ("   \n\t ", []),
        ("", []),
    ],
)
def test_english(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "营收下滑了。原因是什么？成本上升；利润减少！",
            ["营收下滑了。", "原因是什么？", "成本上升；", "利润减少！"],
        ),
        ("他说：“好的。”然后离开了。", ["他说：“好的。”", "然后离开了。"]),
        ("增长３．５倍．然后呢……好吧", ["增长３．５倍．", "然后呢……", "好吧"]),
        ("收入为3.5亿元。Revenue fell. 下降了", ["收入为3.5亿元。", "Revenue fell.", "下降了"]),
        ("条款CC6.1适用。", ["条款CC6.1适用。"]),
    ],
)
def test_chinese(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_range_offsets_are_absolute() -> None:
    text = "Skip this. Take this one. And this. Skip too."
    start = text.index("Take")
    end = text.index(" Skip too")
    spans = split_sentences(text, start, end)
    assert [text[s:e] for s, e in spans] == ["Take this one.", "And this."]


def test_bad_range_is_rejected() -> None:
    with pytest.raises(InputRejected) as caught:
        split_sentences("abc", 2, 10)
    assert caught.value.reason_code == "BAD_SPAN"


def test_long_tokens_do_not_slow_it_down() -> None:
    hostile = "a." * 50_000 + " " + "x" * 100_000 + ". " + "1. " * 20_000
    assert split_sentences(hostile)


ALPHABET = 'ab Z1.。!?;；…"”)\n\t '


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=200), st.data())
def test_spans_are_ordered_trimmed_and_cover_all_text(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    spans = split_sentences(text, start, end)
    assert spans == split_sentences(text, start, end)
    covered: set[int] = set()
    previous_end = start
    for s, e in spans:
        assert previous_end <= s < e <= end
        assert text[s:e] == text[s:e].strip()
        covered.update(range(s, e))
        previous_end = e
    visible = {i for i in range(start, end) if not text[i].isspace()}
    assert visible <= covered
