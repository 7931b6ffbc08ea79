"""The trained entailment layer (``nli``): does the cited evidence SUPPORT a claim,
CONTRADICT it, or say nothing decisive (NEUTRAL)?

A cross-encoder reads (evidence, claim) together and gives the three probabilities: the
all-MiniLM-L6-v2 transformer fine-tuned as a three-way classifier by
``training/train_nli_cross.py`` on ``shared/data/nli`` only, exported to ONNX with int8
weights (``nli_cross.onnx``) by ``training/export_nli_cross.py``, which also calibrated the
label thresholds (``nli_cross.json``) on half of the NLI dev split. It runs with ONNX
Runtime and the ``tokenizers`` package (the ``nli`` extra), never torch; without them the
layer is recorded unavailable, never an error.

Evidence is read the way the model was trained to read it, a few sentences at a time: the
cited sentences sharing most content terms with the claim (ties to the earlier sentence),
joined in their original order, are one premise, so a fact stated across two sentences is
still seen whole and a long abstract costs no more than a short one (the best of them can
also be read alone, :data:`SINGLE_PREMISES`). The claim's support is the highest SUPPORT
probability of any premise and its contradiction the highest CONTRADICT probability. The
premises of one claim are one batch of their own (int8 activations are scaled per batch),
so a claim's scores do not depend on the other claims checked with it: the same inputs
give the same scores on one machine. ONNX Runtime picks its kernels by CPU (AVX2, AVX-512),
so another kind of CPU can differ in the last bits, and a claim scored right at a threshold
can take the other label there; a ledger replay feeds verification the scores its record
logged and never runs the model again, so a record replays the same anywhere.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from affidavit.llm.claims import Claim
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.layers import NLI, LayerInput
from affidavit.llm.text import _sentence_spans, content_terms
from affidavit.util.onnx import SessionPool, file_digest

MODEL_FILE = "nli_cross.onnx"
TOKENIZER_FILE = "nli_cross.tokenizer.json"
SETTINGS_FILE = "nli_cross.json"
SUPPORT, CONTRADICT, NEUTRAL = "SUPPORT", "CONTRADICT", "NEUTRAL"
CLASSES = (SUPPORT, CONTRADICT, NEUTRAL)
"""The model's output order."""
MAX_LENGTH = 128
"""Word-pieces of one (premise, claim) input, the premise cut first (as in training)."""
SELECTED_SENTENCES = 3
"""Cited sentences read per claim: the ones sharing most content terms with it."""
SINGLE_PREMISES = 0
"""Of those, how many are also read alone as premises of their own. None: with the shipped
model, on the calibration half of NLI dev the joined premise alone did as well (support
balanced accuracy 0.8035 against 0.8031 with the best sentence also read alone, and more
contradictions found) at three quarters of the CPU. A claim that quotes a sentence word
for word is supported by :func:`_quoted` without the model."""
THREADS = 2
"""ONNX Runtime threads of the session that scores one claim (idle threads sleep rather
than spin, so a busy machine loses nothing to them)."""
WORKERS = 2
"""One-thread sessions that score several claims side by side."""
EXTRA = "install the 'nli' extra: pip install 'affidavit[nli]'"

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Thresholds:
    """The calibrated label thresholds (see :func:`decide`)."""

    support: float
    contradict: float
    version: str


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


