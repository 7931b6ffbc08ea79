"""Node, version and witness identifiers; the identity package's exports."""

from __future__ import annotations

import re

import affidavit.identity as identity
from affidavit.identity import node_id_for, version_id_for, witness_for
from affidavit.records import node_id_for as records_node_id_for
from affidavit.records import stable_hash

HEX64 = re.compile(r"[0-9a-f]{64}")
EPOCHS = {
    "policy_epoch": "p1",
    "schema_version": "1",
    "resolver_version": "r1",
    "model_id": "none",
    "prompt_hash": "",
}


def test_node_id_is_the_records_function() -> None:
    assert node_id_for is records_node_id_for
    assert node_id_for("local", "a.md") != node_id_for("local", "b.md")


def test_witness_is_64_hex_and_deterministic() -> None:
    witness = witness_for("d" * 64, **EPOCHS)
    assert HEX64.fullmatch(witness)
    assert witness == witness_for("d" * 64, **EPOCHS)
    assert witness == stable_hash("witness", "d" * 64, "p1", "1", "r1", "none", "")


def test_witness_changes_with_every_input() -> None:
    base = witness_for("d" * 64, **EPOCHS)
    seen = {base, witness_for("e" * 64, **EPOCHS)}
    for key in EPOCHS:
        seen.add(witness_for("d" * 64, **{**EPOCHS, key: EPOCHS[key] + "x"}))
    assert len(seen) == 2 + len(EPOCHS)


def test_witness_fields_cannot_be_shifted_into_each_other() -> None:
    a = witness_for("d", **{**EPOCHS, "policy_epoch": "ab", "schema_version": "c"})
    b = witness_for("d", **{**EPOCHS, "policy_epoch": "a", "schema_version": "bc"})
    assert a != b


def test_version_id_is_64_hex_and_depends_on_each_part() -> None:
    parts = ("node", "raw", "meta", "wit")
    version = version_id_for(*parts)
    assert HEX64.fullmatch(version)
    assert version == version_id_for(*parts)
    variants = {
        version_id_for(*(p + "x" if i == j else p for j, p in enumerate(parts))) for i in range(4)
    }
    assert version not in variants
    assert len(variants) == 4


def test_version_id_and_witness_are_domain_separated() -> None:
    assert version_id_for("a", "b", "c", "d") != stable_hash("witness", "a", "b", "c", "d")


def test_identity_exports() -> None:
    assert len(set(identity.__all__)) == len(identity.__all__)
    for name in identity.__all__:
        assert hasattr(identity, name), name
