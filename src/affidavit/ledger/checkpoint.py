"""Signed checkpoints: the end of a tenant's ledger chain, anchored outside the database.

A hash chain shows an edit in its middle, but not a chain cut short, nor one edited and
rehashed from that point on: whoever holds the database file can do both. A checkpoint is
a statement ``(tenant, seq, record_hash, signed_at, key_id)`` signed with an Ed25519 key that
is kept outside the database. Verifying the chain against it fails if record ``seq`` is gone
or differs, and since every record hash binds the one before it (and every column of its
own row), that covers every record up to ``seq``.

A checkpoint holds no record content: a tenant name, a sequence number, hashes, a time and
a public key. It can be stored and shared wherever the ledger's own text could not go.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from affidavit.errors import LedgerError
from affidavit.ledger.chain import ChainReport, verify_chain

if TYPE_CHECKING:  # the store imports the ledger package; a runtime import would be a cycle
    from affidavit.store.protocol import LedgerEntry

CHECKPOINT_FORMAT = "affidavit.ledger-checkpoint/1"
PUBLIC_SUFFIX = ".pub"
_STATEMENT_FIELDS = ("format", "tenant", "seq", "record_hash", "signed_at", "key_id")


@dataclass(frozen=True)
class Checkpoint:
    """One signed statement about the head of one tenant's chain."""

    tenant: str
    seq: int
    record_hash: str
    signed_at: str
    key_id: str
    public_key: str  # raw Ed25519 public key, base64: lets a checkpoint be checked unpinned
    signature: str  # base64 Ed25519 signature over :meth:`statement`
    format: str = CHECKPOINT_FORMAT  # which chain: signed, so one cannot pass for another

    def statement(self) -> bytes:
        """The exact bytes that are signed."""
        fields = {"format": self.format, "tenant": self.tenant, "seq": self.seq,
                  "record_hash": self.record_hash, "signed_at": self.signed_at,
                  "key_id": self.key_id}
        return _canonical(fields).encode("utf-8")

    def to_json(self) -> str:
        """The checkpoint file's content."""
        fields = json.loads(self.statement())
        return json.dumps({**fields, "public_key": self.public_key,
                           "signature": self.signature}, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str, expected: str = CHECKPOINT_FORMAT) -> Checkpoint:
        """Parse a checkpoint file of the ``expected`` format; :class:`LedgerError` when it is
        not one."""
        try:
            data: Any = json.loads(text)
            if not isinstance(data, dict) or data.get("format") != expected:
                raise ValueError(f"not a {expected} document")
            seq = data["seq"]
            if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
                raise ValueError("seq is not a sequence number")
            return cls(tenant=_text(data, "tenant"), seq=seq,
                       record_hash=_text(data, "record_hash"),
                       signed_at=_text(data, "signed_at"), key_id=_text(data, "key_id"),
                       public_key=_text(data, "public_key"),
                       signature=_text(data, "signature"), format=expected)
        except (ValueError, KeyError) as exc:
            raise LedgerError(f"malformed checkpoint: {exc}") from exc


