"""One ingestion run over a folder, reported as JSON on stdout (run by the corpus test).

Usage: ``python -m tests.e2e_hostile.run_ingest FOLDER DATABASE MAX_DOCUMENT_BYTES``.
Prints the run summary, each document's status and the seconds it took, and the peak
resident size of this process and of the parser processes it forked.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

from affidavit.config.settings import IngestSettings, Settings
from affidavit.ingest.run import DocumentOutcome, Ingestor
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore


def run(folder: str, database: str, max_document_bytes: int) -> dict[str, Any]:
    settings = Settings(ingest=IngestSettings(max_document_bytes=max_document_bytes))
    store = SQLiteStore(database)
    seconds: dict[str, float] = {}
    statuses: dict[str, str] = {}
    last = time.monotonic()

    def progress(_: int, outcome: DocumentOutcome) -> None:
        nonlocal last
        now = time.monotonic()
        seconds[outcome.alias], last = now - last, now
        statuses[outcome.alias] = outcome.status

    source = LocalFolderSource(folder, max_document_bytes=max_document_bytes)
    try:
        summary = Ingestor(store, settings).run([source], progress=progress)
    finally:
        store.close()
    return {
        "summary": summary.to_dict(),
        "statuses": statuses,
        "seconds": seconds,
        "peak_rss_kib": {
            "self": own_peak_kib(),
            "parsers": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
        },
    }


def own_peak_kib() -> int:
    """This process's peak resident set since it started, in KiB.

    ``getrusage(RUSAGE_SELF).ru_maxrss`` is no use here: Linux carries the high-water mark of
    the address space an ``exec`` replaces over into the new program, so a runner started by
    a large test process would report that process's size. ``VmHWM`` belongs to the current
    address space alone."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
