"""Language-model providers: the protocol, the offline extractive default and a scripted
double for tests.

Every provider is called through :class:`affidavit.llm.guard.GuardedProvider`, never
directly: that is where RESTRICTED text is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from affidavit.errors import InputRejected, ProviderError
from affidavit.llm.attribution import TokenScores
from affidavit.llm.compiler import CompiledPrompt
from affidavit.llm.extractive import choose, render
from affidavit.llm.relevance import evidence_texts, question_coverage

_THINK_BLOCK = re.compile(r"<think\b[^>]*>.*?</think\s*>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<think\b[^>]*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class ProviderRequest:
    """One generation request: the compiled prompt and how long the answer may be.

    ``temperature`` overrides the provider's configured one (stability draws sample at a
    temperature above zero); ``None`` keeps the provider's.
    """

    prompt: CompiledPrompt
    max_sentences: int = 4
    temperature: float | None = None

    def __post_init__(self) -> None:
        if self.max_sentences < 1:
            raise InputRejected("INVALID_MAX_SENTENCES", "max_sentences must be at least 1")
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise InputRejected("INVALID_TEMPERATURE", "temperature must be in [0, 2]")


@dataclass(frozen=True)
class ProviderResponse:
    """What a provider returned, raw (think blocks and fabricated tags still in place).

    ``tokens`` and ``token_logprobs`` are parallel when the provider returned
    log-probabilities; the tokens concatenate to ``text``.
    """

    text: str
    model_id: str
    token_logprobs: tuple[float, ...] | None = None
    finish_reason: str = "stop"
    tokens: tuple[str, ...] | None = None

    def token_scores(self) -> TokenScores | None:
        """The returned log-probabilities over ``text``, when there are any."""
        if self.tokens is None or self.token_logprobs is None:
            return None
        return TokenScores.from_tokens(self.tokens, self.token_logprobs)


@runtime_checkable
class LLMProvider(Protocol):
    """A text generator. Implementations do I/O; nothing else in answering does."""

    @property
    def name(self) -> str: ...

    @property
    def model_id(self) -> str: ...

    def generate(self, request: ProviderRequest) -> ProviderResponse:
        """Generate a response to ``request.prompt``."""
        ...


@runtime_checkable
class StreamingProvider(LLMProvider, Protocol):
    """A provider that can hand out the visible answer while it is generated."""

    def stream(self, request: ProviderRequest) -> Iterator[str]:
        """Visible text deltas (think blocks already removed), in order."""
        ...


@runtime_checkable
class ScoringProvider(LLMProvider, Protocol):
    """A provider that can score a given completion after a prompt (L1, contrastive Δ)."""

    def score(self, request: ProviderRequest, completion: str) -> TokenScores:
        """Log-probabilities of ``completion``'s tokens after ``request.prompt``; offsets
        are relative to the start of ``completion``."""
        ...


def strip_think_blocks(text: str) -> str:
    """Remove reasoning traces: ``<think>...</think>`` blocks, an unterminated ``<think>``
    tail, and a leading trace whose opening tag the server already consumed."""
    text = _THINK_BLOCK.sub("", text)
    opened = _THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    closed = list(_THINK_CLOSE.finditer(text))
    if closed:
        text = text[closed[-1].end() :]
    return text.strip()


_PARTIAL_OPEN = re.compile(r"<(?:t(?:h(?:i(?:n(?:k(?:\b[^>]*)?)?)?)?)?)?$", re.IGNORECASE)
_PARTIAL_CLOSE = re.compile(r"<(?:/(?:t(?:h(?:i(?:n(?:k\s*)?)?)?)?)?)?$", re.IGNORECASE)


class ThinkStreamFilter:
    """Removes think blocks from a stream of text deltas, whatever the delta boundaries.

    Text that may still turn out to be the start of a ``<think>`` or ``</think>`` tag is
    held back until a later delta decides; an unterminated block swallows the rest of the
    stream, as :func:`strip_think_blocks` does. Leading whitespace of the visible text is
    dropped. A closing tag with no opening one (a server that consumed the opening tag)
    cannot un-send what was already streamed: :attr:`orphan_close` says it happened, so
    the consumer can invalidate the streamed text; the verified answer is always built
    from the full response.
    """

    def __init__(self) -> None:
        self._pending = ""
        self._inside = False
        self._started = False
        self.orphan_close = False

    def feed(self, delta: str) -> str:
        """The visible text that ``delta`` releases (possibly empty)."""
        self._pending += delta
        released: list[str] = []
        while self._pending:
            if self._inside:
                closing = _THINK_CLOSE.search(self._pending)
                if closing is None:
                    tail = _PARTIAL_CLOSE.search(self._pending)
                    self._pending = tail.group() if tail else ""
                    break
                self._pending = self._pending[closing.end() :]
                self._inside = False
                continue
            opening = _THINK_OPEN.search(self._pending)
            if opening is not None:
                released.append(self._pending[: opening.start()])
                self._pending = self._pending[opening.end() :]
                self._inside = True
                continue
            tail = _PARTIAL_OPEN.search(self._pending) or _PARTIAL_CLOSE.search(self._pending)
            cut = tail.start() if tail else len(self._pending)
            released.append(self._pending[:cut])
            self._pending = self._pending[cut:]
            break
        return self._visible("".join(released))

    def close(self) -> str:
        """Whatever was held back at the end of the stream and is not inside a block."""
        rest = "" if self._inside else self._pending
        self._pending = ""
        return self._visible(rest)

    def _visible(self, text: str) -> str:
        if _THINK_CLOSE.search(text):
            self.orphan_close = True
            text = _THINK_CLOSE.sub("", text)
        if not self._started:
            text = text.lstrip()
            self._started = bool(text)
        return text


class ExtractiveProvider:
    """Offline, deterministic, no model: answers with the evidence that answers the question
    (:mod:`affidavit.llm.extractive`: sentences, table rows said with their headers, list
    items, chosen by the question's terms and numbers), each followed by its ``[src:ID]``
    tag, in evidence order. No match at all gives an empty answer; evidence that does not
    cover the question's key terms gives a refusal, never unrelated quotes."""

    name = "extractive"
    model_id = "extractive-v2"

    def __init__(self, max_sentences: int = 4) -> None:
        if max_sentences < 1:
            raise InputRejected("INVALID_MAX_SENTENCES", "max_sentences must be at least 1")
        self.max_sentences = max_sentences

    def generate(self, request: ProviderRequest) -> ProviderResponse:
        """Choose and cite the evidence that answers the question."""
        limit = min(self.max_sentences, request.max_sentences)
        prompt = request.prompt
        chosen = choose(prompt.question, prompt.evidence, limit)
        coverage = question_coverage(prompt.question, evidence_texts(prompt.evidence))
        if chosen and coverage.uncovered:
            # The question's own words, never the evidence: a refusal quotes nothing.
            missing = ", ".join(coverage.words)
            text = f"The evidence does not address this question (nothing on: {missing})."
            return ProviderResponse(text=text, model_id=self.model_id)
        return ProviderResponse(text=render(chosen), model_id=self.model_id)


class ScriptedProvider:
    """A test double: returns canned responses in turn and records every request it got."""

    name = "scripted"

    def __init__(self, responses: Sequence[str | ProviderResponse],
                 model_id: str = "scripted-v1") -> None:
        self.model_id = model_id
        self._responses = list(responses)
        self.requests: list[ProviderRequest] = []

    def generate(self, request: ProviderRequest) -> ProviderResponse:
        """The next canned response; :class:`ProviderError` when none is left."""
        self.requests.append(request)
        if not self._responses:
            raise ProviderError("scripted provider has no response left")
        response = self._responses.pop(0)
        if isinstance(response, ProviderResponse):
            return response
        return ProviderResponse(text=response, model_id=self.model_id)
