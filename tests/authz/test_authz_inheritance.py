"""Folder and collection inheritance at query time: pure expansion, then a real store."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.authz import (
    StoreAuthorizer,
    build_context,
    document_object_tokens,
    expand_tokens,
    folder_object,
    parse_tuple,
    subject_tokens,
)
from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.ingest.run import Ingestor
from affidavit.records import node_id_for
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore
from affidavit.store.protocol import RelationTuple

NOW = "2026-01-01T00:00:00+00:00"


def tuples(*texts: str) -> list[RelationTuple]:
    return [parse_tuple(t) for t in texts]


def readable(principal: str, policy: list[RelationTuple], doc_tokens: tuple[str, ...]) -> bool:
    return bool(expand_tokens(principal, policy) & set(doc_tokens))


LEAVE = document_object_tokens("n1", "policies/hr/leave.md")


def test_document_tokens_name_the_doc_and_every_folder_of_its_path() -> None:
    assert LEAVE == ("doc:n1", "folder:policies", "folder:policies/hr")
    assert document_object_tokens("n2", "readme.md") == ("doc:n2",)
    assert document_object_tokens("n3", "HR Policies/#1 @home/x.md") == (
        "doc:n3", "folder:HR%20Policies", "folder:HR%20Policies/%231%20%40home")


def test_a_folder_viewer_reads_everything_below_the_folder() -> None:
    policy = tuples("group:hr#member@user:helen", "folder:policies#viewer@group:hr#member")
    assert readable("user:helen", policy, LEAVE)
    assert not readable("user:bob", policy, LEAVE)
    deeper = tuples("folder:policies/hr/archive#viewer@user:bob")
    assert not readable("user:bob", deeper, LEAVE), "a subfolder viewer does not see its parent"


def test_a_doc_viewer_tuple_admits_one_document() -> None:
    policy = tuples("doc:n1#viewer@user:bob")
    assert readable("user:bob", policy, LEAVE)
    assert not readable("user:bob", policy, document_object_tokens("n2", "policies/hr/x.md"))


def test_explicit_parents_compose_with_path_ancestry() -> None:
    # archive/hr is placed inside policies/hr, which lies under policies: a viewer of
    # policies reaches documents of archive/hr/2023 through one tuple and two path steps.
    old = document_object_tokens("n9", "archive/hr/2023/case.md")
    policy = tuples("folder:archive/hr#parent@folder:policies/hr",
                    "folder:policies#viewer@user:carol")
    assert readable("user:carol", policy, old)
    assert not readable("user:carol", policy, document_object_tokens("n8", "archive/x.md"))


def test_documents_and_folders_in_collections() -> None:
    policy = tuples("doc:n5#parent@collection:board-pack",
                    "collection:board-pack#parent@folder:board",
                    "folder:board#viewer@group:board#member",
                    "group:board#member@user:grace")
    assert readable("user:grace", policy, document_object_tokens("n5", "finance/q3.md"))
    assert not readable("user:grace", policy, document_object_tokens("n6", "finance/q4.md"))


def test_containment_cycles_end() -> None:
    policy = tuples("collection:a#parent@collection:b", "collection:b#parent@collection:a",
                    "folder:x#parent@collection:a", "collection:a#parent@folder:x/y",
                    "collection:b#viewer@user:u")
    tokens = expand_tokens("user:u", policy)
    assert {"collection:a", "collection:b", "folder:x"} <= tokens
    assert readable("user:u", policy, document_object_tokens("n", "x/y/z/doc.md"))


def test_twenty_nested_groups_and_a_cycle_expand_fully() -> None:
    chain = [f"group:g{i:02d}#member@group:g{i + 1:02d}#member" for i in range(20)]
    policy = tuples(*chain, "group:g20#member@user:deep", "group:g20#member@group:g00#member")
    subjects = subject_tokens("user:deep", policy)
    assert {f"group:g{i:02d}#member" for i in range(21)} <= subjects
    assert len(subjects) == 23  # 21 groups, the principal and everyone


def test_everyone_memberships_and_viewers() -> None:
    policy = tuples("group:staff#member@*", "folder:public#viewer@group:staff#member")
    assert readable("user:anyone", policy, document_object_tokens("n", "public/a.md"))


def test_grants_follow_subjects_never_viewed_objects() -> None:
    policy = tuples("folder:hr#viewer@user:bob")
    grants = {"folder:hr": ["PII"], "user:bob": ["INTERNAL"]}
    context = build_context("t", "user:bob", policy, grants)
    assert "folder:hr" in context.tokens
    assert context.granted_labels == {"PUBLIC", "INTERNAL"}


# --------------------------------------------------------------------------- reference


def reference_readable(principal: str, edges: list[tuple[str, str, str]], alias: str,
                       node: str) -> bool:
    """Upward walk from the document (the other direction from the implementation)."""
    subjects = {principal, "*"}
    for _ in range(len(edges) + 1):
        subjects |= {f"{o}#{r}" for o, r, s in edges if o.startswith("group:") and s in subjects}
    parts = alias.split("/")[:-1]
    holders = {f"doc:{node}"} | {"folder:" + "/".join(parts[:n])
                                 for n in range(1, len(parts) + 1)}
    for _ in range(len(edges) + 8):
        holders |= {s for o, r, s in edges if r == "parent" and o in holders}
        holders |= {h.rsplit("/", 1)[0] for h in holders if h.startswith("folder:") and "/" in h}
    return any((h, "viewer", s) in set(edges) for h in holders for s in subjects)


_FOLDERS = ["folder:a", "folder:a/b", "folder:a/b/c", "folder:d", "collection:k"]
_SUBJECTS = ["user:u", "user:v", "*", "group:g#member", "group:h#member"]
_edge = st.one_of(
    st.tuples(st.sampled_from(["group:g", "group:h"]), st.just("member"),
              st.sampled_from(_SUBJECTS)),
    st.tuples(st.sampled_from([*_FOLDERS, "doc:n"]), st.just("viewer"),
              st.sampled_from(_SUBJECTS)),
    st.tuples(st.sampled_from([*_FOLDERS, "doc:n"]), st.just("parent"),
              st.sampled_from(_FOLDERS)),
)


@settings(max_examples=300, deadline=None)
@given(edges=st.lists(_edge, max_size=12),
       alias=st.sampled_from(["a/b/c/x.md", "a/x.md", "d/x.md", "x.md", "a/b/y.md"]))
def test_expansion_agrees_with_an_upward_reference(edges: list[tuple[str, str, str]],
                                                   alias: str) -> None:
    policy = [RelationTuple(o, r, s, "t") for o, r, s in edges if not (r == "parent" and o == s)]
    plain = [(t.object, t.relation, t.subject) for t in policy]
    for principal in ("user:u", "user:v"):
        assert readable(principal, policy, document_object_tokens("n", alias)) == \
            reference_readable(principal, plain, alias, "n")


# --------------------------------------------------------------------------- real store


def _write(root: Path, alias: str, acl: str) -> None:
    path = root / alias
    path.parent.mkdir(parents=True, exist_ok=True)
    front = f"---\nacl: {acl}\nclassification: PUBLIC\n---\n"
    path.write_text(f"{front}# {path.stem}\n\nThe quokka survey of {path.stem} counts every "
                    "quokka on the island.\n", encoding="utf-8")


@pytest.fixture
def folder_store(tmp_path: Path) -> tuple[SQLiteStore, Engine]:
    root = tmp_path / "corpus"
    _write(root, "policies/hr/leave.md", "[]")
    _write(root, "policies/travel.md", "[]")
    _write(root, "board/minutes.md", "[]")
    _write(root, "open.md", '["*"]')
    store = SQLiteStore(tmp_path / "inherit.db")
    settings = Settings()
    Ingestor(store, settings, tenant="default").run(
        [LocalFolderSource(root, max_document_bytes=1 << 20)])
    return store, Engine(store, settings)


def _titles(engine: Engine, principal: str) -> set[str]:
    return {h.title for h in engine.search(principal, "quokka survey", limit=50)}


def test_folder_tuples_take_effect_on_the_next_request(folder_store: tuple) -> None:
    store, engine = folder_store
    assert _titles(engine, "user:helen") == {"open"}
    helen_in_hr = parse_tuple("group:hr#member@user:helen")
    hr_reads_policies = parse_tuple("folder:policies/hr#viewer@group:hr#member")
    store.add_tuple("default", helen_in_hr, at=NOW)
    store.add_tuple("default", hr_reads_policies, at=NOW)
    assert _titles(engine, "user:helen") == {"open", "leave"}
    store.add_tuple("default", parse_tuple(f"{folder_object('policies')}#viewer@user:helen"),
                    at=NOW)
    assert _titles(engine, "user:helen") == {"open", "leave", "travel"}
    store.remove_tuple("default", parse_tuple("folder:policies#viewer@user:helen"))
    store.remove_tuple("default", helen_in_hr)
    assert _titles(engine, "user:helen") == {"open"}


def test_doc_and_collection_tuples_on_a_real_store(folder_store: tuple) -> None:
    store, engine = folder_store
    minutes = node_id_for("files", "board/minutes.md")
    store.add_tuple("default", parse_tuple(f"doc:{minutes}#viewer@user:bob"), at=NOW)
    assert _titles(engine, "user:bob") == {"open", "minutes"}
    store.add_tuple("default", parse_tuple("folder:board#parent@collection:pack"), at=NOW)
    store.add_tuple("default", parse_tuple("collection:pack#viewer@user:grace"), at=NOW)
    assert _titles(engine, "user:grace") == {"open", "minutes"}
    context = StoreAuthorizer(store, Settings()).context_for("default", "user:grace")
    assert {"collection:pack", "folder:board"} <= context.tokens


def test_chunks_carry_doc_and_folder_tokens(folder_store: tuple) -> None:
    store, _ = folder_store
    rows = store._read("SELECT DISTINCT token FROM acl_tokens WHERE token LIKE 'folder:%'")
    assert {str(r[0]) for r in rows} == {"folder:policies", "folder:policies/hr",
                                         "folder:board"}


def test_expansion_is_deterministic_whatever_the_tuple_order() -> None:
    texts = ["group:a#member@user:x", "group:b#member@group:a#member",
             "folder:p#viewer@group:b#member", "doc:n#parent@folder:p/q",
             "collection:c#parent@folder:p", "collection:c#viewer@user:y"]
    expected = expand_tokens("user:x", tuples(*texts))
    for order in itertools.islice(itertools.permutations(texts), 0, 720, 37):
        assert expand_tokens("user:x", tuples(*order)) == expected
    shuffled = texts[:]
    random.Random(3).shuffle(shuffled)
    assert expand_tokens("user:x", tuples(*shuffled)) == expected
    assert "doc:n" in expected
