"""OCR of PDF pages that have no text layer: scans become text like any other page.

Optional: the ``ocr`` extra (``pypdfium2`` renders a page, ``tesserocr`` runs Tesseract
on it) and Debian's ``tesseract-ocr`` with its language packs (``tesseract-ocr-eng``),
switched on by ``[ingest.ocr] enabled = true``. Both libraries run inside the PDF parse
itself, so in the guard's forked child (:mod:`affidavit.extract.guard`), under the same
time limit and address-space budget: Tesseract runs in process, never as a program of
its own, and page images never touch the disk.

Only pages whose text layer is empty are read. Each page keeps its number, so its
paragraphs are located ``p. N`` and gated by page like any other. A page whose mean word
confidence is below ``min_confidence`` is left out: its number and confidence are
recorded (``DocumentMetadata.ocr_confidence``) and the page counts as dropped content
nobody could read (:data:`~affidavit.extract.dropped.PDF_OCR_LOW_CONFIDENCE`), so the
original file carries the most severe label. A page on which OCR finds no word is blank.

Refusals: ``OCR_LOW_CONFIDENCE`` (every page read was below the threshold: the pages and
confidences are named), ``OCR_TOO_MANY_PAGES`` (more pages to read than ``max_pages``);
without OCR, ``NO_TEXT_LAYER`` says how to switch it on.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from affidavit.config.settings import OcrSettings
from affidavit.errors import InputRejected
from affidavit.extract.dropped import PDF_OCR_LOW_CONFIDENCE
from affidavit.records import DroppedContent

NO_TEXT_LAYER = "NO_TEXT_LAYER"
OCR_LOW_CONFIDENCE = "OCR_LOW_CONFIDENCE"
OCR_TOO_MANY_PAGES = "OCR_TOO_MANY_PAGES"

REASON_CODES = (OCR_LOW_CONFIDENCE, OCR_TOO_MANY_PAGES)
"""Every reason code OCR adds to the PDF parser's."""

ENABLE_HINT = ("install affidavit[ocr] and Debian's tesseract-ocr (with a language pack such "
               "as tesseract-ocr-eng), then set [ingest.ocr] enabled = true")

MAX_PAGE_PIXELS = 25_000_000
"""Pixels of one rendered page at most (letter size at 200 dpi is 3.7 million): a page
declared kilometres wide is rendered at a lower resolution, not into gigabytes."""

_POINTS_PER_INCH = 72.0
_TESSDATA_GLOB = "/usr/share/tesseract-ocr/*/tessdata"


@dataclass(frozen=True)
class ScannedPages:
    """What OCR made of the pages without a text layer."""

    texts: dict[int, str] = field(default_factory=dict)
    """Recognised text of each page kept, by page number."""
    confidence: tuple[tuple[int, float], ...] = ()
    """(page, mean word confidence) of every page on which OCR found words."""
    low: tuple[int, ...] = ()
    """Pages left out: below the confidence threshold."""
    unavailable: str | None = None
    """Why no page was read (OCR off, the extra or the language data missing)."""
    min_confidence: float = 0.0

    @property
    def dropped(self) -> tuple[DroppedContent, ...]:
        """Pages left out, as content nobody could read."""
        return (DroppedContent(PDF_OCR_LOW_CONFIDENCE, None),) if self.low else ()

    def refusal(self, page_count: int) -> InputRejected:
        """Why a PDF none of whose pages gave text is quarantined."""
        if self.low:
            shown = ", ".join(f"page {page} ({conf:g})" for page, conf in self.confidence
                              if page in self.low)
            return InputRejected(OCR_LOW_CONFIDENCE, f"OCR confidence below "
                                 f"{self.min_confidence:g} on every page read: {shown}")
        if self.unavailable is not None:
            return InputRejected(NO_TEXT_LAYER, f"none of the {page_count} pages has a text "
                                 f"layer (a scan?); {self.unavailable}")
        return InputRejected(NO_TEXT_LAYER, f"none of the {page_count} pages has a text "
                             "layer, and OCR found no text on them")


def read_scanned(content: bytes, numbers: Sequence[int], settings: OcrSettings) -> ScannedPages:
    """OCR of the pages ``numbers`` (1-based) of the PDF in ``content``, when switched on."""
    if not numbers:
        return ScannedPages()
    if not settings.enabled:
        return ScannedPages(unavailable=f"OCR is off: to read scans, {ENABLE_HINT}")
    if len(numbers) > settings.max_pages:
        raise InputRejected(OCR_TOO_MANY_PAGES, f"{len(numbers)} pages need OCR; "
                            f"[ingest.ocr] max_pages is {settings.max_pages}")
    engine = _engine(settings)
    if isinstance(engine, str):
        return ScannedPages(unavailable=engine)
    pdfium, api = engine
    try:
        return _read(pdfium.PdfDocument(content), api, numbers, settings)
    finally:
        api.End()


def _engine(settings: OcrSettings) -> tuple[Any, Any] | str:
    """The renderer module and a Tesseract handle, or why there is none."""
    try:
        import pypdfium2
        import tesserocr
    except ImportError:
        return f"OCR is on but the ocr extra is missing: {ENABLE_HINT}"
    tessdata = tessdata_path()
    if tessdata is None:
        return f"OCR is on but no Tesseract language data was found: {ENABLE_HINT}"
    _, installed = tesserocr.get_languages(tessdata)
    missing = [code for code in settings.languages if code not in installed]
    if missing:
        packs = ", ".join(f"tesseract-ocr-{code.replace('_', '-').lower()}" for code in missing)
        return f"OCR is on but Tesseract has no language data for {missing} (install {packs})"
    api = tesserocr.PyTessBaseAPI(path=tessdata, lang="+".join(settings.languages))
    return pypdfium2, api


def tessdata_path() -> str | None:
    """Tesseract's language data: ``TESSDATA_PREFIX``, else Debian's newest tessdata."""
    declared = os.environ.get("TESSDATA_PREFIX")
    if declared and Path(declared).is_dir():
        return declared.rstrip("/") + "/"
    found = sorted(Path("/").glob(_TESSDATA_GLOB.lstrip("/")))
    return f"{found[-1]}/" if found else None


def _read(document: Any, api: Any, numbers: Sequence[int],
          settings: OcrSettings) -> ScannedPages:
    texts: dict[int, str] = {}
    confidence: list[tuple[int, float]] = []
    low: list[int] = []
    for number in numbers:
        text, mean = _recognise(document[number - 1], api, settings.dpi)
        if not text.strip():
            continue  # a blank page: nothing to read, nothing left out
        confidence.append((number, mean))
        if mean < settings.min_confidence:
            low.append(number)
        else:
            texts[number] = text
    return ScannedPages(texts, tuple(confidence), tuple(low),
                        min_confidence=settings.min_confidence)


def _recognise(page: Any, api: Any, dpi: int) -> tuple[str, float]:
    """The page's text and its mean word confidence (0-100)."""
    width, height = page.get_size()
    scale = dpi / _POINTS_PER_INCH
    pixels = max(width * scale, 1.0) * max(height * scale, 1.0)
    if pixels > MAX_PAGE_PIXELS:
        scale *= (MAX_PAGE_PIXELS / pixels) ** 0.5
    image = page.render(scale=scale, grayscale=True).to_pil()
    api.SetImage(image)
    text: str = api.GetUTF8Text()
    return text, float(api.MeanTextConf())
