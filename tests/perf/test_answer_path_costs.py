"""What an answer costs the store: no scan of every chunk row per answer (the stale-head
count is kept per corpus generation), and reads that do not queue behind one lock (each
thread reads on its own connection while a write is open). Real SQLite files."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from affidavit.engine.query import Engine
from affidavit.store import SQLiteStore
from affidavit.store.protocol import HeadInfo
from tests.e2e.test_invariants import ingest_examples


class CountingStore(SQLiteStore):
    """The real store, counting its full scans of chunk rows."""

    scans = 0

    def label_stale_heads(self, tenant: str, label_epoch: str) -> list[HeadInfo]:
        type(self).scans += 1
        return super().label_stale_heads(tenant, label_epoch)


def test_answers_do_not_rescan_chunk_rows_until_the_corpus_changes(tmp_path: Path) -> None:
    store, settings = ingest_examples(tmp_path / "a.db")
    store.close()
    counting = CountingStore(tmp_path / "a.db", create=False)
    try:
        engine = Engine(counting, settings)
        for _ in range(5):
            result = engine.ask("user:sam.reed", "What is the nightly hotel limit?")
        assert result.output_state == "AUTHORIZED"
        assert CountingStore.scans == 1
        # A restamp advances the corpus generation: the next answer counts again.
        head = counting.heads(settings.tenant)[0]
        counting.restamp_version(settings.tenant, head.version_id, label_epoch="other-epoch",
                                 witness="w", fingerprint=head.fingerprint)
        engine.ask("user:sam.reed", "What is the nightly hotel limit?")
        assert CountingStore.scans == 2
        entry = counting.get_ledger(settings.tenant,
                                    engine.ask("user:sam.reed", "core hours").ledger_record_id)
        assert entry is not None and '"stale_documents":1' in entry.payload.replace(" ", "")
    finally:
        counting.close()


def test_a_read_does_not_wait_for_an_open_write(tmp_path: Path) -> None:
    store, settings = ingest_examples(tmp_path / "a.db")
    try:
        entered, release = threading.Event(), threading.Event()

        def hold_a_write() -> None:
            with store._write():
                entered.set()
                release.wait(10)

        writer = threading.Thread(target=hold_a_write)
        writer.start()
        assert entered.wait(10)
        started = time.monotonic()
        hits = Engine(store, settings).search("user:sam.reed", "nightly hotel limit")
        waited = time.monotonic() - started
        release.set()
        writer.join(10)
    finally:
        store.close()
    assert hits
    assert waited < 5, "the search queued behind the open write transaction"
