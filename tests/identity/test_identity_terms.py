"""Matching Excluded terms in text: word boundaries, case, whitespace, CJK."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affidavit.identity import exclusion_hits, term_tokens
from affidavit.identity.terms import display_term, fold, term_pattern
from affidavit.text.tokenize import CJK_CLASS


@pytest.mark.parametrize(
    "text",
    [
        "HIPAA-covered entities",  # '-' delimits the word HIPAA
        "under hipaa.",
        "(Hipaa)",
        "hipaa_policy",  # underscores separate words too
        "ＨＩＰＡＡ applies",  # full-width letters fold to ASCII
        "见HIPAA规定",  # a CJK neighbour is a boundary
    ],
)
def test_hipaa_matches_as_a_whole_word(text: str) -> None:
    assert exclusion_hits(text, ["hipaa"]) == ("hipaa",)


@pytest.mark.parametrize("text", ["hipaaa", "xhipaa", "hipaa2", "hip aa", ""])
def test_hipaa_does_not_match_inside_other_words(text: str) -> None:
    assert exclusion_hits(text, ["hipaa"]) == ()


@pytest.mark.parametrize("text", ["PCI DSS", "pci   dss", "PCI\n\tDSS", "PCI-DSS", "pci - dss"])
def test_multiword_terms_match_across_whitespace_and_hyphens(text: str) -> None:
    assert exclusion_hits(text, ["pci dss"]) == ("pci dss",)
    assert exclusion_hits(text, ["PCI-DSS"]) == ("PCI-DSS",)


@pytest.mark.parametrize("text", ["PCIDSS", "pci dssx", "xpci dss", "pci, dss"])
def test_multiword_terms_need_their_words_adjacent_and_whole(text: str) -> None:
    assert exclusion_hits(text, ["pci dss"]) == ()


def test_terms_ending_in_digits_respect_the_boundary() -> None:
    assert exclusion_hits("SOC 2 report", ["soc 2"]) == ("soc 2",)
    assert exclusion_hits("SOC 2.1 report", ["soc 2"]) == ("soc 2",)
    assert exclusion_hits("SOC 23 report", ["soc 2"]) == ()


def test_cjk_terms_match_as_substrings() -> None:
    assert exclusion_hits("个人数据保护法", ["数据"]) == ("数据",)
    assert exclusion_hits("数 据", ["数据"]) == ()


def test_hits_keep_given_form_and_order_without_repeats() -> None:
    text = "GDPR and HIPAA"
    assert exclusion_hits(text, ["HIPAA", "ccpa", "gdpr", "HIPAA"]) == ("HIPAA", "gdpr")


def test_terms_without_letters_or_digits_never_match() -> None:
    assert term_pattern("...") is None
    assert term_pattern("   ") is None
    assert exclusion_hits("... --- !!!", ["...", "", " - "]) == ()


def test_term_tokens_split_like_identity() -> None:
    assert term_tokens("SOC_2 Trust-Services") == frozenset({"soc", "2", "trust", "services"})
    assert term_tokens("Q3营收") == frozenset({"q3", "营", "收", "营收"})
    assert term_tokens("!!!") == frozenset()


def test_display_term_folds_and_collapses_whitespace() -> None:
    assert display_term("  PCI \n DSS ") == "pci dss"
    assert display_term("Straße") == "strasse"


_PIECE = st.text(alphabet="abAB12 _-.+数据报ー\u0301İß", max_size=12)


@given(term=_PIECE, before=_PIECE, after=_PIECE)
def test_a_match_implies_every_term_token_is_a_text_token(
    term: str, before: str, after: str
) -> None:
    # This property is what lets Algorithm 1 keep Excluded terms off the source's identity
    # with a token test.
    text = before + term + after
    if exclusion_hits(text, [term]):
        assert term_tokens(term) <= term_tokens(text)


@given(term=st.text(alphabet="abc数据 -", min_size=1, max_size=10).filter(lambda t: t.strip(" -")))
def test_a_term_always_matches_itself(term: str) -> None:
    assert exclusion_hits(term, [term]) == (term,)


def _naive_hits(text: str, excluded: list[str]) -> tuple[str, ...]:
    folded = fold(text)
    hits: list[str] = []
    for term in excluded:
        pattern = term_pattern(term)
        if term not in hits and pattern is not None and pattern.search(folded):
            hits.append(term)
    return tuple(hits)


def test_exclusion_hits_equal_the_pattern_on_every_term() -> None:
    texts = ["Cardholder data follows PCI-DSS\n segmentation; HIPAA-covered (GDPR).",
             "hipaaa is not hipaa; 個人情報保護法 applies", "ISO 27001:2022 and SOC 2 Type II",
             "snake_case_term and e-mail", ""]
    terms = ["pci dss", "hipaa", "gdpr", "個人情報", "情報保護", "iso 27001", "soc 2",
             "type ii", "snake", "case", "e mail", "mail", "hipaa", "---", "27001:2022",
             "Cardholder Data", "segment"]
    for text in texts:
        assert exclusion_hits(text, terms) == _naive_hits(text, terms), text


def test_exclusion_hits_compile_no_pattern_for_a_term_absent_from_the_text() -> None:
    absent = [f"zzterm{i} qq{i}" for i in range(5000)]
    term_pattern.cache_clear()
    assert exclusion_hits("Access reviews happen under HIPAA.", [*absent, "hipaa"]) == ("hipaa",)
    assert term_pattern.cache_info().currsize == 1, "only the term that is present"


def _lookaround_pattern(term: str) -> re.Pattern[str] | None:
    """The former form of a term's pattern, edges as lookarounds (the reference)."""
    word_char = f"[^\\W_{CJK_CLASS}]"
    words = [w for w in re.split(r"[\s\-\u2010\u2011]+", fold(term)) if w]
    if not words or term_pattern(term) is None:
        return None
    lead = re.escape(words[0][0])
    if re.fullmatch(word_char, words[0][0]):
        lead += f"(?<!{word_char}[\\s\\S])"
    rest = r"[\s\-\u2010\u2011]+".join([re.escape(words[0][1:]),
                                        *(re.escape(w) for w in words[1:])])
    trail = f"(?!{word_char})" if re.fullmatch(word_char, words[-1][-1]) else ""
    return re.compile(lead + rest + trail)


@given(term=st.text(alphabet="ab1数据_ -é", min_size=1, max_size=6),
       text=st.text(alphabet="ab1数据_ -é\n.", max_size=30))
def test_a_term_matches_where_its_lookaround_regex_matches(term: str, text: str) -> None:
    finder, reference = term_pattern(term), _lookaround_pattern(term)
    if finder is None or reference is None:
        assert finder is None and reference is None
        return
    assert [m.span() for m in finder.finditer(fold(text))] == \
        [m.span() for m in reference.finditer(fold(text))]
