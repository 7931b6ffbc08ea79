"""Which document versions have an ACTIVE SIRE, remembered per policy generation.

Every search reports, per hit, whether its version's SIRE is ACTIVE (only those ground an
answer). Asking the store for each search's ten versions was a tenth of a lexical search's
time. The store bumps a tenant's policy generation in the transaction of every change to its
SIRE rows (a trigger, whatever path wrote them), as it does for tuples and grants: states
remembered under one generation are dropped when the next request reads another.

The generation is read before the states, so what is kept under a generation is never older
than the generation says: a change that commits between the two reads moves the generation,
and the next request reads afresh.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from affidavit.store.protocol import Store

MAX_REMEMBERED = 65_536
"""Versions remembered per tenant; all are forgotten beyond this (then read again)."""


class ActiveSireStates:
    """``active(tenant, versions)``: the store's answer, read once per policy generation."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._known: dict[str, tuple[int, dict[str, bool]]] = {}

    def active(self, tenant: str, version_ids: Iterable[str]) -> set[str]:
        """The versions among ``version_ids`` whose SIRE is ACTIVE now."""
        ids = set(version_ids)
        if not ids:
            return set()
        generation = self.store.policy_generation(tenant)  # first: see the module docstring
        if generation is None:  # no such tenant: nothing to remember it under
            return self.store.active_sire_versions(tenant, sorted(ids))
        with self._lock:
            entry = self._known.get(tenant)
            if entry is None or entry[0] != generation:
                entry = (generation, {})
                self._known[tenant] = entry
            known = {v: entry[1][v] for v in ids if v in entry[1]}
        missing = sorted(ids.difference(known))
        found = self.store.active_sire_versions(tenant, missing) if missing else set()
        if missing:
            with self._lock:
                if self._known.get(tenant) is entry:  # not replaced by a newer generation
                    states = entry[1]
                    if len(states) + len(missing) > MAX_REMEMBERED:
                        states.clear()
                    for version in missing:
                        states[version] = version in found
        return {v for v, is_active in known.items() if is_active} | found
