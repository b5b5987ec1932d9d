"""``autograder nbgrader``: write an nbgrader course from our sources (``build``), and grade
its submitted notebooks in the sandbox into nbgrader's gradebook (``autograde``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from autograder.course.assignment import Assignment, slugs
from autograder.errors import ExitCode, not_installed
from autograder.workflows.command import ALLOW_WEAK, COURSE_ROOT, Command, add_actions, own_first


def run(args: argparse.Namespace) -> int:
    from autograder.platforms.nbgrader import notebook

    if args.action == "build":
        names = args.assignments or slugs()
        assignments = [Assignment.load(n, args.course_root) for n in names]
        for path in notebook.build(Path(args.course), assignments):
            print(f"wrote {path}")
        return ExitCode.OK
    try:
        from autograder.platforms.nbgrader import gradebook  # needs nbgrader itself
    except ModuleNotFoundError as error:
        if str(error.name).startswith("autograder"):
            raise
        raise not_installed(str(error.name), "nbgrader", "nbgrader autograde") from None
    course = Path(args.course)
    gradebook.autograde(
        course, args.assignment, args.student, args.allow_weak_sandbox, root=args.course_root
    )
    return ExitCode.OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    nb = add_actions(p)
    q = nb.add_parser(
        "build",
        help="write nbgrader_config.py and source/<slug>/ for each assignment",
        description="Write an nbgrader course into COURSE_DIR: nbgrader_config.py and, per "
        "assignment, source/<slug>/<slug>.ipynb and the blank answers.yaml. Then run "
        "`nbgrader generate_assignment SLUG --course-dir COURSE_DIR`.",
        parents=[COURSE_ROOT],
    )
    q.add_argument("course", metavar="COURSE_DIR", help="the nbgrader course folder")
    q.add_argument("assignments", metavar="ASSIGNMENT", nargs="*", help="slugs (default: all)")
    q = nb.add_parser(
        "autograde",
        help="grade submitted notebooks in the sandbox, into nbgrader's gradebook",
        description="Grade COURSE_DIR/submitted/<student>/ASSIGNMENT/ASSIGNMENT.ipynb (and "
        "answers.yaml beside it) with the sandboxed grader; write the scores into the "
        "gradebook and autograded/ so formgrader, generate_feedback and export work unchanged.",
        parents=[own_first(add_autograde_arguments), ALLOW_WEAK, COURSE_ROOT],
    )


def add_autograde_arguments(q: argparse.ArgumentParser) -> None:
    q.add_argument("course", metavar="COURSE_DIR", help="the nbgrader course folder")
    q.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    q.add_argument("--student", metavar="ID", help="grade only this student")


COMMAND = Command(
    "nbgrader",
    help="build an nbgrader course; autograde it in the sandbox",
    description="Release and grade through nbgrader: `build` writes the course from our sources, "
    "`autograde` grades submissions in the sandbox into nbgrader's gradebook.",
    add_arguments=add_arguments,
    run=run,
)
