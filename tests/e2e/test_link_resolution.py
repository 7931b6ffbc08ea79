"""Stage D: links found while parsing become edges between documents, each with a reason.

A relative link to a served document is a CrossReference edge, shown only to a reader of
both ends; other sites are external; a missing or ambiguous path is unresolved and kept,
by linking document and reason, in the run summary; a script scheme or a path out of the
root is refused. The ingest summary prints the unresolved-link rate, and never a target.
"""

from __future__ import annotations

from pathlib import Path

from affidavit.index.links import EXTERNAL, NOT_FOUND, REFUSED, classify_target
from tests.e2e.conftest import EXAMPLES, Run, as_json

SETTINGS = """\
[acl]
default = ["*"]

[grants]
"user:reader" = ["INTERNAL"]
"user:board" = ["INTERNAL", "CONFIDENTIAL", "RESTRICTED"]

[sensitivity]
restricted_keywords = ["harbour crane"]
"""
SECRET_PATH = "QX9CANARYLINK"


def test_a_link_target_gets_a_reason_code() -> None:
    assert classify_target("https://example.com/a", "a/b.md") == (EXTERNAL, None)
    assert classify_target("mailto:x@example.com", "a/b.md") == (EXTERNAL, None)
    assert classify_target("javascript:alert(1)", "a/b.md") == (REFUSED, None)
    assert classify_target("../../etc/passwd", "a/b.md") == (REFUSED, None)
    assert classify_target("../c/d.md#part", "a/b.md") == (NOT_FOUND, "c/d.md")
    assert classify_target("/c/d%20e.md", "a/b.md") == (NOT_FOUND, "c/d e.md")


def test_the_example_corpus_reports_its_unresolved_link_rate(run: Run, tmp_path: Path) -> None:
    (tmp_path / "affidavit.toml").write_text((EXAMPLES / "affidavit.toml").read_text())
    assert run("init")[0] == 0
    code, out, err = run("ingest", str(EXAMPLES / "corpus"), "--json")
    assert code == 0, out + err
    links = as_json(out)["links"]
    assert (links["total"], links["resolved"], links["not_found"]) == (8, 7, 1)
    assert links["unresolved_rate"] == 0.125
    assert links["unresolved"] == [{"from": "hr/family-leave-policy.md", "reason": "not_found"}]


def test_a_link_edge_is_shown_only_to_a_reader_of_both_ends_and_targets_never_printed(
        run: Run, tmp_path: Path) -> None:
    (tmp_path / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "index.md").write_text(
        "# Index\n\nSee the [yard notes](yard.md), the [old notes](gone.md) and "
        f"[this](https://example.com/{SECRET_PATH}).\n", encoding="utf-8")
    (corpus / "yard.md").write_text("# Yard\n\nThe harbour crane lifts containers.\n\n"
                                    f"Archive: [raw]({SECRET_PATH}/raw.md)\n", encoding="utf-8")
    assert run("init")[0] == 0
    code, out, err = run("ingest", str(corpus))
    assert code == 0, out + err
    assert "unresolved-link rate 66.7%" in out and SECRET_PATH not in out + err
    code, out, err = run("ingest", str(corpus), "--json")
    assert SECRET_PATH not in out + err
    for principal, visible in (("user:board", 1), ("user:reader", 0)):
        code, out, _ = run("refs", "list", "index.md", "--as", principal, "--json")
        assert code == 0
        assert len(as_json(out)) == visible
