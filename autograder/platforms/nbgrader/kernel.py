"""What the hidden test cells call inside nbgrader's kernel, during ``nbgrader autograde``.

The score does not come from the kernel's state: ``check`` grades the notebook file itself
(nbgrader runs the kernel in the notebook's folder, after restoring every test cell from
``source/``) with our sandboxed grader, once per kernel, and prints one cell's share of the
feedback. So plain ``nbgrader autograde`` gives the same scores as ``autograder grade``.

It is still a kernel that ran the student's cells first: they can patch NumPy, or this module,
before a test cell runs. That route is as forgeable as nbgrader itself; for grades of record
use ``autograder nbgrader autograde``, which never runs a student's cell outside the sandbox.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import warnings
from pathlib import Path

from autograder import report
from autograder.course.assignment import Assignment
from autograder.engine.grading import grade
from autograder.platforms.nbgrader.notebook import ANSWERS, PART1, extract, piece_of
from autograder.result import Result, TestResult


class KernelGrades:
    """One grading per notebook version: the first test cell grades, the others read it."""

    def __init__(self) -> None:
        self.results: dict[tuple[str, ...], Result] = {}

    def graded(self, slug: str, folder: Path) -> Result:
        notebook = folder / f"{slug}.ipynb"
        sheet = folder / ANSWERS
        stamp = tuple(str(p.stat().st_mtime_ns) if p.exists() else "-" for p in (notebook, sheet))
        key = (slug, str(folder.resolve()), *stamp)
        if key not in self.results:
            assignment = Assignment.load(slug)
            with tempfile.TemporaryDirectory(prefix="nbgrader-") as tmp:
                extract(notebook, assignment, Path(tmp))
                self.results[key] = grade(assignment, Path(tmp))
        return self.results[key]


def kernel_grades() -> KernelGrades:
    """This kernel's gradings, kept on IPython's shell: the test cells share nothing else, and
    the shell is the kernel's own session object (as pytest keeps its state on
    ``config.stash``). Outside a kernel, every call grades afresh."""
    try:
        from IPython import get_ipython
    except ImportError:
        return KernelGrades()
    shell = get_ipython()
    if shell is None:
        return KernelGrades()
    if not isinstance(getattr(shell, "autograder_grades", None), KernelGrades):
        shell.autograder_grades = KernelGrades()
    return shell.autograder_grades


def cell_tests(result: Result, piece: str) -> list[TestResult]:
    """The tests whose points one test cell shows: Part 1's, or one piece's."""
    if piece == PART1:
        return result.part("part1")
    return [t for t in result.part("part2") if piece_of(t.checks) == piece]


def feedback(tests: list[TestResult], notices: list[str]) -> str:
    # A notice that a test already repeats (attention.py did not import, say) is said once.
    said = {t.message for t in tests}
    lines = report.notice_lines([n for n in notices if n not in said])
    explained: set[str] = set()
    for test in tests:
        mark = "PASS" if test.passed else "FAIL"
        score = f"{report.points(test.score)}/{report.points(test.max_score)}"
        lines.append(f"[{mark}] {score}  {report.neutralise(test.name)}")
        if not test.passed:
            again = bool(test.cause) and test.cause in explained
            lines += ["    " + line for line in report.test_lines(test, explained=again)]
            explained.add(test.cause)
    earned, total = sum(t.score for t in tests), sum(t.max_score for t in tests)
    lines.append(f"{report.points(earned)}/{report.points(total)} points")
    return "\n".join(lines)


def check(slug: str, checks: str) -> float:
    """Print the feedback for one test cell (a function's tests, or Part 1); return its points.

    Nothing reaches stderr (nbgrader scores any stderr output 0) and nothing is raised (a
    traceback could quote the hidden lines in the feedback)."""
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stderr(quiet), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = kernel_grades().graded(slug, Path.cwd())
    except Exception as error:
        print(f"This cell could not be graded ({type(error).__name__}: {error}); 0 points.")
        return 0.0
    about_sheet = [n for n in result.notices if ANSWERS in n]
    notices = about_sheet if checks == PART1 else [n for n in result.notices if ANSWERS not in n]
    tests = cell_tests(result, checks)
    print(feedback(tests, notices))
    return round(sum(t.score for t in tests), 6)
