"""Does the default (extractive) answer answer the question? Measured on the example corpus.

    python benchmarks/answer_quality.py [--baseline REF] [--questions FILE] [--show]

The questions (``benchmarks/data/answer_quality_questions.json``) were written over the
bundled example corpus: each names the fact a right answer contains, the phrases a claim
bearing on it contains, or says that nothing the asker may read answers it. Each question is
asked through the real command line (``affidavit ask --json``) of a fresh example deployment
(``init``, ``ingest corpus``, ``sire approve --all``), and the same is done, in the same run,
by the code of the git revision ``--baseline`` (default: the code before the question-aware
answerer), extracted to a temporary folder and run in a child process. Printed for both:

* answered with the fact: an answer (AUTHORIZED or PARTIAL) that contains an expected fact;
* AUTHORIZED without the fact: the answer a reader would act on, missing what was asked;
* padding: the share of an answer's claims that bear on nothing the question asked;
* refused though answerable: REQUIRES_SPEC or BLOCKED where the corpus holds the answer;
* unanswerable AUTHORIZED: an AUTHORIZED answer to a question nothing answers.

Exit 1 when the run measured nothing real (no question answered, or one output state for
every question) or when the checkout AUTHORIZES more wrong answers than the baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
QUESTIONS = HERE / "data" / "answer_quality_questions.json"
BASELINE_REF = "97a58b2"
"""The code before the question-aware extractive answerer: what the figures improve on."""
ANSWERED = ("AUTHORIZED", "PARTIAL")
REFUSED = ("REQUIRES_SPEC", "BLOCKED")


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u00a0", " ")).casefold()


def contains_any(text: str, phrases: list[str]) -> bool:
    folded = normalized(text)
    return any(normalized(p) in folded for p in phrases)


# ---------------------------------------------------------------------- one deployment


def _cli(argv: list[str]) -> tuple[int, str]:
    from affidavit.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    return code, out.getvalue()


def ask_all(questions: list[dict[str, Any]], workdir: Path) -> list[dict[str, Any]]:
    """The example deployment in ``workdir``, and every question's ``ask --json``."""
    shutil.copy(ROOT / "examples" / "affidavit.toml", workdir / "affidavit.toml")
    shutil.copytree(ROOT / "examples" / "corpus", workdir / "corpus")
    os.chdir(workdir)
    for argv in (["init"], ["ingest", "corpus", "--quiet"],
                 ["sire", "approve", "--all", "--by", "Benchmark Reviewer"]):
        code, _ = _cli(argv)
        if code not in (0, 3):
            raise SystemExit(f"affidavit {' '.join(argv)} exited {code}")
    results = []
    for item in questions:
        _, out = _cli(["ask", item["q"], "--as", item["as"], "--json"])
        try:
            answer = json.loads(out)
        except json.JSONDecodeError:
            answer = {"answer": "", "output_state": "NO_OUTPUT", "claims": []}
        results.append({"answer": answer.get("answer", ""),
                        "state": answer.get("output_state", "NO_OUTPUT"),
                        "claims": [c.get("text", "") for c in answer.get("claims", [])]})
    return results


# ---------------------------------------------------------------------- scoring


def score(questions: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [(q, r) for q, r in zip(questions, results, strict=True)
                  if not q.get("unanswerable")]
    unanswerable = [(q, r) for q, r in zip(questions, results, strict=True)
                    if q.get("unanswerable")]
    with_fact = sum(r["state"] in ANSWERED and contains_any(r["answer"], q["facts"])
                    for q, r in answerable)
    authorized_missing = sum(r["state"] == "AUTHORIZED" and
                             not contains_any(r["answer"], q["facts"]) for q, r in answerable)
    claims = [(q, c) for q, r in answerable if r["state"] in ANSWERED for c in r["claims"]]
    padding = sum(not contains_any(c, q["facts"] + q.get("bearing", [])) for q, c in claims)
    refused = sum(r["state"] in REFUSED or r["state"] == "NO_OUTPUT" for _, r in answerable)
    misses = [q["q"] for q, r in answerable
              if not (r["state"] in ANSWERED and contains_any(r["answer"], q["facts"]))]
    wrong_authorized = sum(r["state"] == "AUTHORIZED" for _, r in unanswerable)
    return {"answerable": len(answerable), "unanswerable": len(unanswerable),
            "with_fact": with_fact, "authorized_missing": authorized_missing,
            "claims": len(claims), "padding": padding, "refused": refused,
            "wrong_authorized": wrong_authorized + authorized_missing,
            "unanswerable_authorized": wrong_authorized,
            "states": sorted({r["state"] for r in results}), "misses": misses}


def measure(questions_file: Path, show: bool) -> dict[str, Any]:
    questions = json.loads(questions_file.read_text(encoding="utf-8"))["questions"]
    with tempfile.TemporaryDirectory(prefix="affidavit-answers-") as tmp:
        results = ask_all(questions, Path(tmp))
    if show:
        for q, r in zip(questions, results, strict=True):
            print(f"--- {q['q']}  [{r['state']}]\n{r['answer']}", file=sys.stderr)
    return score(questions, results)


# ---------------------------------------------------------------------- the baseline


def measure_revision(ref: str, questions_file: Path, show: bool) -> dict[str, Any]:
    """``measure`` run by the package as it was at ``ref``, in a child process."""
    with tempfile.TemporaryDirectory(prefix="affidavit-baseline-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref, "src"],
                                 check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        command = [sys.executable, str(Path(__file__).resolve()), "--measure-only",
                   "--questions", str(questions_file), *(["--show"] if show else [])]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"the baseline run failed:\n{done.stderr[-2000:]}")
        if show:
            print(done.stderr, file=sys.stderr)
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        if not result["package"].startswith(tmp):
            raise SystemExit("the baseline run did not import the baseline's code")
        return result


def report(baseline: dict[str, Any], current: dict[str, Any], ref: str) -> None:
    def share(r: dict[str, Any], key: str, of: str) -> str:
        return f"{r[key]}/{r[of]} ({r[key] / max(1, r[of]):.0%})"

    rows = [("answered with the fact", "with_fact", "answerable"),
            ("AUTHORIZED without the fact", "authorized_missing", "answerable"),
            ("padding (claims bearing on nothing asked)", "padding", "claims"),
            ("refused though answerable", "refused", "answerable"),
            ("unanswerable AUTHORIZED", "unanswerable_authorized", "unanswerable")]
    print(f"{'':<44}{'baseline ' + ref:<22}this checkout")
    for label, key, of in rows:
        print(f"{label:<44}{share(baseline, key, of):<22}{share(current, key, of)}")
    print(f"output states seen: baseline {', '.join(baseline['states'])}; "
          f"this checkout {', '.join(current['states'])}")
    for question in current["misses"]:
        print(f"  not answered with its fact here: {question}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE_REF, help="git revision to compare")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--show", action="store_true", help="print every answer to stderr")
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_only:
        import affidavit

        result = measure(args.questions, args.show)
        print(json.dumps({**result, "package": str(Path(affidavit.__file__).resolve())}))
        return 0
    baseline = measure_revision(args.baseline, args.questions, args.show)
    current = measure(args.questions, args.show)
    report(baseline, current, args.baseline)
    if current["with_fact"] == 0 or len(current["states"]) < 2:
        print("MEASURED NO REAL WORK: nothing answered, or one output state for everything")
        return 1
    if current["wrong_authorized"] > baseline["wrong_authorized"]:
        print("WORSE: more wrong answers AUTHORIZED than the baseline")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
