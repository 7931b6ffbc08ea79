from __future__ import annotations

import pytest

from affidavit.authz import (
    StoreAuthorizer,
    expand_tokens,
    granted_labels,
    parse_principal,
    parse_tuple,
)
from affidavit.config.settings import Settings
from affidavit.errors import AuthorizationError, InputRejected
from affidavit.store import Store


def test_nested_groups_expand_transitively_and_survive_cycles() -> None:
    tuples = [parse_tuple(t) for t in (
        "group:finance#member@user:alice",
        "group:staff#member@group:finance#member",
        "group:everyone#member@group:staff#member",
        "group:finance#member@group:everyone#member",  # a cycle
        "group:board#member@user:bob",
    )]
    tokens = expand_tokens("user:alice", tuples)
    assert tokens == {"user:alice", "*", "group:finance#member", "group:staff#member",
                      "group:everyone#member"}


def test_grants_are_independent_sets_not_a_hierarchy() -> None:
    grants = {"group:hr#member": ["PII"], "group:cfo#member": ["FINANCIAL"]}
    assert granted_labels({"user:h", "group:hr#member"}, grants) == {"PUBLIC", "PII"}
    assert granted_labels({"user:c", "group:cfo#member"}, grants) == {"PUBLIC", "FINANCIAL"}


@pytest.mark.parametrize("bad", ["alice", "group:x#member", "user:", "user:a b", ""])
def test_malformed_principal_fails_closed(bad: str) -> None:
    with pytest.raises(AuthorizationError):
        parse_principal(bad)


@pytest.mark.invariant
def test_invariant_fail_closed_without_principal(store: Store) -> None:
    store.ensure_tenant("default")
    authorizer = StoreAuthorizer(store, Settings())
    with pytest.raises(AuthorizationError):
        authorizer.context_for("default", None)
    with pytest.raises(AuthorizationError):
        authorizer.context_for("no-such-tenant", "user:alice")


@pytest.mark.parametrize("bad", ["group:x@user:a", "group:x#member", "nope:x#member@user:a",
                                 "group:x#member@alice"])
def test_malformed_tuples_are_rejected(bad: str) -> None:
    with pytest.raises(InputRejected):
        parse_tuple(bad)


def test_revocation_takes_effect_on_the_next_context(store: Store) -> None:
    store.ensure_tenant("default")
    authorizer = StoreAuthorizer(store, Settings())
    rel = parse_tuple("group:hr#member@user:helen")
    store.add_tuple("default", rel, at="now")
    store.grant("default", "group:hr#member", ["PII"], at="now")
    before = authorizer.context_for("default", "user:helen")
    assert "PII" in before.granted_labels and "group:hr#member" in before.tokens
    store.remove_tuple("default", rel)
    after = authorizer.context_for("default", "user:helen")
    assert "group:hr#member" not in after.tokens and "PII" not in after.granted_labels
    assert before.policy_version != after.policy_version
