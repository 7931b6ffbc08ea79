"""The public surface of affidavit.answer is exactly what __all__ lists."""

from __future__ import annotations

import affidavit.answer


def test_all_names_exist_and_public_names_are_exported() -> None:
    exported = set(affidavit.answer.__all__)
    assert all(hasattr(affidavit.answer, name) for name in exported)
    modules = {"atoms", "attribution", "citations", "claims", "compiler", "evaluate",
               "evidence", "facts", "faq", "gate", "guard", "layers", "openai", "providers",
               "relevance", "check", "nli", "representation", "local", "control_tokens",
               "echo_alignment", "ask_options", "proof", "extractive", "quantities", "bearing",
               "context_budget",
               "stability", "support", "template", "text", "verify"}
    public = {name for name in vars(affidavit.answer)
              if not name.startswith("_") and name not in modules}
    assert public == exported
