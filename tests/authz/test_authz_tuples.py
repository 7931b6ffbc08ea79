"""The tuple grammar: folder paths, parent tuples, and what is refused."""

from __future__ import annotations

import pytest

from affidavit.authz import (
    document_object_tokens,
    folder_ancestors,
    folder_object,
    parse_object,
    parse_tuple,
)
from affidavit.errors import InputRejected


@pytest.mark.parametrize(("text", "expected"), [
    ("folder:policies/hr#viewer@group:hr#member", ("folder:policies/hr", "viewer",
                                                   "group:hr#member")),
    ("folder:HR%20Policies#viewer@user:a", ("folder:HR%20Policies", "viewer", "user:a")),
    ("doc:abc123#parent@folder:policies", ("doc:abc123", "parent", "folder:policies")),
    ("folder:a/b#parent@collection:k", ("folder:a/b", "parent", "collection:k")),
    ("collection:k#viewer@*", ("collection:k", "viewer", "*")),
])
def test_valid_tuples(text: str, expected: tuple[str, str, str]) -> None:
    rel = parse_tuple(text)
    assert (rel.object, rel.relation, rel.subject) == expected
    assert str(rel) == text


@pytest.mark.parametrize("bad", [
    "folder:/policies#viewer@user:a",          # empty segment
    "folder:policies/#viewer@user:a",
    "folder:a b#viewer@user:a",                 # spaces must be percent-encoded
    "doc:n#parent@user:a",                      # a parent is a container
    "doc:n#parent@doc:m",
    "group:g#parent@folder:x",                  # groups are not contained
    "folder:x#parent@folder:x",                 # nor their own parent
    "folder:x#viewer@folder:y",                 # a viewer is a subject
])
def test_malformed_tuples_are_refused_with_a_reason(bad: str) -> None:
    with pytest.raises(InputRejected) as info:
        parse_tuple(bad)
    assert info.value.reason_code in ("MALFORMED_TUPLE", "MALFORMED_SUBJECT")


def test_folder_object_encodes_each_segment() -> None:
    assert folder_object("policies/hr") == "folder:policies/hr"
    assert folder_object("/HR Policies//2024/") == "folder:HR%20Policies/2024"
    assert folder_object("a#b@c/ß") == "folder:a%23b%40c/%C3%9F"
    assert parse_object(folder_object("Finance & Risk/Q3 (draft)")) == \
        "folder:Finance%20%26%20Risk/Q3%20%28draft%29"
    with pytest.raises(InputRejected):
        folder_object("//")


def test_every_generated_folder_token_parses_in_a_tuple() -> None:
    for alias in ("x.md", "a/b/c.md", "Ünïcode dir/été/x.md", "https://host/a/b.html"):
        for token in document_object_tokens("node", alias)[1:]:
            assert parse_tuple(f"{token}#viewer@user:a").object == token


def test_folder_ancestors() -> None:
    assert folder_ancestors("folder:a/b/c") == ("folder:a/b/c", "folder:a/b", "folder:a")
    assert folder_ancestors("collection:k") == ("collection:k",)


def test_policy_version_ignores_order_and_sees_every_change() -> None:
    from affidavit.authz import policy_version

    rels = [parse_tuple(t) for t in ("group:a#member@user:x", "folder:p#viewer@group:a#member",
                                     "doc:n#parent@folder:p")]
    grants = {"group:a#member": ["PII", "INTERNAL"], "user:x": ["SECRET"]}
    version = policy_version(rels, grants)
    assert policy_version(rels[::-1], {"user:x": ["SECRET"],
                                       "group:a#member": ["INTERNAL", "PII"]}) == version
    assert policy_version(rels[1:], grants) != version
    assert policy_version(rels, {**grants, "user:x": []}) != version
    moved = [*rels[:2], parse_tuple("doc:n#parent@folder:q")]
    assert policy_version(moved, grants) != version
