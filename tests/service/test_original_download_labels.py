"""The original file leaves whole only when the caller holds every label the whole file may
carry: its chunks, its derived text (title, headings, file name) and what the extractor
dropped (front matter, HTML comments, DOCX comments and tracked deletions, PDF document
information, text drawn by shared form XObjects). Otherwise a PDF leaves as a copy without
the pages and the document details the caller may not read, or nothing at all, answered
exactly like an unknown id."""

from __future__ import annotations

import io
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pypdf
import pytest

from affidavit.config.settings import IngestSettings
from affidavit.engine.original_pdf import CopyRefused, page_copy
from affidavit.extract.pdf import pypdf_caps
from affidavit.ingest.run import Ingestor
from affidavit.sources import source_for
from affidavit.store import SQLiteStore
from tests.fixtures.hostile.build import (
    W,
    document_xml,
    docx_package,
    paragraph,
    pdf_file,
    pdf_stream,
    text_operators,
    text_pdf,
)
from tests.service.conftest import Deployment, RunningService, build_deployment

SECRET = "Lighthouse"  # a RESTRICTED keyword
EXTRA = f"""
[sensitivity]
restricted_keywords = ["{SECRET}"]
"""
ACL = 'acl: ["group:staff#member"]'
BODY = "The office printers on the third floor are replaced in spring by the facilities team."
HIDDEN_LINE = f"{SECRET} merger terms are final"

MARKDOWN = (f"---\ntitle: {SECRET} takeover notes\nclassification: INTERNAL\n{ACL}\n---\n"
            f"# printers notes\n\n{BODY}\n")
HTML = (f"<html><head><title>printers page</title></head><body><h1>printers page</h1>"
        f"<!-- {SECRET} bid is 4.2bn --><p>{BODY}</p></body></html>")
COMMENTS = (f'<w:comments xmlns:w="{W}"><w:comment w:id="0" w:author="a">'
            f"<w:p><w:r><w:t>{SECRET} bid is 4.2bn</w:t></w:r></w:p></w:comment></w:comments>")
DELETION = (f'<w:p><w:del w:id="1" w:author="a"><w:r><w:delText>{SECRET} bid is 4.2bn'
            "</w:delText></w:r></w:del></w:p>")
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
PDF_PAGES = [["Printers handbook", "", BODY], ["Printers closing notes.", "", BODY]]


def shared_xobject_pdf(*, drawn_on_page_one: bool) -> bytes:
    """Two pages sharing resources that list one form XObject showing ``HIDDEN_LINE``;
    page 2 shows the line itself. Page 1 draws the XObject, or only lists it."""
    resources = b"<< /Font << /F1 3 0 R >> /XObject << /X1 8 0 R >> >>"
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources " + resources
            + b" /Contents %d 0 R >>")
    first = text_operators(["Printers handbook", "", BODY])
    if drawn_on_page_one:
        first += b"\nq 1 0 0 1 0 -300 cm /X1 Do Q"
    form = pdf_stream(text_operators([HIDDEN_LINE]),
                      b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
                      b"/Resources << /Font << /F1 3 0 R >> >>")
    return pdf_file([b"<< /Type /Catalog /Pages 2 0 R >>",
                     b"<< /Type /Pages /Kids [4 0 R 6 0 R] /Count 2 >>",
                     b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
                     page % 5, pdf_stream(first),
                     page % 7, pdf_stream(text_operators([HIDDEN_LINE])), form])


