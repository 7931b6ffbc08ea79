"""Identifiers of documents and of their versions and derived artifacts.

- ``node_id``: one logical source document, ``H(source_system, immutable_source_id)``;
  titles, paths and URLs are aliases, never part of it.
- ``witness``: what a derived artifact was computed from and under which epochs; an
  artifact whose witness differs from the current one is stale.
- ``version_id``: one immutable version of a node: its raw bytes, its declared metadata
  and the witness it was derived under.

Each hash is domain-tagged (its first part names what it identifies), so that two kinds of
identifier can never collide even when built from the same strings.
"""

from __future__ import annotations

from affidavit.records import node_id_for, stable_hash

__all__ = ["node_id_for", "version_id_for", "witness_for"]


def witness_for(
    raw_digest: str,
    *,
    policy_epoch: str,
    schema_version: str,
    resolver_version: str,
    model_id: str,
    prompt_hash: str,
) -> str:
    """``H(raw_digest, policy_epoch, schema_version, resolver_version, model_id, prompt_hash)``."""
    return stable_hash(
        "witness",
        raw_digest,
        policy_epoch,
        schema_version,
        resolver_version,
        model_id,
        prompt_hash,
    )


def version_id_for(node_id: str, raw_digest: str, metadata_digest: str, witness: str) -> str:
    """Identity of one immutable document version (64 hex)."""
    return stable_hash("version", node_id, raw_digest, metadata_digest, witness)
