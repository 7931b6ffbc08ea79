"""JSON, YAML and CSV: record rendering and hostile structures."""

from __future__ import annotations

import time

import pytest

from affidavit.config.settings import IngestSettings
from affidavit.errors import InputRejected
from affidavit.extract import extract
from affidavit.records import ExtractedDocument

LIMITS = IngestSettings()


def parse(content: str | bytes, filename: str, limits: IngestSettings = LIMITS):
    data = content.encode() if isinstance(content, str) else content
    return extract(data, filename=filename, limits=limits)


def records(document: ExtractedDocument) -> list[str]:
    assert all(p.kind == "record" for p in document.paragraphs)
    return [document.paragraph_text(p) for p in document.paragraphs]


def reason(content: str | bytes, filename: str, limits: IngestSettings = LIMITS) -> str:
    with pytest.raises(InputRejected) as info:
        parse(content, filename, limits)
    return info.value.reason_code


# ---------------------------------------------------------------------------- JSON


def test_json_object_fields_become_records_in_document_order():
    document = parse(
        '{"title": "Vendor list", "vendors": [{"name": "Acme", "tier": 1}, {"name": "Bolt"}],'
        ' "active": true, "note": null, "empty": {}, "ratio": 0.5,'
        ' "text": "line one\\n\\n\\nline two"}',
        "vendors.json",
    )
    assert document.format == "json"
    assert document.title == "Vendor list"
    assert records(document) == [
        "title: Vendor list",
        "vendors[0].name: Acme\nvendors[0].tier: 1\nvendors[1].name: Bolt",
        "active: true",
        "note: null",
        "empty: {}",
        "ratio: 0.5",
        "text: line one\nline two",
    ]


def test_json_top_level_list_and_scalar():
    assert records(parse('[{"a": 1}, "two", [3]]', "x.json")) == ["a: 1", "two", "[0]: 3"]
    assert records(parse('"just text"', "x.json")) == ["just text"]


@pytest.mark.parametrize(
    "content",
    ['{"a": 1,}', "{'a': 1}", '{"a": 1} extra', '{"a": 1, "a": 2}', "[" + "9" * 5000 + "]"],
)
def test_malformed_json(content):
    assert reason(content, "x.json") == "MALFORMED_JSON"


def test_json_within_depth_limit_parses_and_deeper_is_refused():
    limits = IngestSettings(max_nesting_depth=5)
    assert records(parse("[[[[[1]]]]]", "x.json", limits)) == ["[0][0][0][0]: 1"]
    assert reason("[[[[[[1]]]]]]", "x.json", limits) == "NESTING_TOO_DEEP"
    assert records(parse('{"a": "[[[[[[[[[["}', "x.json", limits)) == ["a: [[[[[[[[[["]


def test_deeply_nested_json_is_refused_quickly():
    started = time.perf_counter()
    assert reason("[" * 100_000, "deep.json") == "NESTING_TOO_DEEP"
    assert reason('{"a":' * 100_000, "deep.json") == "NESTING_TOO_DEEP"
    assert time.perf_counter() - started < 1.0


def test_minified_json_is_not_refused_for_its_single_line():
    limits = IngestSettings(max_line_chars=50)
    items = ",".join(f'{{"id": {n}}}' for n in range(20))
    assert len(records(parse(f"[{items}]", "x.json", limits))) == 20


def test_empty_json_containers_are_empty_documents():
    assert reason("{}", "x.json") == "EMPTY_DOCUMENT"
    assert reason("[]", "x.json") == "EMPTY_DOCUMENT"


def test_json_control_characters_in_strings_are_normalized():
    assert records(parse('{"a": "x\\u0000y\\u0007z"}', "x.json")) == ["a: xyz"]


# ---------------------------------------------------------------------------- YAML


def test_yaml_multiple_documents():
    document = parse(
        "title: Controls\nowner: security\ncontrols:\n  - id: AC-1\n    name: Access\n"
        "---\n- first\n- when: 2024-05-01\n",
        "controls.yml",
    )
    assert document.format == "yaml"
    assert document.title == "Controls"
    assert records(document) == [
        "title: Controls",
        "owner: security",
        "controls[0].id: AC-1\ncontrols[0].name: Access",
        "first",
        "when: 2024-05-01",
    ]


@pytest.mark.parametrize(
    "content",
    [
        "a: &anchor [1, 2]\nb: *anchor\n",
        "a: !!python/object/apply:os.system ['id']\n",
        "a: !!binary aGVsbG8=\n",
        "a: [unclosed\n",
        "a: 1\na: 2\n",
    ],
)
def test_unsafe_or_malformed_yaml(content):
    assert reason(content, "x.yaml") == "MALFORMED_YAML"


def test_yaml_alias_bomb_is_refused_quickly():
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 10)]
    started = time.perf_counter()
    assert reason("\n".join(lines), "bomb.yaml") == "MALFORMED_YAML"
    assert time.perf_counter() - started < 1.0


def test_deep_yaml_is_refused():
    assert reason("[" * 100_000, "deep.yaml") == "NESTING_TOO_DEEP"
    nested = "".join("  " * depth + f"k{depth}:\n" for depth in range(100)) + "  " * 100 + "v"
    assert reason(nested, "deep.yaml") == "NESTING_TOO_DEEP"


# ---------------------------------------------------------------------------- CSV


def test_csv_rows_become_labelled_records():
    document = parse(
        'Name,Department,Note\r\nAlice,Finance,"multi\nline"\r\n\r\nBob,,\r\n,Ops,x,extra\r\n',
        "staff.csv",
    )
    assert document.format == "csv"
    assert document.title is None
    assert records(document) == [
        "Name: Alice; Department: Finance; Note: multi line",
        "Name: Bob",
        "Department: Ops; Note: x; column 4: extra",
    ]


def test_csv_semicolon_and_tab_delimiters():
    assert records(parse("a;b\n1;2\n", "x.csv")) == ["a: 1; b: 2"]
    assert records(parse("a\tb\n1\t2\n", "x.csv")) == ["a: 1; b: 2"]


def test_csv_header_only_is_empty():
    assert reason("a,b,c\n", "x.csv") == "EMPTY_DOCUMENT"


@pytest.mark.parametrize("content", ['a,b\n"unterminated,2\n', 'a,b\n"x"y,2\n'])
def test_malformed_csv(content):
    assert reason(content, "x.csv") == "MALFORMED_CSV"


def test_csv_field_over_the_field_limit_is_refused():
    assert reason("a\n" + "x" * 200_000 + "\n", "x.csv") == "MALFORMED_CSV"


def test_csv_with_nul_is_binary():
    assert reason(b"a,b\n1,\x002\n", "x.csv") == "BINARY_CONTENT"
