"""The lexical tokenizer: scripts, stemming, stop words, clause ids, normalisation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affidavit.config.settings import LexicalSettings
from affidavit.errors import ConfigurationError
from affidavit.text.tokenize import TOKENIZER_VERSION, Tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer()


def test_cjk_run_gives_unigrams_then_bigrams(tokenizer: Tokenizer) -> None:
    assert tokenizer.tokenize("数据保护") == ["数", "据", "保", "护", "数据", "据保", "保护"]


def test_single_cjk_character_is_one_unigram(tokenizer: Tokenizer) -> None:
    assert tokenizer.tokenize("税") == ["税"]


def test_cjk_punctuation_splits_runs(tokenizer: Tokenizer) -> None:
    assert tokenizer.tokenize("营收，利润") == ["营", "收", "营收", "利", "润", "利润"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("データ", ["デ", "ー", "タ", "デー", "ータ"]),
        ("ひらがな", ["ひ", "ら", "が", "な", "ひら", "らが", "がな"]),
        ("개인정보", ["개", "인", "정", "보", "개인", "인정", "정보"]),
    ],
)
def test_kana_and_hangul_are_gram_scripts(
    tokenizer: Tokenizer, text: str, expected: list[str]
) -> None:
    assert tokenizer.tokenize(text) == expected


def test_mixed_latin_and_cjk_split_at_the_script_change(tokenizer: Tokenizer) -> None:
    assert tokenizer.tokenize("Q3营收") == ["q3", "营", "收", "营收"]


def test_stemming_conflates_inflections(tokenizer: Tokenizer) -> None:
    assert tokenizer.tokenize("policies") == tokenizer.tokenize("policy") == ["polici"]
    assert tokenizer.tokenize("Running runs") == ["run", "run"]


def test_without_stemming_words_stay_whole() -> None:
    assert Tokenizer(stem=False).tokenize("Policies RUNNING") == ["policies", "running"]


def test_cjk_is_never_stemmed() -> None:
    assert Tokenizer("english").tokenize("数据") == Tokenizer(stem=False).tokenize("数据")


def test_stop_words_are_dropped_after_casefolding() -> None:
    tokenizer = Tokenizer(stop_words=["The", "OF"])
    assert tokenizer.tokenize("THE Policy of Access") == ["polici", "access"]


def test_stop_words_are_dropped_before_stemming() -> None:
    # "policies" is a stop word; "policy" is not, although both stem to "polici".
    tokenizer = Tokenizer(stop_words=["policies"])
    assert tokenizer.tokenize("policies policy") == ["polici"]


def test_cjk_stop_word_drops_its_gram_only() -> None:
    tokenizer = Tokenizer(stop_words=["的"])
    assert tokenizer.tokenize("我的") == ["我", "我的"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TSC CC6.1 applies", ["tsc", "cc6.1", "appli"]),
        ("§164.312(a)(1)", ["164.312", "a", "1"]),
        ("release v2.0.1.", ["releas", "v2.0.1"]),
        ("ends in 2023. 5 items", ["end", "in", "2023", "5", "item"]),
        ("ISO 27001:2013", ["iso", "27001", "2013"]),
        ("version.2", ["version", "2"]),
    ],
)
def test_clause_ids_stay_one_token(tokenizer: Tokenizer, text: str, expected: list[str]) -> None:
    assert tokenizer.tokenize(text) == expected


def test_clause_id_tokens_agree_between_documents_and_queries(tokenizer: Tokenizer) -> None:
    document = tokenizer.tokenize("Control CC6.1 requires logical access restrictions.")
    query = tokenizer.tokenize("what does cc6.1 say?")
    assert "cc6.1" in document
    assert "cc6.1" in query


def test_words_with_digits_are_not_stemmed(tokenizer: Tokenizer) -> None:
    assert tokenizer.tokenize("1990s covid19ing") == ["1990s", "covid19ing"]


def test_nfkc_folds_full_width_letters_and_ligatures(tokenizer: Tokenizer) -> None:
    assert tokenizer.tokenize("ＨＩＰＡＡ １２３") == ["hipaa", "123"]
    assert tokenizer.tokenize("ﬁle") == tokenizer.tokenize("file")


def test_apostrophes_and_underscores_separate_words(tokenizer: Tokenizer) -> None:
    assert tokenizer.tokenize("don't") == ["don", "t"]
    assert tokenizer.tokenize("access_control") == ["access", "control"]


def test_combining_marks_stay_inside_words() -> None:
    # Devanagari vowel signs are combining marks; they must not cut the word apart.
    assert Tokenizer("hindi", stem=False).tokenize("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]


def test_very_long_words_are_kept_unstemmed(tokenizer: Tokenizer) -> None:
    word = "a" * 200 + "ing"
    assert tokenizer.tokenize(word) == [word]


def test_empty_and_punctuation_only_text(tokenizer: Tokenizer) -> None:
    assert tokenizer.tokenize("") == []
    assert tokenizer.tokenize(" ,.;—「」 ") == []


def test_unknown_language_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="klingon") as caught:
        Tokenizer("klingon")
    assert caught.value.key == "lexical.language"
    with pytest.raises(ConfigurationError, match="klingon"):
        Tokenizer("klingon", stem=False)


def test_language_without_stemmer_is_valid_and_unstemmed() -> None:
    tokenizer = Tokenizer("chinese")
    assert not tokenizer.stems
    assert tokenizer.tokenize("policies 数据") == ["policies", "数", "据", "数据"]


def test_other_snowball_languages_stem() -> None:
    assert Tokenizer("german").tokenize("Datenschutzrichtlinien") == ["datenschutzrichtlini"]


def test_from_settings_uses_the_lexical_section() -> None:
    settings = LexicalSettings(language="french", stem=False, stop_words=("le",))
    tokenizer = Tokenizer.from_settings(settings)
    assert tokenizer.to_dict() == {"language": "french", "stem": False, "stop_words": ["le"]}
    assert tokenizer.tokenize("Le contrôle") == ["contrôle"]


def test_signature_is_stable_and_tracks_every_option() -> None:
    base = Tokenizer()
    assert base.signature == Tokenizer().signature
    assert base.signature.startswith(f"tok{TOKENIZER_VERSION}:")
    others = {
        Tokenizer("german").signature,
        Tokenizer(stem=False).signature,
        Tokenizer(stop_words=["the"]).signature,
        Tokenizer(stop_words=["a"]).signature,
    }
    assert base.signature not in others
    assert len(others) == 4
    assert len(base.signature) < 80


def test_signature_ignores_stop_word_order_and_case() -> None:
    first = Tokenizer(stop_words=["The", "of"])
    second = Tokenizer(stop_words=["of", "the", "THE"])
    assert first.signature == second.signature


@given(st.text(max_size=300))
def test_tokenize_is_deterministic_and_tokens_are_clean(text: str) -> None:
    first = Tokenizer().tokenize(text)
    assert first == Tokenizer().tokenize(text)
    for token in first:
        assert token
        assert not any(ch.isspace() for ch in token)
        assert token == token.casefold() or not token.isascii()


@given(st.text(alphabet="abc数据報告 .,-", max_size=60))
def test_every_cjk_character_is_a_unigram(text: str) -> None:
    tokens = Tokenizer(stem=False).tokenize(text)
    for ch in text:
        if ch in "数据報告":
            assert ch in tokens


def test_the_written_mark_table_is_what_unicodedata_says_for_its_version() -> None:
    """The tokenizer reads combining marks from a written table when the running Python has
    its Unicode version; the table must be exactly what scanning gives, or words with marks
    would be cut differently from a Python that scans."""
    import unicodedata

    from affidavit.text import unicode_marks
    from affidavit.text.tokenize import mark_ranges, scan_mark_ranges

    if unicodedata.unidata_version != unicode_marks.UNICODE_VERSION:
        pytest.skip(f"table is for Unicode {unicode_marks.UNICODE_VERSION}")
    assert list(unicode_marks.MARK_RANGES) == scan_mark_ranges(0, 0x110000)
    for first, stop in ((0, 0x10000), (0x10000, 0x20000), (0xE0000, 0xE1000), (0x300, 0x301),
                        (0x301, 0x36F), (0x41, 0x42)):
        assert mark_ranges(first, stop) == scan_mark_ranges(first, stop), (first, stop)
