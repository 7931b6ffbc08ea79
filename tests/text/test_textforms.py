"""The fast NFKC gives what ``unicodedata.normalize`` gives, on every kind of text."""

from __future__ import annotations

import random
import unicodedata

from affidavit.text.forms import FULLWIDTH, nfkc


def test_every_mapped_character_is_its_own_nfkc_form() -> None:
    for source, target in FULLWIDTH.items():
        assert unicodedata.normalize("NFKC", chr(source)) == chr(target)
        assert unicodedata.normalize("NFKD", chr(source)) == chr(target)


def test_mixed_text_normalizes_as_the_standard_library_does() -> None:
    samples = [
        "", "plain ascii", "中文，标点。（括号）：全角ＡＢＣ１２３　空格",
        "ﬁne ligature ① circled ｶﾀｶﾅ half-width", "Ａ\u0301 full-width A with an acute",
        "e\u0301 combining, \u212b angstrom, \u00c5 A-ring", "한국어 ㈜ 텍스트",
        "ＡＢＣ\u0327\u0301", "\uff0c\u0301",
    ]
    rng = random.Random(5)
    alphabet = [chr(c) for c in (*range(0x20, 0x7f), *range(0xff00, 0xff70), 0x3000, 0x3002,
                                 0x301, 0x327, 0x4e2d, 0x6587, 0xfb01, 0x2460, 0xac00,
                                 0x1100, 0x1161, 0x212b, 0x1e9b, 0x323)]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
                for _ in range(2000)]
    for text in samples:
        assert nfkc(text) == unicodedata.normalize("NFKC", text), repr(text)
