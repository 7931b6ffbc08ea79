"""How the local model labels a paragraph: by likelihood, never by what it writes.

A model of SmolLM2-135M's size does not reliably follow an instruction to answer in a
given format, and its choice among label *names* barely depends on the paragraph. What it
does well is predict text. So each description of each candidate label becomes a short
system prompt that asks for a paragraph on that topic (generated from the configured
labels), and the paragraph itself is the scored completion: a label's score is the
paragraph's log-likelihood under its likeliest description. This is the "channel"
direction of prompting, robust for small models because every label is scored on the same
text, so length and wording cancel out.

The model raises a paragraph only when the best label above the policy's default level
explains the paragraph at least ``RAISE_MARGIN`` nats better than the best label at or
below it; otherwise it has no opinion. RESTRICTED is never a candidate: that label
belongs to the deterministic rules. Scoring is greedy teacher forcing, with no sampling,
so the same paragraph always gets the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from affidavit.config.settings import RESTRICTED
from affidavit.llm.compiler import CompiledPrompt, load_template
from affidavit.llm.guard import GuardedProvider
from affidavit.llm.providers import ProviderRequest
from affidavit.policy.policy import SensitivityPolicy
from affidavit.records import sha256_hex, stable_hash

METHOD_VERSION = "label-likelihood-v1"

LIKELIHOOD_PROMPT = "You write one paragraph of a company document. Its topic: {description}."
"""Each candidate label's system prompt; ``{label}`` and ``{description}`` are filled in
(``[sensitivity.model] prompt`` replaces it)."""

REQUEST = "Write the paragraph."

DESCRIPTIONS: Mapping[str, tuple[str, ...]] = {
    "PUBLIC": ("news anyone may read",),
    "INTERNAL": ("ordinary work: meetings, schedules, offices, procedures",
                 "daily work: people, teams, places, events, training, rules",
                 "office life: rooms, equipment, events, safety, facilities"),
    "CONFIDENTIAL": ("business plans, contracts, deal terms",
                     "a secret deal: contract terms, an acquisition, a negotiation"),
    "PII": ("contact details: an e-mail address, a phone number, a street address",),
    "PII_SENSITIVE": ("a person's health, illness, medical treatment",),
    "FINANCIAL": ("money: a salary, pay, a bonus, prices, budgets, bank accounts",
                  "how much money someone is paid or owes: salary, wage, bonus, invoice, "
                  "budget"),
    "SECRET": ("passwords, keys, security flaws",),
}
"""Topics of the default labels. The default level has several, so that ordinary text of
many kinds finds one that fits it (a lone narrow description lets a broad sensitive one
win on everyday paragraphs). A configured label not listed here is described by its own
name (``TRADE_SECRET`` -> "trade secret")."""

RAISE_MARGIN = 2.0
"""Nats by which the best raising label must beat the best non-raising one: a paragraph is
raised only when that label's topic makes it about seven times likelier, so that a near
tie on an ordinary paragraph stays unraised."""

PIECE_CHARS = 1_200
"""A longer paragraph is judged in pieces of at most this many characters (at spaces),
the most severe answer winning, so that it always fits the model's context."""


def descriptions(label: str) -> tuple[str, ...]:
    """What a label's paragraphs are about, as the prompts say it."""
    return DESCRIPTIONS.get(label) or (label.replace("_", " ").replace("-", " ").casefold(),)


def candidate_labels(policy: SensitivityPolicy) -> tuple[str, ...]:
    """The labels the model chooses among: every configured one but RESTRICTED."""
    return tuple(label for label in policy.labels
                 if label.casefold() != RESTRICTED.casefold())


def label_prompts(policy: SensitivityPolicy, template: str = "") -> list[tuple[str, str]]:
    """(label, system prompt) for each description of each candidate label, in label
    order, from ``template`` (default: ours)."""
    chosen = template or LIKELIHOOD_PROMPT
    return [(label, chosen.replace("{label}", label).replace("{description}", topic))
            for label in candidate_labels(policy) for topic in descriptions(label)]


def prompts_identity(policy: SensitivityPolicy, template: str = "") -> str:
    """What the label epoch hashes for this method: its version, prompts and thresholds."""
    prompts = label_prompts(policy, template)
    return stable_hash(METHOD_VERSION, REQUEST, str(RAISE_MARGIN), str(PIECE_CHARS),
                       *(f"{label}={text}" for label, text in prompts))


def pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """``text`` cut into runs of at most ``size`` characters, at the last space if any."""
    found: list[str] = []
    rest = text.strip()
    while len(rest) > size:
        cut = rest.rfind(" ", 0, size + 1)
        cut = cut if cut > 0 else size
        found.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        found.append(rest)
    return found


def judge(provider: GuardedProvider, policy: SensitivityPolicy, texts: Sequence[str], *,
          template: str = "") -> list[str | None]:
    """One answer per text: the raising label the model finds likeliest, or None.

    Prompts are the outer loop so that consecutive calls share one (the local provider
    evaluates a prompt once and scores each text after it)."""
    prompts = label_prompts(policy, template)
    split = [pieces(text) for text in texts]
    scores: dict[str, list[list[float]]] = {}
    for label, system in prompts:
        request = ProviderRequest(prompt=_request(system))
        found = [[_total(provider, request, piece) for piece in run] for run in split]
        best = scores.get(label)
        # A label scores by its likeliest description.
        scores[label] = found if best is None else [
            [max(a, b) for a, b in zip(old, new, strict=True)]
            for old, new in zip(best, found, strict=True)]
    default = policy.severity(policy.default_level)
    raising = [label for label in scores if policy.severity(label) > default]
    keeping = [label for label in scores if policy.severity(label) <= default]
    answers: list[str | None] = []
    for position, run in enumerate(split):
        chosen: list[str] = []
        for piece in range(len(run)):
            raised = _raised(scores, position, piece, raising, keeping)
            if raised is not None:
                chosen.append(raised)
        answers.append(policy.most_severe(chosen) if chosen else None)
    return answers


def _raised(scores: Mapping[str, list[list[float]]], position: int, piece: int,
            raising: Sequence[str], keeping: Sequence[str]) -> str | None:
    if not raising or not keeping:
        return None
    # Ties go to the label listed first (the less severe): max() keeps the first maximum.
    best = max(raising, key=lambda label: scores[label][position][piece])
    floor = max(scores[label][position][piece] for label in keeping)
    return best if scores[best][position][piece] - floor >= RAISE_MARGIN else None


def _total(provider: GuardedProvider, request: ProviderRequest, completion: str) -> float:
    scored = provider.score(request, completion)
    return round(sum(value for value in scored.logprobs if value is not None), 6)


def _request(system: str) -> CompiledPrompt:
    text = f"{system}\n\n{REQUEST}"
    return CompiledPrompt(
        system=system, user=REQUEST, text=text, template_version=METHOD_VERSION,
        prompt_hash=sha256_hex(text.encode("utf-8")), zones=(), evidence=(), question="",
        role="authoritative", nonce=stable_hash(METHOD_VERSION, text)[:16],
        template=load_template())
