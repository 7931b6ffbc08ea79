"""Attacks on the Review page's SIRE history: beside each proposal it shows the record of
the document's previous version, whose terms were drawn from that version's text. A
reader the previous version did not admit must not see them, even when the current
version admits it (an access list widened after a passage was cut: the removed terms are
exactly the passage that was cut)."""

from __future__ import annotations

from pathlib import Path

from affidavit.engine.query import Engine
from affidavit.identity.lifecycle import approve_sires
from affidavit.ingest.run import Ingestor
from affidavit.service.api.auth import Credential
from affidavit.service.console.review import proposals
from affidavit.sources import source_for
from affidavit.store import SQLiteStore
from tests.service.conftest import NOW, build_deployment

CUT_WORD = "quillfrost"
COMMON = "The harbour pilots review the mooring rota every week."


def _version(acl: str, body: str) -> str:
    return (f"---\nclassification: INTERNAL\nacl: [\"{acl}\"]\n---\n# mooring plan\n\n"
            f"{body}\n")


def test_a_previous_versions_terms_are_shown_only_to_readers_that_version_admitted(
        tmp_path: Path) -> None:
    (tmp_path / "deployment").mkdir()
    deployment = build_deployment(tmp_path / "deployment")
    settings, tenant = deployment.settings, deployment.settings.tenant
    folder = tmp_path / "plans"
    folder.mkdir()
    cut = " ".join([f"The {CUT_WORD} merger terms are set for the pilots."] * 5)
    store = SQLiteStore(deployment.db)
    try:
        (folder / "mooring.md").write_text(_version("group:board#member", f"{COMMON} {cut}"),
                                           encoding="utf-8")
        Ingestor(store, settings, tenant=tenant).run(
            [source_for(str(folder), settings, source_system="plans")])
        approve_sires(store, tenant, [r.sire_id for r in store.list_sire(
            tenant, state="PROPOSED")], by="user:curator", at=NOW)
        # The passage is cut and the document opened to all staff.
        (folder / "mooring.md").write_text(_version("group:staff#member", COMMON * 3),
                                           encoding="utf-8")
        Ingestor(store, settings, tenant=tenant).run(
            [source_for(str(folder), settings, source_system="plans")])
        engine = Engine(store, settings, tenant=tenant)
        seen = {who: proposals(engine, Credential(f"user:{who}", tenant, "reviewer",
                                                  "api_key", f"key:{who}"))
                for who in ("sam", "grace")}
    finally:
        store.close()

    def history(who: str) -> str:
        shown = [p for p in seen[who] if p.record.alias == "mooring.md"]
        assert shown, f"{who} reviews the current version"
        return repr([(p.previous, p.changes) for p in shown]).casefold()

    assert CUT_WORD in history("grace"), "the board was admitted to the previous version"
    assert CUT_WORD not in history("sam")
