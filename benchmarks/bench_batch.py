"""Seconds per student for grade-batch, with the sandbox on, against nbgrader's bulk autograde.

Builds a class of N synthetic submissions (a mix of the reference, the starter, catalogued
mistakes and fast hostile ones from tests/hostile/), grades it once with ``grade-batch`` and
prints wall-clock seconds per student, CPU seconds per student (all processes), and the ratio
to nbgrader's measured bulk cost of about 1.45 s per extra student (research/nbgrader.md).

    python benchmarks/bench_batch.py [N] [--jobs J]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from dozen import build  # noqa: E402

from autograder import batch  # noqa: E402
from autograder.assignment import Assignment  # noqa: E402

NBGRADER_PER_STUDENT = 1.45  # seconds, bulk autograde, measured on this kind of machine


def cpu_seconds() -> float:
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("students", type=int, nargs="?", default=48)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dozen = build(Path(tmp) / "dozen")
        folder = Path(tmp) / "class"
        templates = sorted(dozen.iterdir())
        for i in range(args.students):  # copies, so every submission is graded afresh
            source = templates[i % len(templates)]
            target = folder / f"s{i:04d}-{source.name}"
            target.mkdir(parents=True)
            for path in source.iterdir():
                (target / path.name).write_bytes(path.read_bytes())
        start_cpu, start = cpu_seconds(), time.perf_counter()
        summary = batch.grade_batch(
            Assignment.load("masks-and-heads"), folder, Path(tmp) / "out", jobs=args.jobs
        )
        wall, cpu = time.perf_counter() - start, cpu_seconds() - start_cpu
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    per = wall / args.students
    print(f"students: {args.students}, jobs: {args.jobs or 'all cores'}, graded: {summary.graded}")
    print(f"wall: {wall:.1f} s, {per:.3f} s per student")
    print(f"cpu (all processes): {cpu:.1f} s, {cpu / args.students:.3f} s per student")
    print(f"peak memory of one job or worker: {peak:.0f} MiB")
    print(f"nbgrader bulk autograde: {NBGRADER_PER_STUDENT} s per student")
    print(f"ratio (nbgrader / grade-batch): {NBGRADER_PER_STUDENT / per:.2f}x")


if __name__ == "__main__":
    main()
