"""One document per reason code extraction can refuse with (``affidavit.extract.REASON_CODES``),
each carrying a canary string in its text, and the ingestion limits that make it refused.

:data:`BUILDERS` maps every code a document can earn to its builder;
:data:`RAISED_IN_GUARD` names the codes no document reaches through the hardened parsers,
which the error-path run raises inside the parse guard itself.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import pypdf

from tests.fixtures.hostile.build import (
    ZipMember,
    document_xml,
    docx_package,
    ordinary_docx,
    paragraph,
    pdf_file,
    pdf_stream,
    spaces_member,
    stacked_filters_pdf,
    text_pdf,
    zip_archive,
)


@dataclass(frozen=True)
class RefusedDocument:
    """A file name, its bytes, and the ``[ingest]`` limits under which it is refused."""

    filename: str
    content: bytes
    limits: dict[str, float | int] = field(default_factory=dict)


Builder = Callable[[str], RefusedDocument]

RAISED_IN_GUARD = frozenset({"PARSE_FAILED", "PARSE_MEMORY_LIMIT", "MALFORMED_HTML"})
"""The guard's codes for a parser that breaks or bloats, and the HTML parser's refusal of
markup its hardened reader now swallows: no document reaches them."""

_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")


def _encrypted_flag(content: bytes) -> bytes:
    """``content`` with its first central directory record marked encrypted."""
    position = content.index(b"PK\x01\x02")
    values = list(_CENTRAL.unpack_from(content, position))
    values[3] |= 0x0001
    patched = bytearray(content)
    _CENTRAL.pack_into(patched, position, *values)
    return bytes(patched)


def _docx(canary: str, *extra: ZipMember) -> bytes:
    members = [ZipMember.deflated("[Content_Types].xml", b"<Types/>"),
               ZipMember.deflated("word/document.xml",
                                  document_xml(paragraph(f"Clause {canary}.")).encode()),
               *extra]
    return zip_archive(members)


def _encrypted_pdf(canary: str) -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(text_pdf([[canary]]))))
    writer.encrypt(user_password="", owner_password="owner", algorithm="AES-256")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _entity_docx(canary: str) -> bytes:
    prolog = f'<!DOCTYPE w:document [<!ENTITY secret "{canary}">]>'
    return docx_package(document_xml(paragraph("&secret;"), prolog=prolog))


def _cycle_pdf(canary: str) -> bytes:
    return pdf_file([b"<< /Type /Catalog /Pages 2 0 R >>",
                     b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
                     b"<< /Type /Page /Parent 2 0 R /Title (" + canary.encode() + b") >>"])


def _image_pdf(canary: str) -> bytes:
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
               pdf_stream(b"0 0 1 rg 72 72 200 200 re f"),
               b"<< /Title (" + canary.encode() + b") >>"]
    return pdf_file(objects, info=5)


def _wide_csv(canary: str) -> bytes:
    header = ",".join(f"{canary}_" + "n" * 200 + str(i) for i in range(90))
    row = ",".join("x" * 90)
    rows = "\n".join([row] * 220)
    return (header + "\n" + rows + "\n").encode()


BUILDERS: dict[str, Builder] = {
    "BINARY_CONTENT": lambda c: RefusedDocument("binary.txt", f"{c} then\x00NUL".encode()),
    "COMPRESSION_RATIO_TOO_HIGH": lambda c: RefusedDocument(
        "bomb.docx", _docx(c, spaces_member("word/media/spaces.xml", 64))),
    "DECOMPRESSED_TOO_LARGE": lambda c: RefusedDocument(
        "large.docx", _docx(c, ZipMember.deflated("word/big.xml", c.encode() * 4000)),
        {"max_decompressed_bytes": 2048}),
    "DUPLICATE_ARCHIVE_ENTRY": lambda c: RefusedDocument("twice.docx", _docx(
        c, ZipMember.deflated("word/document.xml", c.encode()))),
    "EMPTY_DOCUMENT": lambda c: RefusedDocument(
        "hidden.html", f"<html><body><div hidden><p>{c}</p></div></body></html>".encode()),
    "ENCRYPTED_ARCHIVE": lambda c: RefusedDocument("locked.docx", _encrypted_flag(_docx(c))),
    "ENCRYPTED_PDF": lambda c: RefusedDocument("locked.pdf", _encrypted_pdf(c)),
    "EXPANSION_LIMIT": lambda c: RefusedDocument("wide.csv", _wide_csv(c)),
    "LINE_TOO_LONG": lambda c: RefusedDocument(
        "long.txt", (c + " " + "y" * 400 + "\n").encode(), {"max_line_chars": 200}),
    "MALFORMED_ARCHIVE": lambda c: RefusedDocument("plain.docx", f"{c} not a zip".encode()),
    "MALFORMED_CSV": lambda c: RefusedDocument("bad.csv", f'a,b\n"{c}"tail,z\n'.encode()),
    "MALFORMED_DOCX": lambda c: RefusedDocument(
        "broken.docx", docx_package(f"<w:document {c}")),
    "MALFORMED_FRONT_MATTER": lambda c: RefusedDocument(
        "front.md", f"---\ntitle: [{c}\n---\n# Body\n\nText.\n".encode()),
    "MALFORMED_JSON": lambda c: RefusedDocument("cut.json", f'{{"note": "{c}", '.encode()),
    "MALFORMED_PDF": lambda c: RefusedDocument("cycle.pdf", _cycle_pdf(c)),
    "MALFORMED_YAML": lambda c: RefusedDocument("bad.yaml", f"note: [{c}\nnext: 1\n".encode()),
    "NESTING_TOO_DEEP": lambda c: RefusedDocument(
        "deep.json", b"[" * 100_000 + f'"{c}"'.encode() + b"]" * 100_000),
    "NO_TEXT_LAYER": lambda c: RefusedDocument("scan.pdf", _image_pdf(c)),
    "OVERLAPPING_ARCHIVE_ENTRIES": lambda c: RefusedDocument("overlap.docx", docx_package(
        document_xml(paragraph(c)), aliases=[(f"word/copy{i}.xml", 2) for i in range(50)])),
    "PARSE_TIMEOUT": lambda c: RefusedDocument(
        "slow.docx", ordinary_docx(), {"parse_timeout_seconds": 0.000_001}),
    "PDF_LIMIT_EXCEEDED": lambda c: RefusedDocument("filters.pdf", stacked_filters_pdf(64)),
    "TOO_LARGE": lambda c: RefusedDocument(
        "big.md", f"# Big\n\n{c} " .encode() + b"z" * 4096, {"max_document_bytes": 1024}),
    "TOO_MANY_ARCHIVE_ENTRIES": lambda c: RefusedDocument(
        "entries.docx", _docx(c, *(ZipMember.deflated(f"word/p{i}.xml", c.encode())
                                   for i in range(4))), {"max_archive_entries": 3}),
    "TOO_MANY_PAGES": lambda c: RefusedDocument(
        "pages.pdf", text_pdf([[c], [c], [c]]), {"max_pages": 2}),
    "TOO_MANY_PARAGRAPHS": lambda c: RefusedDocument(
        "paras.md", "".join(f"{c} paragraph {i}.\n\n" for i in range(6)).encode(),
        {"max_paragraphs": 3}),
    "UNDECODABLE_TEXT": lambda c: RefusedDocument(
        "latin.txt", c.encode() + b" \xff\xfe\xc3\x28 " + c.encode()),
    "UNSUPPORTED_FORMAT": lambda c: RefusedDocument("notes.xyz", f"{c} notes".encode()),
    "XML_ENTITY_REFUSED": lambda c: RefusedDocument("entity.docx", _entity_docx(c)),
}
