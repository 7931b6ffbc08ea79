"""``affidavit completion bash|zsh``: a shell completion script made from the parser itself.

argparse completes nothing on its own. Rather than asking the program at every TAB (which
would run Python each time), the script holds the command tree as plain tables: for each
command path (``ledger verify``), its subcommands, its options, the options that take a
value and the fixed choices of a value. Completion then runs in the shell alone, and the
script is the same for the same parser (deterministic, so it can be checked in or packaged).

Only strings of the parser go into the script: never anything a user typed or a document
held. The words being completed are read as data by the shell function, never evaluated.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

SHELLS = ("bash", "zsh")

# Words the script holds must be plain: a name with a quote or a shell metacharacter in it
# would not be one the parser accepts either, so it is left out rather than escaped.
_PLAIN = re.compile(r"^[A-Za-z0-9_.:@%+=/,-]+$")


def add_completion_command(sub: Any) -> None:
    """The ``completion`` subcommand (it needs no settings and no store)."""
    p = sub.add_parser("completion", help="print a shell completion script",
                       description="Print a completion script for bash or zsh. Load it with "
                                   "'source <(affidavit completion bash)' (in ~/.bashrc), or "
                                   "write it to the shell's completion directory.")
    p.add_argument("shell", choices=SHELLS)


class _Node:
    """One command path: what may follow it on the command line."""

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.options: list[str] = []
        self.valued: list[str] = []
        self.values: list[str] = []  # fixed choices of a positional argument
        self.choices: dict[str, list[str]] = {}


def _walk(parser: argparse.ArgumentParser, path: str, nodes: dict[str, _Node]) -> None:
    node = nodes.setdefault(path, _Node())
    for action in parser._actions:  # argparse has no public way to list its actions
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if _PLAIN.match(name):
                    node.commands.append(name)
                    _walk(child, f"{path}/{name}" if path else name, nodes)
            continue
        if action.help == argparse.SUPPRESS:
            continue
        strings = [s for s in action.option_strings if _PLAIN.match(s)]
        node.options.extend(strings)
        if action.option_strings and action.nargs != 0:
            node.valued.extend(strings)
        if action.choices is None:
            continue
        words = [str(c) for c in action.choices if _PLAIN.match(str(c))]
        if not action.option_strings:
            node.values.extend(words)
        for option in strings:
            node.choices[option] = words


def _table(nodes: dict[str, _Node]) -> list[str]:
    lines = []
    for path, node in nodes.items():
        for kind, words in (("commands", node.commands), ("options", node.options),
                            ("valued", node.valued), ("values", node.values)):
            if words:
                lines.append(f"        '{kind}:{path}') echo '{' '.join(words)}' ;;")
        for option, words in node.choices.items():
            if words:
                lines.append(f"        'choices:{path}:{option}') echo '{' '.join(words)}' ;;")
    return lines


_BODY = r"""
_affidavit() {
    local cur prev word words path commands valued skip i
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev=""
    [ "$COMP_CWORD" -gt 0 ] && prev="${COMP_WORDS[COMP_CWORD-1]}"
    path=""
    skip=0
    i=1
    # Follow the subcommands typed so far; skip the value after an option that takes one.
    while [ "$i" -lt "$COMP_CWORD" ]; do
        word="${COMP_WORDS[i]}"
        i=$((i + 1))
        if [ "$skip" = 1 ]; then skip=0; continue; fi
        case "$word" in
            -*=*) continue ;;
            -*)
                valued=" $(_affidavit_table "valued:$path") $(_affidavit_table "valued:") "
                [[ "$valued" == *" $word "* ]] && skip=1
                continue ;;
        esac
        commands=" $(_affidavit_table "commands:$path") "
        if [[ "$commands" == *" $word "* ]]; then
            if [ -n "$path" ]; then path="$path/$word"; else path="$word"; fi
        fi
    done
    COMPREPLY=()
    if [ "$skip" = 1 ]; then
        # The word is an option's value: its fixed choices, or files (complete -o default).
        COMPREPLY=($(compgen -W "$(_affidavit_table "choices:$path:$prev")" -- "$cur"))
        return 0
    fi
    case "$cur" in
        -*) COMPREPLY=($(compgen -W "$(_affidavit_table "options:$path")" -- "$cur")) ;;
        *) words="$(_affidavit_table "commands:$path") $(_affidavit_table "values:$path")"
           COMPREPLY=($(compgen -W "$words" -- "$cur")) ;;
    esac
    return 0
}
complete -o default -F _affidavit affidavit
"""


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (one of :data:`SHELLS`)."""
    if shell not in SHELLS:
        raise ValueError(f"no completion for {shell!r}; one of {', '.join(SHELLS)}")
    nodes: dict[str, _Node] = {}
    _walk(parser, "", nodes)
    head = ["# affidavit completion (generated by 'affidavit completion " + shell + "')"]
    if shell == "zsh":  # zsh runs the bash functions through its bash emulation
        head.append("autoload -U +X bashcompinit && bashcompinit")
    table = ["_affidavit_table() {", '    case "$1" in', *_table(nodes), "    esac", "}"]
    return "\n".join([*head, *table]) + _BODY
