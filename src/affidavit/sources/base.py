"""The seam every source transport implements (local folder today; HTTPS and SFTP next)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from affidavit.records import SourceDocument


class Transport(Protocol):
    """Lists the documents of one source system.

    Implementations yield documents sorted by ``source_id`` so that a run over the same
    source state always sees the same sequence. A document the transport already knows
    must be quarantined is still yielded, with ``rejection`` set, so that the run records
    it instead of silently losing it.
    """

    source_system: str

    def list_documents(self) -> Iterator[SourceDocument]:
        """Every document of the source, in ascending ``source_id`` order."""
        ...
