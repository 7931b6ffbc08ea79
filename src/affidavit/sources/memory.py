"""An in-memory transport: the test double beside :class:`~affidavit.sources.base.Transport`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from affidavit.records import SourceDocument


class StaticSource:
    """Yields a fixed set of documents, sorted by ``source_id`` like every transport."""

    def __init__(self, documents: Iterable[SourceDocument], *, source_system: str = "memory"):
        self.source_system = source_system
        self._documents = tuple(sorted(documents, key=lambda d: (d.source_id, d.alias)))

    def list_documents(self) -> Iterator[SourceDocument]:
        """The documents given at construction, in ``source_id`` order."""
        return iter(self._documents)
