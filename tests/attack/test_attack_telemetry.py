"""Attacks on telemetry: spans, metrics and access logs travel to systems outside the
permission model, so the identifiers in them are hashed. A hash anyone can recompute is no
stand-in for a guessable value (a principal's name, a file's path): reading the telemetry
and hashing a guess would confirm it."""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Iterator

import pytest

from affidavit.observability.traces import id_hash
from tests.service.conftest import Deployment, RunningService, build_deployment

GUESSES = ("user:sam", "board/minutes.md", "canary")


def _public_recipes(value: str) -> set[str]:
    """What someone with the source code but without the deployment's key can compute."""
    data = value.encode()
    return {hashlib.sha256(b"affidavit-telemetry:" + data).hexdigest()[:16],
            hashlib.sha256(data).hexdigest()[:16],
            hmac.new(b"", data, hashlib.sha256).hexdigest()[:16]}


@pytest.fixture(scope="module")
def telemetry_deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    return build_deployment(tmp_path_factory.mktemp("attack-telemetry"))


@pytest.fixture(scope="module")
def telemetry_service(telemetry_deployment: Deployment) -> Iterator[RunningService]:
    with telemetry_deployment.serve() as running:
        yield running


def test_a_telemetry_hash_cannot_be_recomputed_from_a_guess() -> None:
    for guess in GUESSES:
        assert id_hash(guess) not in _public_recipes(guess), guess
        # The hash is keyed: stable under one key, unrelated under another.
        assert id_hash(guess, key=b"one") == id_hash(guess, key=b"one")
        assert id_hash(guess, key=b"one") != id_hash(guess, key=b"two")


def test_the_access_log_does_not_confirm_a_guessed_principal(
        telemetry_service: RunningService, telemetry_deployment: Deployment,
        caplog: pytest.LogCaptureFixture) -> None:
    with (caplog.at_level(logging.INFO, logger="affidavit.access"),
          telemetry_service.client(telemetry_deployment.keys["sam"]) as client):
        assert client.post("/v1/search", json={"query": "travel"}).status_code == 200
        # The server logs the request after its response has gone: wait for the record.
        deadline = time.monotonic() + 10
        while (not any(r.name == "affidavit.access" for r in caplog.records)
               and time.monotonic() < deadline):
            time.sleep(0.02)
    hashes = {str(getattr(r, "principal_hash", "")) for r in caplog.records
              if r.name == "affidavit.access"}
    assert hashes - {""}, "the access log names the caller by a hash"
    assert not hashes & _public_recipes("user:sam")
