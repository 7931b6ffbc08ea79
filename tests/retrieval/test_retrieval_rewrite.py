"""The glossary rewriter: original first, synonyms from settings, at most max_queries."""

from __future__ import annotations

import pytest

from affidavit.config.settings import RetrievalSettings
from affidavit.errors import ConfigurationError
from affidavit.retrieval import GlossaryQueryRewriter

GLOSSARY = {
    "net income": ("net profit", "earnings"),
    "revenue": ("turnover", "sales"),
    "PTO": ("paid time off",),
}


def test_original_first_then_variants_in_glossary_order() -> None:
    rewriter = GlossaryQueryRewriter(GLOSSARY, max_queries=10)
    assert rewriter.rewrite("What was net income and revenue in Q3?") == [
        "What was net income and revenue in Q3?",
        "What was net profit and revenue in Q3?",
        "What was earnings and revenue in Q3?",
        "What was net income and turnover in Q3?",
        "What was net income and sales in Q3?",
    ]


def test_a_synonym_mention_expands_to_the_term_and_the_other_synonyms() -> None:
    rewriter = GlossaryQueryRewriter(GLOSSARY)
    assert rewriter.rewrite("how much paid time off do I get") == [
        "how much paid time off do I get", "how much PTO do I get"]


def test_whole_words_only_and_case_insensitive() -> None:
    rewriter = GlossaryQueryRewriter(GLOSSARY)
    assert rewriter.rewrite("prevenue of REVENUE") == [
        "prevenue of REVENUE", "prevenue of turnover", "prevenue of sales"]
    assert rewriter.rewrite("photos") == ["photos"]


def test_at_most_max_queries() -> None:
    rewriter = GlossaryQueryRewriter(GLOSSARY, max_queries=2)
    assert rewriter.rewrite("net income and revenue") == [
        "net income and revenue", "net profit and revenue"]
    with pytest.raises(ConfigurationError):
        GlossaryQueryRewriter(GLOSSARY, max_queries=0)


def test_from_settings_defaults_to_five_and_no_glossary() -> None:
    rewriter = GlossaryQueryRewriter.from_settings(RetrievalSettings())
    assert rewriter.max_queries == 5
    assert rewriter.rewrite("anything") == ["anything"]


def test_synonyms_are_literal_text() -> None:
    rewriter = GlossaryQueryRewriter({"dir": (r"C:\new\1",)})
    assert rewriter.rewrite("dir listing") == ["dir listing", r"C:\new\1 listing"]


def test_deterministic_and_duplicates_dropped() -> None:
    rewriter = GlossaryQueryRewriter({"b": ("a", "A", " a "), "a": ("b",)})
    first = rewriter.rewrite("a b")
    assert first == rewriter.rewrite("a b")
    assert len({q.casefold() for q in first}) == len(first)


def test_cjk_terms_match_without_word_boundaries() -> None:
    rewriter = GlossaryQueryRewriter({"营收": ("收入",)})
    assert rewriter.rewrite("为什么营收下滑") == ["为什么营收下滑", "为什么收入下滑"]
