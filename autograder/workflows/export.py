"""``autograder export``: a grading bundle for a platform (Gradescope, Classroom 50), or a
results folder's grades as an LMS's import file (Canvas, Moodle)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from autograder.course.assignment import Assignment
from autograder.errors import ExitCode, UsageError
from autograder.platforms import classroom50, gradescope, lms
from autograder.workflows import gradebook
from autograder.workflows.command import COURSE, Command

Writer = Callable[[argparse.Namespace], str]  # writes what was asked; says what it wrote


def bundle(write: Callable[[Assignment, Path], Path]) -> Writer:
    """A platform's grading bundle, for one assignment."""

    def export(args: argparse.Namespace) -> str:
        if len(args.assignment) != 1:
            raise UsageError(f"export {args.platform} takes one ASSIGNMENT and OUT")
        if args.roster:
            raise UsageError("--roster is for the canvas and moodle exports")
        slug = args.assignment[0]
        out = write(Assignment.load(slug, args.course), Path(args.out))
        return f"wrote the {args.platform} bundle for {slug} to {out}"

    return export


def grades(write: lms.Format) -> Writer:
    """An LMS's grade import, one column per results folder."""

    def export(args: argparse.Namespace) -> str:
        results = [Path(p) for p in args.assignment]
        roster = Path(args.roster) if args.roster else None
        warn = lambda line: print(f"autograder: {line}", file=sys.stderr)  # noqa: E731
        out = gradebook.export(write, results, Path(args.out), roster, warn)
        return f"wrote the {args.platform} grade import for {len(results)} assignment(s) to {out}"

    return export


# every platform `export` writes for, the one registry
EXPORTS: dict[str, Writer] = {
    "gradescope": bundle(gradescope.export),
    "classroom50": bundle(classroom50.export),
    "canvas": grades(lms.canvas),
    "moodle": grades(lms.moodle),
}


def run(args: argparse.Namespace) -> int:
    print(EXPORTS[args.platform](args))
    return ExitCode.OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("platform", choices=sorted(EXPORTS), help="the platform")
    p.add_argument(
        "assignment",
        metavar="ASSIGNMENT|RESULTS",
        nargs="+",
        help="the assignment slug (gradescope, classroom50), or one or more grade-batch "
        "output folders, one column each (canvas, moodle)",
    )
    p.add_argument(
        "out",
        metavar="OUT",
        help="the zip (gradescope), folder (classroom50) or CSV (canvas, moodle)",
    )
    p.add_argument(
        "--roster",
        metavar="ROSTER",
        help="canvas, moodle: the roster CSV mapping each login to its LMS identity (columns "
        "name, canvas_id, sis_user_id, sis_login_id, section, email; default: roster.csv "
        "beside the course file)",
    )


COMMAND = Command(
    "export",
    help="write a grading bundle (Gradescope, Classroom 50) or grades for an LMS (Canvas, Moodle)",
    description=textwrap.fill(
        "gradescope: OUT is the autograder zip to upload (setup.sh and "
        "run_autograder at its root). classroom50: OUT is the folder "
        "CLASSROOM/autograders/ASSIGNMENT of the classroom50 repository (autograder.py and the "
        "grader beside it). Both carry the hidden suite and the reference: give them only to "
        "the platform, never to students. canvas: OUT is Canvas's gradebook import CSV "
        "(Student, ID, SIS User ID, SIS Login ID, Section, then one column per RESULTS "
        "folder, the grade after the late policy). moodle: OUT is Moodle's grade import CSV "
        "(Email address, then one column per RESULTS folder; map it in Moodle's import "
        "form). Students the roster cannot identify are listed on stderr, never dropped "
        "silently.",
        width=88,
    ),
    add_arguments=add_arguments,
    parents=(COURSE,),
    run=run,
    epilog=gradescope.DRY_RUN,
    formatter_class=argparse.RawDescriptionHelpFormatter,
)
