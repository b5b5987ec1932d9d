"""One submission, side by side: `autograder grade` against `nbgrader autograde` of the same
code for one student, in the course `autograder nbgrader build` makes. Prints the ratio.

    python benchmarks/bench_nbgrader.py [--repeat N]

Both are timed as the commands an instructor runs (a fresh process each). nbgrader's test
cells call our grader inside its kernel, so its time is our grading plus nbgrader's own cost
(start-up, a kernel, executing the notebook, the gradebook).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers import jupyter_env  # noqa: E402

SLUG = "masks-and-heads"


def timed(command: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (best is kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-nbgrader-") as tmp:
        course = Path(tmp) / "course"
        env = jupyter_env(course / ".jupyter")
        python = sys.executable
        nbgrader = [python, "-m", "nbgrader"]
        timed([python, "-m", "autograder", "nbgrader", "build", str(course), SLUG], env)
        timed([*nbgrader, "generate_assignment", SLUG, "--course-dir", str(course)], env, course)
        folder = course / "submitted" / "student" / SLUG
        folder.mkdir(parents=True)
        shutil.copy(course / "source" / SLUG / f"{SLUG}.ipynb", folder)
        shutil.copy(ROOT / "reference" / SLUG / "answers.yaml", folder)
        ours, theirs = [], []
        for _ in range(args.repeat):
            # the same folder: `autograder grade` reads the notebook's answer cells
            ours.append(timed([python, "-m", "autograder", "grade", SLUG, str(folder)], env))
            autograde = [*nbgrader, "autograde", SLUG, "--course-dir", str(course)]
            theirs.append(timed([*autograde, "--student", "student", "--force"], env, course))
        print(json.dumps({"autograder_grade_s": ours, "nbgrader_autograde_s": theirs}))
        print(f"autograder grade:    best {min(ours):.2f} s")
        print(f"nbgrader autograde:  best {min(theirs):.2f} s")
        print(f"ratio (nbgrader / ours): {min(theirs) / min(ours):.2f}x")


if __name__ == "__main__":
    main()
