"""Chunking: label-segment-aware chunks of a document, their ids that survive edits, and the
shared sentence splitter."""

from affidavit.chunking.chunker import TOO_MANY_CHUNKS, chunk_document
from affidavit.chunking.ids import chunk_ids
from affidavit.text.sentences import split_sentences

__all__ = ["TOO_MANY_CHUNKS", "chunk_document", "chunk_ids", "split_sentences"]
