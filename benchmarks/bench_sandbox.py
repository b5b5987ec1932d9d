"""How much the sandbox costs: grade the reference with the full sandbox, the fallback and a
plain subprocess worker, in one run, and print the times and their ratios to plain.

    python benchmarks/bench_sandbox.py [ROUNDS]

Target: the full sandbox takes at most 1.5 times as long as the plain worker. Modes are
interleaved round by round, so that a busy machine slows all three alike; each mode's time
is its median over the rounds. Detection (probing bwrap) is done once, before timing.
"""

from __future__ import annotations

import statistics
import sys
import time

from autograder.assignment import Assignment
from autograder.grading import grade
from autograder.sandbox import Sandbox

TARGET = 1.5


def measure(rounds: int) -> dict[str, float]:
    assignment = Assignment.load("masks-and-heads")
    boxes = {"full": Sandbox.detect("auto"), "fallback": Sandbox.detect("fallback")}
    boxes["plain"] = Sandbox.detect("plain")
    times: dict[str, list[float]] = {name: [] for name in boxes}
    for _ in range(rounds + 1):  # the first round warms caches and is dropped
        for name, box in boxes.items():
            began = time.perf_counter()
            result = grade(assignment, assignment.reference, box)
            times[name].append(time.perf_counter() - began)
            assert result.score == result.max_score, f"{name}: the reference lost points"
    for name, box in boxes.items():
        print(f"{name:<9} {statistics.median(times[name][1:]):.3f} s  ({', '.join(box.layers)})")
    return {name: statistics.median(values[1:]) for name, values in times.items()}


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    median = measure(rounds)
    full, fallback = median["full"] / median["plain"], median["fallback"] / median["plain"]
    print(f"full/plain     {full:.2f}x  (target <= {TARGET}x)")
    print(f"fallback/plain {fallback:.2f}x")
    return 0 if full <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
