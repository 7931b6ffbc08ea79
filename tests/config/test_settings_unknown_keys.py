"""An unknown key or section in affidavit.toml is an error naming it, the file and the
nearest valid name, never silently ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.config import loader as config
from affidavit.config.settings import Settings
from affidavit.errors import ConfigurationError


def _load(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "affidavit.toml"
    path.write_text(text)
    return config.load(path, environ={})


def test_misspelt_section_names_the_file_and_the_nearest_section(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        _load(tmp_path, "[retreival]\ntop_k = 3\n")
    message = str(caught.value)
    assert "unknown section" in message and "did you mean 'retrieval'?" in message
    assert f"retreival in {tmp_path / 'affidavit.toml'}" in message


def test_misspelt_key_names_the_nearest_key_with_its_section(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        _load(tmp_path, "[sensitivity]\ndefault_levl = 'PUBLIC'\n")
    assert "did you mean 'sensitivity.default_level'?" in str(caught.value)
    assert caught.value.key == "sensitivity.default_levl"


def test_nested_misspelt_key_under_a_tenant_section(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        _load(tmp_path, "[tenants.acme.acl]\ndefualt = ['*']\n")
    assert "did you mean 'tenants.acme.acl.default'?" in str(caught.value)


def test_unknown_key_with_no_near_name_lists_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        _load(tmp_path, "[chunking]\nqqqqqq = 1\n")
    assert "valid here: max_chars, min_chars, overlap_chars" in str(caught.value)


def test_unknown_key_from_the_environment_names_the_environment(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        config.load(None, environ={"AFFIDAVIT_RETRIEVAL__TOPK": "3"}, cwd=tmp_path)
    assert "did you mean 'retrieval.top_k'?" in str(caught.value)
