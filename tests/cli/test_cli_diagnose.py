"""``whoami``, ``authz explain`` and the warnings that keep an empty result from being silent."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import EXAMPLES, Run, as_json

TRAVEL = "policies/travel-and-expenses-policy.md"
MINUTES = "board/2024-10-23-board-minutes.md"


def test_whoami_shows_groups_grants_and_the_readable_share(example_workspace: Run) -> None:
    code, out, err = example_workspace("whoami", "--as", "user:farid.nasser", "--json")
    assert code == 0 and err == ""
    data = as_json(out)
    assert data["tenant"] == "harbourline" and data["known"] is True
    assert data["groups"] == ["group:all-staff#member", "group:finance#member"]
    assert data["grants"]["FINANCIAL"] == ["group:finance#member"]
    assert data["grants"]["PUBLIC"] == ["always"]
    assert 0 < data["readable_chunks"] < data["total_chunks"]
    assert data["total_documents"] == 23


def test_whoami_counts_what_search_filters_with(example_workspace: Run) -> None:
    reed = as_json(example_workspace("whoami", "--as", "user:sam.reed", "--json")[1])
    board = as_json(example_workspace("whoami", "--as", "user:grace.liu", "--json")[1])
    # grace.liu holds RESTRICTED through the board; sam.reed only INTERNAL.
    assert board["readable_chunks"] > reed["readable_chunks"]
    _, out, _ = example_workspace("authz", "explain", "--as", "user:sam.reed", TRAVEL, "--json")
    assert as_json(out)["readable_chunks"] <= reed["readable_chunks"]


def test_whoami_of_a_principal_appearing_nowhere_warns_on_stderr(example_workspace: Run) -> None:
    code, out, err = example_workspace("whoami", "--as", "user:sam.red")
    assert code == 0
    assert "user:sam.red appears in no tuple, no grant and no document ACL" in err
    assert "reads 0 of 23 documents" in out


def test_search_for_a_mistyped_principal_warns_instead_of_a_silent_empty_result(
        example_workspace: Run) -> None:
    code, out, err = example_workspace("search", "hotel limit", "--as", "user:sam.red")
    assert code == 0 and "no results you may see" in out
    assert "user:sam.red appears in no tuple" in err
    code, _, err = example_workspace("search", "zzzqqq", "--as", "user:sam.reed")
    assert code == 0 and err == ""  # a known principal with no hits: nothing to warn about


def test_ask_for_a_mistyped_principal_warns(example_workspace: Run) -> None:
    _, _, err = example_workspace("ask", "What is the hotel limit?", "--as", "user:sam.red")
    assert "user:sam.red appears in no tuple" in err


def test_authz_explain_shows_the_relationship_path(example_workspace: Run) -> None:
    code, out, _ = example_workspace("authz", "explain", "--as", "user:sam.reed", TRAVEL)
    assert code == 0
    assert out.startswith("READABLE: user:sam.reed on " + TRAVEL)
    assert ("user:sam.reed -> group:all-staff#member  "
            "via group:all-staff#member@user:sam.reed") in out
    assert "SIRE ACTIVE: used for answers" in out


def test_authz_explain_shows_the_missing_link_and_per_chunk_grants(
        example_workspace: Run) -> None:
    code, out, _ = example_workspace("authz", "explain", "--as", "user:sam.reed", MINUTES,
                                     "--json")
    data = as_json(out)
    assert code == 0 and data["decision"] == "DENIED"
    assert "group:board#member" in data["missing_link"]
    assert data["chunks"] and all(not c["readable"] for c in data["chunks"])
    assert {c["label"] for c in data["chunks"]} == {"RESTRICTED"}


def test_authz_explain_never_prints_document_text(example_workspace: Run) -> None:
    lines = [line.strip() for line in (EXAMPLES / "corpus" / MINUTES).read_text().splitlines()]
    body = [line for line in lines if len(line) > 24 and not line.startswith(("---", "#"))]
    for who in ("user:sam.reed", "user:grace.liu"):
        for flag in ((), ("--json",)):
            _, out, err = example_workspace("authz", "explain", "--as", who, MINUTES, *flag)
            assert "Project Lighthouse" not in out + err
            assert not [line for line in body if line[:24] in out]


def test_authz_explain_of_an_unknown_document_is_not_found(example_workspace: Run) -> None:
    code, _, err = example_workspace("authz", "explain", "--as", "user:sam.reed", "nope.md")
    assert code == 1 and "no current document 'nope.md'" in err


def test_ingest_warns_when_nobody_holds_the_default_label(run: Run, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "note.md").write_text("# Note\n\nThe canteen opens at eight.\n")
    (tmp_path / "affidavit.toml").write_text('[acl]\ndefault = ["*"]\n')
    code, _, err = run("ingest", "docs", "--quiet")
    assert code == 0
    assert "no subject of tenant 'default' is granted the default label INTERNAL" in err
    assert run("authz", "grant", "*", "INTERNAL")[0] == 0
    code, _, err = run("ingest", "docs", "--quiet")
    assert code == 0 and "default label" not in err


def test_ingest_of_the_example_does_not_warn_about_the_default_label(
        run: Run, tmp_path: Path) -> None:
    assert run("init", "--example")[0] == 0
    code, _, err = run("ingest", "corpus", "--quiet")
    assert code == 0 and "default label" not in err
