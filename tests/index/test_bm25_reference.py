"""Our BM25 equals bm25s (method="lucene") on the same tokens, document by document."""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.index import bm25_scores
from affidavit.text.tokenize import Tokenizer

TOLERANCE = 1e-6

CORPUS = [
    "Access to production systems is restricted to authorised engineers.",
    "All access requests must be approved by the system owner before provisioning.",
    "Multi-factor authentication (MFA) is required for every remote access session.",
    "Control CC6.1: the entity implements logical access security software.",
    "Control CC6.2 covers user registration and authorisation before access is granted.",
    "Change management: every change to production follows a documented approval process.",
    "Emergency changes are reviewed by the change advisory board within two business days.",
    "Backups are encrypted and tested quarterly; restore tests are documented.",
    "Encryption keys are rotated annually and stored in a hardware security module.",
    "The incident response plan defines severity levels and escalation paths.",
    "Security incidents are reported to the CISO within 24 hours.",
    "Vendors handling personal data sign a data processing agreement.",
    "HIPAA section 164.312(a)(1) requires access control for electronic health information.",
    "PCI DSS requirement 8 concerns identification and authentication of users.",
    "Employees complete security awareness training when hired and every year after.",
    "Passwords must be at least twelve characters long and are never shared.",
    "Policies are reviewed annually by the information security committee.",
    "The policy owner approves exceptions; every exception expires after ninety days.",
    "数据保护政策适用于所有员工和承包商。",
    "所有访问请求必须由系统所有者批准。",
    "生产系统的访问权限仅限于授权工程师。",
    "变更管理：对生产环境的每一次变更都必须经过审批。",
    "第三季度营收增长百分之十二，利润保持稳定。",
    "Q3营收 grew 12% while operating costs stayed flat.",
    "个人数据的处理必须遵守数据保护法规。",
    "安全事件必须在24小时内报告给首席信息安全官。",
    "加密密钥每年轮换一次，并存储在硬件安全模块中。",
    "Access reviews happen every quarter; 访问审查每季度进行一次。",
    "The board approved the 2024 budget and the capital plan.",
    "Revenue recognition follows IFRS 15 for all customer contracts.",
    "Customer data is retained for seven years and then deleted.",
    "Retention schedules are reviewed by legal and compliance each year.",
    "",
    "access access access access access",
]

QUERIES = [
    "access control",
    "who approves access requests",
    "MFA remote access",
    "CC6.1",
    "cc6.2 user registration",
    "change management approval",
    "emergency change",
    "backup encryption",
    "encryption key rotation",
    "incident response severity",
    "HIPAA 164.312",
    "PCI DSS authentication",
    "security awareness training",
    "password policy",
    "policies reviewed annually",
    "数据保护",
    "访问请求",
    "营收增长",
    "Q3营收",
    "安全事件报告",
    "加密密钥",
    "访问审查 access review",
    "data retention years",
    "revenue IFRS",
    "access access",
    "no such words here",
]


def _bm25s_scores(
    query: Sequence[str], docs: Sequence[Sequence[str]], *, k1: float, b: float
) -> list[float]:
    retriever = bm25s.BM25(k1=k1, b=b, method="lucene", dtype="float64")
    retriever.index([list(tokens) for tokens in docs], show_progress=False)
    if not query:
        return [0.0] * len(docs)
    return [float(score) for score in retriever.get_scores(list(query))]


@pytest.fixture(scope="module")
def corpus_tokens() -> list[list[str]]:
    tokenizer = Tokenizer()
    return [tokenizer.tokenize(text) for text in CORPUS]


def test_fixture_is_big_enough() -> None:
    assert len(CORPUS) >= 30
    assert len(QUERIES) >= 20
    assert sum(any("\u4e00" <= ch <= "\u9fff" for ch in q) for q in QUERIES) >= 5


@pytest.mark.parametrize("query", QUERIES)
def test_scores_equal_bm25s_lucene(query: str, corpus_tokens: list[list[str]]) -> None:
    query_tokens = Tokenizer().tokenize(query)
    ours = bm25_scores(query_tokens, corpus_tokens, k1=1.5, b=0.75)
    reference = _bm25s_scores(query_tokens, corpus_tokens, k1=1.5, b=0.75)
    assert ours == pytest.approx(reference, abs=TOLERANCE, rel=0)


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.75), (0.9, 0.4), (2.0, 0.0), (1.5, 1.0)])
def test_parameters_are_honoured_like_bm25s(
    k1: float, b: float, corpus_tokens: list[list[str]]
) -> None:
    for query in QUERIES:
        query_tokens = Tokenizer().tokenize(query)
        ours = bm25_scores(query_tokens, corpus_tokens, k1=k1, b=b)
        reference = _bm25s_scores(query_tokens, corpus_tokens, k1=k1, b=b)
        assert ours == pytest.approx(reference, abs=TOLERANCE, rel=0)


def test_chinese_queries_rank_the_chinese_document_first(corpus_tokens: list[list[str]]) -> None:
    scores = bm25_scores(Tokenizer().tokenize("营收增长"), corpus_tokens)
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    assert CORPUS[best].startswith("第三季度营收增长")


def test_repeated_query_tokens_count_each_time_like_bm25s(
    corpus_tokens: list[list[str]],
) -> None:
    once = bm25_scores(["access"], corpus_tokens)
    twice = bm25_scores(["access", "access"], corpus_tokens)
    assert twice == pytest.approx([2 * s for s in once], abs=1e-12)
    assert twice == pytest.approx(
        _bm25s_scores(["access", "access"], corpus_tokens, k1=1.5, b=0.75), abs=TOLERANCE
    )


_TOKENS = st.lists(st.sampled_from(["a", "b", "c", "d", "数", "据", "数据", "cc6.1"]), max_size=12)


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(_TOKENS, min_size=1, max_size=12), query=_TOKENS)
def test_random_corpora_match_bm25s(docs: list[list[str]], query: list[str]) -> None:
    if not any(docs):
        # bm25s cannot index a corpus without a single token; ours scores it all zero.
        assert bm25_scores(query, docs) == [0.0] * len(docs)
        return
    ours = bm25_scores(query, docs)
    assert ours == pytest.approx(_bm25s_scores(query, docs, k1=1.5, b=0.75), abs=TOLERANCE)
