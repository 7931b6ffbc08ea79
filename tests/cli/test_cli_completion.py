"""``affidavit completion bash|zsh``: the script completes subcommands, options and fixed
choices in bash itself, from tables made of the parser, and never evaluates what was typed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from affidavit.cli.completion import completion_script
from affidavit.cli.main import build_parser

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _script(tmp_path: Path, shell: str = "bash") -> Path:
    """The script as the command prints it (a new process: no state shared with the test)."""
    done = subprocess.run([sys.executable, "-m", "affidavit.cli.main", "completion", shell],
                          capture_output=True, text=True, check=True, cwd=tmp_path)
    path = tmp_path / f"affidavit.{shell}"
    path.write_text(done.stdout, encoding="utf-8")
    return path


def _complete(script: Path, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` (``COMP_WORDS``/``COMP_CWORD`` as bash
    sets them when TAB is pressed), through the function the script registered."""
    program = (f'source "{script}"\n'
               # The function bash would call: the name after -F in what was registered.
               'spec=$(complete -p affidavit) || exit 9\n'
               'function=${spec##*-F }; function=${function%% *}\n'
               'COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n'
               '"$function"\n'
               'printf "%s\\n" "${COMPREPLY[@]}"\n')
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", program, "bash",
                           "affidavit", *words], capture_output=True, text=True, check=True,
                          cwd=script.parent)
    return [line for line in done.stdout.splitlines() if line]


def test_completion_script_registers_a_function_for_affidavit(tmp_path: Path) -> None:
    script = _script(tmp_path)
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                           f'source "{script}" && complete -p affidavit'],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "complete -o default -F _affidavit affidavit"


def test_completion_offers_the_subcommands_that_match_what_was_typed(tmp_path: Path) -> None:
    script = _script(tmp_path)
    assert _complete(script, "se") == ["search", "serve"]
    assert _complete(script, "ledger", "v") == ["verify"]


def test_completion_offers_the_options_of_the_subcommand_typed(tmp_path: Path) -> None:
    script = _script(tmp_path)
    assert _complete(script, "search", "hotel", "--li") == ["--limit"]
    assert "--as" in _complete(script, "search", "-")
    assert "--as" not in _complete(script, "init", "-")  # init reads nothing as anyone


def test_completion_skips_the_value_of_an_option_that_takes_one(tmp_path: Path) -> None:
    """``--db search.db`` is a value: the subcommand after it is still completed, and a
    value is never taken for a subcommand."""
    script = _script(tmp_path)
    assert _complete(script, "--db", "x.db", "se") == ["search", "serve"]
    # 'ledger' is the tenant's name here: what follows is a top-level command.
    assert _complete(script, "--tenant", "ledger", "ve") == ["verify-claims"]
    assert _complete(script, "ledger", "ve") == ["verify"]


def test_completion_offers_the_fixed_choices_of_a_value(tmp_path: Path) -> None:
    script = _script(tmp_path)
    assert _complete(script, "ask", "q", "--role", "a") == ["authoritative", "advisory"]
    assert _complete(script, "completion", "") == ["bash", "zsh"]


def test_completion_never_evaluates_the_words_on_the_command_line(tmp_path: Path) -> None:
    """A command substitution typed (or pasted) on the line is data to the function."""
    script = _script(tmp_path)
    planted = tmp_path / "planted"
    for words in ((f"$(touch {planted})", ""), ("search", f"$(touch {planted})"),
                  (f"`touch {planted}`", "--db", f"$(touch {planted})", "s"),
                  ("*", "-")):
        _complete(script, *words)
    assert not planted.exists()


def test_completion_script_is_the_same_on_every_run(tmp_path: Path) -> None:
    first = _script(tmp_path).read_text(encoding="utf-8")
    assert _script(tmp_path).read_text(encoding="utf-8") == first
    assert completion_script(build_parser(), "bash") == first


def test_zsh_script_is_the_bash_script_behind_zsh_bash_emulation(tmp_path: Path) -> None:
    bash = completion_script(build_parser(), "bash").splitlines()
    zsh = completion_script(build_parser(), "zsh").splitlines()
    assert zsh[1] == "autoload -U +X bashcompinit && bashcompinit"
    assert zsh[2:] == bash[1:]
    if shutil.which("zsh"):
        script = _script(tmp_path, "zsh")
        done = subprocess.run(["zsh", "-f", "-c", f'source "{script}" && complete -p affidavit'],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr


def test_completion_needs_no_settings_file(tmp_path: Path) -> None:
    """It works where an affidavit.toml is broken: it reads no settings and no store."""
    (tmp_path / "affidavit.toml").write_text("[no such section\n", encoding="utf-8")
    script = _script(tmp_path)
    assert "_affidavit" in script.read_text(encoding="utf-8")
    assert not (tmp_path / ".affidavit").exists()
