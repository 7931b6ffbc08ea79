"""From untrusted bytes to the normalized text every parser reads.

Normalization is fixed so that the same bytes always give the same text: the UTF-8 byte
order mark is dropped, line ends become ``\\n``, control characters other than ``\\n`` and
``\\t`` are removed (C0, DEL and C1), and the result is Unicode NFC. Encodings are never
guessed: anything that is not strict UTF-8 is refused.
"""

from __future__ import annotations

import re
import unicodedata

from affidavit.errors import InputRejected

EMPTY_DOCUMENT = "EMPTY_DOCUMENT"
UNDECODABLE_TEXT = "UNDECODABLE_TEXT"
BINARY_CONTENT = "BINARY_CONTENT"
LINE_TOO_LONG = "LINE_TOO_LONG"

_UTF8_BOM = b"\xef\xbb\xbf"
_CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]+")


def decode_text(content: bytes) -> str:
    """Strict UTF-8 decode and normalization; refuses empty, undecodable and binary input."""
    if content.startswith(_UTF8_BOM):
        content = content[len(_UTF8_BOM) :]
    if not content.strip():
        raise InputRejected(EMPTY_DOCUMENT, "the document is empty")
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputRejected(
            UNDECODABLE_TEXT, f"not valid UTF-8 at byte {exc.start}: {exc.reason}"
        ) from exc
    if "\x00" in text:
        raise InputRejected(BINARY_CONTENT, "the document contains NUL bytes")
    text = normalize_text(text)
    if not text.strip():
        raise InputRejected(EMPTY_DOCUMENT, "the document has only whitespace or controls")
    return text


def normalize_text(text: str) -> str:
    """LF line ends, no control characters but ``\\n`` and ``\\t``, Unicode NFC."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _CONTROL_CHARACTERS.search(text):
        text = _CONTROL_CHARACTERS.sub("", text)
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text


def check_line_lengths(text: str, max_line_chars: int) -> None:
    """Refuse text with a line longer than ``max_line_chars`` characters.

    Runs in about ``len(text) / max_line_chars`` steps: from each position it looks for the
    last line break within reach, so every line in between is known to be short enough
    without being visited one by one.
    """
    position, length = 0, len(text)
    while length - position > max_line_chars:
        window_end = position + max_line_chars + 1
        last_break = text.rfind("\n", position, window_end)
        if last_break < 0:
            line = text.count("\n", 0, position) + 1
            raise InputRejected(
                LINE_TOO_LONG, f"line {line} is longer than {max_line_chars} characters"
            )
        position = last_break + 1
