"""Any failure of an authorizer closes the request: BLOCKED for ask, an error for search."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from affidavit.authz import (
    FailClosedAuthorizer,
    StaticAuthorizer,
    StoreAuthorizer,
    parse_tuple,
)
from affidavit.config.settings import Settings
from affidavit.engine.query import Engine
from affidavit.errors import AuthorizationError
from affidavit.identity.lifecycle import approve_sire
from affidavit.ingest.run import Ingestor
from affidavit.llm.providers import ScriptedProvider
from affidavit.records import AuthzContext
from affidavit.sources import LocalFolderSource
from affidavit.store import SQLiteStore

NOW = "2026-01-01T00:00:00+00:00"
SECRET_DETAIL = "row 17 of doc:payroll-2024 is locked"
POLICY = ["group:staff#member@user:sam"]
GRANTS = {"group:staff#member": ["INTERNAL"]}


class Raising:
    """An authorizer whose backend fails with an arbitrary exception."""

    def __init__(self, exc: BaseException):
        self.exc = exc
        self.calls: list[tuple[str, str | None]] = []

    def context_for(self, tenant: str, principal: str | None) -> AuthzContext:
        self.calls.append((tenant, principal))
        raise self.exc


class Answering:
    """An authorizer that answers whatever it was given."""

    def __init__(self, answer: Any):
        self.answer = answer

    def context_for(self, tenant: str, principal: str | None) -> Any:
        return self.answer


GOOD = AuthzContext("default", "user:sam", frozenset({"user:sam", "*"}),
                    frozenset({"PUBLIC"}), "v1")


@pytest.mark.parametrize("exc", [RuntimeError(SECRET_DETAIL), KeyError(SECRET_DETAIL),
                                 TimeoutError(SECRET_DETAIL), ValueError(SECRET_DETAIL)])
def test_any_exception_becomes_an_authorization_error(exc: Exception) -> None:
    with pytest.raises(AuthorizationError) as info:
        FailClosedAuthorizer(Raising(exc)).context_for("default", "user:sam")
    assert SECRET_DETAIL not in str(info.value), "error text of a backend may quote data"
    assert type(exc).__name__ in str(info.value)


@pytest.mark.parametrize("answer", [
    None,
    "user:sam",
    replace(GOOD, principal="user:admin"),
    replace(GOOD, tenant="other"),
    replace(GOOD, tokens=["user:sam"]),  # type: ignore[arg-type]
    replace(GOOD, granted_labels=frozenset({"INTERNAL"})),
    replace(GOOD, policy_version=""),
])
def test_a_malformed_answer_is_refused(answer: Any) -> None:
    with pytest.raises(AuthorizationError):
        FailClosedAuthorizer(Answering(answer)).context_for("default", "user:sam")


def test_a_well_formed_answer_passes_unchanged() -> None:
    assert FailClosedAuthorizer(Answering(GOOD)).context_for("default", "user:sam") is GOOD


@pytest.mark.parametrize("principal", [None, "", "sam", "group:staff#member"])
def test_the_principal_is_checked_before_the_backend_is_asked(principal: str | None) -> None:
    inner = Raising(RuntimeError("never reached"))
    with pytest.raises(AuthorizationError, match="principal"):
        FailClosedAuthorizer(inner).context_for("default", principal)
    assert inner.calls == []


# --------------------------------------------------------------------------- through Engine


@pytest.fixture
def engine_parts(tmp_path: Path) -> tuple[SQLiteStore, Settings]:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "travel.md").write_text(
        "---\nacl: [\"group:staff#member\"]\n---\n# Travel\n\nThe nightly hotel limit is "
        "180 euros in every city.\n", encoding="utf-8")
    settings = Settings(authz=replace(Settings().authz, tuples=tuple(POLICY)),
                        grants={"group:staff#member": ("INTERNAL",)})
    store = SQLiteStore(tmp_path / "fail.db")
    Ingestor(store, settings).run([LocalFolderSource(root, max_document_bytes=1 << 20)])
    for record in store.list_sire("default", state="PROPOSED"):
        approve_sire(store, "default", record.sire_id, by="user:curator", at=NOW)
    return store, settings


def assert_closed(engine: Engine, provider: ScriptedProvider, store: SQLiteStore) -> None:
    result = engine.ask("user:sam", "What is the nightly hotel limit?")
    assert result.output_state == "BLOCKED" and result.citations == []
    assert "180" not in result.answer and SECRET_DETAIL not in result.answer
    assert provider.requests == []
    entry = store.get_ledger("default", result.ledger_record_id)
    assert entry is not None and "AUTHORIZATION_FAILED" in entry.payload
    assert SECRET_DETAIL not in entry.payload
    with pytest.raises(AuthorizationError):
        engine.search("user:sam", "hotel")


@pytest.mark.invariant
def test_invariant_fail_closed_on_any_authorizer_exception(engine_parts: tuple) -> None:
    store, settings = engine_parts
    provider = ScriptedProvider(["The limit is 180 euros [src:00000000]."])
    wrapped = FailClosedAuthorizer(Raising(RuntimeError(SECRET_DETAIL)))
    assert_closed(Engine(store, settings, authorizer=wrapped, provider=provider), provider,
                  store)


@pytest.mark.invariant
def test_invariant_engine_wraps_every_authorizer_it_is_given(engine_parts: tuple) -> None:
    store, settings = engine_parts
    provider = ScriptedProvider(["The limit is 180 euros [src:00000000]."])
    engine = Engine(store, settings, authorizer=Raising(RuntimeError(SECRET_DETAIL)),
                    provider=provider)
    assert_closed(engine, provider, store)


def test_a_failing_store_closes_the_default_authorizer(engine_parts: tuple) -> None:
    store, settings = engine_parts

    class BrokenTuples(SQLiteStore):
        def list_tuples(self, tenant: str) -> Any:
            raise OSError(SECRET_DETAIL)

    broken = BrokenTuples(store.path)
    with pytest.raises(AuthorizationError) as info:
        StoreAuthorizer(broken, settings).context_for("default", "user:sam")
    assert SECRET_DETAIL not in str(info.value)
    broken.close()


def test_an_external_engine_plugs_in_without_touching_retrieval(engine_parts: tuple) -> None:
    # The same policy held by another authorizer gives the same results.
    store, settings = engine_parts
    external = StaticAuthorizer([parse_tuple(t) for t in POLICY], GRANTS, tenants=["default"])
    default = Engine(store, settings)
    plugged = Engine(store, settings, authorizer=FailClosedAuthorizer(external))
    for principal in ("user:sam", "user:eve"):
        assert default.search(principal, "hotel limit") == plugged.search(principal,
                                                                          "hotel limit")
    assert plugged.search("user:sam", "hotel limit")
    assert plugged.search("user:eve", "hotel limit") == []
    with pytest.raises(AuthorizationError):
        Engine(store, settings, tenant="nope",
               authorizer=FailClosedAuthorizer(external)).search("user:sam", "hotel")
