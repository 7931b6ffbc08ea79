"""The RESTRICTED guard: the one check every provider call passes.

Two exits upstream (rerank, context assembly) already drop RESTRICTED chunks; this guard is
the last line, at the provider boundary. It refuses a request when an evidence item is
labelled RESTRICTED, or when the prompt contains a fragment of any RESTRICTED text, however
it got there (pasted into another chunk, quoted in the question, carried in a title).

Fragments are compared after normalization that keeps only letters and digits, casefolded,
so that spacing, case, punctuation and the compiler's escapes cannot hide a match. Every
sentence of at least 20 such characters is a fragment; a sentence longer than 40 is cut into
40-character windows at a stride of 20 (plus one window ending at its last character), so
any copied run of 59 or more characters of a long sentence is caught. Shorter texts carry
too little signal to tell apart from ordinary prose and are not fragments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from affidavit.errors import AffidavitError, GovernanceError, ProviderError, RestrictedContentError
from affidavit.llm.attribution import TokenScores
from affidavit.llm.providers import (
    LLMProvider,
    ProviderRequest,
    ProviderResponse,
    ScoringProvider,
    StreamingProvider,
    strip_think_blocks,
)
from affidavit.llm.representation import RepresentingProvider
from affidavit.llm.text import _sentence_spans

T = TypeVar("T")

MIN_FRAGMENT = 20
WINDOW = 40
STRIDE = 20


def normalize_for_match(text: str) -> str:
    """Letters and digits only, casefolded: the form fragments are compared in."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


class RestrictedGuard:
    """Refuses any request that would show RESTRICTED text to a model.

    ``allowed_labels``, when given, is the declared model egress: evidence of any other
    label is refused too (the texts of such chunks belong in ``restricted_texts``).
    """

    def __init__(self, restricted_texts: Iterable[str], restricted_label: str = "RESTRICTED",
                 *, allowed_labels: Iterable[str] | None = None):
        self.restricted_label = restricted_label.casefold()
        self.allowed_labels = (None if allowed_labels is None
                               else frozenset(label.casefold() for label in allowed_labels))
        fragments: dict[int, set[str]] = {}
        for text in restricted_texts:
            for fragment in _fragments(text):
                fragments.setdefault(len(fragment), set()).add(fragment)
        self._fragments = {size: frozenset(found) for size, found in sorted(fragments.items())}

    @property
    def fragment_count(self) -> int:
        """How many distinct fragments the guard compares against."""
        return sum(len(found) for found in self._fragments.values())

    def check(self, request: ProviderRequest) -> None:
        """Raise :class:`RestrictedContentError` if ``request`` carries RESTRICTED content."""
        prompt = request.prompt
        for item in prompt.evidence:
            if item.label.casefold() == self.restricted_label:
                raise RestrictedContentError(
                    f"evidence [src:{item.src}] is labelled {item.label}; it may not reach a model"
                )
            if self.allowed_labels is not None and item.label.casefold() not in self.allowed_labels:
                raise RestrictedContentError(
                    f"evidence [src:{item.src}] is labelled {item.label}, outside the declared "
                    "model egress")
        if prompt.text != f"{prompt.system}\n\n{prompt.user}":
            raise GovernanceError("the prompt text does not match its system and user parts")
        if self._contains_fragment(normalize_for_match(prompt.text)):
            raise RestrictedContentError("the prompt contains text from RESTRICTED content")

    def check_text(self, text: str) -> None:
        """Raise :class:`RestrictedContentError` if ``text`` (a completion sent back to a
        model for scoring) carries a fragment of RESTRICTED text."""
        if self._contains_fragment(normalize_for_match(text)):
            raise RestrictedContentError("the text contains text from RESTRICTED content")

    def _contains_fragment(self, text: str) -> bool:
        for size, fragments in self._fragments.items():
            for start in range(len(text) - size + 1):
                if text[start : start + size] in fragments:
                    return True
        return False


def _fragments(text: str) -> list[str]:
    fragments: list[str] = []
    for start, end in _sentence_spans(text):
        sentence = normalize_for_match(text[start:end])
        if len(sentence) < MIN_FRAGMENT:
            continue
        if len(sentence) <= WINDOW:
            fragments.append(sentence)
            continue
        fragments.extend(sentence[i : i + WINDOW] for i in range(0, len(sentence) - WINDOW, STRIDE))
        fragments.append(sentence[-WINDOW:])
    return fragments


class GuardedProvider:
    """An :class:`LLMProvider` that runs the guard before every call to the wrapped one.

    The wrapped provider is held in a name-mangled slot and no method reaches it except
    :meth:`generate`, :meth:`stream`, :meth:`score` and :meth:`represent`, each of which
    checks first; a
    missing guard is refused at construction. Provider faults become
    :class:`ProviderError`.
    """

    __slots__ = ("__guard", "__inner")

    def __init__(self, inner: LLMProvider, guard: RestrictedGuard) -> None:
        if not isinstance(guard, RestrictedGuard):
            raise GovernanceError("a provider cannot be built without the RESTRICTED guard")
        self.__inner = inner
        self.__guard = guard

    @property
    def name(self) -> str:
        """The wrapped provider's name."""
        return self.__inner.name

    @property
    def model_id(self) -> str:
        """The wrapped provider's model id."""
        return self.__inner.model_id

    @property
    def can_score(self) -> bool:
        """Whether the wrapped provider can score completions (L1, contrastive Δ)."""
        return isinstance(self.__inner, ScoringProvider)

    @property
    def can_stream(self) -> bool:
        """Whether the wrapped provider streams natively."""
        return isinstance(self.__inner, StreamingProvider)

    @property
    def can_represent(self) -> bool:
        """Whether the wrapped provider can read its model's hidden states (L4)."""
        return isinstance(self.__inner, RepresentingProvider)

    def generate(self, request: ProviderRequest) -> ProviderResponse:
        """Check ``request`` with the guard, then generate."""
        self.__guard.check(request)
        return self._call(lambda: self.__inner.generate(request))

    def stream(self, request: ProviderRequest) -> Iterator[str]:
        """Check ``request`` now (not at the first ``next``), then stream visible text.

        A provider that cannot stream yields its whole visible answer as one delta.
        """
        self.__guard.check(request)
        inner = self.__inner
        if isinstance(inner, StreamingProvider):
            return self._guarded_iter(inner.stream(request))
        response = self._call(lambda: inner.generate(request))
        return iter([strip_think_blocks(response.text)])

    def score(self, request: ProviderRequest, completion: str) -> TokenScores:
        """Check the prompt and the completion, then score the completion."""
        self.__guard.check(request)
        self.__guard.check_text(completion)
        inner = self.__inner
        if not isinstance(inner, ScoringProvider):
            raise ProviderError(f"provider {self.name!r} cannot score completions")
        return self._call(lambda: inner.score(request, completion))

    def represent(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Check every text, then read the model's hidden states for each."""
        for text in texts:
            self.__guard.check_text(text)
        inner = self.__inner
        if not isinstance(inner, RepresentingProvider):
            raise ProviderError(f"provider {self.name!r} exposes no hidden states")
        return self._call(lambda: inner.represent(texts))

    def _call(self, call: Callable[[], T]) -> T:
        try:
            return call()
        except AffidavitError:
            raise
        except Exception as exc:
            raise ProviderError(f"provider {self.name!r} failed: {type(exc).__name__}") from exc

    def _guarded_iter(self, deltas: Iterator[str]) -> Iterator[str]:
        while (delta := self._call(lambda: next(deltas, None))) is not None:
            yield delta
