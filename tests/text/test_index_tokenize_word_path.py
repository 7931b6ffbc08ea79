"""A text with no CJK character is tokenized by the word pattern alone, in one pass: the same
terms, in the same order, as the full pattern gives (stemmed, unstemmed, with stop words)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.text.tokenize import Tokenizer, _normalize, _token_pattern, cjk_grams

PIECES = st.sampled_from([
    "running", "Runs", "the", "THE", "ﬁnancial", "Ｆｕｌｌ", "naïve", "nai\u0308ve", "e\u0301",
    "164.312", "cc6.1", "1.2.3", "v2", "x_y", "don't", "straße", "İstanbul", "ǅemal", "Ωmega",
    "क्षेत्र", "\u0915\u094d", "abc" * 30, "第三", "营收", "カタカナ", "한국어", "𠀀", "・",
    ".", ",", " ", "\n", "\u200b", "-", "'", "_", "1", "२०२४", "٣",
])
TEXTS = st.lists(PIECES, max_size=25).map("".join)


def reference(tokenizer: Tokenizer, text: str) -> list[str]:
    """Every match of the full pattern, one at a time (the path a CJK text still takes)."""
    tokens: list[str] = []
    stop = tokenizer._stop_words
    for word, cjk_run in _token_pattern().findall(_normalize(text)):
        if cjk_run:
            tokens.extend(g for g in cjk_grams(cjk_run) if g not in stop)
        elif word not in stop:
            tokens.append(tokenizer._stem_word(word) if tokenizer.stems else word)
    return tokens


TOKENIZERS = (Tokenizer(), Tokenizer(stem=False),
              Tokenizer(stop_words=("the", "running", "营")),
              Tokenizer(stem=False, stop_words=("@english",)))


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_the_word_path_gives_the_terms_of_the_full_pattern(text: str) -> None:
    for tokenizer in TOKENIZERS:
        assert tokenizer.tokenize(text) == reference(tokenizer, text), tokenizer


def test_both_paths_are_taken() -> None:
    tokenizer = Tokenizer()
    assert tokenizer.tokenize("Running 164.312 naïve") == ["run", "164.312", "naïv"]
    assert tokenizer.tokenize("Running 第三") == ["run", "第", "三", "第三"]
