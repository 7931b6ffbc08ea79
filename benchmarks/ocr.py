"""OCR speed: pages per second of scanned (image-only) PDF pages read into text.

    python benchmarks/ocr.py [--pages 8] [--dpi 200]

Generates ``--pages`` page images with a few lines of text drawn into each (Pillow), saves
them as one PDF without a text layer, and parses it with the PDF extractor under the parse
guard with ``[ingest.ocr] enabled = true``, as ingestion does. Prints pages per second and
the words recognised; fails (exit 1) when no text was recognised or a page's words are
missing. Needs the ocr extra and Debian's tesseract-ocr with tesseract-ocr-eng.
"""

from __future__ import annotations

import argparse
import io
import sys
import time

from affidavit.config.settings import IngestSettings, OcrSettings
from affidavit.extract import extract

LINES = ("Clause {n}: the supplier delivers the goods", "within thirty days of the order.")


def scanned_pdf(pages: int) -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=36)
    images = []
    for n in range(1, pages + 1):
        image = Image.new("RGB", (1275, 1650), "white")
        ImageDraw.Draw(image).text((100, 200), "\n".join(LINES).format(n=n), fill="black",
                                   font=font)
        images.append(image)
    buffer = io.BytesIO()
    images[0].save(buffer, format="PDF", resolution=150, save_all=True, append_images=images[1:])
    return buffer.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--dpi", type=int, default=200)
    args = parser.parse_args()
    pdf = scanned_pdf(args.pages)
    limits = IngestSettings(parse_timeout_seconds=600.0,
                            ocr=OcrSettings(enabled=True, dpi=args.dpi, max_pages=args.pages))
    started = time.perf_counter()
    document = extract(pdf, filename="scan.pdf", limits=limits)
    elapsed = time.perf_counter() - started
    words = len(document.text.split())
    pages_read = len({p.page for p in document.paragraphs})
    print(f"ocr: {args.pages} pages at {args.dpi} dpi in {elapsed:.2f} s: "
          f"{args.pages / elapsed:.2f} pages/s, {words} words, {pages_read} pages with text")
    if words == 0 or pages_read != args.pages or "supplier" not in document.text:
        print("FAIL: OCR recognised no text on some page", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
