"""``affidavit ledger keygen | checkpoint | verify --checkpoint``: exit codes, key files, and
what the commands print when the database was tampered with."""

from __future__ import annotations

import json
import sqlite3
import stat
from pathlib import Path

import pytest

from affidavit.cli.main import main
from affidavit.engine.ledger_record import LedgerWriter
from affidavit.store import SQLiteStore

CANARY = "RESTRICTED-CANARY-7f3a Project Nightjar"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database whose default tenant holds four records, one asking about the canary."""
    path = tmp_path / "ledger.db"
    store = SQLiteStore(path)
    writer = LedgerWriter(store)
    for i in range(1, 5):
        writer.append("default", f"req-{i}", {"query": f"question {i}: {CANARY}"})
    store.close()
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def tamper(db: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER IF EXISTS ledger_no_update")
        conn.execute("DROP TRIGGER IF EXISTS ledger_no_delete")
        conn.execute(sql, params)
    conn.close()


def keygen(capsys: pytest.CaptureFixture[str], db: Path, name: str) -> Path:
    key = db.parent / name
    assert run(capsys, "ledger", "keygen", "--out", str(key), "--db", str(db))[0] == 0
    return key


def checkpoint(capsys: pytest.CaptureFixture[str], db: Path, key: Path) -> Path:
    out = db.parent / "head.checkpoint"
    code, text = run(capsys, "ledger", "checkpoint", "--key", str(key), "--out", str(out),
                     "--db", str(db))
    assert code == 0, text
    return out


def verify(capsys: pytest.CaptureFixture[str], db: Path, cp: Path,
           pub: Path | None) -> tuple[int, str]:
    extra = ["--key", str(pub)] if pub else []
    return run(capsys, "ledger", "verify", "--db", str(db), "--checkpoint", str(cp), *extra)


def test_keygen_writes_a_private_key_only_its_owner_may_read(
        capsys: pytest.CaptureFixture[str], db: Path) -> None:
    key = keygen(capsys, db, "signing.key")
    pub = key.with_name("signing.key.pub")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in key.read_bytes() and b"PUBLIC KEY" in pub.read_bytes()
    assert b"PRIVATE" not in pub.read_bytes()
    code, text = run(capsys, "ledger", "keygen", "--out", str(key), "--db", str(db))
    assert code == 1 and "never overwritten" in text


def test_an_untouched_ledger_verifies_against_its_checkpoint_with_exit_0(
        capsys: pytest.CaptureFixture[str], db: Path) -> None:
    key = keygen(capsys, db, "k")
    cp = checkpoint(capsys, db, key)
    code, text = verify(capsys, db, cp, key.with_name("k.pub"))
    assert code == 0 and "ledger OK: 4 records" in text and "signer pinned" in text
    code, text = verify(capsys, db, cp, None)
    assert code == 0 and "NOT pinned" in text


def test_truncation_after_a_checkpoint_exits_1(capsys: pytest.CaptureFixture[str],
                                                db: Path) -> None:
    key = keygen(capsys, db, "k")
    cp = checkpoint(capsys, db, key)
    tamper(db, "DELETE FROM ledger WHERE seq = 4")
    assert run(capsys, "ledger", "verify", "--db", str(db))[0] == 0, "the chain alone passes"
    code, text = verify(capsys, db, cp, key.with_name("k.pub"))
    assert code == 1 and "truncated" in text


def test_a_checkpoint_signed_by_another_key_exits_1(capsys: pytest.CaptureFixture[str],
                                                     db: Path) -> None:
    mine, theirs = keygen(capsys, db, "mine"), keygen(capsys, db, "theirs")
    cp = checkpoint(capsys, db, theirs)
    code, text = verify(capsys, db, cp, mine.with_name("mine.pub"))
    assert code == 1 and "checkpoint rejected" in text


def test_a_checkpoint_file_edited_by_hand_exits_1(capsys: pytest.CaptureFixture[str],
                                                   db: Path) -> None:
    key = keygen(capsys, db, "k")
    cp = checkpoint(capsys, db, key)
    data = json.loads(cp.read_text())
    cp.write_text(json.dumps({**data, "seq": 3}))
    assert verify(capsys, db, cp, None)[0] == 1
    cp.write_text("{not json")
    assert verify(capsys, db, cp, None)[0] == 1


def test_a_signing_key_others_may_read_is_refused(capsys: pytest.CaptureFixture[str],
                                                  db: Path) -> None:
    key = keygen(capsys, db, "k")
    key.chmod(0o644)
    code, text = run(capsys, "ledger", "checkpoint", "--key", str(key), "--out",
                     str(db.parent / "cp"), "--db", str(db))
    assert code == 1 and "mode 0600" in text and not (db.parent / "cp").exists()


def test_a_broken_chain_is_never_signed(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    key = keygen(capsys, db, "k")
    tamper(db, "UPDATE ledger SET created_at = 'x' WHERE seq = 2")
    out = db.parent / "cp"
    code, text = run(capsys, "ledger", "checkpoint", "--key", str(key), "--out", str(out),
                     "--db", str(db))
    assert code == 1 and "BROKEN at seq 2" in text and not out.exists()


def test_a_checkpoint_carries_no_record_text(capsys: pytest.CaptureFixture[str],
                                             db: Path) -> None:
    cp = checkpoint(capsys, db, keygen(capsys, db, "k"))
    content = cp.read_text()
    assert "Nightjar" not in content and "question" not in content
    assert set(json.loads(content)) == {"format", "tenant", "seq", "record_hash", "signed_at",
                                        "key_id", "public_key", "signature"}


def test_tampered_columns_reach_the_terminal_neither_raw_nor_as_record_text(
        capsys: pytest.CaptureFixture[str], db: Path) -> None:
    # A forger writes a terminal escape into a record id and restricted text into a
    # request id: verify names the record with the escape shown, never runs it, and prints
    # no column value it was not asked for.
    tamper(db, "UPDATE ledger SET record_id = ?, request_id = ? WHERE seq = 2",
           ("led-\x1b]0;owned\x07\x1b[2J\u202eevil", CANARY))
    for argv in (("ledger", "verify", "--db", str(db)),
                 ("ledger", "verify", "--db", str(db), "--json")):
        code, text = run(capsys, *argv)
        assert code == 1
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        assert "Nightjar" not in text
    assert "\\x1b" in run(capsys, "ledger", "verify", "--db", str(db))[1]


def test_a_new_checkpoint_is_refused_when_the_chain_lost_what_the_last_one_signed(
        capsys: pytest.CaptureFixture[str], db: Path) -> None:
    key = keygen(capsys, db, "k")
    first = checkpoint(capsys, db, key)
    tamper(db, "DELETE FROM ledger WHERE seq >= 3")
    LedgerWriter(store := SQLiteStore(db)).append("default", "req-forged", {"query": "x"})
    store.close()
    out = db.parent / "next.checkpoint"
    code, text = run(capsys, "ledger", "checkpoint", "--key", str(key), "--out", str(out),
                     "--checkpoint", str(first), "--db", str(db))
    assert code == 1 and "truncated" in text and not out.exists()
    code, _ = run(capsys, "ledger", "checkpoint", "--key", str(key), "--out", str(out),
                  "--db", str(db))
    assert code == 0, "without the earlier checkpoint there is nothing to hold it to"
