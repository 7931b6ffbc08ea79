"""Claim verification quality and speed on the SciFact dev claims.

Each claim cites one abstract; the abstract is the evidence item its citation points to.
A claim counts as *supported* when the verifier says VERIFIED. Labels: SUPPORT versus not
(CONTRADICT, NOINFO). Prints balanced accuracy, CONTRADICT recall (the share of CONTRADICT
claims not VERIFIED), the confusion matrix (label x status) and claims verified per second,
for L2 alone, with the trained entailment layer (``nli``: the int8 ONNX cross-encoder
``src/affidavit/answer/nli_cross.onnx``, fine-tuned from all-MiniLM-L6-v2 by
``training/train_nli_cross.py`` on the NLI data only, its thresholds calibrated on half of
NLI dev by ``training/export_nli_cross.py``, never on these claims; the ``nli`` extra) and
with the embedding layer (all-MiniLM-L6-v2 as the ``minilm`` vector backend runs it, when
the ``minilm`` extra is installed). Timings come with the load average: on a shared
machine the wall clock also counts other people's work.

The coverage threshold is also calibrated honestly: chosen on one half of the claims (even
claim ids) and reported on the other half (odd ids).

``--ceiling`` also prints an upper bound, not a result: the best balanced accuracy any
combination of the shipped signals reaches when every threshold (L2 coverage, the nli
support floor and contradiction cut, the embedding floor) is chosen on these same claims,
which the measurement forbids. It tells how far thresholds alone could go.

    python benchmarks/claim_verification.py [path/to/claims-dev.jsonl] [--no-embedding]
        [--no-nli] [--ceiling]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from affidavit.answer import SentenceEncoder, verify_claims
from affidavit.answer.verify.claims_check import embedding_layer
from affidavit.answer.verify.nli import NliVerifier, load_verifier
from affidavit.llm.claims import extract_claims
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.layers import LayerInput

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/scifact/claims-dev.jsonl"
SRC = "a1b2c3d4"
STATUSES = ("VERIFIED", "PARTIALLY_VERIFIED", "UNVERIFIED", "REFUSED")
LABELS = ("SUPPORT", "CONTRADICT", "NOINFO")
THRESHOLDS = tuple(round(0.40 + 0.05 * i, 2) for i in range(9))
Layers = dict[tuple[str, str], list[LayerInput]]
"""Each row's model-layer inputs, by :func:`key`."""


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def key(row: dict[str, Any]) -> tuple[str, str]:
    """A row's key: a claim id alone is not one (24 dev claims cite two or more abstracts,
    one row each)."""
    return row["claim_id"], row["doc_id"]


def evidence_of(row: dict[str, Any]) -> dict[str, EvidenceItem]:
    return {SRC: EvidenceItem(SRC, SRC + "0" * 56, row["doc_id"], "abstract", "",
                              " ".join(row["sentences"]), "PUBLIC")}


def claims_of(row: dict[str, Any]) -> Any:
    return extract_claims(f"{row['claim'].rstrip('. ')} [src:{SRC}].")


def status_of(row: dict[str, Any], threshold: float, layers: Sequence[LayerInput]) -> str:
    """The verifier's status for the claim, with the abstract as its cited evidence."""
    verdicts = verify_claims(claims_of(row), evidence_of(row), threshold=threshold,
                             layer_inputs=layers)
    # A claim the extractor splits is supported only if every part is.
    if all(v.status == "VERIFIED" for v in verdicts):
        return "VERIFIED"
    for status in STATUSES[1:]:
        if any(v.status == status for v in verdicts):
            return status
    return "UNVERIFIED"


def contradict_recall(rows: Sequence[dict[str, Any]], statuses: Sequence[str]) -> float:
    """Share of CONTRADICT claims the verifier does not pass as VERIFIED."""
    caught = [status != "VERIFIED" for row, status in zip(rows, statuses, strict=True)
              if row["label"] == "CONTRADICT"]
    return sum(caught) / len(caught) if caught else 0.0


def balanced_accuracy(rows: Sequence[dict[str, Any]], statuses: Sequence[str]) -> float:
    hits: Counter[bool] = Counter()
    totals: Counter[bool] = Counter()
    for row, status in zip(rows, statuses, strict=True):
        supported = row["label"] == "SUPPORT"
        totals[supported] += 1
        hits[supported] += (status == "VERIFIED") == supported
    return 0.5 * (hits[True] / totals[True] + hits[False] / totals[False])


