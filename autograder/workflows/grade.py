"""``autograder grade``: grade one submission folder and print points and feedback."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder import report
from autograder.course.assignment import Assignment
from autograder.errors import ExitCode, GraderFault, SuiteError, UsageError
from autograder.platforms import gradescope
from autograder.platforms.record import grade_for_record
from autograder.result import write_json
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.worker import BUDGET_TIMEOUTS
from autograder.workflows.collect import MANIFEST
from autograder.workflows.command import COURSE, Command, sandbox_option


def holds_a_class(folder: Path, assignment: Assignment) -> bool:
    """Whether ``folder`` is a class (collect's manifest, or folders holding the assignment's
    files) rather than one submission, which has those files itself."""
    own = (f"{assignment.module}.py", "answers.yaml")
    if (folder / MANIFEST).is_file():
        return True
    if any((folder / name).is_file() for name in own):
        return False
    children = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return any(
        (child / name).is_file() or (child / assignment.slug / name).is_file()
        for child in children
        for name in own
    )


def run(args: argparse.Namespace) -> int:
    assignment = Assignment.load(args.assignment, args.course)
    submission = Path(args.submission) if args.submission else assignment.starter
    if not submission.is_dir():
        raise UsageError(f"no such submission folder: {submission}")
    if holds_a_class(submission, assignment):
        raise UsageError(
            f"{submission} holds one folder per student: grade a class with "
            f"`autograder grade-batch {assignment.slug} {submission} --out DIR`"
        )
    try:
        result = grade_for_record(assignment, submission, Sandbox.detect(args.sandbox))
    except (SuiteError, GraderFault) as error:
        if args.json:  # a platform waiting for results.json still gets one
            write_json(Path(args.json), gradescope.gradescope_failure(str(error)))
        raise
    print(report.student_text(result))
    print(report.instructor_text(result), file=sys.stderr)
    if args.json:
        write_json(Path(args.json), gradescope.gradescope(result))
        print(f"results written to {args.json}")
    return ExitCode.OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    p.add_argument(
        "submission", metavar="SUBMISSION_DIR", nargs="?", help="folder with the student's files"
    )
    p.add_argument("--json", metavar="PATH", help="also write Gradescope's results.json here")


COMMAND = Command(
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
    add_arguments=add_arguments,
    parents=(
        sandbox_option(
            "isolation: auto (strongest available), landlock (bubblewrap hidden), "
            "fallback (no bubblewrap, no Landlock), or plain (none)"
        ),
        COURSE,
    ),
    run=run,
)
