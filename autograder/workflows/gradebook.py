"""What a grade-batch (or merge, or regrade) folder says each student gets, the late policy
applied: the one reading that the diff, the LMS exports and the feedback share."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.course.assignment import slugs
from autograder.errors import ExitCode, UsageError
from autograder.platforms import lms
from autograder.result import atomic_write_text
from autograder.workflows import collect, term
from autograder.workflows.command import Command
from autograder.workflows.records import Record, load_record, open_results


@dataclass
class Grade:
    record: Record
    charge: term.Charge

    @property
    def total(self) -> float | None:
        """The grade after the policy; None where there is no grade."""
        return self.charge.total(self.record.score) if self.record.graded else None


@dataclass
class Folder:
    path: Path
    state: dict[str, Any]
    course: term.Course | None
    grades: dict[str, Grade] = field(default_factory=dict)  # by student

    @property
    def assignment(self) -> str:
        return str(self.state["assignment"])

    @property
    def grader(self) -> str:
        return str(self.state.get("grader_version", ""))


def course_of(state: dict[str, Any]) -> term.Course | None:
    """The course file grade-batch recorded, read again (its extensions checked against the
    class), or None where it graded without one."""
    path = state.get("course_file") or ""
    if not path:
        return None
    if not Path(path).is_file():
        raise UsageError(f"the course file these results were graded with is gone: {path}")
    return term.load(Path(path), slugs(), state.get("students", []))


def read_folder(path: Path) -> Folder:
    path = Path(path)
    state = open_results(path)
    course = course_of(state)
    charge = course.charger(state["assignment"]) if course else (lambda _: term.Charge())
    folder = Folder(path, state, course)
    for student in state["students"]:
        record = load_record(path, student)
        if record is not None:
            folder.grades[student] = Grade(record, charge(student))
    return folder


# -- into the LMS -------------------------------------------------------------------------------

NOT_SUBMITTED = ("missing", "empty")  # nothing collected by the deadline's window: a zero


def sent_grade(grade: Grade) -> float | None:
    """What goes to the LMS: the total after the policy, 0 for nothing submitted, and
    nothing where grading could not run (a fault to fix, not a zero)."""
    if grade.total is not None:
        return grade.total
    return 0.0 if grade.record.status in NOT_SUBMITTED else None


def default_roster(folder: Folder) -> Path:
    if folder.course is None:
        raise UsageError(f"{folder.path} was graded without a course file: give --roster")
    return folder.course.path.parent / "roster.csv"


def export(
    write: lms.Format,
    results: list[Path],
    out: Path,
    roster: Path | None = None,
    warn: Callable[[str], None] = print,
) -> Path:
    """Write an LMS's import CSV (``write``: ``lms.canvas``, ``lms.moodle``) for one or more
    results folders, one column each."""
    folders = [read_folder(path) for path in results]
    slugs_seen = [f.assignment for f in folders]
    if len(set(slugs_seen)) < len(slugs_seen):
        raise UsageError("two results folders for the same assignment: give one of each")
    rows = collect.roster_rows(roster or default_roster(folders[0]))
    identities = {login.casefold(): row for login, row in rows}
    grades: lms.Grades = {
        f.assignment: {s: sent_grade(g) for s, g in f.grades.items()} for f in folders
    }
    text, unmatched = write(grades, identities)
    out = Path(out)
    atomic_write_text(out, text)
    if unmatched:
        warn(f"not exported, no {lms.NEEDS[write]} in the roster: {', '.join(unmatched)}")
    return out


def passback(
    results: Path,
    url: str,
    course_id: int,
    assignment_id: int,
    roster: Path | None = None,
    warn: Callable[[str], None] = print,
) -> int:
    """Send one results folder's grades (after the policy) to a Canvas assignment; the number
    sent. The token comes from the environment, never from an argument or a file."""
    token = os.environ.get(lms.CANVAS_TOKEN, "")
    if not token:
        raise UsageError(f"passing grades back needs a Canvas API token in {lms.CANVAS_TOKEN}")
    try:
        import canvasapi  # noqa: F401
    except ImportError:
        raise UsageError("passing grades back needs canvasapi: pip install canvasapi") from None
    folder = read_folder(results)
    rows = collect.roster_rows(roster or default_roster(folder))
    ids = {login.casefold(): row.get("canvas_id", "") for login, row in rows}
    grades, unmatched = {}, []
    for student, grade in folder.grades.items():
        value = sent_grade(grade)
        if value is None:
            continue
        if ids.get(student.casefold()):
            grades[ids[student.casefold()]] = value
        else:
            unmatched.append(student)
    if unmatched:
        warn(f"not sent, no canvas_id in the roster: {', '.join(unmatched)}")
    try:
        lms.canvas_passback(url, token, course_id, assignment_id, grades)
    except Exception as error:  # canvasapi's errors and the network's: one line, no token
        why = " ".join(str(error).replace(token, "[redacted]").split())
        raise UsageError(f"Canvas refused the grades ({type(error).__name__}): {why}") from None
    return len(grades)


# -- the command -----------------------------------------------------------------------------------


def run_passback(args: argparse.Namespace) -> int:
    warn = lambda line: print(f"autograder: {line}", file=sys.stderr)  # noqa: E731
    roster = Path(args.roster) if args.roster else None
    sent = passback(Path(args.results), args.url, args.course_id, args.assignment_id, roster, warn)
    print(f"sent {sent} grade(s) to Canvas assignment {args.assignment_id}")
    return ExitCode.OK


def add_passback_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="RESULTS", help="a grade-batch, merge or regrade folder")
    p.add_argument(
        "--url", required=True, help="the Canvas address, e.g. https://canvas.example.edu"
    )
    p.add_argument("--course-id", required=True, type=int, help="the Canvas course id")
    p.add_argument("--assignment-id", required=True, type=int, help="the Canvas assignment id")
    p.add_argument(
        "--roster",
        metavar="ROSTER",
        help="the roster CSV with a canvas_id column (default: roster.csv beside the course file)",
    )


PASSBACK = Command(
    "passback",
    help="send a results folder's grades straight to a Canvas assignment (canvasapi)",
    description="Post every graded student's total (after the late policy; 0 for nothing "
    "submitted) to one Canvas assignment in a single bulk update, through canvasapi "
    "(pip install canvasapi). Students are matched by the roster's canvas_id; those "
    "without one are listed on stderr. The token is read from CANVAS_API_TOKEN, never "
    "from an argument.",
    add_arguments=add_passback_arguments,
    run=run_passback,
)
