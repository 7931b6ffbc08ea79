"""``affidavit audit checkpoint`` and ``audit verify [--checkpoint]``: the policy trail
anchored by a signed checkpoint, and the live policy compared with the trail's replay.

Tampering is done the way someone holding the database file would: triggers dropped,
rows deleted or rewritten, and every later hash recomputed so that the chain links again.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from affidavit.audit.chain import GENESIS_HASH, event_hash
from affidavit.cli.main import main

DB_ARGS = ("--tenant", "default")


def run(capsys: pytest.CaptureFixture[str], db: Path, *argv: str) -> tuple[int, str]:
    code = main([*argv, "--db", str(db), *DB_ARGS])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Four policy events made through the CLI: two grants, a tuple, one more grant."""
    path = tmp_path / "policy.db"
    for argv in (("authz", "grant", "user:alice", "PII"),
                 ("authz", "grant", "user:bob", "INTERNAL"),
                 ("authz", "add", "group:hr#member@user:alice"),
                 ("authz", "grant", "user:carol", "FINANCIAL")):
        code, text = run(capsys, path, *argv, "--by", "user:admin")
        assert code == 0, text
    return path


@pytest.fixture
def key(tmp_path: Path, capsys: pytest.CaptureFixture[str], db: Path) -> Path:
    path = tmp_path / "signing.key"
    assert run(capsys, db, "ledger", "keygen", "--out", str(path))[0] == 0
    return path


def checkpoint(capsys: pytest.CaptureFixture[str], db: Path, key: Path) -> Path:
    out = db.parent / "policy.checkpoint"
    code, text = run(capsys, db, "audit", "checkpoint", "--key", str(key), "--out", str(out))
    assert code == 0, text
    return out


def verify(capsys: pytest.CaptureFixture[str], db: Path, cp: Path,
           key: Path) -> tuple[int, str]:
    return run(capsys, db, "audit", "verify", "--checkpoint", str(cp),
               "--key", str(key.with_name(key.name + ".pub")))


def tamper(db: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DROP TRIGGER IF EXISTS policy_events_no_update")
        conn.execute("DROP TRIGGER IF EXISTS policy_events_no_delete")
        for sql, params in statements:
            conn.execute(sql, params)
    conn.close()


def rehash_from(db: Path, first_seq: int) -> None:
    """Recompute every hash from ``first_seq`` on: the chain links again."""
    conn = sqlite3.connect(db)
    with conn:
        rows = conn.execute("SELECT seq, kind, actor, at, before_json, after_json FROM "
                            "policy_events WHERE tenant_id = 'default' ORDER BY seq").fetchall()
        prev = GENESIS_HASH
        for seq, kind, actor, at, before, after in rows:
            if seq >= first_seq:
                digest = event_hash(tenant="default", seq=seq, kind=kind, actor=actor, at=at,
                                    before_json=before, after_json=after, prev_hash=prev)
                conn.execute("UPDATE policy_events SET prev_hash = ?, event_hash = ? "
                             "WHERE tenant_id = 'default' AND seq = ?", (prev, digest, seq))
            prev = conn.execute("SELECT event_hash FROM policy_events WHERE tenant_id = "
                                "'default' AND seq = ?", (seq,)).fetchone()[0]
    conn.close()


def test_policy_checkpoint_detects_truncated_trail(
        capsys: pytest.CaptureFixture[str], db: Path, key: Path) -> None:
    cp = checkpoint(capsys, db, key)
    assert json.loads(cp.read_text())["seq"] == 4
    assert verify(capsys, db, cp, key)[0] == 0
    # The newest event and its row go: the chain that is left links, the live tables match
    # what is left of the trail, and no ledger record names the policy.
    tamper(db, ("DELETE FROM policy_events WHERE tenant_id = 'default' AND seq = 4", ()),
           ("DELETE FROM label_grants WHERE subject = 'user:carol'", ()))
    assert run(capsys, db, "audit", "verify")[0] == 0, "the chain alone cannot see this"
    code, text = verify(capsys, db, cp, key)
    assert code == 1
    assert "policy trail BROKEN at #4" in text and "cut off" in text


def test_policy_checkpoint_detects_rewritten_events(
        capsys: pytest.CaptureFixture[str], db: Path, key: Path) -> None:
    cp = checkpoint(capsys, db, key)
    tamper(db, ("UPDATE policy_events SET actor = 'user:somebody-else' "
                "WHERE tenant_id = 'default' AND seq = 2", ()))
    rehash_from(db, 2)
    assert run(capsys, db, "audit", "verify")[0] == 0, "the chain alone cannot see this"
    code, text = verify(capsys, db, cp, key)
    assert code == 1
    assert "#4" in text and "rewritten" in text


def test_a_policy_checkpoint_is_not_a_ledger_checkpoint(
        capsys: pytest.CaptureFixture[str], db: Path, key: Path) -> None:
    cp = checkpoint(capsys, db, key)
    code, text = run(capsys, db, "ledger", "verify", "--checkpoint", str(cp))
    assert code != 0 and "affidavit.ledger-checkpoint/1" in text


def test_audit_verify_reports_grant_without_event(
        capsys: pytest.CaptureFixture[str], db: Path) -> None:
    assert run(capsys, db, "audit", "verify")[0] == 0
    tamper(db, ("INSERT INTO label_grants VALUES ('default', 'user:mallory', 'SECRET', 'x')",
                ()),
           ("DELETE FROM relation_tuples WHERE subject = 'user:alice'", ()))
    code, text = run(capsys, db, "audit", "verify")
    assert code == 1
    assert "grant of SECRET to user:mallory is live but no event granted it" in text
    assert "tuple group:hr#member@user:alice was added by event #3 but is not live" in text
    code, text = run(capsys, db, "audit", "verify", "--json")
    report = json.loads(text)
    assert code == 1 and report["ok"] is False and len(report["differences"]) == 2
