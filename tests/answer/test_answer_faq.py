"""The FAQ short-circuit: conservative matching, scope and permission exclusions."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.answer import FaqCache, FaqEntry, normalize_question
from affidavit.errors import InputRejected

TOML = """
[[entries]]
question = "What is the nightly hotel limit?"
answer = "The nightly hotel limit is GBP 180 outside London."
sources = ["travel-policy"]

[[entries]]
question = "How many days of annual leave do staff get in 2025?"
answer = "Staff get 25 days of annual leave."
sources = ["hr-handbook", "board-pay-paper"]
labels = ["CONFIDENTIAL"]

[[entries]]
question = "Who is our contact at Northwind?"
answer = "Ask procurement."
sources = ["travel-policy"]
"""
ENTITIES = {"Northwind Assurance": ("Northwind",)}


@pytest.fixture
def cache(tmp_path: Path) -> FaqCache:
    path = tmp_path / "faq.toml"
    path.write_text(TOML, encoding="utf-8")
    return FaqCache.load(path)


def _everyone(source: str) -> bool:
    return True


def test_exact_match_after_normalization(cache: FaqCache) -> None:
    found = cache.match("  what is the NIGHTLY hotel limit ", can_read_source=_everyone)
    assert found is not None and found.kind == "exact" and found.similarity == 1.0
    assert found.entry.sources == ("travel-policy",)


def test_near_exact_needs_the_same_numbers_and_no_negation(cache: FaqCache) -> None:
    granted = ["CONFIDENTIAL"]
    reordered = "In 2025, how many days of annual leave do staff get?"
    found = cache.match(reordered, can_read_source=_everyone, granted_labels=granted)
    assert found is not None and found.kind == "near_exact"
    assert cache.match("How many days of annual leave do staff get in 2026?",
                       can_read_source=_everyone, granted_labels=granted) is None
    assert cache.match("What is not the nightly hotel limit?", can_read_source=_everyone) is None
    assert cache.match("What is the hotel limit?", can_read_source=_everyone) is None


def test_never_when_a_source_or_label_is_not_readable(cache: FaqCache) -> None:
    question = "How many days of annual leave do staff get in 2025?"
    assert cache.match(question, can_read_source=_everyone) is None  # label not granted
    assert cache.match(question, can_read_source=lambda s: s != "board-pay-paper",
                       granted_labels=["CONFIDENTIAL"]) is None
    assert cache.match(question, can_read_source=_everyone,
                       granted_labels=["CONFIDENTIAL"]) is not None


def test_never_for_out_of_scope_questions_or_entries(cache: FaqCache) -> None:
    assert cache.match("Who is our contact at Northwind?", can_read_source=_everyone,
                       out_of_scope_entities=ENTITIES) is None
    assert cache.match("What is the nightly hotel limit at Northwind Assurance?",
                       can_read_source=_everyone, out_of_scope_entities=ENTITIES) is None


def test_yaml_files_load_like_toml(tmp_path: Path) -> None:
    path = tmp_path / "faq.yaml"
    path.write_text("entries:\n  - question: Where is the office?\n    answer: Leeds.\n"
                    "    sources: [office-guide]\n", encoding="utf-8")
    (entry,) = FaqCache.load(path).entries
    assert entry == FaqEntry("Where is the office?", "Leeds.", ("office-guide",))


@pytest.mark.parametrize(("text", "code"), [
    ("entries = 3", "FAQ_MALFORMED"),
    ('[[entries]]\nquestion = "Q?"\nanswer = "A."\n', "FAQ_ENTRY_WITHOUT_SOURCES"),
    ('[[entries]]\nquestion = "Q?"\nanswer = "A."\nsources = ["s"]\n'
     '[[entries]]\nquestion = "q"\nanswer = "B."\nsources = ["s"]\n', "FAQ_DUPLICATE_QUESTION"),
    ("not = [valid", "FAQ_MALFORMED"),
])
def test_bad_faq_files_are_rejected_with_a_code(tmp_path: Path, text: str, code: str) -> None:
    path = tmp_path / "faq.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputRejected) as caught:
        FaqCache.load(path)
    assert caught.value.reason_code == code


def test_normalization_keeps_cjk_and_drops_punctuation() -> None:
    assert normalize_question("数据保留多久？") == "数 据 保 留 多 久"
    assert normalize_question("What's   the LIMIT?!") == "what s the limit"
