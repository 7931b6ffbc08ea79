"""Continuous leak testing: plant a canary per label, probe as those without the grant.

:func:`run_canaries` writes one small document per configured label (PUBLIC excepted: it is
granted to everyone) into a scratch tenant, each holding a fresh canary token, readable by
``group:canary-holders``. It then probes every surface a caller reads through (search,
ask, the document reader) as principals who must not see it:

* for each label, a member of the group who holds every grant but that label;
* an outsider, member of nothing.

A probe passes when the token appears nowhere in what the surface returned. A holder of
every grant must find every canary by search first (the control): otherwise the run proves
nothing and says so. The pass ratio feeds ``affidavit.leak_test.pass_ratio``.
"""

from __future__ import annotations

import json
import secrets
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from affidavit.audit import changes as audited
from affidavit.authz import parse_tuple
from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.engine.reader import read_document
from affidavit.errors import AffidavitError
from affidavit.identity.lifecycle import approve_sires
from affidavit.ingest.run import Ingestor
from affidavit.observability.metrics import record_leak_test
from affidavit.sources import source_for
from affidavit.store.protocol import Store

ACTOR = "system:canary"
HOLDERS = "group:canary-holders#member"
HOLDER = "user:canary-holder"
OUTSIDER = "user:canary-outsider"
SURFACES = ("search", "ask", "reader")


@dataclass(frozen=True)
class Probe:
    label: str
    principal: str
    surface: str
    leaked: bool

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "principal": self.principal, "surface": self.surface,
                "leaked": self.leaked}


@dataclass
class CanaryReport:
    tenant: str
    probes: list[Probe] = field(default_factory=list)
    control_missing: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for p in self.probes if not p.leaked)

    @property
    def pass_ratio(self) -> float:
        return self.passed / len(self.probes) if self.probes else 0.0

    @property
    def ok(self) -> bool:
        return bool(self.probes) and not self.control_missing and self.passed == len(self.probes)

    def to_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "ok": self.ok, "probes": len(self.probes),
                "passed": self.passed, "pass_ratio": self.pass_ratio,
                "control_missing": self.control_missing,
                "leaks": [p.to_dict() for p in self.probes if p.leaked]}


def without(label: str) -> str:
    return f"user:canary-without-{label.lower()}"


def run_canaries(store: Store, settings: Settings, *, tenant: str) -> CanaryReport:
    """Plant, probe and report; the scratch ``tenant`` must not be a tenant in use (its
    policy is its own ``[tenants.<id>]`` section, if any, plus the grants made here)."""
    labels = [label for label in settings.sensitivity.labels if label != "PUBLIC"]
    tokens = {label: f"CNRY{secrets.token_hex(6).upper()}" for label in labels}
    _grant_probers(store, tenant, labels)
    with tempfile.TemporaryDirectory(prefix="affidavit-canary-") as folder:
        for label, token in tokens.items():
            (Path(folder) / f"canary-{label.lower()}.md").write_text(
                f"---\nclassification: {label}\nacl: [\"{HOLDERS}\"]\n---\n"
                f"# Canary {label.lower()}\n\nCanary vault {label.lower()} holds {token}.\n",
                encoding="utf-8")
        Ingestor(store, settings, tenant=tenant).run(
            [source_for(folder, settings, source_system="canary")])
    proposed = [r.sire_id for r in store.list_sire(tenant, state="PROPOSED")]
    approve_sires(store, tenant, proposed, by=ACTOR, at=datetime.now(UTC).isoformat())
    engine = Engine(store, settings, tenant=tenant)
    report = CanaryReport(tenant)
    nodes = {h.alias.rsplit("/", 1)[-1]: h.node_id for h in store.heads(tenant)}
    for label, token in tokens.items():
        question = f"canary vault {label.lower()}"
        node = nodes.get(f"canary-{label.lower()}.md", "")
        if token not in _shown(engine, "search", HOLDER, question, node):
            report.control_missing.append(label)
        for principal in (without(label), OUTSIDER):
            for surface in SURFACES:
                leaked = token in _shown(engine, surface, principal, question, node)
                report.probes.append(Probe(label, principal, surface, leaked))
    record_leak_test(report.passed, len(report.probes))
    return report


def _grant_probers(store: Store, tenant: str, labels: list[str]) -> None:
    """The holder may read everything; each prober holds every grant but its label."""
    audited.add_tuple(store, tenant, parse_tuple(f"{HOLDERS}@{HOLDER}"), actor=ACTOR)
    audited.grant_labels(store, tenant, HOLDER, labels, actor=ACTOR)
    for label in labels:
        prober = without(label)
        audited.add_tuple(store, tenant, parse_tuple(f"{HOLDERS}@{prober}"), actor=ACTOR)
        audited.grant_labels(store, tenant, prober, [x for x in labels if x != label],
                             actor=ACTOR)


def _shown(engine: Engine, surface: str, principal: str, question: str, node: str) -> str:
    """What a surface returned to ``principal``, as text; a refusal shows nothing."""
    try:
        if surface == "search":
            shown: Any = [h.to_dict() for h in engine.search(principal, question)]
        elif surface == "ask":
            shown = engine.ask(principal, question).to_dict()
        else:
            shown = read_document(engine, principal, node).to_dict()
    except AffidavitError:
        return ""
    return json.dumps(shown, ensure_ascii=False, default=str)
