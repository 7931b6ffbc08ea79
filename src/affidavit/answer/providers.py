"""Language-model providers: the protocol, the offline extractive default and a scripted
double for tests.

Every provider is called through :class:`affidavit.answer.guard.GuardedProvider`, never
directly: that is where RESTRICTED text is refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from affidavit.answer.citations import LOOSE_SRC_PATTERN
from affidavit.answer.compiler import CompiledPrompt
from affidavit.answer.text import _sentence_spans, content_terms, normalize_space
from affidavit.errors import InputRejected, ProviderError

_THINK_BLOCK = re.compile(r"<think\b[^>]*>.*?</think\s*>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<think\b[^>]*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class ProviderRequest:
    """One generation request: the compiled prompt and how long the answer may be."""

    prompt: CompiledPrompt
    max_sentences: int = 4

    def __post_init__(self) -> None:
        if self.max_sentences < 1:
            raise InputRejected("INVALID_MAX_SENTENCES", "max_sentences must be at least 1")


@dataclass(frozen=True)
class ProviderResponse:
    """What a provider returned, raw (think blocks and fabricated tags still in place)."""

    text: str
    model_id: str
    token_logprobs: tuple[float, ...] | None = None
    finish_reason: str = "stop"


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


class ExtractiveProvider:
    """Offline, deterministic, no model: answers with the evidence sentences that share the
    most content terms with the question, verbatim (whitespace collapsed), each followed by
    its ``[src:ID]`` tag, in evidence order. No overlap at all gives an empty answer."""

    name = "extractive"
    model_id = "extractive-v1"

    def __init__(self, max_sentences: int = 4) -> None:
        if max_sentences < 1:
            raise InputRejected("INVALID_MAX_SENTENCES", "max_sentences must be at least 1")
        self.max_sentences = max_sentences

    def generate(self, request: ProviderRequest) -> ProviderResponse:
        """Pick and cite the best-matching evidence sentences."""
        limit = min(self.max_sentences, request.max_sentences)
        chosen = _best_sentences(request.prompt, limit)
        text = " ".join(f"{sentence} [src:{src}]" for _, _, sentence, src in chosen)
        return ProviderResponse(text=text, model_id=self.model_id)


def _best_sentences(prompt: CompiledPrompt, limit: int) -> list[tuple[int, int, str, str]]:
    wanted = set(content_terms(prompt.question))
    scored: list[tuple[int, int, int, str, str]] = []
    seen: set[str] = set()
    for rank, item in enumerate(prompt.evidence):
        spans = _sentence_spans(item.text)
        for position, (start, end) in enumerate(spans):
            raw = item.text[start:end].strip()
            if raw.startswith(("#", "|")):  # headings and table rows are not statements
                continue
            if raw.endswith((":", "：")) and position + 1 < len(spans):
                # A sentence that introduces a list means nothing without the list.
                end = spans[position + 1][1]
            sentence = normalize_space(LOOSE_SRC_PATTERN.sub("", item.text[start:end]))
            score = len(wanted & set(content_terms(sentence)))
            if score and sentence.casefold() not in seen:
                seen.add(sentence.casefold())
                scored.append((-score, rank, position, sentence, item.src))
    best = sorted(scored)[:limit]
    return sorted((rank, position, sentence, src) for _, rank, position, sentence, src in best)


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
