"""`autograder check` per assignment: this checkout against another revision, in one run.

    python benchmarks/bench_check.py [--against REV] [--runs N] [SLUG ...]

REV (default HEAD~1) is checked out into a temporary git worktree, and each assignment is
checked by both graders in turn, A B A B ..., so that a drift in the machine's speed reaches
both. Both run the same course (this checkout's), with the same Python. Wall time is the
median of N runs (default 3); CPU is the whole machine's busy time over the run, from
/proc/stat, because the sandboxed workers leave the grader's own accounting (a PID namespace
reaps them). The table prints each median and the ratio this/REV: below 1 is faster.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLUGS = sorted(p.parent.name for p in (ROOT / "autograder" / "suites").glob("*/suite.yaml"))


def busy_seconds() -> float:
    """CPU seconds the machine has spent busy since boot (all cores)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def timed(code: Path, slug: str) -> tuple[float, float]:
    """Wall and machine CPU seconds of one `autograder check -q SLUG` by the grader in ``code``."""
    env = os.environ | {"PYTHONPATH": str(code), "AUTOGRADER_ROOT": str(ROOT)}
    command = [sys.executable, "-m", "autograder", "check", "-q", slug]
    cpu, start = busy_seconds(), time.monotonic()
    # run from ``code``: `python -m` puts the working folder first on the import path
    done = subprocess.run(command, cwd=code, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"{code.name}: check {slug} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall, busy_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help="assignments (default: all)")
    parser.add_argument("--against", default="HEAD~1", metavar="REV", help="the other grader")
    parser.add_argument("--runs", type=int, default=3, help="runs of each (median taken)")
    args = parser.parse_args()
    unknown = sorted(set(args.slugs) - set(SLUGS))
    if unknown:
        sys.exit(f"unknown assignment(s): {', '.join(unknown)} (known: {', '.join(SLUGS)})")
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "other"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(other), args.against],
            check=True,
        )
        try:
            for code in (ROOT, other):
                found = subprocess.run(
                    [sys.executable, "-c", "import autograder; print(autograder.__file__)"],
                    cwd=code,
                    env=os.environ | {"PYTHONPATH": str(code)},
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                if not found.startswith(str(code)):
                    sys.exit(f"the grader in {code} imports {found or 'nothing'}, not its own")
            rows = []
            for slug in args.slugs or SLUGS:
                runs: dict[str, list[tuple[float, float]]] = {"this": [], "other": []}
                for i in range(args.runs):
                    print(f"{slug}: run {i + 1} of {args.runs}", file=sys.stderr)
                    runs["this"].append(timed(ROOT, slug))
                    runs["other"].append(timed(other, slug))
                medians = {
                    name: tuple(statistics.median(r[k] for r in rs) for k in (0, 1))
                    for name, rs in runs.items()
                }
                rows.append((slug, medians["this"], medians["other"]))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)])
    print(f"\nautograder check, median of {args.runs} runs: this checkout against {args.against}")
    header = (
        f"{'assignment':<24}{'wall':>8}{'other':>8}{'ratio':>7}{'cpu':>8}{'other':>8}{'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    for slug, (wall, cpu), (other_wall, other_cpu) in rows:
        print(
            f"{slug:<24}{wall:>7.1f}s{other_wall:>7.1f}s{wall / other_wall:>7.2f}"
            f"{cpu:>7.1f}s{other_cpu:>7.1f}s{cpu / other_cpu:>7.2f}"
        )


if __name__ == "__main__":
    main()
