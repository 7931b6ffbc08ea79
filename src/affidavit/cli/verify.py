"""``affidavit verify-claims FILE.jsonl``: a groundedness check for text from any source.

Each input line is ``{"id", "claim", "evidence": ["sentence", ...]}``; each output line is
``{"id", "status", "contradicted", "layers", "reasons"}``, decided by the layers the
answer path runs (:func:`affidavit.answer.verify.check.check_claim`). Every line is read and
checked before anything is written, so a bad line (reported with its number) leaves no
half-written output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from affidavit.cli.context import EXIT_OK, Context
from affidavit.errors import InputRejected

if TYPE_CHECKING:
    from affidavit.answer.verify.check import ClaimCheck


def add_verify_claims_command(sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``verify-claims`` subcommand."""
    p = sub.add_parser("verify-claims", parents=[common],
                       help="check claims against evidence sentences (JSON lines)",
                       description="Check each claim of a JSON-lines file against its evidence "
                                   "sentences with the verification layers answers use; write "
                                   "one JSON line per claim.")
    p.add_argument("file", metavar="FILE.jsonl", help="input lines: {id, claim, evidence}")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="write the results here instead of standard output")
    p.set_defaults(func=cmd_verify_claims)


def check_claim_lines(lines: list[str], *, threshold: float) -> list[ClaimCheck]:
    """Check every non-blank line; :class:`InputRejected` names the first bad line."""
    from affidavit.answer.verify.check import check_claims, parse_claim_line

    requests = [parse_claim_line(line, number)
                for number, line in enumerate(lines, start=1) if line.strip()]
    return check_claims(requests, threshold=threshold)


def cmd_verify_claims(ctx: Context) -> int:
    path = Path(ctx.args.file)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputRejected("UNREADABLE_CLAIMS_FILE", f"cannot read {path}: {exc}") from None
    checks = check_claim_lines(lines, threshold=ctx.settings.answer.support_threshold)
    text = "".join(json.dumps(c.to_dict(), ensure_ascii=False, sort_keys=True) + "\n"
                   for c in checks)
    if ctx.args.out:
        Path(ctx.args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK


UNVERIFIED_MARK = "[not verified: {status}] "
"""Put before each sentence of a text answer that verification did not confirm."""


def marked_answer(answer: str, claims: list[dict[str, Any]]) -> str:
    """``answer`` with every claim that is not VERIFIED visibly marked at its start.

    Claims whose span does not lie in ``answer`` (a governed refusal replaced the text)
    mark nothing: the marks go only on the sentences they judge.
    """
    marks: list[tuple[int, str]] = []
    for claim in claims:
        start, end, status = claim.get("start"), claim.get("end"), claim.get("status")
        text = str(claim.get("text", ""))
        if status == "VERIFIED" or not isinstance(start, int) or not isinstance(end, int):
            continue
        if not (0 <= start < end <= len(answer)) or text[:12] not in answer[start:end]:
            continue
        marks.append((start, UNVERIFIED_MARK.format(status=status)))
    for start, mark in sorted(marks, reverse=True):
        answer = answer[:start] + mark + answer[start:]
    return answer
