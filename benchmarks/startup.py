"""Command-line start-up: import time and wall time of the commands a user types first.

    python benchmarks/startup.py [--runs 7]

Prints the median over ``--runs`` fresh interpreters of:

* the ``-X importtime`` cumulative time of ``import affidavit.cli.main`` (and of every import the
  interpreter made, ``site`` included);
* the wall time of ``affidavit --help`` (and its CPU time, which other load on the
  machine moves much less);
* the wall time of ``affidavit search "hotel limit" --as user:sam.reed`` on the example
  corpus, and the ``-X importtime`` total of that command (everything it imported, the
  modules loaded when the command runs included).

The example corpus is built in a temporary directory by following the README's "Using it"
steps: ``affidavit init --example``, ``affidavit ingest corpus``, ``affidavit sire approve
--all``. Each figure is measured in a new process, so nothing is cached between runs but
what the operating system caches (the first, cold run is discarded).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The console script ``affidavit`` does exactly this; running it through the interpreter
# lets ``-X importtime`` apply and needs no script on PATH.
ENTRY = "import sys; from affidavit.cli.main import main; sys.exit(main())"
SEARCH = ["search", "hotel limit", "--as", "user:sam.reed"]
# Bytecode is cached as for any installed package (any value of this variable, even "0",
# would make every run compile every module again).
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def cli(*args: str, importtime: bool = False) -> list[str]:
    flags = ["-X", "importtime"] if importtime else []
    return [sys.executable, *flags, "-c", ENTRY, *args]


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False,
                            env=ENV)
    if result.returncode not in (0, 3):  # 3: ingest finished with quarantined documents
        raise SystemExit(f"{' '.join(command[3:])} failed ({result.returncode}):\n"
                         f"{result.stderr[-2000:]}")
    return result


def import_times(stderr: str) -> dict[str, int]:
    """Top-level entries of an ``-X importtime`` report: module -> cumulative microseconds."""
    tops: dict[str, int] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, cumulative, name = line[len("import time:"):].split("|")
        if not name.startswith(" ") or name.startswith("  "):
            continue  # nested: already inside its parent's cumulative figure
        tops[name.strip()] = tops.get(name.strip(), 0) + int(cumulative)
    return tops


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """(wall time, CPU time) of one run. CPU time (user + system of the child) barely moves
    when other processes share the machine; wall time does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run(command, cwd)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median(values: list[float]) -> float:
    return statistics.median(values)


def medians(runs: list[tuple[float, float]]) -> str:
    return (f"{median([w for w, _ in runs]):.3f} s "
            f"(CPU {median([c for _, c in runs]):.3f} s)")


def build_example(workdir: Path) -> None:
    for step in (["init", "--example"], ["ingest", "corpus", "--quiet"],
                 ["sire", "approve", "--all", "--by", "Startup Benchmark"]):
        run(cli(*step), workdir)
    hits = run(cli(*SEARCH), workdir).stdout
    if not hits.strip():
        raise SystemExit("the example search found nothing: the corpus was not built")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="runs per figure (default 7)")
    args = parser.parse_args()
    runs = max(1, args.runs)

    with tempfile.TemporaryDirectory(prefix="affidavit-startup-") as tmp:
        workdir = Path(tmp)
        build_example(workdir)
        run(cli(*SEARCH), workdir)  # warm the file cache and the bytecode cache

        cli_import, all_import = [], []
        for _ in range(runs):
            report = import_times(run([sys.executable, "-X", "importtime", "-c",
                                       "import affidavit.cli.main"], workdir).stderr)
            cli_import.append(report.get("affidavit.cli.main", 0) / 1e6)
            all_import.append(sum(report.values()) / 1e6)
        help_runs = [timed(cli("--help"), workdir) for _ in range(runs)]
        search_runs = [timed(cli(*SEARCH), workdir) for _ in range(runs)]
        search_import = [sum(import_times(run(cli(*SEARCH, importtime=True),
                                              workdir).stderr).values()) / 1e6
                         for _ in range(runs)]
        baseline = [timed([sys.executable, "-c", "pass"], workdir) for _ in range(runs)]

    print(f"median of {runs} runs ({sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    print(f"  import affidavit.cli.main (-X importtime):  {median(cli_import):.3f} s "
          f"(every import of the process: {median(all_import):.3f} s)")
    print(f"  affidavit --help wall time:            {medians(help_runs)}")
    print(f"  affidavit search wall time:            {medians(search_runs)}; "
          f"-X importtime total {median(search_import):.3f} s")
    print(f"  bare interpreter (python -c pass):     {medians(baseline)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
