"""Backup and restore of an embedded (SQLite) deployment, verified before it is trusted.

A backup is a folder: ``affidavit.db``, a consistent snapshot taken with SQLite's online
backup API while the service may keep writing; ``manifest.json``, the snapshot's sha256
and, per tenant, the head of its ledger chain and of its policy trail as verified when the
snapshot was taken; and ``checkpoints/``, copies of the signed ledger checkpoints given to
it. The folder is written under a temporary name and renamed when complete, so a failed
backup leaves no folder that looks whole.

A restore installs a snapshot only after it has proved itself: the file's digest matches
the manifest, every tenant's ledger chain and policy trail verify and end where the
manifest says, and every checkpoint (the backup's own and any given) still holds, signed by
the pinned key when one is given. The snapshot is copied beside the target, verified there,
and moved into place in one rename; the target's stale ``-wal``/``-shm`` files (which
SQLite would otherwise replay over the restored file) are removed first. Until the rename
the old database is untouched.

PostgreSQL deployments back up with ``pg_dump --format=custom`` and restore with
``pg_restore`` (docs/deploy.md); ``affidavit ledger verify`` and ``affidavit audit verify``
then check the restored chains.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from affidavit.audit.chain import verify_policy_chain
from affidavit.errors import LedgerError, StoreError
from affidavit.ledger.chain import verify_chain
from affidavit.ledger.checkpoint import (
    Checkpoint,
    load_public_key,
    read_checkpoint,
    verify_anchored,
)
from affidavit.store.sqlite.store import SQLiteStore

SNAPSHOT = "affidavit.db"
MANIFEST = "manifest.json"
CHECKPOINTS = "checkpoints"
FORMAT = 1
_CHUNK = 1 << 20


@dataclass(frozen=True)
class TenantHeads:
    """Where one tenant's two chains ended when the snapshot was verified."""

    tenant: str
    ledger_seq: int
    ledger_hash: str
    policy_seq: int
    policy_hash: str


