"""Sidecar and front-matter metadata: validation and the untrusted-YAML rules."""

from __future__ import annotations

import time

import pytest

from affidavit.errors import InputRejected
from affidavit.records import DocumentMetadata
from affidavit.sources import load_sidecar, load_yaml_documents, parse_metadata
from affidavit.sources.metadata import is_acl_subject


def rejected(call, *args, **kwargs) -> InputRejected:
    with pytest.raises(InputRejected) as info:
        call(*args, **kwargs)
    return info.value


def test_parse_metadata_reads_every_known_key():
    metadata = parse_metadata(
        {
            "source_id": "POL-7",
            "title": "  Leave policy ",
            "acl": ["group:finance#member", "user:cfo", "group:finance#member"],
            "classification": "confidential",
            "oracle_id": "oracle-1",
            "frameworks": ["SOC 2", "ISO 27001"],
        },
        origin="test",
    )
    assert metadata == DocumentMetadata(
        source_id="POL-7",
        title="Leave policy",
        acl=("group:finance#member", "user:cfo"),
        classification="CONFIDENTIAL",
        oracle_id="oracle-1",
        frameworks=("SOC 2", "ISO 27001"),
    )


def test_parse_metadata_ignores_unknown_keys_and_accepts_single_strings():
    metadata = parse_metadata(
        {"date": "2024-01-01", "tags": ["a"], "acl": "*", "frameworks": "GDPR"}, origin="x"
    )
    assert metadata.acl == ("*",)
    assert metadata.frameworks == ("GDPR",)
    assert metadata.title is None and metadata.source_id is None


def test_empty_acl_list_is_kept_apart_from_no_acl():
    assert parse_metadata({"acl": []}, origin="x").acl == ()
    assert parse_metadata({}, origin="x").acl is None


@pytest.mark.parametrize(
    ("mapping", "key"),
    [
        ({"title": 5}, "title"),
        ({"title": True}, "title"),
        ({"source_id": ""}, "source_id"),
        ({"acl": [1, 2]}, "acl"),
        ({"acl": {"user": "x"}}, "acl"),
        ({"acl": None}, "acl"),
        ({"acl": ["finance"]}, "acl"),
        ({"acl": ["user:cfo extra"]}, "acl"),
        ({"acl": ["role:admin"]}, "acl"),
        ({"acl": ["group:finance#Member"]}, "acl"),
        ({"classification": "top secret"}, "classification"),
        ({"frameworks": [["nested"]]}, "frameworks"),
        ({"oracle_id": ["a"]}, "oracle_id"),
    ],
)
def test_parse_metadata_refuses_wrong_types_naming_key_and_origin(mapping, key):
    error = rejected(parse_metadata, mapping, origin="docs/a.md")
    assert error.reason_code == "MALFORMED_METADATA"
    assert key in error.detail and "docs/a.md" in error.detail


def test_parse_metadata_refuses_a_non_mapping():
    assert rejected(parse_metadata, ["a"], origin="x").reason_code == "MALFORMED_METADATA"


@pytest.mark.parametrize(
    "subject",
    ["*", "user:cfo", "group:finance#member", "service:etl-1", "user:a.b@example.com"],
)
def test_acl_subjects_accepted(subject):
    assert is_acl_subject(subject)


@pytest.mark.parametrize("subject", ["", "cfo", "user:", "user:a b", "*x", "group:a#B", "user:é"])
def test_acl_subjects_refused(subject):
    assert not is_acl_subject(subject)


def test_load_sidecar_reads_a_mapping_with_bom():
    data = "\ufeffsource_id: HR-1\nacl: [group:hr#member]\n".encode()
    metadata = load_sidecar(data, origin="a.md.meta.yaml")
    assert metadata.source_id == "HR-1" and metadata.acl == ("group:hr#member",)


@pytest.mark.parametrize(
    "text",
    [
        "acl: [group:a]\nalias: &x [1]\nother: *x\n",
        "!!python/object/apply:os.system ['echo pwned']\n",
        "title: !!python/name:os.system\n",
        "title: !custom thing\n",
        "values: !!set {a, b}\n",
        "- a\n- b\n",
        "just a string\n",
        "",
        "title: [unclosed\n",
        "title: a\ntitle: b\n",
        "a: 1\n---\nb: 2\n",
    ],
)
def test_load_sidecar_refuses_unsafe_or_non_mapping_yaml(text):
    error = rejected(load_sidecar, text.encode(), origin="a.md.meta.yaml")
    assert error.reason_code == "MALFORMED_SIDECAR"
    assert "a.md.meta.yaml" in error.detail


def test_load_sidecar_refuses_invalid_utf8():
    error = rejected(load_sidecar, b"title: \xff\xfe\n", origin="s")
    assert error.reason_code == "MALFORMED_SIDECAR"


def test_load_sidecar_wrong_type_is_malformed_metadata():
    error = rejected(load_sidecar, b"acl: 5\n", origin="s")
    assert error.reason_code == "MALFORMED_METADATA"


def test_yaml_alias_bomb_is_refused_before_expansion():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )
    started = time.perf_counter()
    error = rejected(load_sidecar, bomb.encode(), origin="bomb.meta.yaml")
    assert error.reason_code == "MALFORMED_SIDECAR"
    assert "anchor" in error.detail
    assert time.perf_counter() - started < 1.0


def test_yaml_deep_nesting_is_refused_without_recursion():
    started = time.perf_counter()
    error = rejected(load_yaml_documents, "[" * 100_000, max_depth=64)
    assert error.reason_code == "NESTING_TOO_DEEP"
    assert time.perf_counter() - started < 2.0


def test_yaml_values_that_cannot_be_built_are_malformed():
    for text in ("when: 2024-13-45\n", "big: " + "9" * 5000 + "\n", "bad: \ufffe\n"):
        assert rejected(load_yaml_documents, text, max_depth=8).reason_code == "MALFORMED_YAML"


def test_yaml_plain_data_and_timestamps_are_kept():
    documents = load_yaml_documents("a: !!str 3\nb: 2024-01-02\n---\n- x\n", max_depth=8)
    assert documents[0]["a"] == "3"
    assert str(documents[0]["b"]) == "2024-01-02"
    assert documents[1] == ["x"]
