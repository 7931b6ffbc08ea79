from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.config import loader as config
from affidavit.errors import ConfigurationError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "affidavit.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_a_file(tmp_path: Path) -> None:
    settings = config.load(environ={}, cwd=tmp_path)
    assert settings.store.db == ".affidavit/affidavit.db"
    assert settings.sensitivity.labels[0] == "PUBLIC"
    assert settings.source_file is None


def test_precedence_defaults_file_environment_flags(tmp_path: Path) -> None:
    write(tmp_path, '[store]\ndb = "file.db"\n[lexical]\nk1 = 1.1\n[retrieval]\ntop_k = 3\n')
    env = {"AFFIDAVIT_DB": "env.db", "AFFIDAVIT_LEXICAL__K1": "1.3"}
    settings = config.load(environ=env, cwd=tmp_path)
    assert (settings.store.db, settings.lexical.k1, settings.retrieval.top_k) == ("env.db", 1.3, 3)
    flagged = config.load(environ=env, cwd=tmp_path, overrides={"store.db": "flag.db"})
    assert flagged.store.db == "flag.db"


def test_vector_search_settings_of_the_store(tmp_path: Path) -> None:
    defaults = config.load(environ={}, cwd=tmp_path).store
    assert (defaults.exact_vector_threshold, defaults.hnsw_ef_search) == (150_000, 200)
    write(tmp_path, "[store]\nexact_vector_threshold = 0\nhnsw_ef_search = 1000\n")
    store = config.load(environ={}, cwd=tmp_path).store
    assert (store.exact_vector_threshold, store.hnsw_ef_search) == (0, 1000)


def test_explicit_config_path_and_tables(tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text('[grants]\n"group:hr#member" = ["PII"]\n[sensitivity.keywords]\n'
                     'FINANCIAL = ["EBITDA"]\n', encoding="utf-8")
    settings = config.load(other, environ={}, cwd=tmp_path)
    assert settings.grants == {"group:hr#member": ("PII",)}
    assert settings.sensitivity.keywords == {"FINANCIAL": ("EBITDA",)}
    assert settings.source_file == str(other)


@pytest.mark.parametrize(("text", "key"), [
    ("[lexical]\nk1 = 'high'\n", "lexical.k1"),
    ("[store]\ndatabase = 'x'\n", "store.database"),
    ("[sensitivity]\ndefault_level = 'NOPE'\n", "sensitivity.default_level"),
    ("[grants]\n'user:a' = ['MADE_UP']\n", "grants.user:a"),
    ("[sensitivity]\nlabels = ['PUBLIC']\n", "sensitivity.labels"),
    ("[chunking]\nmax_chars = 10\noverlap_chars = 10\n", "chunking"),
    ("[acl]\ndefault = [1, 2]\n", "acl.default"),
    ("[store]\nexact_vector_threshold = -1\n", "store.exact_vector_threshold"),
    ("[store]\nexact_vector_threshold = 1.5\n", "store.exact_vector_threshold"),
    ("[store]\nhnsw_ef_search = 0\n", "store.hnsw_ef_search"),
    ("[store]\nhnsw_ef_search = 1001\n", "store.hnsw_ef_search"),
])
def test_bad_settings_name_the_key_and_the_file(tmp_path: Path, text: str, key: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigurationError) as info:
        config.load(environ={}, cwd=tmp_path)
    assert key in str(info.value) and str(path) in str(info.value)


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    write(tmp_path, "[store\n")
    with pytest.raises(ConfigurationError, match="not valid TOML"):
        config.load(environ={}, cwd=tmp_path)
    with pytest.raises(ConfigurationError, match="not found"):
        config.load(tmp_path / "missing.toml", environ={}, cwd=tmp_path)
