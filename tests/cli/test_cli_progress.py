"""Ingest progress: a bar on a terminal, plain lines with --progress elsewhere, nothing with
--quiet; document names reach the terminal neutralised either way."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.e2e.conftest import Run


def _corpus(root: Path) -> Path:
    corpus = root / "corpus"
    corpus.mkdir()
    for n in range(3):
        (corpus / f"note-{n}.md").write_text(f"# Note {n}\n\nThe canteen opens at {n + 7}.\n")
    (corpus / "bad\x1b[8mhidden.md").write_bytes(b"\xff\xfe not utf-8")
    (root / "affidavit.toml").write_text('[acl]\ndefault = ["*"]\n[grants]\n"*" = ["INTERNAL"]\n')
    return corpus


def test_progress_lines_when_forced_on_a_pipe(run: Run, tmp_path: Path) -> None:
    _corpus(tmp_path)
    code, _, err = run("ingest", "corpus", "--progress")
    assert code == 3
    lines = [line for line in err.splitlines() if line.startswith("[")]
    assert len(lines) == 4 and lines[-1].startswith("[4] ")
    assert any("quarantined" in line and "\\u001b[8m" in line for line in lines)


def test_no_progress_when_quiet_or_piped(run: Run, tmp_path: Path) -> None:
    _corpus(tmp_path)
    _, _, err = run("ingest", "corpus")  # stderr is not a terminal here
    assert not [line for line in err.splitlines() if line.startswith("[")]
    (tmp_path / "corpus" / "note-9.md").write_text("# Nine\n\nMore text.\n")
    _, _, err = run("ingest", "corpus", "--quiet", "--progress")
    assert not [line for line in err.splitlines() if line.startswith("[")]


def test_progress_bar_on_a_terminal_counts_and_neutralises_names(tmp_path: Path) -> None:
    _corpus(tmp_path)
    controller, terminal = pty.openpty()
    # A new pseudo-terminal is 0 columns wide; give it a real terminal's size.
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AFFIDAVIT_")}
    process = subprocess.Popen([sys.executable, "-m", "affidavit.cli.main", "ingest", "corpus"],
                               cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=terminal)
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed: the process is done
            break
        if not chunk:
            break
        seen += chunk
    os.close(controller)
    assert process.wait(timeout=60) == 3
    text = seen.decode("utf-8", "replace")
    assert "ingest: " in text and "4/" not in text  # count with no total: no fraction
    assert "4doc" in text.replace(" ", "") and "doc/s" in text
    assert "quarantined bad\\u001b[8mhidden.md" in text
    assert "\x1b[8m" not in text  # the name's escape sequence never reaches the terminal
