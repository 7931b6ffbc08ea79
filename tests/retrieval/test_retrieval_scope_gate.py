"""The out-of-scope entity gate (spec 000) runs on the raw question before anything else:
before the authorizer, the store, the retriever and the provider. Nothing that interprets
the question later (an intent parser, a query rewriter, another retriever) can switch it off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from affidavit.config.settings import ScopeSettings, Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.llm.providers import ScriptedProvider
from affidavit.retrieval.scope import check_scope
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

ENTITIES = {"Northwind Assurance": ("Northwind", "NWA"), "Bellhaven Bank": ("Bellhaven",)}
SETTINGS = Settings(scope=ScopeSettings(out_of_scope_entities=ENTITIES))


class RecordingStore:
    """The real store, with every method call it receives written down."""

    def __init__(self, inner: SQLiteStore):
        self._inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not callable(attribute):
            return attribute

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attribute(*args, **kwargs)

        return recorded


class ExplodingRetriever:
    """Another retriever (or intent parser) in the pipeline; it must never be reached."""

    def search(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("retrieval ran for an out-of-scope question")


@pytest.fixture
def engine_parts(tmp_path: Path) -> tuple[RecordingStore, ScriptedProvider, Engine]:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "rates.md").write_text("---\nacl: [\"*\"]\nclassification: PUBLIC\n---\n# Rates\n\n"
                                   "Northwind mortgage rates are 4.1 percent.\n",
                                   encoding="utf-8")
    real = SQLiteStore(tmp_path / "scope.db")
    Ingestor(real, SETTINGS).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    store = RecordingStore(real)
    provider = ScriptedProvider([])
    engine = Engine(store, SETTINGS, provider=provider)  # type: ignore[arg-type]
    engine.retriever = ExplodingRetriever()  # type: ignore[assignment]
    return store, provider, engine


LEDGER_WRITE_CALLS = {"append_ledger", "policy_head", "iter_policy_events",
                      "append_policy_event"}


@pytest.mark.invariant
@pytest.mark.parametrize("question", [
    "What are Northwind's mortgage rates?",
    "compare NWA with us",
    "what does NORTHWIND   ASSURANCE charge",
    "Is Bellhaven Bank cheaper?",
])
def test_invariant_out_of_scope_refused_before_any_store_or_provider_call(
        engine_parts: tuple, question: str) -> None:
    store, provider, engine = engine_parts
    result = engine.ask("user:anyone", question)
    assert result.output_state == "BLOCKED"
    assert any(r.startswith("OUT_OF_SCOPE_ENTITY:") for r in result.reasons)
    assert "4.1" not in result.answer and result.citations == []
    assert provider.requests == []
    # Only the refusal itself is written down: the ledger append, with the policy version
    # it names (the head of the policy chain, and the effective settings recorded once).
    assert "append_ledger" in store.calls
    assert set(store.calls) <= LEDGER_WRITE_CALLS, "only the refusal itself is written down"


def test_the_gate_runs_before_authorization(engine_parts: tuple) -> None:
    store, _, engine = engine_parts
    for principal in (None, "not-a-principal"):
        result = engine.ask(principal, "Northwind rates?")
        assert result.reasons == ["OUT_OF_SCOPE_ENTITY:Northwind Assurance"]
    assert "tenant_exists" not in store.calls and "list_tuples" not in store.calls


def test_in_scope_questions_pass_the_gate(engine_parts: tuple) -> None:
    _, _, engine = engine_parts
    with pytest.raises(AssertionError, match="retrieval ran"):
        engine.ask("user:anyone", "What are our mortgage rates?")


def test_aliases_are_masked_with_spaces_of_equal_length() -> None:
    question = "Did Northwind Assurance (NWA) buy Bellhaven?"
    verdict = check_scope(question, ENTITIES)
    assert verdict.refused
    assert verdict.entities == ("Bellhaven Bank", "Northwind Assurance")
    assert verdict.masked_question == "Did " + " " * 19 + " (   ) buy " + " " * 9 + "?"
    assert len(verdict.masked_question) == len(question)


@pytest.mark.parametrize("question", ["the nwatch app", "Northwindow", "north wind",
                                      "Bellhavenish", ""])
def test_words_that_merely_contain_an_alias_pass(question: str) -> None:
    assert not check_scope(question, ENTITIES).refused


@pytest.mark.parametrize("question", [
    "Ｎｏｒｔｈｗｉｎｄ rates",   # full-width letters: the tokenizer folds them to ASCII
    "North\u00adwind rates",      # a soft hyphen inside the name
    "N\u200borthwind rates",      # a zero-width space inside the name
    "\u039dorthwind rates",       # a Greek capital Nu
    "Northw\u0456nd rates",       # a Cyrillic i
])
def test_unicode_disguises_do_not_get_past_the_gate(question: str) -> None:
    verdict = check_scope(question, ENTITIES)
    assert verdict.refused and verdict.entities == ("Northwind Assurance",)
    assert len(verdict.masked_question) == len(question)
    assert "rates" in verdict.masked_question


@pytest.mark.parametrize(("question", "masked"), [
    ("What are Northwinds rates?", "What are            rates?"),
    ("Northwind's rates", "         's rates"),
    ("both Bellhavens", "both           "),
    ("Ask NWAs about it", "Ask      about it"),
    ("**North\u00adwinds'** rates", "**" + " " * 11 + "'** rates"),
])
def test_scope_gate_refuses_inflected_forms_the_way_retrieval_stems_them(
        question: str, masked: str) -> None:
    verdict = check_scope(question, ENTITIES)
    assert verdict.refused
    assert verdict.masked_question == masked


def test_scope_gate_stems_in_the_configured_retrieval_language() -> None:
    from affidavit.config.settings import LexicalSettings

    entities = {"Nordwind": ("Nordwind",)}
    assert check_scope("die Nordwinde", entities,
                       lexical=LexicalSettings(language="german")).refused
    unstemmed = LexicalSettings(language="german", stem=False)
    assert not check_scope("die Nordwinde", entities, lexical=unstemmed).refused


def test_a_shorter_alias_inside_a_longer_entity_name_counts_once() -> None:
    entities = {"Northwind Assurance": (), "Northwind": ()}
    verdict = check_scope("Northwind Assurances", entities)
    assert verdict.entities == ("Northwind Assurance",)
