"""Format dispatch, the public surface, determinism and fuzzing of every parser."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affidavit.extract as extract_package
from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract import (
    BINARY_PARSERS,
    KINDS,
    PARSERS,
    REASON_CODES,
    SUPPORTED_SUFFIXES,
    BinaryParser,
    Parser,
    extract,
    parser_for,
)

LIMITS = IngestSettings(max_nesting_depth=16, max_paragraphs=500, max_line_chars=2000)


def test_export_list_is_complete_and_resolvable():
    assert sorted(extract_package.__all__) == sorted(
        [
            "BINARY_PARSERS",
            "BinaryParser",
            "KINDS",
            "PARSERS",
            "REASON_CODES",
            "SUPPORTED_SUFFIXES",
            "Parser",
            "extract",
            "parser_for",
        ]
    )
    for name in extract_package.__all__:
        assert getattr(extract_package, name) is not None


def test_supported_suffixes():
    assert SUPPORTED_SUFFIXES == (
        ".csv",
        ".docx",
        ".htm",
        ".html",
        ".json",
        ".markdown",
        ".md",
        ".pdf",
        ".text",
        ".txt",
        ".yaml",
        ".yml",
    )
    assert sorted(BINARY_PARSERS) == [".docx", ".pdf"]
    formats = {
        suffix: parser.parse(_SAMPLES[suffix], limits=LIMITS).format
        for suffix, parser in PARSERS.items()
    }
    assert formats == {
        ".csv": "csv",
        ".htm": "html",
        ".html": "html",
        ".json": "json",
        ".markdown": "markdown",
        ".md": "markdown",
        ".text": "text",
        ".txt": "text",
        ".yaml": "yaml",
        ".yml": "yaml",
    }


_SAMPLES = {
    ".csv": "a,b\n1,2\n",
    ".htm": "<p>x</p>",
    ".html": "<p>x</p>",
    ".json": '{"a": 1}',
    ".markdown": "# x",
    ".md": "# x",
    ".text": "x",
    ".txt": "x",
    ".yaml": "a: 1",
    ".yml": "a: 1",
}


@pytest.mark.parametrize(
    ("filename", "expected"),
    [("REPORT.MD", ".md"), ("dir/page.HTM", ".htm"), ("c:\\docs\\data.Json", ".json")],
)
def test_dispatch_is_by_lowercase_suffix(filename, expected):
    assert parser_for(filename) is PARSERS[expected]


@pytest.mark.parametrize(("filename", "expected"), [("A.PDF", ".pdf"), ("dir/b.Docx", ".docx")])
def test_binary_formats_dispatch_by_suffix_too(filename, expected):
    assert parser_for(filename) is BINARY_PARSERS[expected]


@pytest.mark.parametrize("filename", ["report.odt", "README", ".md", "archive.tar.gz", "x.md.bak"])
def test_unknown_suffix_is_unsupported(filename):
    with pytest.raises(InputRejected) as info:
        extract(b"hello", filename=filename, limits=LIMITS)
    assert info.value.reason_code == "UNSUPPORTED_FORMAT"


def test_oversize_content_is_refused():
    limits = IngestSettings(max_document_bytes=10)
    with pytest.raises(InputRejected) as info:
        extract(b"x" * 11, filename="a.txt", limits=limits)
    assert info.value.reason_code == "TOO_LARGE"


def test_parsers_satisfy_the_protocol():
    def formats_of(parser: Parser) -> tuple[str, ...]:
        return parser.formats

    def binary_formats_of(parser: BinaryParser) -> tuple[str, ...]:
        return parser.formats

    for suffix, parser in PARSERS.items():
        assert suffix in formats_of(parser)
        assert all(s == s.lower() and s.startswith(".") for s in parser.formats)
    for suffix, binary in BINARY_PARSERS.items():
        assert suffix in binary_formats_of(binary)


def check_document(document) -> None:
    previous_end = 0
    for index, paragraph in enumerate(document.paragraphs):
        piece = document.text[paragraph.start : paragraph.end]
        assert paragraph.index == index
        assert piece and piece == piece.strip()
        assert paragraph.start >= previous_end
        assert paragraph.kind in KINDS
        previous_end = paragraph.end
    assert document.paragraphs


def extract_or_reason(content: bytes, filename: str):
    try:
        return extract(content, filename=filename, limits=LIMITS)
    except InputRejected as error:
        assert error.reason_code in REASON_CODES
        return error.reason_code


MARKUP = st.text(
    alphabet=st.sampled_from(list("<>/!-?[]{}\"'=:,;|#*`&\n \tabcp1\u00e9中")), max_size=200
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SUPPORTED_SUFFIXES), st.one_of(st.binary(max_size=200), MARKUP.map(str.encode))
)
def test_any_input_gives_a_valid_document_or_input_rejected(suffix, content):
    result = extract_or_reason(content, "fuzz" + suffix)
    if not isinstance(result, str):
        check_document(result)
        assert extract_or_reason(content, "fuzz" + suffix) == result  # deterministic


@settings(max_examples=40, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=5), children, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_any_json_value_renders_or_is_rejected(value):
    import json

    result = extract_or_reason(json.dumps(value).encode(), "v.json")
    if not isinstance(result, str):
        check_document(result)
