"""Grading for record: the one entry that every route recording a grade calls (grade-batch,
nbgrader, Gradescope, Classroom 50, and ``autograder grade``), with one sandbox policy.

It knows the layouts a submission is handed in as: the assignment's files, or nbgrader's
notebook, whose answer cells stand for them. The engine below grades a folder of files and
knows neither notebooks nor policies.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from autograder.course.assignment import Assignment
from autograder.engine.grading import GradingSession, grade_files
from autograder.errors import UsageError
from autograder.result import Result
from autograder.sandbox.layers import Sandbox


def policy(mode: str = "auto", allow_weak: bool = False) -> Sandbox:
    """The sandbox a grade for record is made in: a weak one is refused unless the instructor
    accepts it (``--allow-weak-sandbox``). The platforms' bundles accept it, since each
    submission there runs in a throwaway container of the platform's; every result records
    the sandbox's strength either way."""
    return Sandbox.for_record(mode, allow_weak)


def grade_for_record(
    assignment: Assignment,
    submission: Path,
    sandbox: Sandbox,
    session: GradingSession | None = None,
) -> Result:
    """Grade one handed-in folder, in whatever layout it came, in ``sandbox`` (see policy);
    a route that grades many passes one ``session`` for them all."""
    submission = Path(submission)
    if not submission.is_dir():
        raise UsageError(f"no such submission folder: {submission}")
    if not handed_in_as_notebook(assignment, submission):  # the files themselves
        return grade_files(assignment, submission, sandbox, session)
    with handed_in_files(assignment, submission) as files:
        result = grade_files(assignment, files, sandbox, session)
    result.submission = str(submission)
    return result


def handed_in_as_notebook(assignment: Assignment, submission: Path) -> bool:
    """nbgrader's layout: the assignment's notebook, and not the module."""
    notebook = submission / f"{assignment.slug}.ipynb"
    return notebook.is_file() and not (submission / assignment.module_file).exists()


@contextlib.contextmanager
def handed_in_files(assignment: Assignment, submission: Path) -> Iterator[Path]:
    """The folder of files to grade: the submission itself, or, where it holds the
    assignment's notebook (nbgrader's layout) and not the module, the files that notebook
    stands for, written into a temporary folder: the submission is never written to."""
    if not handed_in_as_notebook(assignment, submission):
        yield submission
        return
    from autograder.platforms.nbgrader.notebook import extract  # only for a notebook

    with tempfile.TemporaryDirectory(prefix="notebook-") as tmp:
        extract(submission / f"{assignment.slug}.ipynb", assignment, Path(tmp))
        yield Path(tmp)
