"""The console under test: the canary deployment of the service tests, plus a document that
mixes labels (the reader's placeholders), a PDF, a second version of the handbook (a SIRE
proposal to review) and keys with the reviewer and admin roles.

Principals, each signed in through ``/ui/login`` with its own key:

* ``sam`` (reader): staff, INTERNAL only; reads the mixed document with placeholders;
* ``helen`` (reviewer): HR, PII; reviews SIRE proposals;
* ``farid`` (reader): finance, FINANCIAL; reads the mixed document whole;
* ``grace`` (admin): board; walks every ledger record, releases quarantine and uses the
  explainer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.identity.lifecycle import approve_sires
from affidavit.ingest.run import Ingestor
from affidavit.service import issue_key
from affidavit.sources import source_for
from affidavit.store import SQLiteStore
from tests.fixtures.hostile.build import text_pdf
from tests.service.conftest import NOW, Deployment, build_deployment

MONEY = "acquisition"  # a FINANCIAL keyword
MIX_CANARY = "CNRY-CONSOLE-FIN-42"
PDF_CANARY = "CNRY-CONSOLE-PDF-17"
BODY = "The office printers on the third floor are replaced in spring by the facilities team."
EXTRA = f"""
[sensitivity.keywords]
FINANCIAL = ["{MONEY}"]
"""
ACL = 'acl: ["group:staff#member"]'
MIXED = (f"---\nclassification: INTERNAL\n{ACL}\n---\n# printers plan\n\n{BODY}\n\n"
         f"## Payments\n\nThe {MONEY} budget for item {MIX_CANARY} is settled this quarter."
         f"\n\n## Spring\n\nPrinters again in spring. {BODY}\n")
PAGES = [["Printers handbook", "", BODY],
         [f"The {MONEY} of item {PDF_CANARY} closes this quarter."],
         ["Printers closing notes.", "", BODY]]
HANDBOOK_V2 = ("---\nclassification: INTERNAL\nacl: [\"group:staff#member\"]\n---\n# handbook"
               "\n\nStaff review their travel bookings every quarter. The travel desk approves "
               "hotel bookings for every review trip. "
               + " ".join(["Toner cartridges for the printers are ordered by the desk."] * 5)
               + "\n")
# Markdown a source may hold: a table, a list, and markup and a script link that must stay
# text (raw HTML is off and the output is sanitised).
TABLE_DOC = (f"---\nclassification: INTERNAL\n{ACL}\n---\n# stapler inventory\n\n"
             "The stapler inventory per floor is counted by the stockroom clerk.\n\n"
             "| Floor | Staplers | Counted by |\n|---|---:|---|\n"
             "| First | 14 | stockroom clerk |\n| Second | 9 | stockroom clerk |\n\n"
             "Stapler rules:\n\n- **heavy** staplers stay in the stockroom\n"
             "- loaned staplers return on Friday\n\n"
             "Stapler notice <img src=x onerror=alert(7)> <script>alert(8)</script> "
             "[stapler help](javascript:alert(9)).\n")
ROLES = {"sam": "reader", "helen": "reviewer", "farid": "reader", "grace": "admin",
         "nobody": "reader"}


def build_console_deployment(root: Path) -> Deployment:
    deployment = build_deployment(root, EXTRA)
    folder = root / "mixed"
    folder.mkdir()
    (folder / "mixed.md").write_text(MIXED, encoding="utf-8")
    (folder / "staplers.md").write_text(TABLE_DOC, encoding="utf-8")
    (folder / "printers.pdf").write_bytes(text_pdf(PAGES))
    (folder / "printers.pdf.meta.yaml").write_text(f"classification: INTERNAL\n{ACL}\n",
                                                   encoding="utf-8")
    # A label nobody declared: quarantined, for the review page to release.
    (folder / "broken.md").write_text(f"---\nclassification: NOPE\n{ACL}\n---\n# broken"
                                      f"\n\n{BODY}\n", encoding="utf-8")
    store = SQLiteStore(deployment.db)
    tenant = deployment.settings.tenant
    try:
        Ingestor(store, deployment.settings).run(
            [source_for(str(folder), deployment.settings, source_system="mixed")])
        approve_sires(store, tenant, [r.sire_id for r in store.list_sire(
            tenant, state="PROPOSED")], by="user:curator", at=NOW)
        # A second version of the handbook: its SIRE record waits for a reviewer.
        (root / "corpus" / "handbook.md").write_text(HANDBOOK_V2, encoding="utf-8")
        Ingestor(store, deployment.settings, tenant=tenant).run(
            [source_for(str(root / "corpus"), deployment.settings, source_system="files")])
        for who, role in ROLES.items():
            deployment.keys[who] = issue_key(store, tenant, f"user:{who}", role=role).key
    finally:
        store.close()
    return deployment


@pytest.fixture(scope="module")
def console_deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    return build_console_deployment(tmp_path_factory.mktemp("console"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say where the browser tests wrote their screenshots."""
    from tests.console.browser import SCREENSHOTS

    if SCREENSHOTS.is_dir():
        terminalreporter.write_line(f"console screenshots: {SCREENSHOTS}")
