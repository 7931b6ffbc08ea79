"""The ingest progress display.

On a terminal: a tqdm bar on stderr with the count, the rate and, when the number of
documents is known, the time left; quarantined documents are named above it. With
``--progress`` on something that is not a terminal (a log file, a pipe): one plain line per
document instead, since a bar redraws its line with control characters. Nothing with
``--quiet``. tqdm is imported only when a bar is drawn.

The bar is drawn on the raw stream underneath the CLI's neutralising writer (it is made of
our own text and counts only); the names of documents are neutralised before they are
written (:func:`affidavit.cli.terminal.neutralize_controls`).
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

from affidavit.cli.terminal import NeutralizingWriter, neutralize_controls

if TYPE_CHECKING:
    from affidavit.ingest.run import DocumentOutcome

BAR, LINES, QUIET = "bar", "lines", "quiet"


def progress_mode(*, quiet: bool, forced: bool, stream: TextIO) -> str:
    """How to show progress on ``stream``: a bar on a terminal, lines when forced."""
    if quiet:
        return QUIET
    if stream.isatty():
        return BAR
    return LINES if forced else QUIET


class IngestProgress:
    """A progress callback for :meth:`affidavit.ingest.run.Ingestor.run`; use as a context."""

    def __init__(self, mode: str, *, total: int | None = None) -> None:
        self.mode = mode
        self.total = total
        self.quarantined = 0
        self._bar: Any = None

    def __enter__(self) -> IngestProgress:
        if self.mode == BAR:
            from tqdm import tqdm  # type: ignore[import-untyped]

            stream = sys.stderr
            raw = stream.inner if isinstance(stream, NeutralizingWriter) else stream
            self._bar = tqdm(total=self.total, unit="doc", desc="ingest", file=raw,
                             dynamic_ncols=True, leave=True)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.close()

    def __call__(self, done: int, outcome: DocumentOutcome) -> None:
        from affidavit.ingest.run import QUARANTINED

        quarantined = outcome.status == QUARANTINED
        if quarantined:
            self.quarantined += 1
        if self.mode == LINES:
            extra = f" ({outcome.reason_code})" if quarantined else ""
            print(f"[{done}] {outcome.status:<11} {outcome.alias}{extra}", file=sys.stderr)
        elif self._bar is not None:
            if quarantined:
                self._bar.write(neutralize_controls(
                    f"quarantined {outcome.alias} ({outcome.reason_code})"), file=self._bar.fp)
                self._bar.set_postfix(quarantined=self.quarantined, refresh=False)
            self._bar.update(done - self._bar.n)
