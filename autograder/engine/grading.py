"""Grade one submission: Part 1 from answers.yaml, Part 2 from the hidden suite.

Always returns a Result. Whatever the submission does, the only exceptions that escape are
usage errors (no such folder) and faults in the grader or the suite themselves.

Time is bounded: each call into student code stops after the ``timeout`` in the suite's
suite.yaml (say 5 s), and the whole submission gets ``BUDGET_TIMEOUTS`` (6) timeouts' worth
of waiting, 30 s at 5 s; calls after that fail at once. So even a submission whose every
function hangs is graded in about 30 s plus a second or two of overhead.

What grading many submissions of one assignment can share (the catalogue, with the variant
modules it builds, and the hidden suite's loaded tests) lives on a ``GradingSession``, which
whoever grades many creates and passes down, as pytest keeps its state on ``config.stash``:
nothing of it outlives the session, and two sessions share nothing.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import os
import re
import sys
import time
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from autograder.course.assignment import Assignment
from autograder.engine import context, quiz, student_tests
from autograder.engine.context import GradingContext, Reference, Student, TestLog
from autograder.engine.memo import Memo
from autograder.engine.mistakes import Catalogue, Diagnoser, load_catalogue, module_from_source
from autograder.engine.plugin import GradingPlugin, KnownResults, rng_for, trusted_fault
from autograder.errors import GraderFault, SuiteError, UsageError
from autograder.result import Result, TestResult
from autograder.sandbox.layers import Sandbox, secret_values
from autograder.sandbox.worker import Worker
from autograder.standalone.escape import plain as neutralise


class GradingSession:
    """What the gradings of one assignment's submissions share, built on first use: the
    catalogue of known mistakes (and the variant modules it builds, one per variant), the
    diagnoser over it, and the hidden suite's test functions for ``losses``.

    The reference module itself is made afresh for each submission (it costs half a
    millisecond): a suite test that changed the reference's state would otherwise carry it
    into the next student's grading. Its functions' answers on plain values are remembered
    (``memo``, engine/memo.py): every submission's tests ask the same questions."""

    def __init__(self, assignment: Assignment) -> None:
        self.assignment = assignment
        self._suites: dict[tuple[str, str], types.ModuleType] = {}  # by path and content
        self.memo = Memo()

    def reference(self) -> types.ModuleType:
        """A fresh reference module, for one submission."""
        a = self.assignment
        return module_from_source(a.reference_source, f"reference {a.slug}")

    @functools.cached_property
    def catalogue(self) -> Catalogue:
        return load_catalogue(self.assignment.suite / "mistakes.py")

    @functools.cached_property
    def diagnoser(self) -> Diagnoser:
        a = self.assignment
        return Diagnoser(self.catalogue, a.reference_source, a.returns, a.axes)

    def suite_tests(self, path: Path) -> list[tuple[str, Callable[..., Any]]]:
        """The test functions of a suite file, in the file's order, loaded once per content."""
        key = (str(path), path.read_text())
        if key not in self._suites:
            with warnings.catch_warnings():  # @points is registered only in a grading session
                warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
                module = module_from_source(key[1], f"hidden suite {path.parent.name}")
            self._suites[key] = module
        module = self._suites[key]
        return [(n, f) for n, f in vars(module).items() if n.startswith("test_") and callable(f)]

    def serves(self, assignment: Assignment) -> GradingSession:
        """This session, after checking that it is ``assignment``'s."""
        mine = self.assignment
        if (assignment.slug, assignment.suite) != (mine.slug, mine.suite):
            raise ValueError(f"a grading session of {mine.slug} cannot grade {assignment.slug}")
        return self


def grade(
    assignment: Assignment,
    submission: Path,
    sandbox: Sandbox | None = None,
    session: GradingSession | None = None,
    student_tests: bool = True,
    known: Mapping[str, TestResult] | None = None,
) -> Result:
    """Grade the files in ``submission`` as they are (``platforms.record`` knows the other
    layouts a submission comes in, such as nbgrader's notebook). Without a ``session``, the
    grading has one of its own.

    ``student_tests=False`` leaves out the item that grades the student's own tests, for
    callers that judge only the code (``check`` grading variants of the reference, whose test
    file is the reference's): that item starts a fresh worker per implementation it lends.

    ``known``: hidden tests whose results the caller knows without running them (``check``: a
    variant's tests that cannot run what it changes), each recorded as given, in its place."""
    submission = Path(submission)
    if not submission.is_dir():
        raise UsageError(f"no such submission folder: {submission}")
    sandbox = sandbox or Sandbox.detect()
    result = grade_files(assignment, submission, sandbox, session, student_tests, known)
    result.submission = str(submission)
    return result


