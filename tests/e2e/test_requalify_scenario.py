"""Change without surprise: a settings change is requalified by delta, from stored blobs.

After a keyword rule is added, ``requalify --plan`` names exactly the documents whose
labels the rule changes; ``--canary`` shows their differences and serves nothing new;
``--roll`` promotes them; the other documents are marked current in place and keep their
ACTIVE approvals, ids and vectors throughout. A plain ``ingest`` does the same and says
which documents it derived again. A full rebuild carries over every approval whose proposal
is unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Run, as_json

GRANTS = """\
[acl]
default = ["*"]

[grants]
"user:reader" = ["INTERNAL"]
"user:board" = ["INTERNAL", "CONFIDENTIAL", "RESTRICTED"]
"""
CANARY = "QX7CANARYWHARF"
CRANE_DOCS = {
    "yard.md": "# Yard operations\n\nThe harbour crane lifts containers onto the quay.\n\n"
               "Forklifts move pallets inside the shed.\n",
    "crane.md": "# Crane hire\n\nHiring the harbour crane costs a fixed day rate.\n\n"
                f"Bookings are made by the port office under code {CANARY}.\n",
    "dock.md": "# Dock safety\n\nNobody stands under the harbour crane while it moves.\n",
}
OTHER_DOCS = {
    "travel.md": "# Travel policy\n\nEconomy class applies to every flight under six hours.\n",
    "leave.md": "# Annual leave\n\nStaff take twenty five days of annual leave a year.\n",
}


def keyword_rule(*keywords: str) -> str:
    words = ", ".join(json.dumps(k) for k in keywords)
    return GRANTS + f"\n[sensitivity]\nrestricted_keywords = [{words}]\n"


def setup(run: Run, tmp_path: Path) -> Path:
    (tmp_path / "affidavit.toml").write_text(GRANTS, encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in {**CRANE_DOCS, **OTHER_DOCS}.items():
        (corpus / name).write_text(text, encoding="utf-8")
    assert run("init")[0] == 0
    assert run("ingest", str(corpus), "--json")[0] == 0
    assert run("sire", "approve", "--all", "--by", "user:curator")[0] == 0
    return corpus


def sire_states(run: Run) -> dict[str, tuple[str, str]]:
    """alias -> (sire id, state) of every head version."""
    code, out, _ = run("sire", "list", "--json")
    assert code == 0
    return {r["alias"]: (r["sire_id"], r["state"]) for r in as_json(out)}


def served(run: Run, principal: str, query: str = "harbour crane economy leave") -> list[str]:
    code, out, _ = run("search", query, "--as", principal, "--json")
    assert code == 0
    return sorted(h["text"] for h in as_json(out))


def doc_ids(run: Run) -> set[str]:
    """The document ids of what user:reader finds about forklifts (yard.md only)."""
    code, out, _ = run("search", "forklifts pallets", "--as", "user:reader", "--json")
    assert code == 0
    return {h["doc_id"] for h in as_json(out)}


def requalify(run: Run, *args: str) -> dict[str, Any]:
    code, out, err = run("requalify", *args, "--json")
    assert code == 0, out + err
    report: dict[str, Any] = as_json(out)
    return report


def test_a_keyword_rule_requalifies_exactly_the_documents_it_affects(
        run: Run, tmp_path: Path) -> None:
    setup(run, tmp_path)
    approved = sire_states(run)
    assert {state for _, state in approved.values()} == {"ACTIVE"}
    (tmp_path / "affidavit.toml").write_text(keyword_rule("harbour crane"), encoding="utf-8")

    plan = requalify(run, "--plan")
    assert plan["affected"] == sorted(CRANE_DOCS)
    assert plan["restamp"] == sorted(OTHER_DOCS)
    assert plan["epochs"]["changed"] == ["policy"]
    assert plan["stale_by_epoch"] == {"policy": sorted({**CRANE_DOCS, **OTHER_DOCS})}
    assert plan["estimate"]["documents_to_derive"] == 3
    assert sire_states(run) == approved  # planning writes nothing

    before = (served(run, "user:reader"), served(run, "user:board"), sire_states(run))
    canary = requalify(run, "--canary", "2")
    assert canary["affected"] == 3 and len(canary["sample"]) == 2
    assert canary == requalify(run, "--canary", "2")  # a deterministic sample
    for doc in canary["sample"]:
        assert doc["alias"] in CRANE_DOCS
        assert [(c["before"], c["after"]) for c in doc["changes"]["labels"]] == [
            ("INTERNAL", "RESTRICTED")]
    assert (served(run, "user:reader"), served(run, "user:board"), sire_states(run)) == before

    # The searches above caught up: the documents the rule does not affect were marked
    # current in place on the first of them, so they serve throughout and the roll has
    # only the affected ones left to derive.
    assert requalify(run, "--plan")["restamp"] == []
    rolled = requalify(run, "--roll")
    assert sorted(rolled["derived"]) == sorted(CRANE_DOCS)
    assert sorted(rolled["restamped"]) == []
    assert sorted(rolled["carried_over"] + rolled["proposed"]) == sorted(CRANE_DOCS)
    after = sire_states(run)
    for alias in OTHER_DOCS:  # same version, same approval, throughout
        assert after[alias] == approved[alias]
    assert not any("harbour crane" in t for t in served(run, "user:reader"))
    assert any("harbour crane" in t for t in served(run, "user:board"))
    assert any("Economy class" in t for t in served(run, "user:reader"))

    again = requalify(run, "--plan")
    assert again["affected"] == [] and again["restamp"] == []
    assert again["counts"]["fresh"] == 5 and again["epochs"]["changed"] == []


def test_a_plain_ingest_after_a_settings_change_derives_only_what_it_affects(
        run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    approved = sire_states(run)
    (tmp_path / "affidavit.toml").write_text(keyword_rule("economy class"), encoding="utf-8")
    code, out, err = run("ingest", str(corpus), "--json")
    assert code == 0, out + err
    summary = as_json(out)
    assert summary["relabelled"] == ["travel.md"]
    assert summary["ingested"] == 0
    after = sire_states(run)
    for alias in (*CRANE_DOCS, "leave.md"):
        assert after[alias] == approved[alias]
    assert not any("Economy" in t for t in served(run, "user:reader"))
    assert any("Forklifts" in t for t in served(run, "user:reader", "forklifts pallets"))


def test_a_full_rebuild_needs_all_and_yes_and_carries_unchanged_approvals_over(
        run: Run, tmp_path: Path) -> None:
    setup(run, tmp_path)
    approved = sire_states(run)
    assert run("requalify", "--roll", "--all")[0] == 2
    assert requalify(run, "--plan")["counts"]["fresh"] == 5
    rolled = requalify(run, "--roll", "--all", "--yes")
    assert sorted(rolled["derived"]) == sorted(approved)
    assert sorted(rolled["carried_over"]) == sorted(approved)
    after = sire_states(run)
    for alias, (sire_id, _) in approved.items():
        assert after[alias][1] == "ACTIVE" and after[alias][0] != sire_id
    code, out, _ = run("audit", "list", "--json")
    assert code == 0
    events = [e for e in as_json(out) if e["kind"] == "sire.carry_over"]
    assert len(events) == len(approved)
    assert all(e["after"]["approved_by"] == "user:curator" for e in events)


def test_requalification_reports_never_carry_a_restricted_string(
        run: Run, tmp_path: Path) -> None:
    setup(run, tmp_path)
    (tmp_path / "affidavit.toml").write_text(keyword_rule("harbour crane", CANARY.lower()),
                                             encoding="utf-8")
    for args in (("--plan",), ("--canary", "3"), ("--roll",)):
        for fmt in ((), ("--json",)):
            code, out, err = run("requalify", *args, *fmt)
            assert code == 0, out + err
            assert CANARY.lower() not in (out + err).lower()
            assert "harbour crane" not in (out + err).lower()


def test_a_file_moved_without_a_source_id_keeps_its_document_and_gains_a_redirect(
        run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    before = doc_ids(run)
    (corpus / "ops").mkdir()
    (corpus / "yard.md").rename(corpus / "ops" / "yard-moved.md")
    code, out, err = run("ingest", str(corpus), "--json")
    assert code == 0, out + err
    summary = as_json(out)
    assert summary["moved"] == ["yard.md -> ops/yard-moved.md"]
    assert summary["withdrawn"] == [] and summary["ingested"] == 1
    assert len(before) == 1 and doc_ids(run) == before
    aliases = {r["alias"] for r in as_json(run("sire", "list", "--json")[1])}
    assert "ops/yard-moved.md" in aliases and "yard.md" not in aliases
    resolutions = as_json(run("identity", "list", "--json")[1])["resolutions"]
    assert [(r["owner"], r["claimant"], r["resolved_by"]) for r in resolutions] == [
        ("yard.md", "ops/yard-moved.md", "system:move")]
    again = as_json(run("ingest", str(corpus), "--json")[1])
    assert (again["ingested"], again["unchanged"], again["moved"]) == (0, 5, [])


def test_a_copy_or_an_edited_move_is_a_new_document(run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    (corpus / "yard-copy.md").write_text(CRANE_DOCS["yard.md"], encoding="utf-8")
    (corpus / "travel.md").rename(corpus / "travel-2.md")
    (corpus / "travel-2.md").write_text(OTHER_DOCS["travel.md"] + "\nEdited.\n",
                                        encoding="utf-8")
    summary = as_json(run("ingest", str(corpus), "--json")[1])
    assert summary["moved"] == [] and summary["withdrawn"] == ["travel.md"]
    assert summary["ingested"] == 2


RATES = ("# Crane rates\n\nDay rates for the yard.\n\n| crane | rate |\n|---|---|\n"
         "| mobile | 900 |\n| tower | 1400 |\n\n## Notes\n\nRates include the operator.\n")
RATES_FLATTENED = "Crane rates. Day rates for the yard. Notes: rates include the operator.\n"


def test_a_version_that_lost_its_tables_is_held_as_drift_while_the_previous_one_serves(
        run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    (corpus / "rates.md").write_text(RATES, encoding="utf-8")
    assert run("ingest", str(corpus), "--json")[0] == 0
    (corpus / "rates.md").write_text(RATES_FLATTENED, encoding="utf-8")
    code, out, _ = run("ingest", str(corpus), "--json")
    summary = as_json(out)
    assert code == 3 and [q["reason_code"] for q in summary["quarantined"]] == ["DRIFT"]
    assert "tables 1->0" in summary["quarantined"][0]["message"]
    assert summary["withdrawn"] == []
    assert any("tower | 1400" in t for t in served(run, "user:reader", "tower mobile rate"))

    run_id = summary["run_id"]
    assert run("quarantine", "release", run_id, "rates.md", "--by", "user:reviewer")[0] == 0
    code, out, _ = run("ingest", str(corpus), "--json")
    assert code == 0 and as_json(out)["ingested"] == 1
    texts = served(run, "user:reader", "tower mobile rate operator")
    assert not any("1400" in t for t in texts) and any("operator" in t for t in texts)


def test_a_version_that_drops_its_redaction_markers_is_held_as_drift(
        run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    redacted = "# Claims\n\nThe claimant is [REDACTED] of [REDACTED], born [REDACTED].\n"
    (corpus / "claims.md").write_text(redacted, encoding="utf-8")
    assert run("ingest", str(corpus), "--json")[0] == 0
    (corpus / "claims.md").write_text(
        f"# Claims\n\nThe claimant is {CANARY} of Port Road, born 1970.\n", encoding="utf-8")
    code, out, _ = run("ingest", str(corpus), "--json")
    assert code == 3 and [q["reason_code"] for q in as_json(out)["quarantined"]] == ["DRIFT"]
    assert not any(CANARY in t for t in served(run, "user:board", "claimant born"))


def test_the_drift_thresholds_are_settings(run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    (corpus / "rates.md").write_text(RATES, encoding="utf-8")
    assert run("ingest", str(corpus), "--json")[0] == 0
    (tmp_path / "affidavit.toml").write_text(GRANTS + "\n[drift]\nmax_block_loss = 1.0\n"
                                             "max_coverage_loss = 1.0\n", encoding="utf-8")
    (corpus / "rates.md").write_text(RATES_FLATTENED, encoding="utf-8")
    code, out, _ = run("ingest", str(corpus), "--json")
    assert code == 0 and as_json(out)["ingested"] == 1


def test_an_edit_that_leaves_the_proposal_unchanged_keeps_its_approval(
        run: Run, tmp_path: Path) -> None:
    corpus = setup(run, tmp_path)
    approved = sire_states(run)
    (corpus / "leave.md").write_text(OTHER_DOCS["leave.md"] + "\nAsk your manager first.\n",
                                     encoding="utf-8")
    (corpus / "travel.md").write_text(
        OTHER_DOCS["travel.md"] + "\nQuayside Charter Flights and Quayside Charter Flights "
        "need the Quayside Charter Flights form.\n", encoding="utf-8")
    summary = as_json(run("ingest", str(corpus), "--json")[1])
    assert summary["ingested"] == 2
    after = sire_states(run)
    assert after["leave.md"][0] != approved["leave.md"][0]
    assert after["leave.md"][1] == "ACTIVE"  # a new version, the same proposal
    assert after["travel.md"][1] == "PROPOSED"  # a changed proposal is reviewed again
    code, out, _ = run("audit", "list", "--json")
    assert code == 0
    carried = [e for e in as_json(out) if e["kind"] == "sire.carry_over"]
    assert [e["after"]["sire_id"] for e in carried] == [after["leave.md"][0]]


def test_the_plan_names_what_would_change_and_nothing_else(run: Run, tmp_path: Path) -> None:
    setup(run, tmp_path)
    (tmp_path / "affidavit.toml").write_text(keyword_rule("harbour crane"), encoding="utf-8")
    documents = {d["alias"]: d for d in requalify(run, "--plan")["documents"]}
    assert documents["travel.md"]["changed"] == []
    assert "labels" in documents["yard.md"]["changed"]
    assert "sire_state" not in documents["yard.md"]["changed"]
