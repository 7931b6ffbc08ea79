"""Fitting a compiled prompt and its answer into a model's context window.

A self-hosted model has a fixed window (SmolLM2 2,048 tokens, many llama.cpp servers 4,096):
a prompt that does not leave room for the answer is cut or refused by the server, often
after a long wait. So before the call, the prompt's length is estimated and, when prompt
plus ``max_tokens`` exceeds the window, the lowest-ranked evidence is dropped first, one
item at a time, and the prompt compiled again; what was dropped is said in the ledger. When
not even one item of evidence fits, the request fails at once with a message naming the
settings to change.

The estimate is deliberately pessimistic (:data:`CHARS_PER_TOKEN` characters per token,
fewer than English prose averages), since an estimate that is too low is the failure that
matters; a deployment whose server reports token counts can lower it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from affidavit.errors import ConfigurationError

CHARS_PER_TOKEN = 3.0
"""Characters per token assumed when estimating (English averages about 4)."""

T = TypeVar("T")


def estimated_tokens(text: str) -> int:
    """A pessimistic token count of ``text``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Fitted:
    """The evidence kept, how many of the lowest-ranked items were dropped, the estimate."""

    kept: int
    dropped: int
    prompt_tokens: int

    def to_record(self) -> dict[str, int]:
        return {"evidence_kept": self.kept, "evidence_dropped": self.dropped,
                "estimated_prompt_tokens": self.prompt_tokens}


def fit_evidence(evidence: Sequence[T], render: Callable[[Sequence[T]], str], *,
                 context_window: int, max_tokens: int) -> tuple[Sequence[T], Fitted]:
    """The longest prefix of ``evidence`` (ranked best first) whose rendered prompt leaves
    ``max_tokens`` of the window; :class:`ConfigurationError` when even one item does not.
    ``context_window`` 0 means the window is unknown: everything is kept."""
    if context_window <= 0:
        return evidence, Fitted(len(evidence), 0, estimated_tokens(render(evidence)))
    budget = context_window - max_tokens
    for keep in range(len(evidence), 0, -1):
        tokens = estimated_tokens(render(evidence[:keep]))
        if tokens <= budget:
            return evidence[:keep], Fitted(keep, len(evidence) - keep, tokens)
    smallest = estimated_tokens(render(evidence[:1]))
    raise ConfigurationError(
        f"the prompt with even one evidence item needs about {smallest} tokens, and the "
        f"answer {max_tokens} more, but the model's window is {context_window}: raise "
        "[provider] context_window (the server's context size), lower [provider] "
        "max_tokens, or use smaller chunks ([chunking] max_chars)", key="provider")