def grade_files(
    assignment: Assignment,
    submission: Path,
    sandbox: Sandbox,
    session: GradingSession | None = None,
    student_tests: bool = True,
    known: Mapping[str, TestResult] | None = None,
) -> Result:
    start = time.perf_counter()
    part1, notices = quiz.grade(assignment.key, submission / "answers.yaml")
    session = session.serves(assignment) if session else GradingSession(assignment)
    part2 = run_suite(assignment, submission, sandbox, notices, session, student_tests, known)
    notes = [sandbox.strength]
    if sandbox.weak:
        notes.append("WARNING: weak sandbox: " + "; ".join(sandbox.notes))
    result = Result(assignment.slug, str(submission), part1 + part2, notices, notes)
    result.sandbox, result.sandbox_strength = sandbox.layers, sandbox.strength
    redact(result)
    result.seconds = time.perf_counter() - start
    return result


def redact(result: Result) -> None:
    """Blank out the grader's secrets wherever student-derived text could carry them.

    The sandbox never hands the worker a secret; this is the second line, for the weaker
    layers where the worker might read one elsewhere (a file, another process). The job's
    folders are internal too: a path into them becomes the file's own name."""
    secrets = secret_values()

    def clean(text: str) -> str:
        for value in secrets:
            text = text.replace(value, "[redacted]")
        return BOX_PATH.sub("", JOB_PATH.sub("", text))

    result.notices = [clean(n) for n in result.notices]
    for test in result.tests:
        test.message, test.printed = clean(test.message), clean(test.printed)
        test.cause, test.explanation = clean(test.cause), clean(test.explanation)


# where a worker sees the submission: in its job folder, or at /sub and /runner in a box
JOB_PATH = re.compile(r"(?:[\w.~-]*/)*autograder-job-\w+/(?:sub/|runner/|tmp/)?")
BOX_PATH = re.compile(r"(?<![\w.])/(?:sub|runner|tmp)/(?=[\w.-]+\.py)")


def run_suite(
    assignment: Assignment,
    submission: Path,
    sandbox: Sandbox,
    notices: list[str],
    session: GradingSession,
    with_student_tests: bool = True,
    known: Mapping[str, TestResult] | None = None,
) -> list[TestResult]:
    source = assignment.reference_source
    try:
        reference = session.reference()
        diagnoser = session.diagnoser
    except Exception as error:
        problem = f"{assignment.slug}: the reference or the catalogue fails: {error}"
        raise SuiteError(problem) from error
    if not (submission / assignment.module_file).is_file():
        found = sorted(p.name for p in submission.glob("*.py"))[:10]
        hint = f" (found: {', '.join(found)}; rename yours)" if found else ""
        notices.append(
            f"{assignment.module_file} was not found in the submission{hint}: Part 2 scores 0."
        )
    with Worker(submission, assignment.module, sandbox, assignment.timeout) as worker:
        worker.prestart()
        plugin = GradingPlugin(
            GradingContext(
                worker=worker, reference=reference, diagnoser=diagnoser, memo=session.memo
            ),
            known,
        )
        printed = run_pytest(assignment.suite / "test_hidden.py", plugin)
    if plugin.faults:  # before the suite's problems: a fault leaves tests unrecorded
        raise GraderFault(f"{assignment.slug}: the grader failed: {plugin.faults[0]}")
    problems = plugin.errors + incomplete(assignment, plugin)
    if problems:
        detail = "; ".join(problems) or printed.strip()[-2000:]
        raise SuiteError(neutralise(f"{assignment.slug}: the hidden suite did not run: {detail}"))
    if worker.import_problem:
        notices.append(str(worker.import_problem))
    spec = assignment.student_tests
    if spec is None or not with_student_tests:
        return plugin.results
    runner = student_tests.Runner(spec, submission, sandbox, assignment.timeout)
    return [*plugin.results, student_tests.grade(runner, diagnoser.catalogue, reference, source)]


def losses(
    assignment: Assignment,
    submission: Path,
    sandbox: Sandbox,
    function: str,
    session: GradingSession | None = None,
) -> list[str]:
    """The hidden tests that a mutant of ``function`` fails: at most the first one.

    The mutant runs as a student's code does, in the same worker and sandbox, and the suite's
    tests judge it with the same rules as the grading plugin (``trusted_fault``). But only the
    tests that can see ``function`` run, its own first; the run stops at the first loss (one
    lost point kills a mutant); nothing is diagnosed; and the tests are called directly rather
    than through a pytest session, whose start-up would cost more than the tests themselves
    (mutation testing runs a hundred of them per assignment). Suite tests take only the
    ``student``, ``reference`` and ``rng`` fixtures, so nothing of pytest is missed. A
    ``session`` shared by the mutants of one assignment loads its suite once."""
    session = session.serves(assignment) if session else GradingSession(assignment)
    reference = session.reference()
    quiet = Diagnoser(Catalogue(), assignment.reference_source, assignment.returns)
    tests = focused(session.suite_tests(assignment.suite / "test_hidden.py"), assignment, function)
    with Worker(submission, assignment.module, sandbox, assignment.timeout) as worker:
        worker.prestart()
        grading = GradingContext(
            worker=worker, reference=reference, diagnoser=quiet, memo=session.memo
        )
        for name, test in tests:
            if not passes(grading, name, test):
                return [name]
    return []


