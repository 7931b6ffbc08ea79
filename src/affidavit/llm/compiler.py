"""The CFPO prompt compiler: deterministic assembly of the governed prompt.

``compile_prompt`` places every evidence item in a zone and renders the zones in the
mandatory order Content, Format, Policy, Output:

* **Zone of an item** (:func:`classify_zone`) comes from its metadata and text markers only,
  never from the question. The advisory role moves normative (policy) evidence into the
  Content zone as informational context.
* **Order within a zone** is the given (ranked) order, with one exception, *context
  placement*: in the Policy zone the highest-ranked item is moved to the end, so that the
  strongest authority sits nearest the generation boundary. Ranked policy items
  ``p1, p2, ..., pn`` are rendered ``p2, ..., pn, p1``.
* **Authority constraints** are restated at the end of the Policy zone, after its evidence;
  the Output zone, with the exact emission format, is always last.
* **Delimiters**: each evidence item and the question sit in their own block, opened and
  closed by ``<<...>>`` markers that carry a per-prompt nonce (a hash of the template
  version, role, question and evidence, so the same inputs give the same bytes). Inside
  evidence and question text, ``<<``/``>>`` become ``‹‹``/``››``, citation-like tags become
  ``[src\\:``, and any line that imitates a zone header is prefixed with ``\\``: evidence
  can neither close its block, nor open a zone, nor forge a citation tag.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from affidavit.errors import InputRejected
from affidavit.llm.atoms import CLAUSE_ID_PATTERN
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.template import PromptTemplate, load_template
from affidavit.llm.text import clean_control_chars, normalize_space
from affidavit.records import sha256_hex, stable_hash

__all__ = [
    "ROLES",
    "ZONES",
    "CompiledPrompt",
    "PromptTemplate",
    "classify_zone",
    "compile_prompt",
    "load_template",
]

ZONES = ("content", "format", "policy", "output")
ROLES = ("authoritative", "advisory")
MAX_QUESTION_CHARS = 8_000

_NORMATIVE = re.compile(r"\b(?:shall|must)\b|\b(?:is|are|be)\s+required\s+to\b", re.IGNORECASE)
_NORMATIVE_UPPER = re.compile(r"\bREQUIRED\b")
_DEFINITION_HEADING = re.compile(r"\b(?:definitions?|glossary|terminology|schemas?|taxonomy)\b",
                                 re.IGNORECASE)
_DEFINITION_TEXT = re.compile(
    r"[\"“'‘][^\"”'’\n]{1,80}[\"”'’]\s+(?:means|refers\s+to|is\s+defined\s+as)\b"
    r"|\b(?:is|are)\s+defined\s+as\b"
    r"|(?m:(?:^|(?<=[.;]\s))(?!(?:This|That|It|Which|What)\b)[A-Z][\w\-]*(?:\s+[\w\-]+){0,5}"
    r"\s+means\b)"
)
_OUTPUT_HEADING = re.compile(
    r"\b(?:response\s+)?templates?\b|\bresponse\s+format\b|\boutput\s+(?:format|schema)\b",
    re.IGNORECASE,
)
_OUTPUT_TEXT = re.compile(r"(?im)^\s*(?:response\s+format|response\s+template|template)\s*:")

_HEADER_WORDS = (
    r"(?:content|format|policy|output|system|user|assistant|developer|question|evidence"
    r"|instructions?|authority\s+constraints)"
)
_DECORATION = r"[\s#=*_\-:\[\]<>|.0-9]*"
_HEADER_LIKE = re.compile(
    rf"^\s*#|^{_DECORATION}(?:zone\s*)?{_HEADER_WORDS}(?:\s+zone)?{_DECORATION}$"
    r"|^\s*(?:system|assistant|user|developer)\s*:",
    re.IGNORECASE,
)
_SRC_LIKE = re.compile(r"\[(\s*)src(\s*):", re.IGNORECASE)


@dataclass(frozen=True)
class CompiledPrompt:
    """What a model is given: ``text`` is ``system + "\\n\\n" + user``, hashed into
    ``prompt_hash``. ``evidence`` keeps the given (ranked) order, each item with its zone;
    ``zones`` lists ``(src, zone)`` in the order the blocks appear in the prompt."""

    system: str
    user: str
    text: str
    template_version: str
    prompt_hash: str
    zones: tuple[tuple[str, str], ...]
    evidence: tuple[EvidenceItem, ...]
    question: str
    role: str
    nonce: str
    template: PromptTemplate = field(repr=False)

    @property
    def src_ids(self) -> tuple[str, ...]:
        """The citation ids a response may use."""
        return tuple(item.src for item in self.evidence)

    def without_evidence(self) -> CompiledPrompt:
        """The same prompt (same nonce, instructions and question) with no evidence blocks."""
        return _assemble(self.question, (), role=self.role, template=self.template,
                         nonce=self.nonce)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ledger (the full text, the zone map, the template version)."""
        return {
            "template_version": self.template_version,
            "prompt_hash": self.prompt_hash,
            "role": self.role,
            "nonce": self.nonce,
            "question": self.question,
            "zones": [list(pair) for pair in self.zones],
            "evidence": [item.to_dict() for item in self.evidence],
            "system": self.system,
            "user": self.user,
        }


