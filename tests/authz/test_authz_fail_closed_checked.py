"""The fail-closed wrapper checks a context's tokens once, and whom it answers for always.

An authorizer that caches its contexts returns the same object request after request; the
wrapper remembers that object as well-formed. These tests try to use that memory: the same
object answered for another principal or tenant, and a malformed answer after a good one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from affidavit.authz import FailClosedAuthorizer
from affidavit.errors import AuthorizationError
from affidavit.records import AuthzContext


class CountedTokens(frozenset[str]):
    """A token set that counts how often it is walked."""

    walks = 0

    def __iter__(self) -> Iterator[str]:
        CountedTokens.walks += 1
        return super().__iter__()


class Scripted:
    """An authorizer that gives its answers in turn, whoever asks."""

    def __init__(self, *answers: Any):
        self.answers = list(answers)

    def context_for(self, tenant: str, principal: str | None) -> Any:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def good(tokens: frozenset[str] = frozenset({"user:sam", "*"})) -> AuthzContext:
    return AuthzContext("default", "user:sam", tokens, frozenset({"PUBLIC"}), "v1")


def test_a_context_answered_again_is_not_walked_again() -> None:
    context = good(CountedTokens({"user:sam", "*", "group:staff#member"}))
    authorizer = FailClosedAuthorizer(Scripted(context))
    CountedTokens.walks = 0
    for _ in range(3):
        assert authorizer.context_for("default", "user:sam") is context
    assert CountedTokens.walks == 1


@pytest.mark.parametrize(("tenant", "principal"), [("default", "user:eve"),
                                                   ("other", "user:sam")])
def test_a_context_checked_once_is_refused_for_anyone_else(tenant: str, principal: str) -> None:
    context = good()
    authorizer = FailClosedAuthorizer(Scripted(context))
    assert authorizer.context_for("default", "user:sam") is context
    with pytest.raises(AuthorizationError, match="another tenant or principal"):
        authorizer.context_for(tenant, principal)


@pytest.mark.parametrize("answer", [
    AuthzContext("default", "user:sam", frozenset({""}), frozenset({"PUBLIC"}), "v1"),
    None,  # a remembered-object lookup must not take a missing entry for None itself
])
def test_a_malformed_answer_after_a_good_one_is_refused(answer: Any) -> None:
    context = good()
    authorizer = FailClosedAuthorizer(Scripted(context, answer))
    assert authorizer.context_for("default", "user:sam") is context
    with pytest.raises(AuthorizationError):
        authorizer.context_for("default", "user:sam")