def passes(grading: GradingContext, name: str, test: Callable[..., Any]) -> bool:
    grading.log = TestLog()
    fixtures = {
        "student": lambda: Student(grading),
        "reference": lambda: Reference(grading.reference, grading.memo),
        "rng": lambda: rng_for(name),
    }
    wanted = inspect.signature(test).parameters
    with context.running(grading):
        try:
            test(**{k: make() for k, make in fixtures.items() if k in wanted})
        except Exception as error:
            if trusted_fault(pytest.ExceptionInfo.from_exception(error), grading.log):
                raise SuiteError(f"{name}: {type(error).__name__}: {str(error)[:300]}") from error
            return False
    return True


def focused(
    tests: list[tuple[str, Callable[..., Any]]], assignment: Assignment, function: str
) -> list[tuple[str, Callable[..., Any]]]:
    """The tests that can see ``function``: those of the function itself first."""
    own = [(n, t) for n, t in tests if checked_by(t) == function]
    others = [
        (n, t)
        for n, t in tests
        if checked_by(t) != function and assignment.graded_together(checked_by(t), function)
    ]
    return own + others


def checked_by(test: Callable[..., Any]) -> str:
    marks = getattr(test, "pytestmark", [])
    return next((str(m.kwargs.get("checks", "")) for m in marks if m.name == "points"), "")


def incomplete(assignment: Assignment, plugin: GradingPlugin) -> list[str]:
    """What keeps the recorded tests from being the whole suite, worth the declared points."""
    recorded = sorted(t.id for t in plugin.results)
    if not recorded:
        return ["no hidden test ran"]
    if recorded != sorted(plugin.collected):
        missing = sorted(set(plugin.collected) - set(recorded))
        return [
            f"{len(recorded)} tests recorded of {len(plugin.collected)} collected "
            f"(not recorded: {', '.join(missing[:5]) or 'none'})"
        ]
    total = sum(t.max_score for t in plugin.results)
    if assignment.student_tests:  # the item graded after the suite, worth its declared points
        total += assignment.student_tests.points
    declared = assignment.points.get("part2", 0.0)
    if total != declared:
        return [f"the tests are worth {total:g} points, but suite.yaml declares {declared:g}"]
    return []


@contextlib.contextmanager
def hermetic_environment() -> Iterator[None]:
    """For the span of one run, none of the caller's PYTEST_* settings (PYTEST_ADDOPTS could
    deselect tests, PYTEST_PLUGINS add hooks) and no plugins loaded by entry point."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("PYTEST_")}
    for name in saved:
        del os.environ[name]
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        for name in [k for k in os.environ if k.startswith("PYTEST_")]:
            del os.environ[name]
        os.environ.update(saved)


@contextlib.contextmanager
def imported_afresh(folder: Path) -> Iterator[None]:
    """Forget the suite's modules after the run: pytest's importlib mode would otherwise hand
    the next run, of another suite whose file is also test_hidden.py, this one's module."""
    # by the text of their paths: resolving every loaded module's file costs more than a run
    roots = tuple(f"{root}{os.sep}" for root in {str(folder.absolute()), str(folder.resolve())})
    try:
        yield
    finally:
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None) or ""
            if file.startswith(roots):
                del sys.modules[name]


def run_pytest(path: Path, plugin: GradingPlugin) -> str:
    """Run one suite file in this process, quietly, with no configuration but ours: no ini
    file, no conftest, no PYTEST_ADDOPTS, and no plugin but the grading one.

    Returns what pytest printed, for the error message when the suite itself is broken."""
    args = [
        str(path),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:terminal",
        # these two collect garbage five times per run (a quarter of a grading's time), to
        # report exceptions raised in __del__ and threads, which grading never reads
        "-p",
        "no:unraisableexception",
        "-p",
        "no:threadexception",
        "--noconftest",
        "--import-mode=importlib",
        "-c",
        os.devnull,
        "--rootdir",
        str(path.parent),
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
    ]
    printed = io.StringIO()
    with (
        contextlib.redirect_stdout(printed),
        contextlib.redirect_stderr(printed),
        hermetic_environment(),
        imported_afresh(path.parent),
    ):
        code = pytest.main(args, plugins=[plugin, KnownResults(plugin)])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        plugin.errors.append(f"pytest stopped with {code!r}: {printed.getvalue()[-1500:]}")
    return printed.getvalue()