def classify_zone(item: EvidenceItem) -> str:
    """The CFPO zone of an evidence item, from its metadata and text markers alone.

    Precedence: a template/response-format heading or ``Template:`` line -> ``output``;
    a definitions/glossary/schema heading -> ``format``; normative language (shall, must,
    REQUIRED, "is required to") or a clause id (CC6.1, § 164.312, Article 32, Section 4.2)
    -> ``policy``; a definition in the text ("X" means, is defined as) -> ``format``;
    anything else -> ``content``.
    """
    headings = " / ".join((item.title, *item.heading_path))
    if _OUTPUT_HEADING.search(headings) or _OUTPUT_TEXT.search(item.text):
        return "output"
    if _DEFINITION_HEADING.search(headings):
        return "format"
    if (_NORMATIVE.search(item.text) or _NORMATIVE_UPPER.search(item.text)
            or CLAUSE_ID_PATTERN.search(item.text)):
        return "policy"
    if _DEFINITION_TEXT.search(item.text):
        return "format"
    return "content"


def compile_prompt(
    question: str,
    evidence: Sequence[EvidenceItem],
    *,
    role: str,
    template: PromptTemplate | None = None,
) -> CompiledPrompt:
    """Compile the governed prompt for ``question`` over ranked ``evidence``."""
    template = template or load_template()
    _validate(question, evidence, role)
    zoned = tuple(item.with_zone(_zone_for(item, role)) for item in evidence)
    nonce = _nonce(question, zoned, role, template)
    return _assemble(question, zoned, role=role, template=template, nonce=nonce)


def _validate(question: str, evidence: Sequence[EvidenceItem], role: str) -> None:
    if role not in ROLES:
        raise InputRejected("UNKNOWN_ROLE", f"role must be one of {', '.join(ROLES)}")
    if not question.strip():
        raise InputRejected("EMPTY_QUESTION", "the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise InputRejected("QUESTION_TOO_LONG", f"the question exceeds {MAX_QUESTION_CHARS} chars")
    srcs = [item.src for item in evidence]
    if len(set(srcs)) != len(srcs):
        raise InputRejected("DUPLICATE_SRC_TAG", "two evidence items share one src tag")


def _zone_for(item: EvidenceItem, role: str) -> str:
    zone = classify_zone(item)
    if role == "advisory" and zone == "policy":
        return "content"
    return zone


def _nonce(question: str, evidence: Sequence[EvidenceItem], role: str,
           template: PromptTemplate) -> str:
    parts = [question]
    for item in evidence:
        parts.extend((item.src, item.title, item.locator, item.text))
    return stable_hash("cfpo-nonce", template.version, role, *parts)[:16]


def _placement(evidence: Sequence[EvidenceItem]) -> dict[str, list[EvidenceItem]]:
    by_zone = {zone: [item for item in evidence if item.zone == zone] for zone in ZONES}
    policy = by_zone["policy"]
    by_zone["policy"] = policy[1:] + policy[:1]
    return by_zone


def _assemble(question: str, evidence: tuple[EvidenceItem, ...], *, role: str,
              template: PromptTemplate, nonce: str) -> CompiledPrompt:
    placed = _placement(evidence)
    system = template.system
    user = _render_user(question, placed, role, template, nonce)
    text = f"{system}\n\n{user}"
    return CompiledPrompt(
        system=system,
        user=user,
        text=text,
        template_version=template.version,
        prompt_hash=sha256_hex(text.encode("utf-8")),
        zones=tuple((item.src, zone) for zone in ZONES for item in placed[zone]),
        evidence=evidence,
        question=question,
        role=role,
        nonce=nonce,
        template=template,
    )


def _render_user(question: str, placed: dict[str, list[EvidenceItem]], role: str,
                 template: PromptTemplate, nonce: str) -> str:
    def blocks(zone: str) -> str:
        rendered = [_evidence_block(item, nonce) for item in placed[zone]]
        return "\n\n".join(rendered) or template.empty_zone

    policy_text = template.policy_advisory if role == "advisory" else template.policy
    constraints = template.constraints.replace("{nonce}", nonce)
    zones = (
        ("CONTENT", (template.content, _question_block(question, nonce), blocks("content"))),
        ("FORMAT", (template.format, blocks("format"))),
        ("POLICY", (policy_text, blocks("policy"), constraints)),
        ("OUTPUT", (blocks("output"), template.output)),
    )
    return "\n\n".join(f"## {name}\n" + "\n\n".join(parts) for name, parts in zones) + "\n"


def _question_block(question: str, nonce: str) -> str:
    body = _neutralize(question.strip())
    return f"<<QUESTION nonce={nonce}>>\n{body}\n<<END QUESTION nonce={nonce}>>"


def _evidence_block(item: EvidenceItem, nonce: str) -> str:
    facts = [f"title: {_one_line(item.title)}"]
    if item.locator:
        facts.append(f"location: {_one_line(item.locator)}")
    if item.heading_path:
        facts.append("section: " + " > ".join(_one_line(h) for h in item.heading_path))
    return (
        f"<<EVIDENCE src={item.src} zone={item.zone} nonce={nonce}>>\n"
        f"[src:{item.src}] {'; '.join(facts)}\n"
        f"{_neutralize(item.text.strip())}\n"
        f"<<END EVIDENCE src={item.src} nonce={nonce}>>"
    )


def _one_line(text: str) -> str:
    return normalize_space(_neutralize(text)).lstrip("\\")


def _neutralize(text: str) -> str:
    """Make untrusted text inert inside a block: no delimiters, headers or citation tags."""
    text = clean_control_chars(text).replace("<<", "‹‹").replace(">>", "››")
    text = _SRC_LIKE.sub(r"[\1src\2\\:", text)
    return "\n".join("\\" + line if _HEADER_LIKE.search(line) else line
                     for line in text.split("\n"))
