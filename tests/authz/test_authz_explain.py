"""The access explainer: the same decision as the filter's context, with its reasons."""

from __future__ import annotations

import itertools

import pytest

from affidavit.authz import build_context, parse_tuple
from affidavit.authz.explain import (
    DENIED,
    PARTIAL,
    READABLE,
    ChunkFacts,
    DocumentFacts,
    explain_access,
    label_grants,
    principal_is_known,
    relationship_path,
)

TUPLES = [parse_tuple(t) for t in (
    "group:hr#member@user:helen",
    "group:staff#member@group:hr#member",
    "group:staff#member@user:sam",
    "collection:hr-records#viewer@user:auditor",
    "doc:n2#parent@collection:hr-records",
    "folder:policies#viewer@user:reader",
)]
GRANTS = {"group:staff#member": ["INTERNAL"], "group:hr#member": ["PII"],
          "user:auditor": ["INTERNAL", "PII"], "user:reader": ["INTERNAL"]}


def _doc(node: str, acl: tuple[str, ...], labels: tuple[str, ...], *, sire: str | None = "ACTIVE",
         current: bool = True) -> DocumentFacts:
    chunks = tuple(ChunkFacts(f"{node}-c{i}", i, label) for i, label in enumerate(labels))
    return DocumentFacts(node, f"{node}-v1", f"{node}.md", acl, chunks, sire, current)


DOCS = [
    _doc("n1", ("group:staff#member", "doc:n1"), ("INTERNAL", "PII")),
    _doc("n2", ("user:nobody", "doc:n2", "folder:hr"), ("PII",)),
    _doc("n3", ("doc:n3", "folder:policies", "folder:policies/hr"), ("INTERNAL", "PUBLIC")),
    _doc("n4", ("*", "doc:n4"), ("PUBLIC", "RESTRICTED")),
]
PRINCIPALS = ["user:helen", "user:sam", "user:auditor", "user:reader", "user:stranger"]


def test_explain_path_follows_nested_groups_to_the_acl_token() -> None:
    result = explain_access("t", "user:helen", TUPLES, GRANTS, DOCS[0])
    assert result.decision == READABLE
    assert result.admitted_by == "group:staff#member"
    assert [(s.source, s.target) for s in result.path] == [
        ("user:helen", "group:hr#member"), ("group:hr#member", "group:staff#member")]
    assert result.path[1].via == "group:staff#member@group:hr#member"


def test_explain_path_goes_through_a_viewer_and_a_parent_tuple() -> None:
    token, path = relationship_path("user:auditor", TUPLES, DOCS[1].acl_tokens)
    assert token == "doc:n2"
    assert [s.via for s in path] == ["collection:hr-records#viewer@user:auditor",
                                     "doc:n2#parent@collection:hr-records"]


def test_explain_names_the_missing_link_when_the_acl_does_not_admit() -> None:
    result = explain_access("t", "user:sam", TUPLES, GRANTS, DOCS[1])
    assert result.decision == DENIED
    assert result.admitted_by is None and result.path == ()
    assert result.missing_link is not None
    assert "user:nobody" in result.missing_link and "doc:n2" in result.missing_link
    assert "group:staff#member" in result.missing_link  # what sam is
    assert all(c.reason == "the document's ACL does not admit the principal"
               for c in result.chunks)


def test_explain_grants_each_chunk_by_its_own_label() -> None:
    result = explain_access("t", "user:sam", TUPLES, GRANTS, DOCS[0])
    assert result.decision == PARTIAL
    internal, pii = result.chunks
    assert internal.readable and internal.granted_by == ("group:staff#member",)
    assert not pii.readable and pii.reason == "no subject of the principal is granted PII"


def test_explain_restricted_chunk_is_denied_without_its_grant() -> None:
    result = explain_access("t", "user:sam", TUPLES, GRANTS, DOCS[3])
    assert result.admitted_by == "*"
    assert [c.readable for c in result.chunks] == [True, False]


def test_explain_stale_labels_are_not_readable() -> None:
    stale = _doc("n5", ("group:staff#member",), ("INTERNAL",), current=False)
    result = explain_access("t", "user:sam", TUPLES, GRANTS, stale)
    assert result.decision == DENIED
    assert "re-labelled" in result.chunks[0].reason


@pytest.mark.parametrize("state", ["PROPOSED", None])
def test_explain_says_a_document_without_active_sire_is_excluded_from_answers(
        state: str | None) -> None:
    result = explain_access("t", "user:sam", TUPLES, GRANTS,
                            _doc("n6", ("*",), ("PUBLIC",), sire=state))
    assert "excluded from answers" in result.sire_note


@pytest.mark.parametrize(("principal", "doc"), list(itertools.product(PRINCIPALS, DOCS)))
def test_explanation_agrees_with_the_context_retrieval_filters_with(
        principal: str, doc: DocumentFacts) -> None:
    context = build_context("t", principal, TUPLES, GRANTS)
    admitted = bool(context.tokens & set(doc.acl_tokens))
    result = explain_access("t", principal, TUPLES, GRANTS, doc)
    assert (result.admitted_by is not None) == admitted
    for chunk in result.chunks:
        assert chunk.readable == (admitted and chunk.label in context.granted_labels)


def test_label_grants_name_the_granting_subjects() -> None:
    assert label_grants("user:helen", TUPLES, GRANTS) == {
        "INTERNAL": ("group:staff#member",), "PII": ("group:hr#member",), "PUBLIC": ("always",)}


def test_principal_appearing_nowhere_is_unknown() -> None:
    acl = [t for d in DOCS for t in d.acl_tokens]
    assert principal_is_known("user:helen", TUPLES, GRANTS, acl)
    assert principal_is_known("user:nobody", TUPLES, GRANTS, acl)  # only in an ACL
    assert principal_is_known("user:reader", TUPLES, {}, acl)  # only in a tuple
    assert not principal_is_known("user:helenn", TUPLES, GRANTS, acl)
