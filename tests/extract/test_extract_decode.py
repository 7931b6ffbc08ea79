"""Decoding and normalization shared by every parser."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affidavit.errors import InputRejected
from affidavit.extract.decode import check_line_lengths, decode_text, normalize_text


def reason(content: bytes) -> str:
    with pytest.raises(InputRejected) as info:
        decode_text(content)
    return info.value.reason_code


@pytest.mark.parametrize("content", [b"", b"   \n\t\r\n ", b"\xef\xbb\xbf", b"\xef\xbb\xbf \n"])
def test_empty_or_whitespace_only_is_empty_document(content):
    assert reason(content) == "EMPTY_DOCUMENT"


def test_control_characters_only_is_empty_document():
    assert reason(b"\x01\x02\x7f") == "EMPTY_DOCUMENT"


@pytest.mark.parametrize(
    "content", [b"caf\xe9", b"\xff\xfe", "text".encode("utf-16"), b"\xed\xa0\x80", b"ok \xc3"]
)
def test_invalid_utf8_is_refused_without_guessing(content):
    assert reason(content) == "UNDECODABLE_TEXT"


def test_nul_bytes_are_binary_content():
    assert reason(b"hello\x00world") == "BINARY_CONTENT"


def test_bom_is_removed_and_line_ends_normalized():
    assert decode_text(b"\xef\xbb\xbfa\r\nb\rc\n") == "a\nb\nc\n"


def test_controls_removed_but_tabs_and_newlines_kept():
    assert decode_text("a\x07b\tc\x1b[0m\nd\x85e\x9f".encode()) == "ab\tc[0m\nde"


def test_text_is_nfc():
    decomposed = "Cafe\u0301 Ångström".encode()
    text = decode_text(decomposed)
    assert text == unicodedata.normalize("NFC", "Café Ångström")
    assert unicodedata.is_normalized("NFC", text)


def test_line_length_limit():
    check_line_lengths("a" * 10 + "\n" + "b" * 10, 10)
    with pytest.raises(InputRejected) as info:
        check_line_lengths("ok\n" + "b" * 11 + "\nok", 10)
    assert info.value.reason_code == "LINE_TOO_LONG"
    assert "line 2" in info.value.detail


@given(
    st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=30),
    st.integers(min_value=1, max_value=25),
)
def test_line_length_check_agrees_with_splitting(lengths, limit):
    text = "\n".join("x" * length for length in lengths)
    too_long = max(lengths) > limit
    if too_long:
        with pytest.raises(InputRejected):
            check_line_lengths(text, limit)
    else:
        check_line_lengths(text, limit)


@given(st.text())
def test_normalize_is_idempotent_and_leaves_no_controls(text):
    once = normalize_text(text)
    assert normalize_text(once) == once
    assert "\r" not in once
    assert all(ch in "\n\t" or not (ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F) for ch in once)
