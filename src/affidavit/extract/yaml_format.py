"""YAML documents: the untrusted-YAML rules of sidecars, rendered like JSON."""

from __future__ import annotations

from affidavit.config.settings import IngestSettings
from affidavit.extract.decode import check_line_lengths
from affidavit.extract.dropped import YAML_COMMENT, DroppedCollector
from affidavit.extract.layout import RenderedText, rendered_budget
from affidavit.extract.structured import render_records, top_level_title
from affidavit.records import DroppedContent, ExtractedDocument
from affidavit.sources.safe_yaml import load_yaml_documents


class YamlParser:
    """Parser for ``.yaml`` and ``.yml`` files; a stream may hold several documents."""

    formats: tuple[str, ...] = (".yaml", ".yml")

    def parse(self, text: str, *, limits: IngestSettings) -> ExtractedDocument:
        """Each top-level field (or list item) of each document is one ``record`` paragraph.

        Refusals: ``MALFORMED_YAML`` (syntax, anchors, aliases, unknown tags, duplicate
        keys), ``NESTING_TOO_DEEP`` and ``EXPANSION_LIMIT``.
        """
        check_line_lengths(text, limits.max_line_chars)
        documents = load_yaml_documents(text, max_depth=limits.max_nesting_depth)
        rendered = RenderedText(max_paragraphs=limits.max_paragraphs,
                                max_chars=rendered_budget(len(text), limits))
        render_records(documents, rendered)
        return ExtractedDocument(
            text=rendered.text,
            paragraphs=rendered.paragraphs,
            format="yaml",
            title=top_level_title(documents),
            dropped=_comments(text),
        )


def _comments(text: str) -> tuple[DroppedContent, ...]:
    """Comments are not rendered. Every line's text from its first ``#`` on counts as one
    (a ``#`` inside a quoted value too: that text is rendered anyway, labelling it again
    costs nothing)."""
    dropped = DroppedCollector()
    for line in text.split("\n"):
        mark = line.find("#")
        if mark >= 0:
            dropped.add(YAML_COMMENT, line[mark + 1 :])
    return dropped.entries()
