"""Tenants own their policy: relationship tuples, label grants and the ACL default come
from the tenant's own settings section (``[tenants.<id>.*]``); the top-level sections are
the home tenant's only. Nothing configured for one tenant admits anyone to another's
documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.authz import FailClosedAuthorizer, StoreAuthorizer
from affidavit.config.loader import load
from affidavit.config.settings import AclSettings, AuthzSettings, Settings
from affidavit.engine.query import Engine
from affidavit.errors import ConfigurationError
from affidavit.ingest.run import Ingestor
from affidavit.records import DocumentMetadata, SourceDocument, sha256_hex
from affidavit.sources.memory import StaticSource
from affidavit.store import SQLiteStore

SECRET_TEXT = "The harbour crane hire for the yard costs CNRYTENANT881 pounds a day."
OPEN_TEXT = "Staff book hotel rooms through the travel desk for every trip to the yard."

TWO_TENANTS = """
tenant = "acme"
[tenants.acme.acl]
default = ["*"]
[tenants.acme.authz]
tuples = ["group:yard#member@user:mallory"]
[tenants.acme.grants]
"group:yard#member" = ["SECRET"]
"*" = ["INTERNAL"]
[tenants.beta.grants]
"user:beta-reader" = ["INTERNAL"]
"""


def docs() -> list[SourceDocument]:
    out = []
    for source_id, text, acl, label in (
            ("crane", SECRET_TEXT, ("group:yard#member",), "SECRET"),
            ("hotel", OPEN_TEXT, None, None)):
        body = text.encode()
        meta = DocumentMetadata(source_id=source_id, title=source_id, acl=acl,
                                classification=label)
        out.append(SourceDocument("memory", source_id, sha256_hex(body), body,
                                  f"{source_id}.txt", meta))
    return out


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    (tmp_path / "affidavit.toml").write_text(TWO_TENANTS, encoding="utf-8")
    return load(cwd=tmp_path, environ={})


@pytest.fixture
def store(tmp_path: Path, settings: Settings) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "a.db")
    for tenant in ("acme", "beta"):
        Ingestor(store, settings, tenant=tenant).run([StaticSource(docs())])
    return store


def texts(engine: Engine, principal: str, query: str) -> list[str]:
    return [h.text for h in engine.search(principal, query, limit=20)]


def test_a_grant_configured_for_one_tenant_does_not_admit_in_another(
        settings: Settings, store: SQLiteStore) -> None:
    acme = Engine(store, settings, tenant="acme")
    beta = Engine(store, settings, tenant="beta")
    assert SECRET_TEXT in texts(acme, "user:mallory", "harbour crane hire")
    # mallory's group tuple and SECRET grant are acme's: in beta they admit nothing,
    # although beta's document names the same group in its ACL.
    assert texts(beta, "user:mallory", "harbour crane hire") == []
    context = FailClosedAuthorizer(StoreAuthorizer(store, settings)).context_for(
        "beta", "user:mallory")
    assert context.granted_labels == {"PUBLIC"}
    assert "group:yard#member" not in context.tokens


def test_the_acl_default_of_one_tenant_is_not_applied_in_another(
        settings: Settings, store: SQLiteStore) -> None:
    acme = Engine(store, settings, tenant="acme")
    beta = Engine(store, settings, tenant="beta")
    assert OPEN_TEXT in texts(acme, "user:anyone", "hotel rooms travel desk")
    # beta declares no ACL default: its document without an ACL is readable by nobody.
    assert texts(beta, "user:beta-reader", "hotel rooms travel desk") == []
    assert "*" not in {t for (t,) in store._read(
        "SELECT token FROM acl_tokens WHERE tenant_id = 'beta'")}


def test_top_level_policy_belongs_to_the_home_tenant_only(tmp_path: Path) -> None:
    settings = Settings(tenant="acme", acl=AclSettings(default=("*",)),
                        authz=AuthzSettings(tuples=("group:yard#member@user:mallory",)),
                        grants={"group:yard#member": ("SECRET",), "*": ("INTERNAL",)})
    store = SQLiteStore(tmp_path / "a.db")
    for tenant in ("acme", "beta"):
        Ingestor(store, settings, tenant=tenant).run([StaticSource(docs())])
    assert SECRET_TEXT in texts(Engine(store, settings, tenant="acme"), "user:mallory",
                                "harbour crane hire")
    beta = Engine(store, settings, tenant="beta")
    assert texts(beta, "user:mallory", "harbour crane hire hotel rooms") == []
    assert settings.policy_for("beta").grants == {}


def test_a_home_tenant_with_two_policies_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "affidavit.toml").write_text(
        'tenant = "acme"\n[grants]\n"*" = ["INTERNAL"]\n[tenants.acme.grants]\n'
        '"user:x" = ["SECRET"]\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"tenants\.acme"):
        load(cwd=tmp_path, environ={})


@pytest.mark.parametrize("body, key", [
    ('[tenants.beta.grants]\n"user:x" = ["MADE_UP"]\n', "tenants.beta.grants.user:x"),
    ('[tenants.beta]\nsensitivity = {}\n', "tenants.beta.sensitivity"),
    ('[tenants."a b".grants]\n"user:x" = ["SECRET"]\n', "tenants.a b"),
])
def test_tenant_sections_are_validated(tmp_path: Path, body: str, key: str) -> None:
    (tmp_path / "affidavit.toml").write_text(body, encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        load(cwd=tmp_path, environ={})
    assert key in str(caught.value)
