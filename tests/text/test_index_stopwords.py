"""Built-in stop word lists, named with "@" in [lexical] stop_words."""

from __future__ import annotations

import bm25s.stopwords
import pytest

from affidavit.config.settings import LexicalSettings
from affidavit.errors import ConfigurationError
from affidavit.text.stopwords import BUILTIN_STOP_WORDS, expand_stop_words
from affidavit.text.tokenize import Tokenizer


def test_english_is_the_lucene_list_that_bm25s_and_anserini_use() -> None:
    assert set(BUILTIN_STOP_WORDS["english"]) == set(bm25s.stopwords.STOPWORDS_EN)


def test_at_name_expands_and_plain_words_stay() -> None:
    words = expand_stop_words(["@english", "hereby"])
    assert "the" in words and "hereby" in words and "@english" not in words
    assert expand_stop_words(["@ENGLISH"]) == BUILTIN_STOP_WORDS["english"]


def test_an_unknown_list_is_a_configuration_error_not_an_empty_list() -> None:
    with pytest.raises(ConfigurationError, match=r"lexical\.stop_words"):
        Tokenizer("english", True, ["@klingon"])


def test_the_tokenizer_drops_listed_words_and_signs_the_list() -> None:
    plain = Tokenizer.from_settings(LexicalSettings())
    listed = Tokenizer.from_settings(LexicalSettings(stop_words=("@english",)))
    assert listed.tokenize("The cost of the hotels") == ["cost", "hotel"]
    assert plain.tokenize("The cost") == ["the", "cost"]
    assert listed.signature != plain.signature
    same = Tokenizer("english", True, BUILTIN_STOP_WORDS["english"])
    assert same.signature == listed.signature
