"""Gradescope: results.json from a Result, and the autograder zip Gradescope runs.

Formats from gradescope/autograder_samples, docs/specs.md. The zip holds ``setup.sh`` and
``run_autograder`` at its root, plus the grader (see ``bundle``). Gradescope unzips it to
/autograder/source, runs setup.sh once, then run_autograder once per submission: it grades
/autograder/submission and always writes /autograder/results/results.json. ``AUTOGRADER_HOME``
stands in for /autograder (tests use it; Gradescope never sets it): ``DRY_RUN`` is the local
dry run, as `autograder export gradescope --help` prints it.

Usage inside the bundle: python3 -m autograder.platforms.gradescope ASSIGNMENT SUBMISSION RESULTS
"""

from __future__ import annotations

import shlex
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from autograder import report
from autograder.course.assignment import Assignment
from autograder.errors import ExitCode
from autograder.platforms import bundle
from autograder.result import Result, write_json
from autograder.standalone.escape import plain

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (as root; choose an
# Ubuntu 24.04 base image: the grader needs Python 3.11 or newer).
set -euo pipefail
# bubblewrap gives the worker its namespace layer where the container allows it.
apt-get update -qq && apt-get install -y -qq python3 python3-pip bubblewrap >/dev/null || true
requirements=/autograder/source/requirements.txt
python3 -m pip install -q -r "$requirements" ||
  python3 -m pip install -q --break-system-packages -r "$requirements"
"""

DRY_RUN = """\
Dry run of the zip on your machine, as Gradescope runs it (in an empty folder, with the
grader's requirements installed, as setup.sh does on Gradescope):
  mkdir -p home/submission
  python3 -m zipfile -e OUT.zip home/source
  cp -r STUDENT_DIR/. home/submission/
  AUTOGRADER_HOME="$PWD/home" bash home/source/run_autograder
  cat home/results/results.json
"""

RUN = """\
#!/usr/bin/env bash
# Gradescope runs this once per submission. It always leaves a results.json.
home="${{AUTOGRADER_HOME:-/autograder}}"
course="$home/source/course"
results="$home/results/results.json"
mkdir -p "$home/results" && rm -f "$results"
# From the course folder: `python3 -m` looks in the working directory first.
(cd "$course" && AUTOGRADER_ROOT="$course" PYTHONPATH="$course" \\
  python3 -m autograder.platforms.gradescope {slug} "$home/submission" "$results")
if [ ! -s "$results" ]; then  # the grader itself could not start
  why="Grading could not run (not a problem with your work): please tell your instructor."
  printf '{{"score": 0, "output": "%s", "tests": []}}\\n' "$why" >"$results"
fi
"""


def gradescope(result: Result) -> dict[str, Any]:
    """Gradescope's results.json (gradescope/autograder_samples, docs/specs.md): the summary
    in Markdown on top, each test's own feedback in its box, instructor notes kept out of
    what students see (extra_data)."""
    tests = []
    outputs = report.test_texts(result)
    for number, (t, output) in enumerate(zip(result.tests, outputs, strict=True), start=1):
        tests.append(
            {
                "name": t.name,
                "number": str(number),
                "score": t.score,
                "max_score": t.max_score,
                "status": "passed" if t.passed else "failed",
                "output": output,
                "output_format": "text",
                "visibility": "visible",
                "tags": [t.part, *([t.checks] if t.checks else [])],
                "extra_data": {
                    "id": t.id,
                    "outcome": t.outcome,
                    "mistakes": t.mistakes,
                    "blame": t.blame,
                },
            }
        )
    return {
        "score": result.score,
        "execution_time": round(result.seconds, 3),
        "output": report.student_markdown(result),
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {
            "assignment": result.assignment,
            "max_score": result.max_score,
            "sandbox": result.sandbox,
            "sandbox_strength": result.sandbox_strength,
            "instructor_notes": result.instructor_notes,
        },
        "tests": tests,
    }


def gradescope_failure(reason: str) -> dict[str, Any]:
    """results.json when grading itself could not run: no score, and why."""
    return {
        "score": 0,
        "output": plain(f"Grading could not run (not a problem with your work): {reason}"),
        "output_format": "text",
        "visibility": "visible",
        "tests": [],
    }


def run(slug: str, submission: Path, results: Path, sandbox: str = "auto") -> int:
    """Grade one submission for Gradescope; whatever happens, write ``results``."""
    try:
        from autograder.platforms import record

        box = record.policy(sandbox, allow_weak=True)  # see record.policy
        result = record.grade_for_record(Assignment.load(slug), submission, box)
        write_json(results, gradescope(result))
        print(report.summary(result))
    except Exception as error:  # noqa: BLE001 - Gradescope must get a results.json regardless
        write_json(results, gradescope_failure(f"{type(error).__name__}: {error}"))
        print(f"grading failed: {type(error).__name__}: {error}", file=sys.stderr)
    return ExitCode.OK


def export(assignment: Assignment, out: Path) -> Path:
    """Write the autograder zip: setup.sh and run_autograder at its root, the grader beside."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        bundle.write_course(assignment, staging)
        (staging / "setup.sh").write_text(SETUP)
        (staging / "run_autograder").write_text(RUN.format(slug=shlex.quote(assignment.slug)))
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(staging.rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo(path.relative_to(staging).as_posix())
                    mode = 0o755 if path.name in ("setup.sh", "run_autograder") else 0o644
                    info.external_attr = mode << 16
                    archive.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(run(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])))
