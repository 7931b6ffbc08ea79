"""Store contract for references, on every backend: the classification filter sits inside
the query, directions are honoured, text search takes wildcards literally, and a ledger
record's citations commit with it or not at all."""

from __future__ import annotations

import pytest

from affidavit.errors import LedgerError
from affidavit.records import Reference
from affidavit.store.protocol import Store

T = "tenant-refs"
NOW = "2026-01-01T00:00:00+00:00"


def _ref(ref_id: str, source: str, target: str, label: str, reason: str = "why",
         source_type: str = "document", text_label: str | None = None,
         by: str = "user:x") -> Reference:
    return Reference(ref_id, "CrossReference", source_type, source, target, None, None, "{}",
                     "", reason, label, by, NOW, text_label or label)


def test_references_are_filtered_by_classification_inside_the_query(store: Store) -> None:
    store.add_reference(T, _ref("r1", "a", "b", "PUBLIC"))
    store.add_reference(T, _ref("r2", "a", "c", "FINANCIAL", reason="fees 4471"))
    store.add_reference(T, _ref("r3", "c", "a", "PUBLIC"))
    public = {"PUBLIC"}
    both = {"PUBLIC", "FINANCIAL"}
    assert [r.ref_id for r in store.references_touching(
        T, ["a"], direction="out", labels=public, limit=10)] == ["r1"]
    assert [r.ref_id for r in store.references_touching(
        T, ["a"], direction="in", labels=public, limit=10)] == ["r3"]
    assert sorted(r.ref_id for r in store.references_touching(
        T, ["a"], direction="both", labels=both, limit=10)) == ["r1", "r2", "r3"]
    assert store.references_touching(T, ["a"], direction="both", labels=both, limit=1) != []
    assert len(store.references_touching(T, ["a"], direction="both", labels=both,
                                         limit=1)) == 1
    assert store.search_references(T, "4471", labels=public, limit=10) == []
    assert [r.ref_id for r in store.search_references(T, "FEES", labels=both,
                                                      limit=10)] == ["r2"]
    assert store.search_references(T, "%", labels=both, limit=10) == []
    assert store.references_touching("other-tenant", ["a"], direction="both", labels=both,
                                     limit=10) == []


def test_citations_commit_with_their_ledger_record_or_not_at_all(store: Store) -> None:
    citation = _ref("c1", "led-1", "b", "PUBLIC", source_type="ledger")
    store.append_ledger(T, record_id="led-1", request_id="q1", created_at=NOW, payload="{}",
                        references=[citation])
    with pytest.raises(LedgerError):
        # A duplicate reference id fails the whole append: no record without its citations.
        store.append_ledger(T, record_id="led-2", request_id="q2", created_at=NOW,
                            payload="{}", references=[citation])
    assert [e.record_id for e in store.iter_ledger(T)] == ["led-1"]
    assert [r.ref_id for r in store.references_touching(
        T, ["b"], direction="in", labels={"PUBLIC"}, limit=10, viewer="user:x")] == ["c1"]


def test_store_reads_leave_out_another_askers_citations_and_text_of_an_ungranted_label(
        store: Store) -> None:
    """A citation comes back only to the asker of its answer, inside the query (so it takes
    no place under the limit); a search matches only text whose own label is granted."""
    store.append_ledger(T, record_id="led-1", request_id="q1", created_at=NOW, payload="{}",
                        references=[_ref("c1", "led-1", "b", "PUBLIC", reason="pilot fees",
                                         source_type="ledger", by="user:ann")])
    store.add_reference(T, _ref("r1", "a", "b", "PUBLIC", reason="Nightjar tides",
                                text_label="RESTRICTED"))
    public = {"PUBLIC"}
    touching = [[r.ref_id for r in store.references_touching(
        T, ["b"], direction="in", labels=public, limit=1, viewer=viewer)]
        for viewer in ("user:ann", "user:bob", "")]
    found = [[r.ref_id for r in store.search_references(T, text, labels=labels, limit=10,
                                                        viewer="user:bob")]
             for text, labels in (("nightjar", public), ("nightjar", {*public, "RESTRICTED"}),
                                  ("pilot", public))]
    assert touching == [["c1"], ["r1"], ["r1"]]
    assert found == [[], ["r1"], []]
    assert [r.ref_id for r in store.search_references(T, "pilot", labels=public, limit=10,
                                                      viewer="user:ann")] == ["c1"]