FILES: dict[str, bytes] = {
    "notes.md": MARKDOWN.encode(),
    "page.html": HTML.encode(),
    "commented.docx": docx_package(document_xml(paragraph(f"printers memo. {BODY}")),
                                   parts={"word/comments.xml": COMMENTS}),
    "revised.docx": docx_package(document_xml(paragraph(f"printers memo. {BODY}")
                                              + DELETION)),
    "titled.pdf": text_pdf(PDF_PAGES, title=f"{SECRET} takeover"),
    "drawn.pdf": shared_xobject_pdf(drawn_on_page_one=True),
    "listed.pdf": shared_xobject_pdf(drawn_on_page_one=False),
}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    root = tmp_path_factory.mktemp("originals")
    deployment = build_deployment(root, EXTRA)
    folder = root / "originals"
    folder.mkdir()
    for name, content in FILES.items():
        (folder / name).write_bytes(content)
        if not name.endswith(".md"):
            (folder / f"{name}.meta.yaml").write_text(f"classification: INTERNAL\n{ACL}\n",
                                                      encoding="utf-8")
    store = SQLiteStore(deployment.db)
    try:
        summary = Ingestor(store, deployment.settings).run(
            [source_for(str(folder), deployment.settings, source_system="originals")])
        assert summary.count("ingested") == len(FILES), summary.to_dict()
    finally:
        store.close()
    return deployment


@pytest.fixture(scope="module")
def service(deployment: Deployment) -> Iterator[RunningService]:
    with deployment.serve() as running:
        yield running


def doc_ids(service: RunningService, key: str) -> dict[str, str]:
    with service.client(key) as client:
        hits = client.post("/v1/search", json={"query": "printers facilities spring",
                                               "limit": 50}).json()["hits"]
    ids = {name: {h["doc_id"] for h in hits if h["source_id"].endswith(name)}
           for name in FILES}
    assert all(len(found) == 1 for found in ids.values()), hits
    return {name: found.pop() for name, found in ids.items()}


def not_found(client: httpx.Client, target: str) -> tuple[int, dict[str, object]]:
    """The answer to a download of ``target``, its id masked in the detail."""
    response = client.get(f"/v1/documents/{target}/original")
    body = response.json()
    body["detail"] = str(body.get("detail", "")).replace(target, "ID")
    return response.status_code, body


def test_original_leaves_whole_only_when_every_label_of_the_file_is_granted(
        service: RunningService, deployment: Deployment) -> None:
    key = deployment.keys["sam"]  # INTERNAL only: every chunk of these files is readable
    ids = doc_ids(service, key)
    with service.client(key) as client:
        unknown = not_found(client, "0" * 32)
        assert unknown[0] == 404
        # The file carries RESTRICTED text no chunk does: a front-matter title, an HTML
        # comment, a DOCX comment, a tracked deletion. Nothing leaves, as for an unknown id.
        for name in ("notes.md", "page.html", "commented.docx", "revised.docx"):
            assert not_found(client, ids[name]) == unknown, name
        # PDF document information: the copy leaves without it, every page kept.
        response = client.get(f"/v1/documents/{ids['titled.pdf']}/original")
        assert response.status_code == 200, response.text
        assert response.headers["x-affidavit-removed-pages"] == ""
        assert SECRET.encode() not in response.content
        copy = pypdf.PdfReader(io.BytesIO(response.content))
        assert copy.metadata is None or copy.metadata.title is None
        assert [("Printers" in page.extract_text()) for page in copy.pages] == [True, True]
        # A hidden page's text drawn on a kept page through a shared form XObject, or
        # merely listed in the resources it shares: the copy is refused.
        for name in ("drawn.pdf", "listed.pdf"):
            assert not_found(client, ids[name]) == unknown, name
        for name in ("notes.md", "page.html", "commented.docx", "revised.docx",
                     "titled.pdf", "drawn.pdf", "listed.pdf"):
            body = client.get(f"/v1/documents/{ids[name]}/original").content
            assert SECRET.casefold().encode() not in body.lower(), name


def test_console_download_follows_the_same_labels(
        service: RunningService, deployment: Deployment) -> None:
    key = deployment.keys["sam"]
    ids = doc_ids(service, key)
    with httpx.Client(base_url=service.base_url, follow_redirects=True, timeout=60) as client:
        login = CSRF.search(client.get("/ui/login").text)
        assert login is not None
        signed = client.post("/ui/login", data={"csrf": login.group(1), "api_key": key})
        assert signed.url.path == "/ui/ask", signed.text
        page = client.get(f"/ui/documents/{ids['notes.md']}").text
        assert 'id="no-original"' in page and 'id="original-link"' not in page
        refused = client.get(f"/ui/documents/{ids['notes.md']}/original")
        assert refused.status_code == 404
        assert SECRET.encode() not in refused.content
        titled = client.get(f"/ui/documents/{ids['titled.pdf']}/original")
        assert titled.status_code == 200
        assert SECRET.encode() not in titled.content


