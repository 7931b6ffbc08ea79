"""Content bindings: a recorded human decision holds for the content it was made about.

A reviewer who lowers a paragraph's label, approves a proposal or vets an answer decided
about one piece of content, not about a position or a name that later content may take.
Each such decision carries a :class:`ContentBinding`: the SHA-256 of the content it
decided (for a paragraph, its normalized text) and, where the decision replaced a label,
the label it replaced. The decision holds only while both are still what is there
(:meth:`ContentBinding.holds`); otherwise it lapses (:func:`lapse_reason` says why), and a
lapsed decision is never applied again: an edit back to the old text needs a new decision,
so nobody has to reason about which of several histories a decision survived.

This module imports nothing of the pipeline: every stage that records or honours a human
decision may use it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from affidavit.text.forms import nfkc

CONTENT_CHANGED = "content_changed"
"""The content the decision was about is gone or no longer the same."""
LABEL_CHANGED = "label_changed"
"""The content is the same but the label the decision replaced is not what is detected now
(a policy change raised it): lowering the new label was never decided."""
UNBOUND = "unbound"
"""The decision was recorded before decisions were bound to content: what it was about
cannot be known, so it lowers nothing (fail closed)."""


def normalized_text(text: str) -> str:
    """The form of a text a binding hashes: NFKC, whitespace runs collapsed, trimmed. Layout
    that does not change what a reader sees (reflowed lines, a trailing space) does not
    make a decision lapse."""
    return " ".join(nfkc(text).split())


def text_sha256(text: str) -> str:
    """The SHA-256 (hex) of a text's normalized form."""
    return hashlib.sha256(normalized_text(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ContentBinding:
    """What a decision was made about: a content hash and, for a label decision, the label
    it replaced. ``content_sha256`` is None for a decision recorded before bindings."""

    content_sha256: str | None
    replaced: str | None = None

    def holds(self, content_sha256: str | None, current_label: str | None = None) -> bool:
        """True while the content is the one decided and (for a label decision) the label
        detected now is the one the decision replaced."""
        return lapse_reason(self, content_sha256, current_label) is None

    def to_dict(self) -> dict[str, str | None]:
        """Plain data for a policy event (hashes and labels only, never the content)."""
        return {"content_sha256": self.content_sha256, "replaced": self.replaced}

    @classmethod
    def from_dict(cls, data: object) -> ContentBinding:
        """A binding read back from a policy event; an event without one is unbound."""
        if not isinstance(data, dict):
            return cls(None)
        content, replaced = data.get("content_sha256"), data.get("replaced")
        return cls(content if isinstance(content, str) and content else None,
                   replaced if isinstance(replaced, str) else None)


def lapse_reason(binding: ContentBinding, content_sha256: str | None,
                 current_label: str | None = None) -> str | None:
    """Why a decision with ``binding`` no longer holds against the current content (its
    hash, None when the content is gone) and label, or None when it holds."""
    if binding.content_sha256 is None:
        return UNBOUND
    if content_sha256 != binding.content_sha256:
        return CONTENT_CHANGED
    if binding.replaced is not None and current_label is not None \
            and current_label.casefold() != binding.replaced.casefold():
        return LABEL_CHANGED
    return None
