"""Chunk ids that survive edits: delta at chunk level (spec 001).

A chunk's id names what the chunk is, not when it was derived: its tenant, its node, its
heading path, its label and the digest of its text, plus its rank among identical spans of
the same document (a repeated boilerplate paragraph is two chunks). An edit elsewhere in the
document changes none of these, so the unchanged chunks of a new version keep their ids,
and with them their vectors. Offsets are left out on purpose: one inserted sentence above a
chunk moves it without changing it.

The label is part of the id because for the promises a relabelled chunk is another
artifact: its vector may no longer be allowed to exist (the embedding egress declares
labels), and a ledger record that cited it must replay the label it logged.

Several versions of one node may hold the same id; the store keys chunk rows by id and
version, and serves the head version's row (:mod:`affidavit.store`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence

from affidavit.records import ChunkDraft, stable_hash

CHUNK_ID_SCHEME = "chunk/2"
"""Tag of the id derivation. Ids of the first scheme (hashed with the version id) stay in
the store as they are: they name rows of old versions, which old ledger records cite."""


def chunk_ids(tenant: str, node_id: str, drafts: Sequence[ChunkDraft]) -> tuple[str, ...]:
    """The id of every draft of one document version, in the drafts' order."""
    seen: Counter[tuple[str, str, str]] = Counter()
    ids: list[str] = []
    for draft in drafts:
        heading_path = json.dumps(list(draft.heading_path), ensure_ascii=False)
        digest = hashlib.sha256(draft.text.encode("utf-8")).hexdigest()
        key = (heading_path, draft.label, digest)
        occurrence = seen[key]
        seen[key] += 1
        ids.append(stable_hash(CHUNK_ID_SCHEME, tenant, node_id, heading_path, draft.label,
                               digest, str(occurrence))[:32])
    return tuple(ids)
