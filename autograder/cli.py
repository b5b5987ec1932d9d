"""The ``autograder`` command: grade, check, generate, doctor."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder import check as checking
from autograder import report
from autograder.assignment import Assignment, UsageError, slugs
from autograder.grading import SuiteError, grade
from autograder.result import gradescope, gradescope_failure, write_json
from autograder.sandbox import MODES, Sandbox
from autograder.worker import BUDGET_TIMEOUTS


def cmd_grade(args: argparse.Namespace) -> int:
    assignment = Assignment.load(args.assignment)
    submission = Path(args.submission) if args.submission else assignment.starter
    if not submission.is_dir():
        raise UsageError(f"no such submission folder: {submission}")
    try:
        result = grade(assignment, submission, Sandbox.detect(args.sandbox))
    except SuiteError as error:
        if args.json:  # a platform waiting for results.json still gets one
            write_json(Path(args.json), gradescope_failure(str(error)))
        raise
    print(report.summary(result))
    if args.json:
        write_json(Path(args.json), gradescope(result))
        print(f"results written to {args.json}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    names = [args.assignment] if args.assignment else slugs()
    ok = True
    for name in names:
        ok &= checking.check(Assignment.load(name), Sandbox.detect(args.sandbox))
    return 0 if ok else 1


def cmd_generate(args: argparse.Namespace) -> int:
    for name in [args.assignment] if args.assignment else slugs():
        assignment = Assignment.load(name)
        for filename, content in assignment.generated().items():
            path = assignment.starter / filename
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            print(f"wrote {path}")
    return 0


def cmd_nbgrader(args: argparse.Namespace) -> int:
    from autograder.nbgrader import notebook

    if args.action == "build":
        names = args.assignments or slugs()
        for path in notebook.build(Path(args.course), [Assignment.load(n) for n in names]):
            print(f"wrote {path}")
        return 0
    from autograder.nbgrader import gradebook  # needs nbgrader itself

    course = Path(args.course)
    gradebook.autograde(course, args.assignment, args.student, args.allow_weak_sandbox)
    return 0


LAYERS = {
    "process": "a separate worker process, killed whole on a timeout",
    "rlimits": "memory, CPU, file size, open files and core limits",
    "session": "its own session and process group",
    "scrubbed-env": "no tokens, keys or secrets; one BLAS thread",
    "uid": "a dedicated unprivileged uid (only as root)",
    "namespaces": "bubblewrap: no network, private PIDs, only the submission visible",
}


def cmd_doctor(args: argparse.Namespace) -> int:
    box = Sandbox.detect()
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
    if box.weak:
        print("WEAK SANDBOX: no namespaces; grading will say so in every result.")
    else:
        print("full sandbox available")
    return 0


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
        help="isolation: auto (strongest available), fallback, or plain",
    )
    p.set_defaults(run=cmd_grade)

    p = sub.add_parser(
        "check",
        help="validate assignments: reference, stubs, sheet, tests",
        description="Verify each assignment (or the one named) and exit "
        "non-zero with a report when anything is off.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", nargs="?", help="one assignment slug")
    p.add_argument("--sandbox", choices=MODES, default="auto", help="isolation for the workers")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser(
        "generate",
        help="write the student stubs and blank answer sheets",
        description="Derive assignments/<slug>/ stubs from reference/<slug>/ "
        "and the blank answers.yaml from the quiz key.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", nargs="?", help="one assignment slug")
    p.set_defaults(run=cmd_generate)

    p = sub.add_parser(
        "nbgrader",
        help="build an nbgrader course; autograde it in the sandbox",
        description="Release and grade through nbgrader: `build` writes the course from our "
        "sources, `autograde` grades submissions in the sandbox into nbgrader's gradebook.",
    )
    nb = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = nb.add_parser(
        "build",
        help="write nbgrader_config.py and source/<slug>/ for each assignment",
        description="Write an nbgrader course into COURSE_DIR: nbgrader_config.py and, per "
        "assignment, source/<slug>/<slug>.ipynb and the blank answers.yaml. Then run "
        "`nbgrader generate_assignment SLUG --course-dir COURSE_DIR`.",
    )
    q.add_argument("course", metavar="COURSE_DIR", help="the nbgrader course folder")
    q.add_argument("assignments", metavar="ASSIGNMENT", nargs="*", help="slugs (default: all)")
    q.set_defaults(run=cmd_nbgrader)
    q = nb.add_parser(
        "autograde",
        help="grade submitted notebooks in the sandbox, into nbgrader's gradebook",
        description="Grade COURSE_DIR/submitted/<student>/ASSIGNMENT/ASSIGNMENT.ipynb (and "
        "answers.yaml beside it) with the sandboxed grader; write the scores into the "
        "gradebook and autograded/ so formgrader, generate_feedback and export work unchanged.",
    )
    q.add_argument("course", metavar="COURSE_DIR", help="the nbgrader course folder")
    q.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    q.add_argument("--student", metavar="ID", help="grade only this student")
    q.add_argument(
        "--allow-weak-sandbox",
        action="store_true",
        help="grade for record even when the sandbox has no namespaces",
    )
    q.set_defaults(run=cmd_nbgrader)

    p = sub.add_parser(
        "doctor",
        help="report which sandbox layers work on this machine",
        description="Detect bubblewrap, the dedicated uid and resource limits.",
    )
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
