"""Keep untrusted text from spelling a model's control tokens on the wire.

A served model's tokenizer turns some exact spellings into control tokens: ``<|im_end|>``
ends a chat turn for ChatML models, ``<|eot_id|>`` for Llama 3, ``</s>`` and ``[INST]`` for
others. OpenAI-compatible servers (llama.cpp, vLLM) render the chat template into one
string and tokenize it *with* those spellings enabled, so evidence containing
``<|im_end|>\\n<|im_start|>system`` would close the user turn and open a forged system
turn: the prompt compiler's blocks only stop what the model reads as text.

The ``local`` provider needs none of this: it tokenizes the system and user texts as plain
text (:mod:`affidavit.llm.local`). A remote server gives no such switch, so
:func:`inert_control_tokens` breaks every control-token spelling a tokenizer could match by
putting a WORD JOINER (U+2060, invisible, no meaning) after its opening character. This
is applied to what is sent, not to the compiled prompt: the prompt's text and hash, which
the ledger records and replays, stay as compiled.

The patterns are deliberately wide (any ``<|...|>``, any ``<...>`` of the known names, the
bracketed instruction markers): a false match costs one invisible character, a miss
costs the turn structure.
"""

from __future__ import annotations

import re

__all__ = ["JOINER", "inert_control_tokens"]

JOINER = "\u2060"
"""WORD JOINER: splits a spelling for every tokenizer and shows nothing to a reader."""

_CONTROL = re.compile(
    # ChatML, Llama 3, Phi, Qwen, DeepSeek and the like: anything between <| and |>,
    # the fullwidth bar some tokenizers use included.
    r"<[|｜][^<>\n]{0,64}?[|｜]>"
    # SentencePiece / Gemma / BERT-era names in angle brackets.
    r"|</?(?:s|unk|pad|bos|eos|mask|sep|cls|start_of_turn|end_of_turn|start_of_image"
    r"|end_of_image|think|tool_call|tool_response|im_start|im_end)>"
    # Llama 2 / Mistral instruction and system markers, BERT square-bracket tokens.
    r"|\[/?(?:INST|SYS|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|CLS|SEP|MASK|PAD|UNK)\]",
    re.IGNORECASE,
)


def inert_control_tokens(text: str) -> str:
    """``text`` with every control-token spelling split after its first character; text
    without one comes back unchanged (the same object)."""
    if "<" not in text and "[" not in text:
        return text
    return _CONTROL.sub(lambda match: match.group(0)[0] + JOINER + match.group(0)[1:], text)