def embed(rows: Sequence[dict[str, Any]],
          encoder: SentenceEncoder | None) -> tuple[Layers, float]:
    """The embedding layer of every claim (computed once: it does not depend on the
    threshold), and the seconds it took."""
    start = time.perf_counter()
    layers = {key(row): ([] if encoder is None else
                                [embedding_layer(claims_of(row), evidence_of(row), encoder)])
              for row in rows}
    return layers, time.perf_counter() - start


def entail(rows: Sequence[dict[str, Any]],
           verifier: NliVerifier) -> tuple[Layers, float, float]:
    """The nli layer of every claim, the seconds it took and the CPU seconds it used (on a
    shared machine the wall clock also counts other people's work)."""
    start, cpu = time.perf_counter(), time.process_time()
    # All claims in one call, as ``affidavit verify-claims`` checks a file: they are scored
    # side by side on one-thread sessions (each claim its own batch, so the same bytes).
    computed = verifier.layers([(claims_of(row), evidence_of(row)) for row in rows])
    layers = {key(row): [layer] for row, layer in zip(rows, computed, strict=True)}
    return layers, time.perf_counter() - start, time.process_time() - cpu


def run(rows: Sequence[dict[str, Any]], threshold: float,
        layers: Layers, extra_seconds: float = 0.0
        ) -> tuple[list[str], float]:
    start = time.perf_counter()
    statuses = [status_of(row, threshold, layers[key(row)]) for row in rows]
    return statuses, len(rows) / (time.perf_counter() - start + extra_seconds)


def report(name: str, rows: Sequence[dict[str, Any]], statuses: Sequence[str],
           rate: float) -> None:
    print(f"\n== {name}: {len(rows)} claims")
    print(f"balanced accuracy (SUPPORT vs not): {balanced_accuracy(rows, statuses):.3f}")
    print(f"CONTRADICT recall (not VERIFIED): {contradict_recall(rows, statuses):.3f}")
    print(f"claims verified per second: {rate:.1f}")
    matrix = Counter(zip((r["label"] for r in rows), statuses, strict=True))
    print(f"{'label':<11}" + "".join(f"{s:>20}" for s in STATUSES))
    for label in LABELS:
        print(f"{label:<11}" + "".join(f"{matrix[(label, s)]:>20}" for s in STATUSES))


def calibrate(rows: Sequence[dict[str, Any]], layers: Layers) -> None:
    """Pick the coverage threshold on even claim ids; report it on odd ones."""
    tune = [r for r in rows if int(r["claim_id"]) % 2 == 0]
    held = [r for r in rows if int(r["claim_id"]) % 2 == 1]
    scored = {t: balanced_accuracy(tune, run(tune, t, layers)[0]) for t in THRESHOLDS}
    best = max(THRESHOLDS, key=lambda t: (scored[t], -abs(t - 0.6)))
    statuses, rate = run(held, best, layers)
    report(f"threshold {best} chosen on {len(tune)} even-id claims "
           f"(tuning BA {scored[best]:.3f}), held-out odd ids", held, statuses, rate)


