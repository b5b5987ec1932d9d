"""A class, side by side in one run: `autograder grade-batch` against `nbgrader autograde`.

Builds the nbgrader course that `autograder nbgrader build` makes, and a class of N submitted
notebooks in it (nbgrader's submitted/<student>/<assignment>/): a mix of the reference, the
starter, catalogued mistakes and hostile code from tests/hostile/, cycling through the dozen
of tests/dozen.py. Both commands then grade the same folder, each as a fresh process the way
an instructor runs it, and the script prints seconds per student, the ratio, the peak memory
of one process and of the whole batch, and the projection for 2,000 students in 20 shards.

    python benchmarks/bench_batch.py [N] [--jobs J]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from dozen import build  # noqa: E402
from helpers import jupyter_env  # noqa: E402

from autograder.course.assignment import Assignment  # noqa: E402
from autograder.platforms.nbgrader.notebook import as_notebook  # noqa: E402

SLUG = "masks-and-heads"
PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss(root: int) -> tuple[int, int]:
    """Resident bytes, now, of ``root`` and all its descendants together, and of the largest
    sandboxed worker among them (a process running worker_main.py)."""
    parent, rss, worker = {}, {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            pid = int(entry.name)
            parent[pid], rss[pid] = int(fields[1]), int(fields[21]) * PAGE
            worker[pid] = b"worker_main.py" in command and b"bwrap" not in command
    total, largest, todo = 0, 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        largest = max(largest, rss.get(pid, 0) if worker.get(pid) else 0)
        todo += [child for child, p in parent.items() if p == pid]
    return total, largest


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, int]:
    """Wall seconds, and the peak resident bytes of the whole process tree and of one
    worker."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    peak = [0, 0]

    def sample() -> None:
        while process.poll() is None:
            total, worker = tree_rss(process.pid)
            peak[:] = max(peak[0], total), max(peak[1], worker)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = process.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    if process.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{out[-3000:]}")
    return wall, peak[0], peak[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("students", type=int, nargs="?", default=200)
    parser.add_argument("--jobs", type=int, default=None, help="grade-batch --jobs")
    parser.add_argument(
        "--exclude",
        nargs="*",
        default=[],
        metavar="STUDENT",
        help="leave these of the dozen out (jo patches numpy, which hangs nbgrader's kernel "
        "until its timeout: about 240 s a notebook)",
    )
    args = parser.parse_args()
    assignment = Assignment.load(SLUG)
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        course = Path(tmp) / "course"
        env = jupyter_env(Path(tmp) / "jupyter")
        autograder, nbgrader = [python, "-m", "autograder"], [python, "-m", "nbgrader"]
        timed([*autograder, "nbgrader", "build", str(course), SLUG], env, course.parent)
        timed([*nbgrader, "generate_assignment", SLUG, "--course-dir", str(course)], env, course)
        dozen = build(Path(tmp) / "dozen")
        templates = [p for p in sorted(dozen.iterdir()) if p.name not in args.exclude]
        kinds: dict[str, int] = {}
        for i in range(args.students):
            source = templates[i % len(templates)]
            kinds[source.name] = kinds.get(source.name, 0) + 1
            folder = course / "submitted" / f"s{i:04d}" / SLUG
            folder.mkdir(parents=True)
            files = {p.name: p.read_text() for p in source.glob("*.py")}
            (folder / f"{SLUG}.ipynb").write_text(json.dumps(as_notebook(assignment, files)))
            shutil.copy(source / "answers.yaml", folder / "answers.yaml")
        print(f"{args.students} students, cycling through {sorted(kinds)}", flush=True)

        batch = [*autograder, "grade-batch", SLUG, str(course / "submitted")]
        batch += ["--out", str(Path(tmp) / "out")]
        batch += ["--jobs", str(args.jobs)] if args.jobs else []
        ours = timed(batch, env, Path(tmp))
        print(f"grade-batch: {ours[0]:.1f} s", flush=True)
        theirs = timed([*nbgrader, "autograde", SLUG, "--course-dir", str(course)], env, course)
        print(f"nbgrader autograde: {theirs[0]:.1f} s", flush=True)

    n = args.students
    per_ours, per_theirs = ours[0] / n, theirs[0] / n
    mib = 1 << 20
    print()
    print("| | grade-batch | nbgrader autograde | ratio |")
    print("|---|---|---|---|")
    print(f"| s per student | {per_ours:.3f} | {per_theirs:.3f} | {per_theirs / per_ours:.1f}x |")
    print(f"| {n} students | {ours[0]:.1f} s | {theirs[0]:.1f} s | |")
    print(f"| peak memory, whole batch | {ours[1] / mib:.0f} MiB | {theirs[1] / mib:.0f} MiB | |")
    print(f"| peak memory, one worker | {ours[2] / mib:.0f} MiB | {theirs[2] / mib:.0f} MiB | |")
    print(f"| projected: 2,000 students in 20 shards | {100 * per_ours:.0f} s per shard | | |")
    largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"largest single process (a job, a kernel, an nbgrader): {largest:.0f} MiB")
    print("(nbgrader's kernels call the same sandboxed workers, sampled every 50 ms)")


if __name__ == "__main__":
    main()
