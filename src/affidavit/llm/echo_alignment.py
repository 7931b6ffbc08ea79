"""Whether a completions server's echoed prompt log-probabilities line up with the prompt's
tokens, and what to put before a prompt so that they do.

Scoring a completion (L1, contrastive Δ) relies on the echo trick: ``POST /completions``
with ``echo: true, logprobs: k`` returns every prompt token with ``log P(token | the tokens
before it)``. Not every server gets this right. llama-cpp-python's server (0.3.x) reads
each echoed token's value from the distribution one position too late when the prompt
does not start with the model's beginning-of-sequence token (it only drops a leading one),
so every number is wrong while looking plausible. Wrong numbers would pass for evidence
influence, so they must never be used.

The probe, run once per provider (base URL and model), needs no knowledge of the model:
two fixed texts (:data:`PROBE_TEXTS`) agree up to one word. Both are sent with echo and
the top :data:`PROBE_TOP` log-probabilities per token. A causal model's distribution for
a token depends only on the tokens before it, so on an aligned server

* the distributions reported at the first token where the texts differ are the same in
  both answers (their contexts are the same), and
* the distributions at the token after it differ (one context holds each word).

A server one position late already differs at the first differing token; one early (or
one reporting no context-dependent distribution) is still the same at the next one. The
probe tries the empty prefix first, then common spellings of a beginning-of-sequence
token (:data:`SCORING_PREFIXES`), in that order, and keeps the first prefix under which
the server is aligned; when none aligns, or the server gives no per-token distributions
to compare, prompts cannot be scored and the reason says why.

Cost, once per provider: two short requests on an aligned server; on llama-cpp-python's
server with SmolLM2, seven (a spelling its tokenizer splits into several tokens is
dropped after one request).

The probe also learns where the server counts character offsets from: a
beginning-of-sequence token the server recognizes is echoed without text, so offsets
start after the prefix rather than at the start of the text sent.

The probe texts are constants: no prompt, evidence or answer text is ever part of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PROBE_TEXTS = ("The capital of France is Paris.", "The capital of France is London.")
"""The two probe texts: the same words but one, all ASCII (one character per offset)."""
PROBE_TOP = 5
"""Top log-probabilities asked per echoed token (the most the OpenAI API allows)."""
SCORING_PREFIXES = ("", "<s>", "<|begin_of_text|>", "<bos>", "<|im_start|>",
                    "<|endoftext|>", "<|startoftext|>")
"""Tried in this order: none, then the beginning-of-sequence spellings of common model
families (Llama 2 and Mistral, Llama 3, Gemma, SmolLM2, GPT-2 and Qwen, others). A
spelling the server's tokenizer does not know is plain text and leaves it unaligned."""
_UNREADABLE = "unreadable answer: "
NO_DISTRIBUTIONS = "no per-token log-probability distributions in the echo"
SAME_TOLERANCE = 1e-3
"""Nats: two reported log-probabilities within this are the same number (one server
computing one context twice; batch shapes may change the last digits)."""


@dataclass(frozen=True)
class EchoAlignment:
    """How to score prompts on one server: the prefix put before every scored prompt and
    ``offset_shift``, added to the server's character offsets to get offsets in the text
    sent. ``unavailable`` says why prompts cannot be scored (empty when they can)."""

    prefix: str = ""
    offset_shift: int = 0
    unavailable: str = ""


@dataclass(frozen=True)
class _Echo:
    tokens: tuple[str, ...]
    offsets: tuple[int, ...]
    tops: tuple[Mapping[str, float] | None, ...]


Post = Callable[[dict[str, Any]], Mapping[str, Any]]
"""Sends one ``/completions`` request body and returns the server's JSON answer; a
transport failure or refusal raises (and is not a conclusion about alignment)."""


def probe_alignment(post: Post, model: str) -> EchoAlignment:
    """The first scoring prefix under which the server's echo is aligned, or why none is."""
    tried: list[str] = []
    for prefix in SCORING_PREFIXES:
        found = _try_prefix(post, model, prefix)
        if isinstance(found, EchoAlignment):
            return found
        tried.append(f"{prefix or 'no prefix'}: {found}")
        if found.startswith(_UNREADABLE):
            break  # the shape of an answer does not depend on the prefix
    return EchoAlignment(unavailable=(
        "the server's echoed prompt log-probabilities cannot be shown to line up with the "
        "prompt's tokens (" + "; ".join(tried) + ")"))