@dataclass(frozen=True)
class Manifest:
    format: int
    created_at: str
    schema_version: int
    sha256: str
    tenants: tuple[TenantHeads, ...]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        try:
            data = json.loads(text)
            if data.get("format") != FORMAT:
                raise StoreError(f"unknown backup format {data.get('format')!r}")
            return cls(FORMAT, str(data["created_at"]), int(data["schema_version"]),
                       str(data["sha256"]),
                       tuple(TenantHeads(**t) for t in data["tenants"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"the backup's {MANIFEST} is not readable: {exc}") from None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------- verification


def verified_heads(store: SQLiteStore,
                   checkpoints: Sequence[Checkpoint] = (),
                   trusted_key: Path | None = None) -> tuple[TenantHeads, ...]:
    """Every tenant's chain heads, after verifying both chains and every checkpoint;
    :class:`LedgerError` names the first tenant and chain that does not verify."""
    trusted = load_public_key(trusted_key) if trusted_key is not None else None
    heads = []
    for tenant in _tenants(store):
        mine = [c for c in checkpoints if c.tenant == tenant]
        ledger = (verify_anchored(store.iter_ledger(tenant), tenant=tenant, checkpoints=mine,
                                  trusted=trusted) if mine or trusted is not None
                  else verify_chain(store.iter_ledger(tenant), tenant=tenant))
        if not ledger.ok:
            raise LedgerError(f"tenant {tenant}: ledger does not verify at seq "
                              f"{ledger.first_bad_seq}: {ledger.reason}")
        policy = verify_policy_chain(store.iter_policy_events(tenant), tenant=tenant)
        if not policy.ok:
            raise LedgerError(f"tenant {tenant}: policy trail does not verify at seq "
                              f"{policy.first_bad_seq}: {policy.reason}")
        heads.append(TenantHeads(tenant, ledger.head_seq, ledger.head_hash, policy.head_seq,
                                 policy.head_hash))
    strangers = {c.tenant for c in checkpoints} - {h.tenant for h in heads}
    if strangers:
        raise LedgerError(f"a checkpoint names tenant {sorted(strangers)[0]}, which the "
                          "database does not hold")
    return tuple(heads)


def _tenants(store: SQLiteStore) -> list[str]:
    rows = store._read("SELECT tenant_id FROM tenants ORDER BY tenant_id")
    return [str(r[0]) for r in rows]


# ---------------------------------------------------------------------- backup


def take_backup(db_path: Path, out_dir: Path, checkpoints: Sequence[Path] = ()) -> Manifest:
    """Snapshot ``db_path`` into the new folder ``out_dir``, verified and complete or not
    there at all."""
    if out_dir.exists():
        raise StoreError(f"{out_dir} exists: a backup goes into a new folder")
    if not db_path.is_file():
        raise StoreError(f"no database at {db_path}")
    read = [read_checkpoint(p) for p in checkpoints]
    partial = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        snapshot = partial / SNAPSHOT
        _snapshot(db_path, snapshot)
        digest = sha256_file(snapshot)
        heads, schema = _verify_copy(snapshot, partial / "verify.db", read, None)
        manifest = Manifest(FORMAT, datetime.now(UTC).isoformat(timespec="seconds"), schema,
                            digest, heads)
        if checkpoints:
            (partial / CHECKPOINTS).mkdir()
            for i, path in enumerate(checkpoints):
                shutil.copyfile(path, partial / CHECKPOINTS / f"{i:03d}-{path.name}")
        (partial / MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
        _fsync_tree(partial)
        partial.rename(out_dir)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return manifest


def _snapshot(source: Path, target: Path) -> None:
    """A consistent copy by SQLite's online backup (writers may go on meanwhile)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as src, \
                contextlib.closing(sqlite3.connect(target)) as dst:
            src.backup(dst)
            # One self-contained file: no WAL beside it to lose on the way to storage.
            dst.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot snapshot {source}: {exc}") from exc


def _verify_copy(snapshot: Path, work: Path, checkpoints: Sequence[Checkpoint],
                 trusted_key: Path | None) -> tuple[tuple[TenantHeads, ...], int]:
    """Verify a working copy of ``snapshot`` at ``work`` (opening a store writes to its
    file, and the snapshot's digest must stay that of its bytes)."""
    shutil.copyfile(snapshot, work)
    store = SQLiteStore(work, create=False)
    try:
        return verified_heads(store, checkpoints, trusted_key), store.schema_version()
    finally:
        store.close()
        _remove_sidecars(work)
        work.unlink()


def _remove_sidecars(db: Path) -> None:
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            db.with_name(db.name + suffix).unlink()


def _fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            with path.open("rb") as handle:
                os.fsync(handle.fileno())
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------- restore


@dataclass(frozen=True)
class Restored:
    target: Path
    manifest: Manifest
    checkpoints: int


def restore_backup(backup_dir: Path, target: Path, *, force: bool = False,
                   checkpoints: Sequence[Path] = (),
                   trusted_key: Path | None = None) -> Restored:
    """Install the backup at ``target`` once it has verified; the old file stays until
    then. ``checkpoints`` adds checkpoints signed since the backup was taken."""
    manifest = Manifest.from_json(_read(backup_dir / MANIFEST))
    snapshot = backup_dir / SNAPSHOT
    if not snapshot.is_file():
        raise StoreError(f"{backup_dir} holds no {SNAPSHOT}")
    if target.exists() and not force:
        raise StoreError(f"{target} exists: pass --force to replace it (it is replaced only "
                         "after the backup verifies)")
    own = sorted((backup_dir / CHECKPOINTS).glob("*")) if (backup_dir / CHECKPOINTS).is_dir() \
        else []
    read = [read_checkpoint(p) for p in (*own, *checkpoints)]
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = target.with_name(target.name + ".restoring")
    try:
        shutil.copyfile(snapshot, staged)
        if sha256_file(staged) != manifest.sha256:
            raise LedgerError("the snapshot's sha256 differs from the manifest's: the backup "
                              "was altered or damaged")
        heads, _ = _verify_copy(staged, staged.with_name(staged.name + ".verify"), read,
                                trusted_key)
        _check_heads(heads, manifest.tenants)
        _remove_sidecars(target)
        staged.replace(target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            staged.unlink()
        raise
    return Restored(target, manifest, len(read))


def _check_heads(found: Sequence[TenantHeads], recorded: Sequence[TenantHeads]) -> None:
    if tuple(found) == tuple(recorded):
        return
    want = {h.tenant: h for h in recorded}
    for head in found:
        if want.get(head.tenant) != head:
            raise LedgerError(f"tenant {head.tenant}: the chains end elsewhere than the "
                              "manifest says they did when the backup was taken")
    raise LedgerError("the snapshot holds other tenants than the manifest names")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
