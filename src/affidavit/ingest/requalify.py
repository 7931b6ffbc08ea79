"""Requalification: derived artifacts recomputed by delta when an epoch changes.

Everything ingestion writes is a projection of a stored blob under the epochs in force
(:mod:`affidavit.index.epochs`). After a settings change nothing is fetched again: each
head version is derived once more, in memory, from its stored bytes and the metadata it was
ingested with, and compared with what is stored:

- *fresh*: its fingerprint is the current one; nothing to do;
- *restamp*: stale, but the derivation gives the same paragraph labels, chunks, metadata
  and SIRE proposal; it is marked current in place (ids, vectors and approval stay);
- *affected*: something served would change; it is derived again as a new version, and an
  ACTIVE approval follows it only when its proposal is identical
  (:mod:`affidavit.identity.carry_over`).

:meth:`Requalifier.plan` writes nothing; :meth:`~Requalifier.canary` reports the differences
for a deterministic sample of the affected documents, still writing nothing;
:meth:`~Requalifier.roll` promotes them all. The machinery is :mod:`affidavit.ingest.derivation`;
this module gives it the ingestion run's :class:`~affidavit.ingest.run.Ingestor`, so the
run, which requalifies label-stale heads itself, never imports back the module above it.
Reports name documents by path and paragraphs by index, never their text or terms.
"""

from __future__ import annotations

from affidavit.config.settings import Settings
from affidavit.ingest.derivation import AFFECTED as AFFECTED
from affidavit.ingest.derivation import FAILED as FAILED
from affidavit.ingest.derivation import FRESH as FRESH
from affidavit.ingest.derivation import RESTAMP as RESTAMP
from affidavit.ingest.derivation import Derivation
from affidavit.ingest.derivation import Requalification as Requalification
from affidavit.ingest.derivation import _DerivingStore as _DerivingStore
from affidavit.ingest.derivation import plan_report as plan_report
from affidavit.ingest.derivation import requalify_label_stale as requalify_label_stale
from affidavit.ingest.derivation import restamp_unaffected as restamp_unaffected
from affidavit.ingest.run import Ingestor
from affidavit.store.protocol import Store


class Requalifier(Derivation):
    """Plans, samples and rolls the requalification of one tenant's head versions."""

    def __init__(self, store: Store, settings: Settings, *, tenant: str | None = None):
        super().__init__(store, settings, ingestor_type=Ingestor, tenant=tenant)
