"""An ingestion run that pauses after its first document (run by the concurrency tests).

Usage: ``python -m tests.e2e.hold_ingest FOLDER DATABASE STARTED RELEASE``. After the first
document it creates the file STARTED, then waits (at most a minute) until the file RELEASE
exists before going on; meanwhile it holds the tenant's ingestion lock. Prints the run
summary as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from affidavit.config.settings import Settings
from affidavit.ingest.run import DocumentOutcome, Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore


def run(folder: str, database: str, started: Path, release: Path) -> dict[str, object]:
    def pause_once(done: int, _: DocumentOutcome) -> None:
        if done != 1:
            return
        started.touch()
        deadline = time.monotonic() + 60
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    store = SQLiteStore(database)
    try:
        source = LocalFolderSource(folder, max_document_bytes=1 << 20)
        summary = Ingestor(store, Settings()).run([source], progress=pause_once)
    finally:
        store.close()
    return summary.to_dict()


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))))
