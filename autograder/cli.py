"""The ``autograder`` command: grade, check, generate, release, export, doctor."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder import check as checking
from autograder import report
from autograder.assignment import Assignment, UsageError, slugs
from autograder.grading import SuiteError, grade
from autograder.platforms import classroom50, gradescope
from autograder.release import release
from autograder.result import write_json
from autograder.sandbox import MODES, Sandbox
from autograder.worker import BUDGET_TIMEOUTS


def cmd_grade(args: argparse.Namespace) -> int:
    assignment = Assignment.load(args.assignment, args.course)
    submission = Path(args.submission) if args.submission else assignment.starter
    if not submission.is_dir():
        raise UsageError(f"no such submission folder: {submission}")
    try:
        result = grade(assignment, submission, Sandbox.detect(args.sandbox))
    except SuiteError as error:
        if args.json:  # a platform waiting for results.json still gets one
            write_json(Path(args.json), gradescope.gradescope_failure(str(error)))
        raise
    print(report.student_text(result))
    print(report.instructor_text(result), file=sys.stderr)
    if args.json:
        write_json(Path(args.json), gradescope.gradescope(result))
        print(f"results written to {args.json}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    names = [args.assignment] if args.assignment else slugs()
    ok = True
    for name in names:
        ok &= checking.check(Assignment.load(name, args.course), Sandbox.detect(args.sandbox))
    return 0 if ok else 1


def cmd_generate(args: argparse.Namespace) -> int:
    for name in [args.assignment] if args.assignment else slugs():
        assignment = Assignment.load(name, args.course)
        for filename, content in assignment.generated().items():
            path = assignment.starter / filename
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            print(f"wrote {path}")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    written = release(Assignment.load(args.assignment), Path(args.out_dir))
    print(f"wrote {len(written)} files to {args.out_dir}: push it as the students' template")
    return 0


EXPORTS = {"gradescope": gradescope.export, "classroom50": classroom50.export}


def cmd_export(args: argparse.Namespace) -> int:
    out = EXPORTS[args.platform](Assignment.load(args.assignment), Path(args.out))
    print(f"wrote the {args.platform} bundle for {args.assignment} to {out}")
    return 0


LAYERS = {
    "process": "a separate worker process, killed whole on a timeout",
    "rlimits": "memory, CPU, file size, open files and core limits",
    "session": "its own session and process group",
    "scrubbed-env": "no tokens, keys or secrets; one BLAS thread",
    "uid": "a dedicated unprivileged uid (only as root)",
    "landlock": "Landlock: reads only Python, NumPy and the submission; writes only scratch",
    "namespaces": "bubblewrap: no network, private PIDs, only the submission visible",
}


def cmd_doctor(args: argparse.Namespace) -> int:
    box = Sandbox.detect(args.sandbox)
    print("Sandbox layers on this machine:")
    for layer, what in LAYERS.items():
        print(f"  [{'ok' if layer in box.layers else '--'}] {layer:<13} {what}")
    for note in box.notes:
        print(f"  missing: {note}")
    limits = box.limits
    print(
        f"limits: {limits.memory >> 20} MiB memory, {limits.cpu_seconds} s CPU, "
        f"{limits.file_size >> 20} MiB files, {limits.open_files} open files, "
        f"{limits.processes} processes"
    )
    print(f"landlock: {box.landlock_summary()}")
    if box.weak:
        print(f"WEAK SANDBOX: {box.strength}")
        print("Grading for record refuses it unless you pass --allow-weak-sandbox.")
    else:
        print(box.strength)
    return 0


def add_course_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--course",
        metavar="COURSE_DIR",
        help="the course folder holding reference/ and assignments/ (default: the copy "
        "installed with the grader, or its source checkout; never the current folder)",
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="autograder",
        description="Grade attention coursework: student code runs in a sandboxed worker.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "grade",
        help="grade one submission and print points and feedback",
        description="Grade SUBMISSION_DIR (default: the starter in "
        "assignments/ASSIGNMENT). Exits 0 whenever grading completed. "
        "Student code runs in a sandboxed worker; each call into it stops after the "
        "assignment's timeout (`timeout` in its suite.yaml, e.g. 5 s), and one submission may "
        "spend at "
        f"most {BUDGET_TIMEOUTS} timeouts of waiting in all ({BUDGET_TIMEOUTS * 5} s at 5 s), "
        "so even a submission whose every function hangs is graded within about "
        f"{BUDGET_TIMEOUTS * 5 + 5} s.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    p.add_argument(
        "submission", metavar="SUBMISSION_DIR", nargs="?", help="folder with the student's files"
    )
    p.add_argument("--json", metavar="PATH", help="also write Gradescope's results.json here")
    p.add_argument(
        "--sandbox",
        choices=MODES,
        default="auto",
        help="isolation: auto (strongest available), landlock (bubblewrap hidden), "
        "fallback (no bubblewrap, no Landlock), or plain (none)",
    )
    add_course_option(p)
    p.set_defaults(run=cmd_grade)

    p = sub.add_parser(
        "check",
        help="validate assignments: reference, stubs, sheet, tests",
        description="Verify each assignment (or the one named) and exit "
        "non-zero with a report when anything is off.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", nargs="?", help="one assignment slug")
    p.add_argument("--sandbox", choices=MODES, default="auto", help="isolation for the workers")
    add_course_option(p)
    p.set_defaults(run=cmd_check)

    p = sub.add_parser(
        "generate",
        help="write the student stubs and blank answer sheets",
        description="Derive assignments/<slug>/ stubs from reference/<slug>/ "
        "and the blank answers.yaml from the quiz key.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", nargs="?", help="one assignment slug")
    add_course_option(p)
    p.set_defaults(run=cmd_generate)

    p = sub.add_parser(
        "release",
        help="write the template repository students receive (public files only)",
        description="Write a ready-to-push template into OUT_DIR (new or empty): the handout, "
        "the blank answers.yaml, the stubs, the public tests, requirements.txt, .gitignore, and "
        ".github/workflows/classroom.yml running the practice checks (`python "
        "practice/check.py`). Never the reference, hidden tests, mistake catalogue or quiz key.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    p.add_argument("out_dir", metavar="OUT_DIR", help="where to write the template")
    p.set_defaults(run=cmd_release)

    p = sub.add_parser(
        "export",
        help="write a grading bundle for Gradescope or Classroom 50",
        description="gradescope: OUT is the autograder zip to upload (setup.sh and "
        "run_autograder at its root). classroom50: OUT is the folder "
        "CLASSROOM/autograders/ASSIGNMENT of the classroom50 repository (autograder.py and the "
        "grader beside it). Both carry the hidden suite and the reference: give them only to "
        "the platform, never to students.",
    )
    p.add_argument("platform", choices=sorted(EXPORTS), help="the platform")
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    p.add_argument("out", metavar="OUT", help="the zip (gradescope) or folder (classroom50)")
    p.set_defaults(run=cmd_export)

    p = sub.add_parser(
        "doctor",
        help="report which sandbox layers work on this machine",
        description="Detect bubblewrap, Landlock, the dedicated uid and resource limits, and "
        "say whether the sandbox is strong (the worker cannot read the grader's files) or weak.",
    )
    p.add_argument("--sandbox", choices=MODES, default="auto", help="the mode to examine")
    p.set_defaults(run=cmd_doctor)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except UsageError as error:
        print(f"autograder: error: {error}", file=sys.stderr)
        return 2
    except SuiteError as error:
        print(f"autograder: the hidden suite is broken: {error}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
