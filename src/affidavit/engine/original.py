"""The original file (spec 004, layer 3): the stored bytes, as far as one caller may have them.

A file carries more than its chunks: its title, headings and name (derived text), and
what the extractor dropped (front matter, comments, tracked deletions, hidden runs, PDF
document information, outlines, annotations, form fields, attachments). The original
leaves whole only when the caller may read the document and is granted every label the
whole file may carry (:func:`file_labels`): the labels of its chunks, of its derived
text, and of its dropped content, where content nobody classified, and a version stored
before dropped content was recorded, counts as the most severe configured label.

Otherwise a PDF leaves as a copy without the pages that hold any chunk the caller may
not read and without everything around the pages (:mod:`affidavit.engine.original_pdf`), when
that copy provably carries no text the caller may not read; anything else leaves nothing.
Nothing reads exactly like a document that does not exist (:class:`OriginalWithheld` is a
:class:`~affidavit.errors.NotFound` with the same message), so a refusal tells no more
than an unknown id. The API route and the console download both call
:func:`original_file`, and the console decides which link to show with
:func:`original_offer`: one decision, one place.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from affidavit.engine.original_pdf import COPY_REMOVES, CopyRefused, page_copy, page_count
from affidavit.engine.query import Engine
from affidavit.engine.reader import DocumentOutline, document_outline
from affidavit.errors import NotFound
from affidavit.extract.pdf import pypdf_caps
from affidavit.policy.dropped import dropped_labels
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import AuthzContext, Chunk
from affidavit.store.protocol import ChunkRecord

PDF_MAGIC = b"%PDF-"
PDF_MEDIA_TYPE = "application/pdf"

Offer = Literal["whole", "copy", "none"]


class OriginalWithheld(NotFound):
    """The caller may read the document but not its file: answered as not found."""


def withheld(doc_id: str) -> OriginalWithheld:
    """The refusal, word for word the answer to an id that names no document."""
    return OriginalWithheld(f"no document {doc_id} that you may read")


@dataclass(frozen=True)
class OriginalFile:
    """The bytes to serve, and the PDF pages (1-based) removed from them."""

    doc_id: str
    content: bytes
    media_type: str
    removed_pages: tuple[int, ...] = ()

    @property
    def filename(self) -> str:
        # The stored path is derived text with its own label: the id names the download.
        return self.doc_id + (".pdf" if self.media_type == PDF_MEDIA_TYPE else "")


@dataclass(frozen=True)
class FileLabels:
    """Every label the whole file may carry, and the label of each dropped kind."""

    labels: frozenset[str]
    dropped: dict[str, str]


def file_labels(engine: Engine, outline: DocumentOutline) -> FileLabels:
    """The labels of the file behind ``outline``: its chunks, their derived text (title,
    path, headings; a label not recorded counts as the most severe) and its dropped
    content."""
    policy = SensitivityPolicy.from_settings(engine.settings.sensitivity)
    most_severe = policy.most_severe(policy.labels)
    labels = {label for record in outline.outline
              for label in _chunk_labels(record.chunk, most_severe)}
    metadata = json.loads(engine.store.version_metadata(engine.tenant, outline.version_id)
                          or "{}")
    dropped = dropped_labels(metadata if isinstance(metadata, dict) else {},
                             most_severe=most_severe)
    return FileLabels(frozenset(labels | set(dropped.values())), dropped)


def _chunk_labels(chunk: Chunk, most_severe: str) -> list[str]:
    """The chunk's label and its derived text's. Read with every label admitted, a derived
    string is withheld only when its label is unknown: it then counts as the most severe."""
    derived = chunk.derived
    if derived is None:
        return [chunk.label, most_severe]
    labels = [chunk.label, *(label for label in derived.heading_labels if label is not None),
              *(label for label in (derived.title_label, derived.alias_label)
                if label is not None)]
    if derived.withheld:
        labels.append(most_severe)
    return labels


def original_offer(engine: Engine, principal: str | None, doc_id: str) -> Offer:
    """What :func:`original_file` would try for ``principal``: the whole file, a PDF copy
    (which it may still refuse), or nothing. NotFound as for the reader."""
    authz = engine.authz_context(principal)
    outline = document_outline(engine, authz, doc_id)
    if outline.unseen:
        return "none"
    if file_labels(engine, outline).labels <= authz.granted_labels:
        return "whole"
    head = engine.store.head(engine.tenant, doc_id)
    blob = engine.store.blob(engine.tenant, head.raw_digest) if head is not None else None
    if blob is not None and blob.content.startswith(PDF_MAGIC):
        return "copy"
    return "none"


def original_file(engine: Engine, principal: str | None, doc_id: str) -> OriginalFile:
    """The original bytes of ``doc_id`` as far as ``principal`` may have them; NotFound
    (:class:`OriginalWithheld`) when it may have none of them."""
    authz = engine.authz_context(principal)
    outline = document_outline(engine, authz, doc_id)
    head = engine.store.head(engine.tenant, doc_id)
    blob = engine.store.blob(engine.tenant, head.raw_digest) if head is not None else None
    if head is None or blob is None or head.version_id != outline.version_id:
        # The head moved while reading: what was checked is not what would be served.
        raise NotFound(f"no document {doc_id} that you may read")
    if outline.unseen:  # head chunks it cannot place: what they hold is not known
        raise withheld(doc_id)
    labels = file_labels(engine, outline)
    if labels.labels <= authz.granted_labels:
        media_type = (PDF_MEDIA_TYPE if blob.content.startswith(PDF_MAGIC)
                      else "application/octet-stream")
        return OriginalFile(doc_id, blob.content, media_type)
    if not blob.content.startswith(PDF_MAGIC):
        raise withheld(doc_id)
    left_in = [kind for kind, label in labels.dropped.items()
               if label not in authz.granted_labels and kind not in COPY_REMOVES]
    if left_in:  # the copy would still carry it (text drawn by form XObjects, say)
        raise withheld(doc_id)
    return _pdf_copy(engine, authz, outline, doc_id, blob.content)


def _pdf_copy(engine: Engine, authz: AuthzContext, outline: DocumentOutline, doc_id: str,
              content: bytes) -> OriginalFile:
    hidden = [r for r in outline.outline if r.chunk.chunk_id not in outline.readable]
    try:
        caps = pypdf_caps(engine.settings.ingest, len(content))
        pages = page_count(content, caps)
        removed = _pages_holding(hidden, outline.outline, pages)
        if len(removed) >= pages:
            raise withheld(doc_id)
        copy = page_copy(content, removed,
                         hidden=_hidden_text(engine, authz, outline, hidden),
                         readable=[r.chunk.text for r in outline.readable.values()],
                         caps=caps)
    except CopyRefused:
        raise withheld(doc_id) from None
    return OriginalFile(doc_id, copy, PDF_MEDIA_TYPE, tuple(sorted(removed)))


def _hidden_text(engine: Engine, authz: AuthzContext, outline: DocumentOutline,
                 hidden: Sequence[ChunkRecord]) -> list[str]:
    """What the caller may not read: the bodies of the hidden chunks (read here only to
    be compared with the copy, never returned) and the derived strings not granted."""
    every_label = replace(authz, granted_labels=frozenset(engine.settings.sensitivity.labels))
    bodies = [r.chunk.text for r in engine.store.get_chunks(
        every_label, [r.chunk.chunk_id for r in hidden])]
    return bodies + _withheld_derived(outline, authz.granted_labels)


def _withheld_derived(outline: DocumentOutline, granted: frozenset[str]) -> list[str]:
    strings: list[str] = []
    for record in outline.outline:
        derived = record.chunk.derived
        if derived is None:
            continue
        for text, label in ((derived.title, derived.title_label),
                            (derived.alias, derived.alias_label),
                            *zip(record.chunk.heading_path, derived.heading_labels,
                                 strict=False)):
            if label not in granted:
                strings.append(text)
    return strings


def _pages_holding(hidden: Sequence[ChunkRecord], ordered: Sequence[ChunkRecord],
                   pages: int) -> set[int]:
    """Every page a hidden chunk may touch. A chunk records the page it starts on; it can
    run on to the page where the next chunk starts (the last one to the end), so all of
    those pages go. A hidden chunk without a page withholds the whole file."""
    starts = [r.chunk.derived.page if r.chunk.derived is not None else None for r in ordered]
    position = {r.chunk.chunk_id: i for i, r in enumerate(ordered)}
    removed: set[int] = set()
    for record in hidden:
        i = position[record.chunk.chunk_id]
        first = starts[i]
        if first is None:
            raise CopyRefused("a hidden chunk has no page")
        following = next((p for p in starts[i + 1:] if p is not None), None)
        last = pages if following is None else following
        removed.update(range(first, min(last, pages) + 1))
    return removed
