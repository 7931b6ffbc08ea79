"""OCR of scanned PDFs: an image-only PDF is searchable with OCR on, quarantined with a
reason that says how to switch it on with OCR off, and a page OCR cannot read is left out.

Marked ``ocr``: needs the ocr extra (pypdfium2, tesserocr) and Debian's tesseract-ocr with
tesseract-ocr-eng; skipped without them, failed under ``CI=true``, where they must be there.
"""

from __future__ import annotations

import io
import json
import os
import random
from pathlib import Path

import pytest

from affidavit.config.settings import (
    AclSettings,
    IngestSettings,
    OcrSettings,
    SensitivitySettings,
    Settings,
)
from affidavit.engine.query import Engine
from affidavit.extract.ocr import ENABLE_HINT, tessdata_path
from affidavit.ingest.outcomes import RunSummary
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, SourceDocument
from affidavit.sources import StaticSource
from affidavit.store import SQLiteStore

pytestmark = pytest.mark.ocr

READER = "user:ada"
OCR_ON = OcrSettings(enabled=True)
SCANNED_LINES = ("The Oakridge settlement was", "approved by the board in March.")


def _require_ocr() -> None:
    missing = []
    for module in ("PIL", "pypdfium2", "tesserocr"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if tessdata_path() is None:
        missing.append("Debian's tesseract-ocr language data")
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the OCR tests cannot run under CI: missing {missing}")
        pytest.skip(f"OCR is unavailable here: missing {missing}")


def scanned_pdf(*pages: tuple[str, ...] | str) -> bytes:
    """A PDF whose pages are pictures: each text drawn into an image, or noise for "noise"."""
    _require_ocr()
    from PIL import Image, ImageDraw, ImageFont

    images = []
    for page in pages:
        if page == "noise":  # scattered symbols: words OCR finds, none it trusts
            rng = random.Random(7)
            image = Image.new("L", (1275, 1650), 255)
            draw = ImageDraw.Draw(image)
            for row in range(20):
                for col in range(40):
                    draw.text((60 + col * 28 + rng.randrange(-6, 6),
                               80 + row * 70 + rng.randrange(-15, 15)),
                              rng.choice("#%&@|/\\~^{}[]"), fill=rng.randrange(0, 160),
                              font=ImageFont.load_default(size=rng.randrange(18, 44)))
        else:
            image = Image.new("L", (1275, 1650), 255)
            ImageDraw.Draw(image).text((100, 200), "\n".join(page), fill=0,
                                       font=ImageFont.load_default(size=40))
        images.append(image.convert("RGB"))
    buffer = io.BytesIO()
    images[0].save(buffer, format="PDF", resolution=150, save_all=True,
                   append_images=images[1:])
    return buffer.getvalue()


def ingest(tmp_path: Path, pdf: bytes, ocr: OcrSettings) -> tuple[RunSummary, SQLiteStore,
                                                                  Settings]:
    settings = Settings(acl=AclSettings(default=("*",)),
                        grants={READER: ("INTERNAL", "RESTRICTED")},
                        ingest=IngestSettings(ocr=ocr),
                        sensitivity=SensitivitySettings(keywords={"RESTRICTED": ("oakridge",)}))
    store = SQLiteStore(tmp_path / "store.db")
    document = SourceDocument("memory", "scan", "r1", pdf, "scan.pdf",
                              DocumentMetadata(acl=("*",)))
    summary = Ingestor(store, settings).run([StaticSource([document])])
    return summary, store, settings


def test_the_generated_scan_has_no_text_layer():
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(scanned_pdf(SCANNED_LINES)))
    assert [page.extract_text().strip() for page in reader.pages] == [""]


def test_a_scan_is_searchable_with_ocr_on_and_its_text_classified(tmp_path: Path):
    summary, store, settings = ingest(tmp_path, scanned_pdf(SCANNED_LINES), OCR_ON)
    try:
        assert summary.count("ingested") == 1, summary.outcomes
        hits = Engine(store, settings).search(READER, "settlement approved board")
        (head,) = store.heads("default")
        metadata = json.loads(store.version_metadata("default", head.version_id) or "{}")
    finally:
        store.close()
    assert hits and "settlement" in hits[0].text
    assert " | p. 1 | " in hits[0].locator
    assert hits[0].label == "RESTRICTED"  # the keyword came from OCR'd text
    ((page, confidence),) = metadata["ocr_confidence"]
    assert page == 1 and confidence >= OCR_ON.min_confidence


def test_with_ocr_off_a_scan_is_quarantined_with_how_to_enable_it(tmp_path: Path):
    summary, store, _ = ingest(tmp_path, scanned_pdf(SCANNED_LINES), OcrSettings())
    store.close()
    (outcome,) = summary.outcomes
    assert outcome.status == "quarantined"
    assert outcome.reason_code == "NO_TEXT_LAYER"
    assert ENABLE_HINT in (outcome.message or "")


def test_a_page_below_the_confidence_threshold_is_quarantined_with_its_reason(tmp_path: Path):
    summary, store, _ = ingest(tmp_path, scanned_pdf("noise"), OCR_ON)
    store.close()
    (outcome,) = summary.outcomes
    assert outcome.status == "quarantined"
    assert outcome.reason_code == "OCR_LOW_CONFIDENCE"
    assert "page 1 (" in (outcome.message or "")


def test_a_low_confidence_page_is_left_out_and_recorded(tmp_path: Path):
    summary, store, _ = ingest(tmp_path, scanned_pdf(SCANNED_LINES, "noise"), OCR_ON)
    try:
        assert summary.count("ingested") == 1, summary.outcomes
        (head,) = store.heads("default")
        metadata = json.loads(store.version_metadata("default", head.version_id) or "{}")
        chunks = store.version_chunks("default", head.version_id)
    finally:
        store.close()
    pages = dict(metadata["ocr_confidence"])
    assert pages[2] < OCR_ON.min_confidence <= pages[1]
    assert all(" | p. 2 | " not in chunk.locator for chunk in chunks)
    assert {"kind": "pdf_ocr_low_confidence", "label": None} in metadata["dropped"]


def test_ocr_settings_are_read_from_ingest_ocr_and_validated(tmp_path: Path):
    from affidavit.config.loader import load
    from affidavit.errors import ConfigurationError

    path = tmp_path / "affidavit.toml"
    path.write_text('[ingest.ocr]\nenabled = true\nlanguages = ["eng", "chi_sim"]\ndpi = 300\n')
    ocr = load(path, environ={}).ingest.ocr
    assert (ocr.enabled, ocr.languages, ocr.dpi) == (True, ("eng", "chi_sim"), 300)
    for bad in ('languages = ["../../tmp/x"]', "dpi = 5", "min_confidence = 101",
                "max_pages = 0"):
        path.write_text(f"[ingest.ocr]\n{bad}\n")
        with pytest.raises(ConfigurationError, match=r"ingest\.ocr"):
            load(path, environ={})
