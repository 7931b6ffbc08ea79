"""Export the fine-tuned cross-encoder to the ``nli`` layer's files and calibrate it.

Reads the model directory ``training/train_nli_cross.py`` wrote and writes, into
``src/affidavit/answer/``:

* ``nli_cross.onnx``: the classifier exported to ONNX and its weights quantised to int8
  (``onnxruntime.quantization.quantize_dynamic``, per-channel scales, reduced range);
* ``nli_cross.tokenizer.json``: its word-piece tokenizer (that of all-MiniLM-L6-v2);
* ``nli_cross.json``: the label thresholds and the figures below.

Calibration uses ``shared/data/nli/dev.jsonl`` only, split in two by a hash of the claim:
each pair is scored the way the layer scores a claim (its premise split into sentences,
the premises :func:`affidavit.answer.verify.nli.premise_units` picks), the thresholds are chosen
on the *calibration* half and the figures reported on the *held* half. The support
threshold is the one with the best balanced accuracy of entailment against the rest; the
contradiction threshold the lowest whose CONTRADICT labels reach
:data:`CONTRADICT_PRECISION` precision. No SciFact claim is read here.

The plain three-way accuracy (whole premise, most probable label) on the held half is
printed for the torch model, the fp32 export and the int8 export; the int8 file ships only
if it loses at most :data:`INT8_TOLERANCE` against torch, else the script stops.

    python training/export_nli_cross.py --model /tmp/affidavit-nli-cross \\
        --data ../shared/data/nli --out src/affidavit/answer
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.answer.verify.nli import (
    MODEL_FILE,
    SETTINGS_FILE,
    TOKENIZER_FILE,
    CrossEncoder,
    Thresholds,
    decide,
    load_encoder,
    model_digest,
    premise_units,
    split_sentences,
)

LABEL_INDEX = {"entailment": 0, "contradiction": 1, "neutral": 2}
CONTRADICT_PRECISION = 0.9
"""A contradiction is reported only above the threshold that reached this precision on
the calibration half (a false CONTRADICT makes a true claim UNVERIFIED)."""
INT8_TOLERANCE = 0.01
GRID = tuple(round(0.01 * i, 2) for i in range(1, 100))


def read_pairs(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def in_calibration_half(hypothesis: str) -> bool:
    return hashlib.sha256(hypothesis.encode("utf-8")).digest()[0] % 2 == 0


def export(model_dir: Path, path: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()

    class Logits(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).logits

    sample = torch.ones((2, 16), dtype=torch.int64)
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad():
        torch.onnx.export(Logits(model), (sample, sample, torch.zeros_like(sample)), str(path),
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["logits"], opset_version=17,
                          dynamic_axes={"input_ids": axes, "attention_mask": axes,
                                        "token_type_ids": axes, "logits": {0: "batch"}},
                          dynamo=False)


def quantise(fp32: Path, int8: Path) -> None:
    from onnxruntime.quantization import (  # type: ignore[import-untyped]
        QuantType,
        quantize_dynamic,
    )

    # Per-channel scales with a 7-bit range: no u8*s8 saturation on CPUs without VNNI.
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=True)


def plain_accuracy(probabilities: np.ndarray, labels: np.ndarray) -> float:
    return float((probabilities.argmax(axis=1) == labels).mean())


def torch_probabilities(model_dir: Path, pairs: Sequence[dict[str, Any]]) -> np.ndarray:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(pairs), 32):
            part = pairs[start:start + 32]
            enc = tokenizer([p["premise"] for p in part], [p["hypothesis"] for p in part],
                            truncation="only_first", max_length=128, padding=True,
                            return_tensors="pt")
            out.append(torch.softmax(model(**enc).logits, dim=-1).numpy())
    return np.concatenate(out)


def onnx_probabilities(encoder: CrossEncoder, pairs: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.concatenate([encoder.probabilities([p["premise"]], p["hypothesis"])
                           for p in pairs])


def layer_scores(encoder: CrossEncoder, pairs: Sequence[dict[str, Any]]) -> np.ndarray:
    """(support, contradict) of each pair, read as the layer reads a claim."""
    rows = []
    for p in pairs:
        units = premise_units(p["hypothesis"], split_sentences(p["premise"]))
        probabilities = encoder.probabilities(units, p["hypothesis"])
        rows.append((probabilities[:, 0].max(), probabilities[:, 1].max()))
    return np.asarray(rows, dtype=np.float64)


def calibrate(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    entailed = labels == 0
    def balanced(t: float) -> float:
        said = scores[:, 0] >= t
        return float(0.5 * (said[entailed].mean() + (~said[~entailed]).mean()))
    support = max(GRID, key=lambda t: (balanced(t), -t))
    contradict = 0.99
    for t in GRID:
        said = (scores[:, 1] >= t) & (scores[:, 1] >= scores[:, 0])
        if said.sum() >= 20 and (labels[said] == 1).mean() >= CONTRADICT_PRECISION:
            contradict = t
            break
    return support, contradict


def figures(scores: np.ndarray, labels: np.ndarray, thresholds: Thresholds) -> dict[str, Any]:
    decided = np.array([["SUPPORT", "CONTRADICT", "NEUTRAL"].index(
        decide(s, c, thresholds)) for s, c in scores])
    supported = decided == 0
    entailed = labels == 0
    said_c = decided == 1
    return {
        "pairs": len(labels),
        "accuracy": round(float((decided == labels).mean()), 4),
        "support_balanced_accuracy": round(float(
            0.5 * (supported[entailed].mean() + (~supported[~entailed]).mean())), 4),
        "contradict_precision": round(float((labels[said_c] == 1).mean())
                                      if said_c.any() else 0.0, 4),
        "contradict_recall": round(float(said_c[labels == 1].mean()), 4),
    }


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/nli"))
    parser.add_argument("--out", type=Path, default=Path("src/affidavit/answer"))
    parser.add_argument("--limit", type=int, default=0, help="dev pairs per half (0: all)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")

    dev = read_pairs(args.data / "dev.jsonl")
    calib = [r for r in dev if in_calibration_half(r["hypothesis"])]
    held = [r for r in dev if not in_calibration_half(r["hypothesis"])]
    if args.limit:
        calib, held = calib[:args.limit], held[:args.limit]
    calib_y = np.array([LABEL_INDEX[r["label"]] for r in calib])
    held_y = np.array([LABEL_INDEX[r["label"]] for r in held])

    with tempfile.TemporaryDirectory(prefix="affidavit-nli-export-") as tmp:
        fp32, int8 = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        export(args.model, fp32)
        quantise(fp32, int8)
        tokenizer = args.model / "tokenizer.json"
        plain = {"torch fp32": plain_accuracy(torch_probabilities(args.model, held), held_y)}
        for name, path in (("onnx fp32", fp32), ("onnx int8", int8)):
            plain[name] = plain_accuracy(onnx_probabilities(load_encoder(path, tokenizer),
                                                            held), held_y)
        print(json.dumps({"held half, three-way accuracy (whole premise)": plain}), flush=True)
        if plain["torch fp32"] - plain["onnx int8"] > INT8_TOLERANCE:
            print("int8 loses too much against torch; nothing written", file=sys.stderr)
            return 1
        encoder = load_encoder(int8, tokenizer)
        start = time.perf_counter()
        calib_scores = layer_scores(encoder, calib)
        rate = len(calib) / (time.perf_counter() - start)
        support, contradict = calibrate(calib_scores, calib_y)
        thresholds = Thresholds(support, contradict, model_digest(int8))
        report = {
            "version": thresholds.version,
            "support_threshold": support,
            "contradict_threshold": contradict,
            "calibration": "half of shared/data/nli/dev.jsonl (sha256 of the claim, first "
                           "byte even); figures on the other half",
            "calibration_half": figures(calib_scores, calib_y, thresholds),
            "held_half": figures(layer_scores(encoder, held), held_y, thresholds),
            "held_half_plain_accuracy": {k: round(v, 4) for k, v in plain.items()},
            "training": json.loads((args.model / "training.json").read_text("utf-8")),
        }
        print(json.dumps(report, indent=2))
        print(f"{rate:.1f} dev pairs/s (one thread)")
        args.out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(int8, args.out / MODEL_FILE)
        shutil.copyfile(tokenizer, args.out / TOKENIZER_FILE)
        (args.out / SETTINGS_FILE).write_text(json.dumps(report, indent=2) + "\n",
                                              encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
