"""Whether a tenant's SIRE exclusion gate excludes anything (spec 003 §11.3).

Excluded is the only SIRE field that enforces. With ``[sire] default_excludes`` empty,
Algorithm 1 proposes an empty Excluded set for every source, and the gate purges nothing:
a silent no-op that the spec forbids. So ``ingest``, ``sire list``, ``whoami`` and the
service's readiness report say so, and ``[sire] require_excludes = true`` makes it an
error: ingest refuses while ``default_excludes`` is empty (every proposal it made would
exclude nothing), and ask refuses (BLOCKED, recorded) while the tenant's gate excludes
nothing.

The tenant's gate excludes nothing when ``default_excludes`` is empty and no ACTIVE SIRE
record of its head versions has an Excluded term.
"""

from __future__ import annotations

from affidavit.config.settings import Settings
from affidavit.errors import ConfigurationError
from affidavit.store.protocol import Store

ACTIVE = "ACTIVE"


def gate_excludes_nothing(store: Store, settings: Settings, tenant: str) -> bool:
    """Whether no chunk of ``tenant`` can ever be purged by the exclusion gate."""
    if settings.sire.default_excludes:
        return False
    return not any(record.sire.excluded for record in store.list_sire(tenant, state=ACTIVE))


def exclusion_gate_warning(store: Store, settings: Settings, tenant: str) -> str | None:
    """The operator's warning when the tenant's gate excludes nothing, else None."""
    if not gate_excludes_nothing(store, settings, tenant):
        return None
    return (f"the SIRE exclusion gate of tenant {tenant!r} excludes nothing: [sire] "
            "default_excludes is empty and no ACTIVE SIRE record has an Excluded term, so no "
            "chunk is ever purged (spec 003 §11.3); list the terms sources must not answer "
            "for in [sire] default_excludes ([sire] require_excludes = true makes this an "
            "error)")


def exclusion_gate_problem(store: Store, settings: Settings, tenant: str) -> str | None:
    """Why an answer must be refused under ``[sire] require_excludes``, else None."""
    if not settings.sire.require_excludes:
        return None
    return exclusion_gate_warning(store, settings, tenant)


def check_ingest_excludes(settings: Settings) -> None:
    """Refuse an ingestion run whose proposals would exclude nothing, when required."""
    if settings.sire.require_excludes and not settings.sire.default_excludes:
        raise ConfigurationError(
            "is empty while [sire] require_excludes is true: every SIRE proposal of this run "
            "would exclude nothing (spec 003 §11.3)", key="sire.default_excludes",
            source=settings.source_file or "defaults")