class CrossEncoder:
    """The ONNX model and its tokenizer: (premise, claim) pairs to probabilities.

    One claim's premises run on :data:`THREADS` threads; several claims side by side on
    :data:`WORKERS` one-thread sessions (:class:`~affidavit.util.onnx.SessionPool`). A
    claim is still one batch of its own, so its bytes are the same on either path.
    """

    def __init__(self, sessions: SessionPool, tokenizer: Any) -> None:
        self.sessions = sessions
        self.tokenizer = tokenizer
        self._names = {i.name for i in sessions.session.get_inputs()}
        self._lock = threading.Lock()

    def probabilities(self, premises: Sequence[str], claim: str) -> Matrix:
        """Rows of (SUPPORT, CONTRADICT, NEUTRAL) probabilities, one per premise."""
        return self._run(self.sessions.session, (premises, claim))

    def probabilities_many(self, jobs: Sequence[tuple[Sequence[str], str]]) -> list[Matrix]:
        """:meth:`probabilities` of each (premises, claim), in order, run side by side."""
        return self.sessions.map(self._run, jobs)

    def _run(self, session: Any, job: tuple[Sequence[str], str]) -> Matrix:
        premises, claim = job
        if not premises:
            return np.zeros((0, 3), dtype=np.float32)
        with self._lock:  # the Rust tokenizer is shared; keep one caller at a time
            encoded = self.tokenizer.encode_batch([(p, claim) for p in premises])
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encoded):
            ids[row, :len(e.ids)] = e.ids
            mask[row, :len(e.ids)] = 1
            types[row, :len(e.ids)] = e.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        logits = np.asarray(session.run(
            None, {k: v for k, v in feed.items() if k in self._names})[0], dtype=np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        out: Matrix = (exp / exp.sum(axis=1, keepdims=True)).astype(np.float32)
        return out


class NliVerifier:
    """Scores claims against evidence text with the cross-encoder."""

    def __init__(self, encoder: CrossEncoder, thresholds: Thresholds) -> None:
        self.encoder = encoder
        self.thresholds = thresholds

    def score(self, claim: str, sentences: Sequence[str]) -> NliScore | None:
        """The claim against its selected premises; ``None`` without evidence."""
        return self.score_many([(claim, sentences)])[0]

    def score_many(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[NliScore | None]:
        """:meth:`score` of each (claim, sentences), in order; claims run side by side."""
        out: list[NliScore | None] = [None] * len(items)
        pending: list[tuple[int, list[str], str]] = []
        for position, (claim, sentences) in enumerate(items):
            premises = premise_units(claim, sentences)
            if not premises or not claim.strip():
                continue
            if _quoted(claim, premises):
                # A claim that is one of its evidence's sentences word for word is what the
                # evidence says; the model's reading of short quotes (a heading, a
                # fragment) is the least reliable part of it, and must not lower a
                # verbatim quote.
                out[position] = NliScore(SUPPORT, 1.0, 0.0, len(premises))
                continue
            pending.append((position, premises, claim))
        matrices = self.encoder.probabilities_many([(p, c) for _, p, c in pending])
        for (position, premises, _), probabilities in zip(pending, matrices, strict=True):
            support = round(float(probabilities[:, 0].max()), 6)
            contradict = round(float(probabilities[:, 1].max()), 6)
            out[position] = NliScore(decide(support, contradict, self.thresholds), support,
                                     contradict, len(premises))
        return out

    def layer(self, claims: Sequence[Claim], evidence: Mapping[str, EvidenceItem]) -> LayerInput:
        """The ``nli`` layer input: per claim, its SUPPORT probability and label. Only the
        evidence a claim cites is read, and only numbers and labels are recorded."""
        return self.layers([(claims, evidence)])[0]

    def layers(self, answers: Sequence[tuple[Sequence[Claim], Mapping[str, EvidenceItem]]]
               ) -> list[LayerInput]:
        """:meth:`layer` of each (claims, evidence), all their claims run side by side."""
        items: list[tuple[str, list[str]]] = []
        owners: list[tuple[int, int]] = []
        for position, (claims, evidence) in enumerate(answers):
            by_src = {src.lower(): item for src, item in evidence.items()}
            for claim in claims:
                sentences = [sentence for src in claim.citations if src in by_src
                             for sentence in split_sentences(by_src[src].text)]
                items.append((claim.text, sentences))
                owners.append((position, claim.index))
        scores: list[dict[int, float]] = [{} for _ in answers]
        details: list[dict[int, str]] = [{} for _ in answers]
        labels: list[dict[int, str]] = [{} for _ in answers]
        for (position, index), result in zip(owners, self.score_many(items), strict=True):
            if result is None:
                continue
            scores[position][index] = result.support
            details[position][index] = result.detail
            labels[position][index] = result.label
        return [LayerInput(NLI, scores[i], details[i], labels=labels[i])
                for i in range(len(answers))]


def _quoted(claim: str, premises: Sequence[str]) -> bool:
    """Whether the claim is one of the premises' sentences, ignoring case, spacing and
    the closing punctuation."""
    wanted = _plain(claim)
    return bool(wanted) and any(_plain(sentence) == wanted for premise in premises
                                for sentence in split_sentences(premise))


def _plain(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".!?;: ")


def decide(support: float, contradict: float, thresholds: Thresholds) -> str:
    """The label: a confident contradiction first, then support above its threshold."""
    if contradict >= thresholds.contradict and contradict >= support:
        return CONTRADICT
    if support >= thresholds.support:
        return SUPPORT
    return NEUTRAL


def split_sentences(text: str) -> list[str]:
    """The sentences of an evidence text, as the L2 layers split them."""
    return [text[s:e].strip() for s, e in _sentence_spans(text) if text[s:e].strip()]


def premise_units(claim: str, sentences: Sequence[str]) -> list[str]:
    """The premises a claim is read against: the :data:`SELECTED_SENTENCES` sentences
    sharing most content terms with it, the first :data:`SINGLE_PREMISES` of them alone,
    and all of them joined in their original order when there are several."""
    units = [s.strip() for s in sentences if s.strip()]
    if len(units) <= 1:
        return units
    wanted = set(content_terms(claim))
    overlap = [len(wanted & set(content_terms(s))) for s in units]
    ranked = sorted(range(len(units)), key=lambda i: (-overlap[i], i))[:SELECTED_SENTENCES]
    joined = " ".join(units[i] for i in sorted(ranked))
    return [*(units[i] for i in ranked[:SINGLE_PREMISES]), joined]


def load_encoder(model: Path, tokenizer_file: Path, threads: int = THREADS) -> CrossEncoder:
    """The cross-encoder from its files; :class:`ImportError` without the ``nli`` extra."""
    tokenizers = importlib.import_module("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    # Longest first: the premise is cut while it is the longer side, exactly as "only
    # first" would for an ordinary claim, and a claim longer than the window is cut too
    # instead of failing the whole check.
    tokenizer.enable_truncation(max_length=MAX_LENGTH, strategy="longest_first")
    return CrossEncoder(SessionPool(model, threads=threads, workers=WORKERS), tokenizer)


def read_thresholds(path: Path) -> Thresholds:
    """The thresholds ``training/export_nli_cross.py`` calibrated."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return Thresholds(support=float(data["support_threshold"]),
                      contradict=float(data["contradict_threshold"]),
                      version=str(data["version"]))


_LOADED: dict[str, NliVerifier | str] = {}
_LOAD_LOCK = threading.Lock()


def load_verifier() -> NliVerifier | str:
    """The packaged verifier, or why it is unavailable (loaded once per process)."""
    with _LOAD_LOCK:
        if "verifier" not in _LOADED:
            _LOADED["verifier"] = _load()
        return _LOADED["verifier"]


def _load() -> NliVerifier | str:
    folder = Path(str(resources.files("affidavit.answer")))
    files = [folder / name for name in (MODEL_FILE, TOKENIZER_FILE, SETTINGS_FILE)]
    missing = [path.name for path in files if not path.is_file()]
    if missing:
        return f"the trained model is not installed ({', '.join(missing)} missing)"
    thresholds = read_thresholds(files[2])
    if thresholds.version != model_digest(files[0]):
        return f"{SETTINGS_FILE} was calibrated for another {MODEL_FILE}"
    try:
        return NliVerifier(load_encoder(files[0], files[1]), thresholds)
    except ImportError as exc:
        return f"the nli layer needs the nli extra ({exc.name or exc}); {EXTRA}"


def model_digest(path: Path) -> str:
    """The model file's digest (:func:`~affidavit.util.onnx.file_digest`): the thresholds
    name the model they were calibrated for."""
    return file_digest(path)


def nli_input(claims: Sequence[Claim], evidence: Mapping[str, EvidenceItem]) -> LayerInput:
    """The ``nli`` layer for an answer's claims, or the layer recorded unavailable."""
    verifier = load_verifier()
    if isinstance(verifier, str):
        return LayerInput.missing(NLI, verifier)
    if not claims:
        return LayerInput.missing(NLI, "the answer has no claims")
    return checked_layer(verifier, claims, evidence)


def nli_inputs(answers: Sequence[tuple[Sequence[Claim], Mapping[str, EvidenceItem]]]
               ) -> list[LayerInput]:
    """:func:`nli_input` of each (claims, evidence), their claims run side by side. When
    the runtime fails on the whole set, each answer is tried alone, so one bad input makes
    only its own layer unavailable."""
    verifier = load_verifier()
    if isinstance(verifier, str):
        return [LayerInput.missing(NLI, verifier) for _ in answers]
    try:
        layers = verifier.layers([a for a in answers if a[0]])
    except Exception:  # retried one by one below, each failure recorded on its own
        return [nli_input(claims, evidence) for claims, evidence in answers]
    found = iter(layers)
    return [next(found) if claims else LayerInput.missing(NLI, "the answer has no claims")
            for claims, _ in answers]


def checked_layer(verifier: NliVerifier, claims: Sequence[Claim],
                  evidence: Mapping[str, EvidenceItem]) -> LayerInput:
    """The verifier's layer, or the layer recorded unavailable when the runtime fails on
    this input: like a model layer whose provider fails, it then lowers nothing and says
    so, rather than ending the whole check. Only the error's type is recorded, since a
    runtime's message may quote the text it was given."""
    try:
        return verifier.layer(claims, evidence)
    except Exception as exc:  # any runtime failure is reported, not raised
        return LayerInput.missing(NLI, f"the nli model failed on this input "
                                       f"({type(exc).__name__})")
