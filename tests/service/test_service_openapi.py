"""The committed OpenAPI document is the one the code generates."""

from __future__ import annotations

import json
from pathlib import Path

from affidavit.cli.main import main
from affidavit.service.openapi import default_document

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_committed_openapi_document_matches_the_code() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == default_document(), (
        "docs/openapi.json is stale: run `python -m affidavit.service.openapi`")


def test_openapi_document_is_3_1_with_every_core_endpoint_and_bearer_auth() -> None:
    document = json.loads(default_document())
    assert document["openapi"].startswith("3.1")
    assert {"/v1/query", "/v1/query/stream", "/v1/search", "/v1/ledger/{request_id}",
            "/v1/ledger/{request_id}/claims",
            "/v1/ledger/{request_id}/verify"} <= set(document["paths"])
    assert document["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    query = document["paths"]["/v1/query"]["post"]
    assert "application/problem+json" in query["responses"]["401"]["content"]


def test_serve_print_openapi_prints_the_committed_document(
        capsys: object, tmp_path: Path, monkeypatch: object) -> None:
    import pytest

    assert isinstance(capsys, pytest.CaptureFixture)
    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--print-openapi"]) == 0
    assert capsys.readouterr().out == COMMITTED.read_text(encoding="utf-8")
