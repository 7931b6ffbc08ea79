"""Ingestion runs started over HTTP: named at once, executed in the background.

On SQLite the run executes on this process's ingestion thread (one run at a time per
process; the tenant's ingest lock orders runs of several processes). On PostgreSQL the
documents are put on the tenant's ingestion queue and ``affidavit worker`` processes drain
it (:mod:`affidavit.ingest.worker`). Either way the run's id is returned before any document is
read, and its state is read back from the store's ``runs`` table; until the run's row
exists (a URL still being listed, a run waiting for the tenant's lock), this process
remembers it as pending.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from affidavit.config.settings import Settings
from affidavit.errors import AffidavitError, InputRejected, NotFound
from affidavit.ingest.run import Ingestor
from affidavit.ingest.supersession import Submitter, upload_source_id
from affidavit.records import DocumentMetadata, SourceDocument, canonical_json
from affidavit.service.api.run_views import RunScreen
from affidavit.sources import StaticSource, listing_key, location_scheme, parse_metadata
from affidavit.sources import source_for as transport_for
from affidavit.sources.base import Transport
from affidavit.store.protocol import RunRecord, Store

UPLOAD_SYSTEM = "upload"
# A run waiting for another run of its tenant waits this long before it fails.
LOCK_WAIT_SECONDS = 3600.0
REMOTE_SCHEMES = ("https", "sftp")


@dataclass(frozen=True)
class Upload:
    """One uploaded file and the metadata declared for it (as in a sidecar)."""

    filename: str
    content: bytes
    metadata: DocumentMetadata = field(default_factory=DocumentMetadata)


def upload_documents(uploads: Sequence[Upload], max_bytes: int,
                     submitter: str) -> list[SourceDocument]:
    """Source documents of an upload; an oversized file is refused as a transport would.

    A file's name is its path, not its identity: without a declared ``source_id`` it is a
    document of ``submitter`` alone (:func:`affidavit.ingest.supersession.upload_source_id`)."""
    documents: list[SourceDocument] = []
    for upload in uploads:
        name = upload.filename.replace("\\", "/").lstrip("/")
        if not name or any(part in ("", ".", "..") for part in name.split("/")):
            raise InputRejected("MALFORMED_FILENAME", "an uploaded file needs a plain name")
        rejection = None
        content = upload.content
        if len(content) > max_bytes:
            rejection, content = ("TOO_LARGE", f"larger than {max_bytes} bytes"), b""
        documents.append(SourceDocument(
            UPLOAD_SYSTEM, upload.metadata.source_id or upload_source_id(submitter, name),
            hashlib.sha256(upload.content).hexdigest(), content, f"upload/{name}",
            upload.metadata, rejection))
    return documents


def parse_upload_metadata(text: str | None, filenames: Sequence[str]
                          ) -> dict[str, DocumentMetadata]:
    """The ``metadata`` form field: a JSON object from file name to its metadata."""
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputRejected("MALFORMED_METADATA", "metadata must be a JSON object") from exc
    if not isinstance(data, dict):
        raise InputRejected("MALFORMED_METADATA", "metadata must be a JSON object")
    unknown = sorted(set(data) - set(filenames))
    if unknown:
        raise InputRejected("MALFORMED_METADATA", "metadata names files that were not sent")
    return {name: parse_metadata(value, origin=f"metadata[{name}]")
            for name, value in data.items()}


def remote_transport(location: str, settings: Settings) -> Transport:
    """The transport of a source URL: https or sftp only (never a path on the server)."""
    if location_scheme(location) not in REMOTE_SCHEMES:
        raise InputRejected("UNSUPPORTED_SCHEME", "give an https:// or sftp:// URL")
    return transport_for(location, settings, source_system=location_scheme(location) or "")


@dataclass
class PendingRun:
    tenant: str
    started_at: str
    failure: str | None = None


class IngestJobs:
    """The runs this process started, and the thread that executes them on SQLite."""

    def __init__(self, settings: Settings, store: Callable[[], Store]):
        self.settings = settings
        self._store = store
        self._pending: dict[str, PendingRun] = {}
        # run id -> (tenant, principal that submitted it): the names of a submission that
        # never reached the store are shown to that principal only (run_views). Kept in
        # this process (and in a queued run's parameters): elsewhere they stay withheld.
        self._submitters: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="affidavit-ingest")

    def start(self, tenant: str, transport: Transport | None,
              documents: Sequence[SourceDocument] = (), *, listing: str | None = None,
              submitter: Submitter | None = None) -> str:
        """Start a run of ``documents`` (an upload) or of ``transport`` (a URL), on behalf
        of ``submitter`` (whose documents supersede only what it may:
        :mod:`affidavit.ingest.supersession`)."""
        run_id = "run-" + uuid.uuid4().hex[:16]
        store = self._store()
        with self._lock:
            if submitter is not None:
                self._submitters[run_id] = (tenant, submitter.principal)
        if store.backend == "postgres" and transport is None:
            self._enqueue(store, tenant, run_id, documents, submitter)
            return run_id
        with self._lock:
            self._pending[run_id] = PendingRun(tenant, _now())
        self._executor.submit(self._execute, tenant, run_id, transport, list(documents),
                              listing, submitter)
        return run_id

    def _execute(self, tenant: str, run_id: str, transport: Transport | None,
                 documents: list[SourceDocument], listing: str | None,
                 submitter: Submitter | None) -> None:
        store = self._store()
        try:
            if store.backend == "postgres":
                assert transport is not None
                self._enqueue(store, tenant, run_id, list(transport.list_documents()),
                              submitter)
            else:
                source = transport or StaticSource(documents, source_system=UPLOAD_SYSTEM)
                Ingestor(store, self.settings, tenant=tenant).run(
                    [source], listing=listing, wait_seconds=LOCK_WAIT_SECONDS, run_id=run_id,
                    submitter=submitter)
        except AffidavitError as exc:
            # The run may never have reached the store: remember why it did not.
            with self._lock:
                self._pending[run_id].failure = type(exc).__name__
            return
        except Exception:  # a defect must not kill the ingestion thread
            with self._lock:
                self._pending[run_id].failure = "INTERNAL_ERROR"
            return
        with self._lock:
            self._pending.pop(run_id, None)

    def _enqueue(self, store: Store, tenant: str, run_id: str,
                 documents: Sequence[SourceDocument], submitter: Submitter | None) -> None:
        from affidavit.store.postgres.queue import enqueue_documents
        from affidavit.store.postgres.store import PostgresStore

        assert isinstance(store, PostgresStore)
        ingestor = Ingestor(store, self.settings, tenant=tenant)
        # The worker that drains the run reads its submitter here (affidavit.ingest.worker).
        enqueue_documents(store, tenant, run_id, documents, params_json=canonical_json(
            {"epoch": ingestor.epoch, "queued": True,
             **(submitter.to_params() if submitter else {"submitted_by": None})}))

    def submitter(self, tenant: str, run: RunRecord) -> str | None:
        """The principal that submitted ``run`` over this service, when known."""
        recorded = json.loads(run.params_json or "{}").get("submitted_by")
        if isinstance(recorded, str):
            return recorded
        with self._lock:
            known = self._submitters.get(run.run_id)
        return known[1] if known is not None and known[0] == tenant else None

    def status(self, tenant: str, run_id: str, screen: RunScreen) -> dict[str, Any]:
        """The run as the API shows it to the caller ``screen`` is for (document names it
        may not see withheld); NotFound for a run of another tenant."""
        run = self._store().get_run(tenant, run_id)
        if run is not None:
            status = "RUNNING" if run.status == "QUEUED" else run.status
            summary, entries = screen.run_view(
                json.loads(run.summary_json or "{}"),
                self._store().list_quarantine(tenant, run_id), self.submitter(tenant, run))
            quarantined = [{k: q[k] for k in ("alias", "source_id", "reason_code", "message")}
                           for q in entries]
            return {"run_id": run.run_id, "status": status, "queued": run.status == "QUEUED",
                    "started_at": run.started_at, "finished_at": run.finished_at,
                    "summary": summary, "quarantined": quarantined}
        with self._lock:
            pending = self._pending.get(run_id)
        if pending is None or pending.tenant != tenant:
            raise NotFound(f"no ingestion run {run_id}")
        return {"run_id": run_id, "status": "FAILED" if pending.failure else "RUNNING",
                "queued": pending.failure is None, "started_at": pending.started_at,
                "finished_at": None,
                "summary": {"failure": pending.failure} if pending.failure else {},
                "quarantined": []}

    def boundary(self, tenant: str, run_id: str, screen: RunScreen) -> dict[str, Any]:
        """The run's boundary record and its dead-letter (quarantine) entries."""
        view = self.status(tenant, run_id, screen)
        run = self._store().get_run(tenant, run_id)
        entries = [] if run is None else screen.run_view(
            {}, self._store().list_quarantine(tenant, run_id), self.submitter(tenant, run))[1]
        dlq = [{k: q[k] for k in ("alias", "source_id", "reason_code", "message", "at",
                                  "released_by", "released_at")} for q in entries]
        return {"run_id": run_id, "status": view["status"],
                "boundary": view["summary"].get("boundary") or {}, "dlq": dlq}

    def close(self) -> None:
        self._executor.shutdown(wait=True)


def listing_for(location: str) -> str | None:
    return listing_key(location)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
