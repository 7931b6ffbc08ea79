"""Unicode normalization forms, fast on text that is already (almost) normalized.

``unicodedata.normalize`` rebuilds its input even when little changes, and on Chinese or
Japanese text that costs about 70 µs per kilobyte; the standard quick check
(``unicodedata.is_normalized``) answers for such text about eighty times faster. What keeps
real Chinese text from passing it is nearly always its punctuation: the full-width forms of
ASCII (U+FF01-U+FF5E, the comma "，" among them) and the ideographic space, whose NFKC
forms are single ASCII characters. Those are replaced first (found by one regular
expression scan, each distinct one replaced by ``str.replace``: a text holds few distinct
punctuation marks, and both run in C where ``str.translate`` looks up every character),
and the quick check asked again; only text that still fails it is normalized in full.

The mapping never changes the result: each of those characters' compatibility
decomposition is the one starter it is mapped to, so the text's NFKD, and with it its NFKC,
is the same with or without the mapping (``tests/test_textforms.py`` checks every one).
"""

from __future__ import annotations

import re
import unicodedata

FULLWIDTH = {0xFF01 + i: 0x21 + i for i in range(0x5E)} | {0x3000: 0x20}
"""Full-width ASCII and the ideographic space, to what NFKC makes of them."""
_FULLWIDTH = re.compile("[\uff01-\uff5e\u3000]")


def nfkc(text: str) -> str:
    """``text`` in Normalization Form KC."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    mapped = text
    for char in set(_FULLWIDTH.findall(text)):
        mapped = mapped.replace(char, chr(FULLWIDTH[ord(char)]))
    if unicodedata.is_normalized("NFKC", mapped):
        return mapped
    return unicodedata.normalize("NFKC", mapped)
