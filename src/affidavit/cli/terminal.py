"""What the command line writes is text for a terminal, never instructions to it.

Titles, file names, chunk text, answers and error messages come from documents and from
models, so any of them may carry an escape sequence (``ESC [ 2 J`` clears the screen, an
OSC sequence rewrites the window title or plants a hyperlink), a carriage return that
overprints a line, or a bidi override that makes ``exe.txt`` read as ``txt.exe``.
:func:`neutralize_controls` spells every such character as a visible ``\\uXXXX`` escape;
:func:`neutralized_output` applies it to everything the CLI writes to stdout and stderr,
at the one place the CLI writes, so that no field can be forgotten.

Newline and tab stay as they are: they are the layout of the output itself. In ``--json``
output ``\\uXXXX`` is the JSON escape of the same character, so a JSON reader gets back
exactly the original string.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["NeutralizingWriter", "neutralize_controls", "neutralized_output"]

_UNSAFE = re.compile(
    "["
    "\x00-\x08\x0b-\x1f\x7f"        # C0 controls but tab and newline (ESC, CR, BEL...), DEL
    "\x80-\x9f"                     # C1 controls (CSI, OSC, NEL...)
    "\u061c\u200e\u200f"            # bidi marks
    "\u202a-\u202e\u2066-\u2069"    # bidi embeddings, overrides and isolates
    "\u2028\u2029"                  # line and paragraph separators
    "]"
)


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def neutralize_controls(text: str) -> str:
    """``text`` with every terminal control and bidi control spelled as ``\\uXXXX``."""
    return _UNSAFE.sub(_escaped, text)


class NeutralizingWriter:
    """A text stream that neutralises what is written to it, then passes it on."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    @property
    def inner(self) -> TextIO:
        """The stream underneath, for output made of the program's own text only (a
        progress bar redrawing its line); anything from a document must not go there."""
        return self._inner

    def write(self, text: str) -> int:
        self._inner.write(neutralize_controls(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        # flush, fileno, isatty, encoding, buffer...: the inner stream's own
        return getattr(self._inner, name)


@contextmanager
def neutralized_output() -> Iterator[None]:
    """While active, everything written to ``sys.stdout`` and ``sys.stderr`` is neutralised."""
    saved = sys.stdout, sys.stderr
    sys.stdout = NeutralizingWriter(saved[0])
    sys.stderr = NeutralizingWriter(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
