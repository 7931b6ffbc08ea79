"""The optional model-assisted paragraph classifier (spec 004), through the guarded provider.

What it may see and do:

* Paragraphs the deterministic rules already made RESTRICTED are never sent: they are left
  out of every window, and the provider call passes a :class:`RestrictedGuard` built from
  their text as well, so a copy of them elsewhere is refused too.
* A document is cut into windows of about ``window_chars`` characters at page boundaries
  (a page-less document: at paragraph boundaries), consecutive windows sharing their last
  ``overlap_pages`` pages; where windows overlap, the more severe answer wins.
* Its answer can only raise a paragraph's label: it becomes one more signal of
  :func:`~affidavit.policy.labels.classify_paragraphs` (``extra=``), which keeps the most
  severe; an unknown label or a malformed answer is no opinion.
* Its prompt is generated from the configured labels (or ``[sensitivity.model] prompt``);
  the model id and the prompt's hash are part of the label epoch and of every version's
  witness, so changing either relabels the corpus.

Two ways to ask, by ``[sensitivity.model] provider``: an OpenAI-compatible server
(``openai``) is asked for a JSON object per window; the in-process local model
(``local``) ranks the labels by how likely each window paragraph is under each label's
topic (:mod:`affidavit.classify.likelihood`), which a small model does reliably.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from affidavit.classify import likelihood
from affidavit.config.settings import (
    RESTRICTED,
    LocalModelSettings,
    ModelClassifierSettings,
    ProviderSettings,
)
from affidavit.errors import ConfigurationError
from affidavit.llm.compiler import CompiledPrompt, load_template
from affidavit.llm.guard import GuardedProvider, RestrictedGuard
from affidavit.llm.providers import LLMProvider, ProviderRequest
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import ExtractedDocument, ParagraphLabel, sha256_hex, stable_hash

PROMPT_VERSION = "paragraph-labels-v1"
OPENAI = "openai"
LOCAL = "local"

DEFAULT_PROMPT = (
    "You label paragraphs of one document by sensitivity. The labels, least severe first, "
    "are: {labels}. For each numbered paragraph that contains sensitive content no keyword "
    "names (pay, salaries, health, deal terms, personal details), give the least severe "
    "label that covers it; leave out paragraphs with nothing sensitive. Answer with one "
    'JSON object only, mapping paragraph numbers to labels, e.g. {{"12": "FINANCIAL"}}.')

LABEL_SOURCES = ("declared", "inherited", "detector", "keyword", "model", "override",
                 "default")
_SOURCE_OF_REASON = {"declared": "declared", "inherited": "inherited",
                     "detector": "detector", "keyword": "keyword",
                     "restricted_keyword": "keyword", "filename": "keyword",
                     "classifier": "model", "override": "override", "default": "default",
                     "escalated": "default"}


def label_sources(reasons: Sequence[str]) -> tuple[str, ...]:
    """Where a paragraph's label came from, by its recorded reasons (a filename pattern
    counts as a keyword rule; ``default`` is no signal at all)."""
    found = {_SOURCE_OF_REASON.get(r.split(":", 1)[0], "default") for r in reasons}
    return tuple(s for s in LABEL_SOURCES if s in found)


def system_prompt(policy: SensitivityPolicy, settings: ModelClassifierSettings) -> str:
    """The classifier's instructions, generated from the configured labels."""
    template = settings.prompt or DEFAULT_PROMPT
    return template.replace("{labels}", ", ".join(policy.labels)).replace(
        "{{", "{").replace("}}", "}")


def classifier_identity(settings: ModelClassifierSettings, policy: SensitivityPolicy
                        ) -> tuple[str, str]:
    """(model id, prompt hash) of the configured classifier; ("none", "none") when off."""
    if not settings.enabled:
        return "none", "none"
    windows = (str(settings.window_chars), str(settings.overlap_pages))
    if settings.provider == LOCAL:
        from affidavit.llm.local import LocalProvider

        model = LocalProvider(LocalModelSettings(model_path=settings.model)).model_id
        return model, stable_hash(LOCAL, likelihood.prompts_identity(policy, settings.prompt),
                                  *windows)[:16]
    prompt = system_prompt(policy, settings)
    return settings.model, stable_hash(PROMPT_VERSION, prompt, *windows)[:16]


def page_windows(pages: Sequence[int | None], lengths: Sequence[int], *, window_chars: int,
                 overlap_pages: int) -> list[list[int]]:
    """Positions of each window: whole pages (runs of one page number; a paragraph with no
    page is a page of its own) up to ``window_chars``, the next window starting
    ``overlap_pages`` pages before the previous one ended (always at least one page later
    than it started). A page longer than a window is a window of its own."""
    units: list[list[int]] = []
    for position, page in enumerate(pages):
        if units and page is not None and pages[units[-1][-1]] == page:
            units[-1].append(position)
        else:
            units.append([position])
    size = [sum(lengths[p] for p in unit) for unit in units]
    windows: list[list[int]] = []
    start = 0
    while start < len(units):
        end, total = start, size[start]
        while end + 1 < len(units) and total + size[end + 1] <= window_chars:
            end += 1
            total += size[end]
        windows.append([p for unit in units[start:end + 1] for p in unit])
        if end == len(units) - 1:
            break
        start = max(start + 1, end + 1 - overlap_pages)
    return windows