def _text(data: dict[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise ValueError(f"{key} is not a string")
    return value


def _canonical(value: Any) -> str:
    # A stored, signed format: its bytes must not follow changes made elsewhere.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(key: Ed25519PublicKey) -> str:
    """A short, stable name for a public key (sha256 of its raw bytes, 16 hex digits)."""
    return hashlib.sha256(_raw_public(key)).hexdigest()[:16]


# --------------------------------------------------------------------------- keys


def generate_key_pair(private_path: Path) -> tuple[Path, Path]:
    """Write a new Ed25519 key: private (PKCS#8 PEM, mode 0600) at ``private_path``, public
    beside it with ``.pub`` appended. Never overwrites an existing file."""
    public_path = private_path.with_name(private_path.name + PUBLIC_SUFFIX)
    for path in (private_path, public_path):
        if path.exists() or path.is_symlink():
            raise LedgerError(f"{path} already exists; a key is never overwritten")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    _write_new(private_path, private_pem, 0o600)
    _write_new(public_path, public_pem, 0o644)
    return private_path, public_path


def _write_new(path: Path, content: bytes, mode: int) -> None:
    # O_EXCL: created here, with its mode from the start (never briefly world-readable),
    # and never through a symlink planted at the path.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 mode)
    os.fchmod(fd, mode)  # exactly this mode, whatever the umask
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The signing key; refused when group or others may read or write it."""
    try:
        mode = path.stat().st_mode
        if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise LedgerError(f"{path} may be read by others (mode {stat.S_IMODE(mode):o}); "
                              "a signing key must be mode 0600")
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise LedgerError(f"cannot read the signing key {path}: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise LedgerError(f"{path} is not an Ed25519 private key")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """A verification key: a public key file, or the public half of a private key file."""
    try:
        data = path.read_bytes()
        key: Any = (serialization.load_pem_private_key(data, password=None).public_key()
                    if b"PRIVATE KEY" in data else serialization.load_pem_public_key(data))
    except (OSError, ValueError, TypeError) as exc:
        raise LedgerError(f"cannot read the public key {path}: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise LedgerError(f"{path} is not an Ed25519 key")
    return key


# --------------------------------------------------------------------------- sign, check


def sign_checkpoint(key: Ed25519PrivateKey, *, tenant: str, seq: int, record_hash: str,
                    signed_at: str, format: str = CHECKPOINT_FORMAT) -> Checkpoint:
    """A checkpoint of ``tenant``'s chain whose record ``seq`` hashes to ``record_hash``."""
    public = key.public_key()
    unsigned = Checkpoint(tenant=tenant, seq=seq, record_hash=record_hash,
                          signed_at=signed_at, key_id=key_id(public),
                          public_key=base64.b64encode(_raw_public(public)).decode("ascii"),
                          signature="", format=format)
    signature = base64.b64encode(key.sign(unsigned.statement())).decode("ascii")
    return dataclasses.replace(unsigned, signature=signature)


def check_signature(checkpoint: Checkpoint, trusted: Ed25519PublicKey | None) -> str | None:
    """Why ``checkpoint`` is not a valid signature by ``trusted``, or ``None`` when it is.

    Without ``trusted`` the key embedded in the checkpoint is used: that shows the file is
    intact, not who signed it.
    """
    try:
        embedded = Ed25519PublicKey.from_public_bytes(
            base64.b64decode(checkpoint.public_key, validate=True))
        signature = base64.b64decode(checkpoint.signature, validate=True)
    except ValueError:
        return "the checkpoint's key or signature is not valid base64 Ed25519"
    key = trusted or embedded
    if key_id(key) != checkpoint.key_id:
        return f"signed by key {checkpoint.key_id}, not by key {key_id(key)}"
    try:
        key.verify(signature, checkpoint.statement())
    except InvalidSignature:
        return "the signature does not verify"
    return None


def read_checkpoint(path: Path, expected: str = CHECKPOINT_FORMAT) -> Checkpoint:
    """A checkpoint file; :class:`LedgerError` when unreadable, malformed or of another
    format than ``expected``."""
    try:
        return Checkpoint.from_json(path.read_text(encoding="utf-8"), expected)
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerError(f"cannot read the checkpoint {path}: {exc}") from exc


def write_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """Write atomically: a reader never sees half a checkpoint."""
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(checkpoint.to_json(), encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        raise LedgerError(f"cannot write the checkpoint {path}: {exc}") from exc


def verify_anchored(entries: Iterable[LedgerEntry], *, tenant: str,
                    checkpoints: Sequence[Checkpoint],
                    trusted: Ed25519PublicKey | None) -> ChainReport:
    """Verify ``tenant``'s chain and that it still holds, unchanged, every record the
    checkpoints signed. A checkpoint that is not ``tenant``'s, or whose signature does not
    verify, fails the whole check: it anchors nothing."""
    anchors: dict[int, str] = {}
    for checkpoint in checkpoints:
        fault = check_signature(checkpoint, trusted)
        if fault is None and checkpoint.tenant != tenant:
            fault = "the checkpoint is for another tenant"
        if fault is None and anchors.get(checkpoint.seq, checkpoint.record_hash) != \
                checkpoint.record_hash:
            fault = f"two checkpoints name different hashes for seq {checkpoint.seq}"
        if fault is not None:
            return ChainReport(False, 0, checkpoint.seq, None, f"checkpoint rejected: {fault}")
        anchors[checkpoint.seq] = checkpoint.record_hash
    return verify_chain(entries, tenant=tenant, anchors=anchors)
