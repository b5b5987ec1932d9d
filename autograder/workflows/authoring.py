"""What a course's author runs on its sources: ``check`` validates every assignment (see
``autograder.workflows.check``), ``generate`` writes the stubs and blank sheets."""

from __future__ import annotations

import argparse

from autograder.course.assignment import Assignment, slugs
from autograder.errors import ExitCode
from autograder.sandbox.layers import Sandbox
from autograder.workflows import check as checking
from autograder.workflows.command import COURSE, SANDBOX, Command


def run_check(args: argparse.Namespace) -> int:
    names = [args.assignment] if args.assignment else slugs()
    assignments = [Assignment.load(name, args.course) for name in names]
    outcomes = checking.check_all(assignments, Sandbox.detect(args.sandbox), quiet=args.quiet)
    return ExitCode.OK if all(o.ok for o in outcomes) else ExitCode.FAILED


def add_check_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("assignment", metavar="ASSIGNMENT", nargs="?", help="one assignment slug")
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print only the failures and the summary table",
    )


def run_generate(args: argparse.Namespace) -> int:
    for name in [args.assignment] if args.assignment else slugs():
        assignment = Assignment.load(name, args.course)
        for filename, content in assignment.generated().items():
            path = assignment.starter / filename
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            print(f"wrote {path}")
    return ExitCode.OK


def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("assignment", metavar="ASSIGNMENT", nargs="?", help="one assignment slug")


CHECK = Command(
    "check",
    help="validate assignments: reference, stubs, sheet, tests",
    description="Verify each assignment (or the one named) and exit "
    "non-zero with a report when anything is off. Ends with a summary table: "
    "assignment, result, what failed, seconds.",
    add_arguments=add_check_arguments,
    parents=(SANDBOX, COURSE),
    run=run_check,
)
GENERATE = Command(
    "generate",
    help="write the student stubs and blank answer sheets",
    description="Derive assignments/<slug>/ stubs from reference/<slug>/ "
    "and the blank answers.yaml from the quiz key.",
    add_arguments=add_generate_arguments,
    parents=(COURSE,),
    run=run_generate,
)