@dataclass
class ModelParagraphClassifier:
    """Asks a model about a document's paragraphs, window by window; see the module."""

    provider: LLMProvider
    policy: SensitivityPolicy
    settings: ModelClassifierSettings

    @classmethod
    def from_settings(cls, settings: ModelClassifierSettings,
                      policy: SensitivityPolicy) -> ModelParagraphClassifier | None:
        if not settings.enabled:
            return None
        if settings.provider == LOCAL:
            from affidavit.llm.local import LocalProvider

            # Greedy scoring: the provider's temperature is never used.
            return cls(LocalProvider(LocalModelSettings(model_path=settings.model)), policy,
                       settings)
        if settings.provider != OPENAI:
            raise ConfigurationError(
                f"[sensitivity.model] provider must be {OPENAI!r} or {LOCAL!r}, not "
                f"{settings.provider!r}")
        from affidavit.llm.openai import OpenAIProvider

        provider = OpenAIProvider(ProviderSettings(
            base_url=settings.base_url, model=settings.model, api_key_env=settings.api_key_env,
            timeout_seconds=settings.timeout_seconds, max_retries=settings.max_retries,
            temperature=0.0, logprobs=False))
        return cls(provider, policy, settings)

    @property
    def identity(self) -> tuple[str, str]:
        return classifier_identity(self.settings, self.policy)

    def classify_document(self, doc: ExtractedDocument,
                          labels: Sequence[ParagraphLabel]) -> tuple[str | None, ...]:
        """One answer per paragraph (None: no opinion), for ``classify_paragraphs(extra=)``;
        ``labels`` are the deterministic labels, whose RESTRICTED paragraphs are never sent."""
        restricted = {i for i, label in enumerate(labels)
                      if label.label.casefold() == RESTRICTED.casefold()}
        texts = [doc.paragraph_text(p) for p in doc.paragraphs]
        shown = [i for i in range(len(texts)) if i not in restricted and texts[i].strip()]
        answers: list[str | None] = [None] * len(texts)
        if not shown:
            return tuple(answers)
        guard = RestrictedGuard([texts[i] for i in sorted(restricted)])
        guarded = GuardedProvider(self.provider, guard)
        system = system_prompt(self.policy, self.settings)
        windows = page_windows([doc.paragraphs[i].page for i in shown],
                               [len(texts[i]) for i in shown],
                               window_chars=self.settings.window_chars,
                               overlap_pages=self.settings.overlap_pages)
        for window in windows:
            positions = [shown[w] for w in window]
            for position, label in self._ask(guarded, system, doc, texts, positions):
                before = answers[position]
                # Where windows overlap, the more severe answer wins.
                answers[position] = label if before is None else self.policy.most_severe(
                    [before, label])
        return tuple(answers)

    def _ask(self, guarded: GuardedProvider, system: str, doc: ExtractedDocument,
             texts: Sequence[str], positions: Sequence[int]) -> list[tuple[int, str]]:
        """(position, label) answers of one window's paragraphs."""
        if self.settings.provider == LOCAL:
            judged = likelihood.judge(guarded, self.policy, [texts[p] for p in positions],
                                      template=self.settings.prompt)
            return [(p, label) for p, label in zip(positions, judged, strict=True)
                    if label is not None]
        numbered = {doc.paragraphs[p].index: p for p in positions}
        user = "\n\n".join(f"[{doc.paragraphs[p].index}] {texts[p]}" for p in positions)
        response = guarded.generate(ProviderRequest(prompt=_prompt(system, user)))
        return [(numbered[number], label)
                for number, label in _parsed(response.text, self.policy).items()
                if number in numbered]


def _prompt(system: str, user: str) -> CompiledPrompt:
    text = f"{system}\n\n{user}"
    return CompiledPrompt(
        system=system, user=user, text=text, template_version=PROMPT_VERSION,
        prompt_hash=sha256_hex(text.encode("utf-8")), zones=(), evidence=(),
        question="", role="authoritative", nonce=stable_hash(PROMPT_VERSION, text)[:16],
        template=load_template())


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _parsed(text: str, policy: SensitivityPolicy) -> dict[int, str]:
    """The answer's paragraph -> label pairs with a known label; anything else is no
    opinion (the model's answer is untrusted input)."""
    match = _OBJECT.search(text)
    if match is None:
        return {}
    try:
        data = json.loads(match.group(0))
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    parsed: dict[int, str] = {}
    for key, value in data.items():
        if isinstance(value, str) and policy.is_known(value) and str(key).strip().isdigit():
            parsed[int(str(key).strip())] = policy.canonical(value)
    return parsed
