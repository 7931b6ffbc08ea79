"""Chunking: label-segment-aware chunks of a document, and the shared sentence splitter."""

from affidavit.chunking.chunker import TOO_MANY_CHUNKS, chunk_document
from affidavit.chunking.sentences import split_sentences

__all__ = ["TOO_MANY_CHUNKS", "chunk_document", "split_sentences"]