class MiniLM:
    """all-MiniLM-L6-v2 as the ``minilm`` vector backend runs it (the packaged int8 model)."""

    def __init__(self) -> None:
        from affidavit.index.minilm_onnx import MiniLMOnnxBackend, packaged_model

        self.backend = MiniLMOnnxBackend(packaged_model())
        self.backend.warm_up()

    def encode(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return [list(map(float, row)) for row in self.backend.embed_texts(list(texts))]


def minilm() -> MiniLM | str:
    """The encoder, or why it is unavailable."""
    from affidavit.errors import ConfigurationError

    try:
        return MiniLM()
    except ConfigurationError as exc:
        return str(exc)


COVERAGE_GRID = tuple(round(0.30 + 0.05 * i, 2) for i in range(11))
SUPPORT_GRID = tuple(round(0.05 * i, 2) for i in range(11))
CONTRADICT_GRID = (1.01, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4)
EMBEDDING_GRID = (0.0, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)


def ceiling(rows: Sequence[dict[str, Any]], verifier: NliVerifier | None,
            embedded: Layers | None) -> None:
    """The best balanced accuracy of "L2 passes at coverage c, the nli support is at least
    s, its contradiction below k, the embedding score at least e" over a grid of all four,
    chosen on ``rows`` themselves: an upper bound on what thresholds can do."""
    from affidavit.answer.verify.nli import split_sentences

    supported = [row["label"] == "SUPPORT" for row in rows]
    passes = {c: [status_of(row, c, []) == "VERIFIED" for row in rows] for c in COVERAGE_GRID}
    support, contradict, similar = [1.0] * len(rows), [0.0] * len(rows), [1.0] * len(rows)
    if verifier is not None:
        # Every claim part of every row in one call, side by side, as the benchmark's layer.
        owners = [(i, part.text, split_sentences(" ".join(row["sentences"])))
                  for i, row in enumerate(rows) for part in claims_of(row)]
        scored = verifier.score_many([(text, sentences) for _, text, sentences in owners])
        for (i, _, _), result in zip(owners, scored, strict=True):
            if result is not None:
                support[i] = min(support[i], result.support)
                contradict[i] = max(contradict[i], result.contradict)
    if embedded is not None:
        similar = [min(embedded[key(row)][0].scores.values(), default=1.0) for row in rows]

    def score(predicted: Sequence[bool]) -> float:
        pairs = list(zip(predicted, supported, strict=True))
        positives = sum(supported)
        return 0.5 * (sum(p and t for p, t in pairs) / positives
                      + sum(not p and not t for p, t in pairs) / (len(pairs) - positives))

    best: dict[str, tuple[float, tuple[float, ...]]] = {}
    for c in COVERAGE_GRID:
        for s in SUPPORT_GRID if verifier else (0.0,):
            for k in CONTRADICT_GRID if verifier else (1.01,):
                for e in EMBEDDING_GRID if embedded else (0.0,):
                    predicted = [p and su >= s and co < k and si >= e for p, su, co, si
                                 in zip(passes[c], support, contradict, similar, strict=True)]
                    signals = "+".join(n for n, on in (("L2", True), ("nli", s > 0 or k < 1),
                                                   ("embedding", e > 0)) if on)
                    figure = (round(score(predicted), 4), (c, s, k, e))
                    if figure[0] > best.get(signals, (-1.0, ()))[0]:
                        best[signals] = figure
    print("\n== upper bound: every threshold chosen on these same claims (not a result)")
    for signals, (value, (c, s, k, e)) in sorted(best.items(), key=lambda kv: -kv[1][0]):
        chosen = [f"coverage {c:.2f}"]
        if "nli" in signals:
            chosen.append(f"nli support >= {s:.2f}, contradiction "
                          + ("not used" if k > 1 else f"below {k:.2f}"))
        if "embedding" in signals:
            chosen.append(f"embedding >= {e:.2f}")
        print(f"{signals:<20} balanced accuracy {value:.3f} ({'; '.join(chosen)})")


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="The SciFact dev claims are expected at ../shared/data/scifact by default.")
    parser.add_argument("claims", nargs="?", type=Path, default=DEFAULT_DATA,
                        help=f"claims-dev.jsonl (default: {DEFAULT_DATA})")
    parser.add_argument("--no-embedding", action="store_true",
                        help="do not load the sentence encoder (the slow transformer)")
    parser.add_argument("--no-nli", action="store_true",
                        help="do not run the trained entailment layer")
    parser.add_argument("--ceiling", action="store_true",
                        help="also print the best balanced accuracy of any threshold "
                             "combination chosen on these claims (an upper bound)")
    args = parser.parse_args(argv[1:])
    path = args.claims
    rows = load(path)
    print(f"{path}: {len(rows)} claims, labels {dict(Counter(r['label'] for r in rows))}")
    plain, _ = embed(rows, None)
    statuses, rate = run(rows, 0.6, plain)
    report("L2 (atoms, coverage 0.6, polarity)", rows, statuses, rate)
    calibrate(rows, plain)
    if not args.no_nli:
        verifier = load_verifier()
        if isinstance(verifier, str):
            print(f"\n== L2 + nli: unavailable ({verifier})")
        else:
            entailed, seconds, cpu = entail(rows, verifier)
            statuses, rate = run(rows, 0.6, entailed, seconds)
            report(f"L2 + nli (cross-encoder; support >= {verifier.thresholds.support:.2f},"
                   f" contradict >= {verifier.thresholds.contradict:.2f})",
                   rows, statuses, rate)
            print(f"nli layer alone: {len(rows) / seconds:.1f} claims/s "
                  f"({len(rows) / cpu:.1f} claims per CPU second; load average "
                  f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
            calibrate(rows, entailed)
    embedded: Layers | None = None
    if not args.no_embedding:
        encoder = minilm()
        if isinstance(encoder, str):
            print(f"\n== L2 + embedding: unavailable ({encoder})")
        else:
            embedded, seconds = embed(rows, encoder)
            statuses, rate = run(rows, 0.6, embedded, seconds)
            report("L2 + embedding (all-MiniLM-L6-v2, floor 0.5)", rows, statuses, rate)
            calibrate(rows, embedded)
    if args.ceiling:
        verifier = None if args.no_nli else load_verifier()
        ceiling(rows, verifier if isinstance(verifier, NliVerifier) else None, embedded)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
