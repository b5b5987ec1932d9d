"""How much the sandbox costs: grade the reference with the full sandbox (Landlock plus
bubblewrap), Landlock alone (bubblewrap hidden), the fallback and a plain subprocess worker,
in one run, and print the times and their ratios to plain.

    python benchmarks/bench_sandbox.py [ROUNDS]

Target: each strong sandbox takes at most 1.5 times as long as the plain worker. Modes are
interleaved round by round, so that a busy machine slows all three alike; each mode's time
is its median over the rounds. Detection (probing bwrap) is done once, before timing.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time

from autograder.course.assignment import Assignment
from autograder.engine.grading import grade
from autograder.sandbox.layers import Sandbox

TARGET = 1.5
STRONG = ("full", "landlock")  # the modes the target applies to


def measure(rounds: int) -> dict[str, float]:
    # a generous timeout: an honest run never waits for it, and a busy machine must not fail it
    assignment = dataclasses.replace(Assignment.load("masks-and-heads"), timeout=60.0)
    boxes = {"full": Sandbox.detect("auto"), "landlock": Sandbox.detect("landlock")}
    boxes |= {"fallback": Sandbox.detect("fallback"), "plain": Sandbox.detect("plain")}
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
    ratios = {name: median[name] / median["plain"] for name in median if name != "plain"}
    for name, ratio in ratios.items():
        target = f"  (target <= {TARGET}x)" if name in STRONG else ""
        print(f"{name + '/plain':<15} {ratio:.2f}x{target}")
    return 0 if all(ratios[name] <= TARGET for name in STRONG) else 1


if __name__ == "__main__":
    sys.exit(main())