def test_a_reader_cleared_for_every_label_of_the_file_gets_it_byte_for_byte(
        service: RunningService, deployment: Deployment) -> None:
    key = deployment.keys["grace"]  # INTERNAL (staff), RESTRICTED and FINANCIAL
    ids = doc_ids(service, key)
    with service.client(key) as client:
        for name, content in FILES.items():
            response = client.get(f"/v1/documents/{ids[name]}/original")
            assert response.status_code == 200, (name, response.text)
            assert response.headers["x-affidavit-removed-pages"] == ""
            assert response.content == content, name


def test_a_page_copy_is_refused_when_a_kept_page_carries_hidden_text() -> None:
    """The copy check on its own: page 2 is removed, page 1 keeps resources listing the
    XObject that shows page 2's text. The labels aside, the kept page carries it."""
    caps = pypdf_caps(IngestSettings(), 100_000)
    readable = ["Printers handbook", BODY]
    for drawn in (True, False):
        with pytest.raises(CopyRefused):
            page_copy(shared_xobject_pdf(drawn_on_page_one=drawn), {2},
                      hidden=[HIDDEN_LINE], readable=readable, caps=caps)
    clean = text_pdf([PDF_PAGES[0], [HIDDEN_LINE]])
    copy = page_copy(clean, {2}, hidden=[HIDDEN_LINE], readable=readable, caps=caps)
    pages = pypdf.PdfReader(io.BytesIO(copy)).pages
    assert len(pages) == 1 and "Printers handbook" in pages[0].extract_text()
    # Text the caller may read anyway is no reason to refuse.
    assert page_copy(clean, {2}, hidden=["Printers handbook"], readable=readable, caps=caps)


def test_a_version_stored_without_a_record_of_what_was_dropped_counts_as_most_severe(
        tmp_path: Path) -> None:
    """What the file of such a version holds beyond its chunks is not known: it leaves
    whole only for a reader of the most severe label, until the version is derived again."""
    deployment = build_deployment(tmp_path)
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "plain.md").write_text(f"---\nclassification: INTERNAL\n{ACL}\n---\n"
                                     f"# printers notes\n\n{BODY}\n", encoding="utf-8")
    store = SQLiteStore(deployment.db)
    try:
        Ingestor(store, deployment.settings).run(
            [source_for(str(folder), deployment.settings, source_system="plain")])
    finally:
        store.close()
    with deployment.serve() as service:
        sam, grace = deployment.keys["sam"], deployment.keys["grace"]
        with service.client(sam) as client:
            hits = client.post("/v1/search", json={"query": "printers facilities"}).json()
            target = next(h["doc_id"] for h in hits["hits"]
                          if h["source_id"].endswith("plain.md"))
            assert client.get(f"/v1/documents/{target}/original").status_code == 200
            version = client.get(f"/v1/documents/{target}").json()["version_id"]
        with sqlite3.connect(deployment.db) as db:
            (stored,) = db.execute("SELECT metadata_json FROM versions WHERE version_id = ?",
                                   (version,)).fetchone()
            metadata = json.loads(stored)
            assert metadata.pop("dropped") == [{"kind": "front_matter_field", "label": "INTERNAL"}]
            db.execute("UPDATE versions SET metadata_json = ? WHERE version_id = ?",
                       (json.dumps(metadata), version))
        with service.client(sam) as client:
            assert not_found(client, target) == not_found(client, "0" * 32)
        with service.client(grace) as client:
            response = client.get(f"/v1/documents/{target}/original")
            assert response.status_code == 200
            assert response.content == (folder / "plain.md").read_bytes()
