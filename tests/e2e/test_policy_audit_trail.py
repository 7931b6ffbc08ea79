"""Every policy change on the CLI is an audited, hash-chained event with its actor; a
revocation is an event, not a silent deletion; ``audit verify`` finds an edited or deleted
event; every ledger record names the policy version it was decided under."""

from __future__ import annotations

import getpass
import sqlite3
from pathlib import Path

from tests.e2e.conftest import Run, as_json

HOTEL = "How do staff book hotel rooms?"
DB = Path(".affidavit") / "affidavit.db"


def events(run: Run) -> list[dict[str, object]]:
    code, out, err = run("audit", "list", "--json")
    assert code == 0, err
    return list(as_json(out))


def test_every_cli_policy_change_is_an_event_with_its_actor(example_workspace: Run) -> None:
    run = example_workspace
    assert run("authz", "grant", "user:sam.reed", "PII", "--by", "user:alice")[0] == 0
    assert run("authz", "revoke", "user:sam.reed", "PII")[0] == 0  # no --by: the OS user
    assert run("authz", "add", "group:hr#member@user:bob", "--by", "user:alice")[0] == 0
    assert run("authz", "remove", "group:hr#member@user:bob", "--by", "user:carol")[0] == 0
    code, out, _ = run("keys", "create", "--principal", "user:bob", "--by", "user:ops",
                       "--json")
    assert code == 0
    key_id = as_json(out)["key_id"]
    secret = as_json(out)["key"]
    assert run("keys", "revoke", key_id, "--by", "user:ops")[0] == 0
    trail = events(run)
    kinds = [(e["kind"], e["actor"]) for e in trail]
    # The first ingestion run recorded the epochs in force; then the fixture approved
    # every SIRE proposal as "tester".
    assert kinds[:2] == [("epochs.recorded", "system:requalify"), ("sire.state", "tester")]
    assert kinds[-6:] == [
        ("grant.add", "user:alice"), ("grant.revoke", f"os:{getpass.getuser()}"),
        ("tuple.add", "user:alice"), ("tuple.remove", "user:carol"),
        ("api_key.create", "user:ops"), ("api_key.revoke", "user:ops")]
    revoke = trail[-5]
    assert revoke["before"] == {"subject": "user:sam.reed", "labels": ["PII"]}
    assert revoke["after"] == {"subject": "user:sam.reed", "labels": []}
    # The key's secret never enters the trail.
    assert secret.split(".")[-1] not in run("audit", "list", "--json")[1]
    assert run("audit", "verify")[0] == 0


def test_a_ledger_record_names_the_policy_in_force_and_what_changed_after(
        example_workspace: Run) -> None:
    run = example_workspace
    # Answered or refused, the answer is on the record.
    out = run("ask", HOTEL, "--as", "user:sam.reed", "--json")[1]
    record_id = as_json(out)["ledger_record_id"]
    shown = as_json(run("ledger", "show", record_id, "--as", "user:sam.reed", "--json")[1])
    head = events(run)[-1]
    # The record was decided under the newest event (the effective settings, recorded first).
    assert head["kind"] == "settings.effective"
    assert shown["record"]["policy_version"] == {"seq": head["seq"],
                                                 "event_hash": head["event_hash"]}
    assert shown["policy_events_after"] == []
    assert run("authz", "grant", "user:sam.reed", "PII", "--by", "user:alice")[0] == 0
    shown = as_json(run("ledger", "show", record_id, "--as", "user:sam.reed", "--json")[1])
    after = shown["policy_events_after"]
    assert [(e["kind"], e["actor"]) for e in after] == [("grant.add", "user:alice")]
    code, out, _ = run("ledger", "verify", "--record", record_id, "--json")
    assert code == 0
    assert as_json(out)["policy_events_after"] == after


def _tamper(statement: str) -> None:
    """What someone with the database file can do: drop the guard, then change a row."""
    with sqlite3.connect(DB) as conn:
        conn.execute("DROP TRIGGER policy_events_no_update")
        conn.execute("DROP TRIGGER policy_events_no_delete")
        conn.execute(statement)


def test_audit_verify_detects_an_edited_event(example_workspace: Run) -> None:
    run = example_workspace
    assert run("authz", "grant", "user:sam.reed", "PII", "--by", "user:alice")[0] == 0
    assert run("authz", "revoke", "user:sam.reed", "PII", "--by", "user:alice")[0] == 0
    _tamper("UPDATE policy_events SET actor = 'user:nobody' WHERE kind = 'grant.add'")
    code, out, _ = run("audit", "verify", "--json")
    assert code == 1
    assert "event_hash" in as_json(out)["reason"]


def test_audit_verify_detects_a_deleted_event(example_workspace: Run) -> None:
    run = example_workspace
    assert run("authz", "grant", "user:sam.reed", "PII", "--by", "user:alice")[0] == 0
    assert run("authz", "revoke", "user:sam.reed", "PII", "--by", "user:alice")[0] == 0
    _tamper("DELETE FROM policy_events WHERE kind = 'grant.add'")
    code, out, _ = run("audit", "verify")
    assert code == 1 and "deleted" in out


def test_audit_verify_detects_the_newest_events_cut_off(example_workspace: Run) -> None:
    run = example_workspace
    run("ask", HOTEL, "--as", "user:sam.reed")
    _tamper("DELETE FROM policy_events WHERE kind = 'settings.effective'")
    code, out, _ = run("audit", "verify", "--json")
    assert code == 1
    assert "decided under policy event" in as_json(out)["reason"]


def test_an_identity_resolution_and_its_release_are_events_by_the_operator(
        run: Run, tmp_path: Path) -> None:
    from tests.e2e.test_identity_collisions import OWNER, ingest, setup

    corpus = setup(run, tmp_path, {"a-policy.md": OWNER})
    assert ingest(run, corpus)[0] == 0
    (corpus / "a-policy.md").rename(corpus / "moved.md")
    assert ingest(run, corpus)[0] == 3
    assert run("identity", "resolve", "moved.md", "--take-over", "--by", "ops:ann")[0] == 0
    trail = [(e["kind"], e["actor"]) for e in events(run)
             if e["kind"] in ("identity.resolve", "quarantine.release")]
    assert trail == [("identity.resolve", "ops:ann"), ("quarantine.release", "ops:ann")]
    assert run("audit", "verify")[0] == 0
