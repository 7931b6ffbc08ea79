"""The document reader (spec 004 layer 2) and the original file (layer 3) over HTTP:
placeholders that name the label, heading stand-ins, PDF pages removed, and an id of another
tenant or of a document the caller cannot read answered exactly like an unknown one."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pypdf
import pytest

from affidavit.identity.lifecycle import approve_sires
from affidavit.ingest.run import Ingestor
from affidavit.policy.derived import HEADING_WITHHELD
from affidavit.sources import source_for
from affidavit.store import SQLiteStore
from tests.fixtures.hostile.build import pdf_file, pdf_stream, text_operators, text_pdf
from tests.service.conftest import NOW, Deployment, RunningService, build_deployment

SECRET = "Lighthouse"  # a RESTRICTED keyword
MONEY = "acquisition"  # a FINANCIAL keyword
MIX_CANARY = "CNRY-MIX-FIN-31"
PDF_CANARY = "CNRY-PDF-FIN-77"
BODY = "The office printers on the third floor are replaced in spring by the facilities team."
EXTRA = f"""
[sensitivity]
restricted_keywords = ["{SECRET}"]
[sensitivity.keywords]
FINANCIAL = ["{MONEY}"]
"""
ACL = 'acl: ["group:staff#member"]'
MIXED = (f"---\nclassification: INTERNAL\n{ACL}\n---\n# printers plan\n\n{BODY}\n\n"
         f"## {SECRET} {MONEY} timeline\n\nPrinters again. {BODY}\n\n## Payments\n\n"
         f"The {MONEY} budget for item {MIX_CANARY} is settled this quarter.\n")
LINK_CANARY = "CNRY-LINK-FIN-55"
PAGES = [["Printers handbook", "", BODY],
         [f"The {MONEY} of item {PDF_CANARY} closes this quarter."],
         ["Printers closing notes.", "", BODY]]


def linked_pdf() -> bytes:
    """Two pages; a link on page 1 points at page 2, which holds a FINANCIAL paragraph."""
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R%s >>")
    link = b" /Annots [<< /Type /Annot /Subtype /Link /Rect [0 0 10 10] /Dest [6 0 R /Fit] >>]"
    return pdf_file([b"<< /Type /Catalog /Pages 2 0 R >>",
                     b"<< /Type /Pages /Kids [4 0 R 6 0 R] /Count 2 >>",
                     b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
                     page % (5, link), pdf_stream(text_operators(["Linked printers", "", BODY])),
                     page % (7, b""), pdf_stream(text_operators(
                         [f"The {MONEY} of item {LINK_CANARY} closes."]))])


@pytest.fixture(scope="module")
def reader_deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    root = tmp_path_factory.mktemp("reader")
    deployment = build_deployment(root, EXTRA)
    folder = root / "mixed"
    folder.mkdir()
    (folder / "mixed.md").write_text(MIXED, encoding="utf-8")
    (folder / "mixed.pdf").write_bytes(text_pdf(PAGES))
    (folder / "linked.pdf").write_bytes(linked_pdf())
    for name in ("mixed.pdf", "linked.pdf"):
        (folder / f"{name}.meta.yaml").write_text(f"classification: INTERNAL\n{ACL}\n",
                                                  encoding="utf-8")
    store = SQLiteStore(deployment.db)
    try:
        summary = Ingestor(store, deployment.settings).run(
            [source_for(str(folder), deployment.settings, source_system="mixed")])
        assert summary.count("ingested") == 3, summary.to_dict()
        proposed = [r.sire_id for r in store.list_sire(deployment.settings.tenant,
                                                       state="PROPOSED")]
        approve_sires(store, deployment.settings.tenant, proposed, by="user:curator", at=NOW)
    finally:
        store.close()
    return deployment


@pytest.fixture(scope="module")
def reader_service(reader_deployment: Deployment) -> Iterator[RunningService]:
    with reader_deployment.serve() as running:
        yield running


def doc_id(service: RunningService, key: str, query: str, suffix: str) -> str:
    with service.client(key) as client:
        hits = client.post("/v1/search", json={"query": query, "limit": 50}).json()["hits"]
    ids = {h["doc_id"] for h in hits if h["source_id"].endswith(suffix)}
    assert len(ids) == 1, hits
    return str(ids.pop())


def test_reader_shows_a_placeholder_naming_the_label_of_each_unreadable_chunk(
        reader_service: RunningService, reader_deployment: Deployment) -> None:
    key = reader_deployment.keys["sam"]
    mixed = doc_id(reader_service, key, "printers facilities spring", "mixed.md")
    with reader_service.client(key) as client:
        response = client.get(f"/v1/documents/{mixed}")
    assert response.status_code == 200, response.text
    view = response.json()
    assert view["extraction"] is True and "original" in view["notice"]
    assert view["complete"] is False
    hidden = [s for s in view["sections"] if not s["readable"]]
    assert {s["label"] for s in hidden} == {"FINANCIAL", "RESTRICTED"}
    assert {s["text"] for s in hidden} == {"Content requires FINANCIAL clearance",
                                           "Content requires RESTRICTED clearance"}
    assert all(s["chunk_id"] is None for s in hidden)
    readable = [s for s in view["sections"] if s["readable"]]
    assert readable and all(BODY in s["text"] for s in readable)
    assert [s["ordinal"] for s in view["sections"]] == sorted(s["ordinal"]
                                                              for s in view["sections"])
    # The RESTRICTED heading above a readable paragraph shows its stand-in.
    assert any(HEADING_WITHHELD in s["heading_path"] for s in readable)
    for word in (SECRET, MONEY, MIX_CANARY):
        assert word.casefold() not in response.text.casefold()


def test_reader_shows_what_a_cleared_reader_may_read(
        reader_service: RunningService, reader_deployment: Deployment) -> None:
    key = reader_deployment.keys["farid"]  # FINANCIAL, not RESTRICTED
    mixed = doc_id(reader_service, key, "printers facilities spring", "mixed.md")
    with reader_service.client(key) as client:
        response = client.get(f"/v1/documents/{mixed}")
    view = response.json()
    assert [s["label"] for s in view["sections"] if not s["readable"]] == ["RESTRICTED"]
    assert MIX_CANARY in response.text
    assert SECRET.casefold() not in response.text.casefold()


def test_original_pdf_loses_the_pages_holding_unreadable_chunks(
        reader_service: RunningService, reader_deployment: Deployment) -> None:
    key = reader_deployment.keys["sam"]
    pdf = doc_id(reader_service, key, "printers facilities spring", "mixed.pdf")
    with reader_service.client(key) as client:
        response = client.get(f"/v1/documents/{pdf}/original")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/pdf"
    removed = [int(p) for p in response.headers["x-affidavit-removed-pages"].split(",")]
    assert 2 in removed and 1 not in removed
    copy = pypdf.PdfReader(io.BytesIO(response.content))
    assert len(copy.pages) == len(PAGES) - len(removed)
    assert "Printers handbook" in copy.pages[0].extract_text()
    assert PDF_CANARY not in response.text
    assert all(PDF_CANARY not in page.extract_text() for page in copy.pages)


def test_a_kept_page_linking_to_a_removed_page_does_not_bring_it_along(
        reader_service: RunningService, reader_deployment: Deployment) -> None:
    key = reader_deployment.keys["sam"]
    pdf = doc_id(reader_service, key, "linked printers facilities", "linked.pdf")
    with reader_service.client(key) as client:
        response = client.get(f"/v1/documents/{pdf}/original")
    assert response.status_code == 200, response.text
    assert response.headers["x-affidavit-removed-pages"] == "2"
    assert len(pypdf.PdfReader(io.BytesIO(response.content)).pages) == 1
    assert LINK_CANARY.encode() not in response.content


def test_original_is_whole_for_a_reader_cleared_for_every_chunk(
        reader_service: RunningService, reader_deployment: Deployment) -> None:
    key = reader_deployment.keys["farid"]
    pdf = doc_id(reader_service, key, "printers facilities spring", "mixed.pdf")
    with reader_service.client(key) as client:
        response = client.get(f"/v1/documents/{pdf}/original")
    assert response.status_code == 200
    assert response.headers["x-affidavit-removed-pages"] == ""
    assert response.content == text_pdf(PAGES)


def test_original_of_a_partly_readable_non_pdf_is_refused_like_an_unknown_id(
        reader_service: RunningService, reader_deployment: Deployment) -> None:
    key = reader_deployment.keys["sam"]
    mixed = doc_id(reader_service, key, "printers facilities spring", "mixed.md")
    with reader_service.client(key) as client:
        response = client.get(f"/v1/documents/{mixed}/original")
        unknown = client.get(f"/v1/documents/{'0' * 32}/original")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    body, expected = response.json(), unknown.json()
    body["detail"] = body["detail"].replace(mixed, "ID")
    expected["detail"] = expected["detail"].replace("0" * 32, "ID")
    assert body == expected
    assert MIX_CANARY not in response.text


@pytest.mark.parametrize("path", ["", "/original"])
def test_other_tenant_and_unreadable_ids_read_like_unknown_ids(
        reader_service: RunningService, reader_deployment: Deployment, path: str) -> None:
    keys = reader_deployment.keys
    mixed = doc_id(reader_service, keys["sam"], "printers facilities spring", "mixed.md")
    finance = doc_id(reader_service, keys["farid"], "quarterly review", "q3-results.md")
    unknown = "0" * 32

    def answer(key: str, target: str) -> tuple[int, dict[str, object]]:
        with reader_service.client(key) as client:
            response = client.get(f"/v1/documents/{target}{path}")
        body = response.json()
        body["detail"] = str(body.get("detail", "")).replace(target, "ID")
        return response.status_code, body

    expected = answer(keys["sam"], unknown)
    assert expected[0] == 404
    assert answer(keys["olga"], mixed) == expected  # another tenant
    assert answer(keys["sam@other"], mixed) == expected  # same name, other tenant
    assert answer(keys["sam"], finance) == expected  # no chunk of it is readable
    assert answer(keys["nobody"], mixed) == expected  # no document access


def test_no_canary_reaches_the_reader_of_a_credential_not_granted_it(
        reader_service: RunningService, reader_deployment: Deployment) -> None:
    keys = reader_deployment.keys
    targets = [doc_id(reader_service, keys["grace"], "quarterly review", "minutes.md"),
               doc_id(reader_service, keys["farid"], "quarterly review", "q3-results.md"),
               doc_id(reader_service, keys["sam"], "printers facilities spring", "mixed.md"),
               doc_id(reader_service, keys["sam"], "printers facilities spring", "mixed.pdf")]
    forbidden = ["CNRY-BOARD-77D0", "lanternfish", "CNRY-FIN-9B1C", "moneywhistle",
                 MIX_CANARY, PDF_CANARY, SECRET]
    for who in ("sam", "nobody", "olga", "helen"):
        with reader_service.client(keys[who]) as client:
            for target in targets:
                for path in ("", "/original"):
                    body = client.get(f"/v1/documents/{target}{path}").content
                    text = body.decode("latin-1")
                    leaked = [w for w in forbidden if w.casefold() in text.casefold()]
                    assert not leaked, (who, target, path, leaked)


def test_reader_uses_the_reader_path(tmp_path: Path) -> None:
    """The service is a shell: the reader module answers the same without HTTP."""
    from affidavit.engine.query import Engine
    from affidavit.engine.reader import read_document

    deployment = build_deployment(tmp_path)
    store = SQLiteStore(deployment.db)
    try:
        engine = Engine(store, deployment.settings)
        hits = engine.search("user:farid", "quarterly review")
        target = next(h.doc_id for h in hits if h.source_id.endswith("q3-results.md"))
        view = read_document(engine, "user:farid", target)
        assert view.complete and "CNRY-FIN-9B1C" in view.sections[0].text
    finally:
        store.close()