def _try_prefix(post: Post, model: str, prefix: str) -> EchoAlignment | str:
    echoes: list[_Echo] = []
    for text in PROBE_TEXTS:
        answer = _read(post({"model": model, "prompt": prefix + text, "echo": True,
                             "logprobs": PROBE_TOP, "max_tokens": 1, "temperature": 0.0}))
        if isinstance(answer, str):
            return f"{_UNREADABLE}{answer}"
        if prefix and len(echoes) == 0 and (_probe_start(answer, text) or 0) > 1:
            # Spelled as several tokens, the prefix is plain text to this server, not the
            # one token that could change how it reads a prompt: the twin is not asked.
            return "not a single token to the server"
        echoes.append(answer)
    return _check(prefix, echoes[0], echoes[1])


def _read(data: Mapping[str, Any]) -> _Echo | str:
    """The echoed tokens, their character offsets and distributions, or what is wrong."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return "no choices in the answer"
    block = choices[0].get("logprobs")
    if not isinstance(block, Mapping):
        return "no log-probabilities in the answer"
    tokens = block.get("tokens")
    tops = block.get("top_logprobs")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        return "no echoed tokens"
    if not isinstance(tops, list) or len(tops) != len(tokens):
        return NO_DISTRIBUTIONS
    offsets = block.get("text_offset")
    if offsets is None:
        offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
    if (not isinstance(offsets, list) or len(offsets) != len(tokens)
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
        return "malformed character offsets"
    read_tops: list[Mapping[str, float] | None] = []
    for top in tops:
        if top is None:
            read_tops.append(None)
        elif isinstance(top, Mapping) and all(
                isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
                for k, v in top.items()):
            read_tops.append({k: float(v) for k, v in top.items()})
        else:
            return "malformed top log-probabilities"
    return _Echo(tuple(tokens), tuple(offsets), tuple(read_tops))


def _check(prefix: str, first: _Echo, second: _Echo) -> EchoAlignment | str:
    """The alignment under ``prefix`` given the answers for both probe texts, or why the
    server is not aligned under it."""
    start = _probe_start(first, PROBE_TEXTS[0])
    if start is None or _probe_start(second, PROBE_TEXTS[1]) != start:
        return "the echoed tokens do not spell the probe text"
    differ = next((i for i, (a, b) in enumerate(zip(first.tokens, second.tokens, strict=False))
                   if a != b), None)
    if differ is None or differ <= start or differ + 1 >= min(len(first.tokens),
                                                             len(second.tokens)):
        return "the echoed tokens do not spell the probe text"
    at = _same(first.tops[differ], second.tops[differ])
    after = _same(first.tops[differ + 1], second.tops[differ + 1])
    if at is None or after is None:
        return NO_DISTRIBUTIONS
    if not at:
        return "each token is reported with the distribution of the position after it"
    if after:
        return "each token is reported with the distribution of a position before it"
    return EchoAlignment(prefix=prefix, offset_shift=len(prefix) - first.offsets[start])


def _probe_start(echo: _Echo, text: str) -> int | None:
    """The index of the token the probe text starts with, when the echo spells the text
    from a token boundary and the server's offsets count its characters."""
    ends = [0]
    for token in echo.tokens:
        ends.append(ends[-1] + len(token))
    found = "".join(echo.tokens).find(text)
    if found < 0 or found not in ends[:-1]:
        return None
    start = ends.index(found)
    base = echo.offsets[start]
    for index in range(start, len(echo.tokens)):
        if ends[index] - found >= len(text):
            break
        if echo.offsets[index] - base != ends[index] - found:
            return None
    return start


def _same(first: Mapping[str, float] | None, second: Mapping[str, float] | None) -> bool | None:
    """Whether two reported distributions are the same (their :data:`PROBE_TOP` likeliest
    tokens and values); ``None`` when either is missing."""
    if not first or not second:
        return None
    a, b = _likeliest(first), _likeliest(second)
    return a.keys() == b.keys() and all(abs(a[k] - b[k]) <= SAME_TOLERANCE for k in a)


def _likeliest(top: Mapping[str, float]) -> dict[str, float]:
    # A server may add the echoed token itself to its top list; it is never likelier than
    # the ones the list holds unless it is one of them, so the PROBE_TOP likeliest are the
    # model's own top, the same whichever token was echoed.
    ranked: Sequence[tuple[str, float]] = sorted(top.items(), key=lambda kv: (-kv[1], kv[0]))
    return dict(ranked[:PROBE_TOP])
