"""``affidavit backup`` and ``affidavit restore``: a round trip on a real SQLite file, and a
restore that refuses a backup whose chains or checkpoints no longer verify, leaving the
database it would have replaced untouched."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from affidavit.audit.changes import grant_labels
from affidavit.cli.main import main
from affidavit.engine.ledger_record import LedgerWriter
from affidavit.store import SQLiteStore


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _records(db: Path, tenant: str = "default") -> int:
    store = SQLiteStore(db, create=False)
    try:
        return store.count_rows(tenant, "ledger")
    finally:
        store.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Two tenants, each with ledger records and policy events."""
    path = tmp_path / "live" / "affidavit.db"
    store = SQLiteStore(path)
    writer = LedgerWriter(store)
    for tenant in ("default", "globex"):
        store.ensure_tenant(tenant)
        grant_labels(store, tenant, "user:alice", ["INTERNAL"], actor="user:ops")
        for i in range(3):
            writer.append(tenant, f"req-{tenant}-{i}", {"query": f"question {i}"})
    store.close()
    return path


def _signed_checkpoint(capsys: pytest.CaptureFixture[str], db: Path) -> tuple[Path, Path]:
    key = db.parent.parent / "ledger.key"
    assert run(capsys, "ledger", "keygen", "--out", str(key), "--db", str(db))[0] == 0
    cp = db.parent.parent / "head.checkpoint"
    code, text = run(capsys, "ledger", "checkpoint", "--key", str(key), "--out", str(cp),
                     "--db", str(db))
    assert code == 0, text
    return cp, Path(str(key) + ".pub")


def test_backup_then_restore_round_trip_verifies_chains_and_checkpoints(
        capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    cp, pub = _signed_checkpoint(capsys, db)
    out = tmp_path / "backup-1"
    code, text = run(capsys, "backup", str(out), "--checkpoint", str(cp), "--db", str(db))
    assert code == 0, text
    manifest = json.loads((out / "manifest.json").read_text())
    assert [t["tenant"] for t in manifest["tenants"]] == ["default", "globex"]
    assert all(t["ledger_seq"] == 3 and t["policy_seq"] >= 1 for t in manifest["tenants"])
    assert manifest["sha256"] == hashlib.sha256((out / "affidavit.db").read_bytes()).hexdigest()
    # The live database moves on after the backup; the restore brings back the backup's.
    store = SQLiteStore(db)
    LedgerWriter(store).append("default", "req-after", {"query": "later"})
    store.close()
    assert _records(db) == 4
    code, text = run(capsys, "restore", str(out), "--force", "--key", str(pub),
                     "--db", str(db))
    assert code == 0, text
    assert "1 checkpoint(s) hold" in text
    assert _records(db) == 3 and _records(db, "globex") == 3
    assert run(capsys, "ledger", "verify", "--db", str(db))[0] == 0


def test_restore_refuses_to_replace_a_database_without_force(
        capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    out = tmp_path / "backup"
    assert run(capsys, "backup", str(out), "--db", str(db))[0] == 0
    code, text = run(capsys, "restore", str(out), "--db", str(db))
    assert code == 8 and "--force" in text


def _rewrite(backup: Path, sql: str) -> None:
    """Edit the snapshot as someone with the backup folder could, and fix its digest."""
    snapshot = backup / "affidavit.db"
    with sqlite3.connect(snapshot) as conn:
        conn.execute("DROP TRIGGER IF EXISTS ledger_no_update")
        conn.execute("DROP TRIGGER IF EXISTS ledger_no_delete")
        conn.execute(sql)
    conn.close()
    manifest = json.loads((backup / "manifest.json").read_text())
    manifest["sha256"] = hashlib.sha256(snapshot.read_bytes()).hexdigest()
    (backup / "manifest.json").write_text(json.dumps(manifest))


def test_restore_refuses_an_edited_record_and_leaves_the_database_as_it_was(
        capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    out = tmp_path / "backup"
    assert run(capsys, "backup", str(out), "--db", str(db))[0] == 0
    _rewrite(out, "UPDATE ledger SET payload = '{\"query\": \"edited\"}' WHERE seq = 2")
    before = db.read_bytes()
    code, text = run(capsys, "restore", str(out), "--force", "--db", str(db))
    assert code == 1 and "does not verify" in text
    assert db.read_bytes() == before
    assert not list(db.parent.glob("*.restoring*"))


def test_restore_detects_a_truncated_ledger_through_the_checkpoint(
        capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    cp, pub = _signed_checkpoint(capsys, db)
    out = tmp_path / "backup"
    assert run(capsys, "backup", str(out), "--checkpoint", str(cp), "--db", str(db))[0] == 0
    # The newest record removed: the chain alone still links, so rewrite the manifest's
    # heads too, as someone covering their tracks would; the signed checkpoint remains.
    _rewrite(out, "DELETE FROM ledger WHERE tenant_id = 'default' AND seq = 3")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["tenants"][0]["ledger_seq"] = 2
    (out / "manifest.json").write_text(json.dumps(manifest))
    code, text = run(capsys, "restore", str(out), "--force", "--key", str(pub),
                     "--db", str(db))
    assert code == 1 and "ledger does not verify" in text
    assert _records(db) == 3


def test_restore_refuses_a_snapshot_whose_digest_differs(
        capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    out = tmp_path / "backup"
    assert run(capsys, "backup", str(out), "--db", str(db))[0] == 0
    with (out / "affidavit.db").open("ab") as handle:
        handle.write(b"\0")
    code, text = run(capsys, "restore", str(out), "--force", "--db", str(db))
    assert code == 1 and "sha256" in text


def test_backup_into_an_existing_folder_is_refused_and_writes_nothing(
        capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    out = tmp_path / "exists"
    out.mkdir()
    code, text = run(capsys, "backup", str(out), "--db", str(db))
    assert code == 8 and "exists" in text
    assert list(out.iterdir()) == []
