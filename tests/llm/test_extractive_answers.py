"""The extractive default answers the question: the rows, sentences and items it asks for,
said readably, and nothing beside the point. Real prompts compiled from evidence items;
the claims are those the verifier will check."""

from __future__ import annotations

from affidavit.llm.claims import extract_claims
from affidavit.llm.compiler import compile_prompt
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.providers import ExtractiveProvider, ProviderRequest
from affidavit.llm.quantities import Quantity, fit, quantities, spelled_out

TRAVEL = EvidenceItem("d41fef96", "d41fef96" + "0" * 24, "node-t", "Travel and Expenses Policy",
                      "", "Section 4.1. Hotels MUST be booked through the travel portal, room "
                      "only, standard room.\n\nSection 4.2. The nightly hotel limit, meaning "
                      "the maximum room rate per night excluding breakfast and local taxes, "
                      "is:\n\n| Location | Maximum per night |\n| --- | --- |\n"
                      "| London (inside the M25) | GBP 185 |\n| New York | USD 340 |\n"
                      "| Other UK locations | GBP 120 |\n\nSection 4.4. Breakfast up to GBP 15 "
                      "per night may be claimed when it is not included in the room rate.",
                      "INTERNAL")
LIMITS = EvidenceItem("3fff7f99", "3fff7f99" + "0" * 24, "node-l", "Approval Limits", "",
                      "## 2. Approval limits\n\n| Approver | Approval limit |\n| --- | --- |\n"
                      "| Line manager | up to GBP 5,000 |\n"
                      "| Head of Department | up to GBP 50,000 |\n"
                      "| Executive Committee member | up to GBP 250,000 |\n"
                      "| Board | above GBP 5,000,000 |\n\nSection 1.4. Nobody may approve a "
                      "purchase from which they would benefit.", "INTERNAL")
FLIGHTS = EvidenceItem("e022c0c8", "e022c0c8" + "0" * 24, "node-f", "Travel", "",
                       "International flights of under 6 hours are economy class. Premium "
                       "economy may be booked for flights of 6 hours or more. The office "
                       "kitchen closes at six.", "INTERNAL")


def _answer(question: str, *evidence: EvidenceItem) -> str:
    prompt = compile_prompt(question, list(evidence), role="authoritative")
    return ExtractiveProvider().generate(ProviderRequest(prompt)).text


def test_a_table_row_is_said_with_its_headers_never_as_markdown() -> None:
    text = _answer("What is the nightly hotel limit in London?", TRAVEL)
    assert "|" not in text and "---" not in text
    assert "Location: London (inside the M25), Maximum per night: GBP 185." in text
    # the row that answers, with the sentence that introduces it; not the other rows
    assert text.startswith("The nightly hotel limit") and "New York" not in text


def test_without_a_row_named_every_row_of_the_introduced_table_answers() -> None:
    text = _answer("What is the nightly hotel limit?", TRAVEL)
    for value in ("GBP 185", "USD 340", "GBP 120"):
        assert value in text


def test_a_sentence_that_does_not_bear_on_the_question_is_left_out() -> None:
    text = _answer("What is the nightly hotel limit in London?", TRAVEL)
    assert "travel portal" not in text and "Breakfast" not in text
    assert _answer("How much can be claimed for breakfast?", TRAVEL) == (
        "Breakfast up to GBP 15 per night may be claimed when it is not included in the "
        "room rate. [src:d41fef96]")


def test_a_number_in_the_question_picks_the_row_whose_range_holds_it() -> None:
    text = _answer("Who approves a purchase of GBP 60,000?", LIMITS)
    assert "Executive Committee member" in text and "Head of Department" not in text
    assert "Board" not in text
    assert "Line manager" in _answer("Who approves GBP 3,000?", LIMITS)


def test_numbers_in_words_and_in_digits_ask_the_same() -> None:
    assert _answer("What class are international flights under six hours?", FLIGHTS) == \
        _answer("What class are international flights under 6 hours?", FLIGHTS) == \
        "International flights of under 6 hours are economy class. [src:e022c0c8]"


def test_each_rendered_row_is_one_cited_claim() -> None:
    text = _answer("Who approves a purchase of GBP 60,000?", LIMITS)
    claims = extract_claims(text)
    assert [c.citations for c in claims] == [("3fff7f99",)] * len(claims)
    rows = [c.text for c in claims if c.text.startswith("Approver:")]
    assert rows == ["Approver: Executive Committee member, Approval limit: up to GBP 250,000."]


def test_the_same_question_and_evidence_give_the_same_bytes() -> None:
    first = _answer("What is the nightly hotel limit?", TRAVEL, LIMITS, FLIGHTS)
    assert all(_answer("What is the nightly hotel limit?", TRAVEL, LIMITS, FLIGHTS) == first
               for _ in range(3))


def test_quantities_read_words_currencies_and_ranges() -> None:
    assert spelled_out("under six hours, sixty thousand") == "under 6 hours, 60000"
    assert quantities("GBP 60,000 and £15") == [Quantity(60000.0, "gbp"),
                                                 Quantity(15.0, "gbp")]
    sixty = quantities("GBP 60,000")
    assert fit(sixty, "up to GBP 250,000") == (True, 250000.0)
    assert fit(sixty, "from GBP 25,000 to GBP 150,000") == (True, 125000.0)
    assert fit(sixty, "up to GBP 50,000")[0] is False
    assert fit(sixty, "flights of 6 hours or more")[0] is False  # money is not hours
