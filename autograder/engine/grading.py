"""Grade one submission: Part 1 from answers.yaml, Part 2 from the hidden suite.

Always returns a Result. Whatever the submission does, the only exceptions that escape are
usage errors (no such folder) and faults in the grader or the suite themselves.

Time is bounded: each call into student code stops after the ``timeout`` in the suite's
suite.yaml (say 5 s), and the whole submission gets ``BUDGET_TIMEOUTS`` (6) timeouts' worth
of waiting, 30 s at 5 s; calls after that fail at once. So even a submission whose every
function hangs is graded in about 30 s plus a second or two of overhead.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.course.assignment import Assignment
from autograder.engine import quiz, student_tests
from autograder.engine.context import GradingContext
from autograder.engine.mistakes import Diagnoser, load_catalogue, module_from_source
from autograder.engine.plugin import GradingPlugin
from autograder.errors import SuiteError, UsageError
from autograder.result import Result, TestResult
from autograder.sandbox.layers import Sandbox, secret_values
from autograder.sandbox.worker import Worker
from autograder.standalone.escape import plain as neutralise


def grade(assignment: Assignment, submission: Path, sandbox: Sandbox | None = None) -> Result:
    """Grade the files in ``submission`` as they are (``platforms.record`` knows the other
    layouts a submission comes in, such as nbgrader's notebook)."""
    submission = Path(submission)
    if not submission.is_dir():
        raise UsageError(f"no such submission folder: {submission}")
    result = grade_files(assignment, submission, sandbox or Sandbox.detect())
    result.submission = str(submission)
    return result


def grade_files(assignment: Assignment, submission: Path, sandbox: Sandbox) -> Result:
    start = time.perf_counter()
    result = Result(assignment=assignment.slug, submission=str(submission), sandbox=sandbox.layers)
    result.sandbox_strength = sandbox.strength
    result.instructor_notes.append(sandbox.strength)
    if sandbox.weak:
        result.instructor_notes.append("WARNING: weak sandbox: " + "; ".join(sandbox.notes))
    part1, problems = quiz.grade(assignment.key, submission / "answers.yaml")
    result.notices += problems
    part2 = run_suite(assignment, submission, sandbox, result.notices)
    result.tests = part1 + part2
    redact(result)
    result.seconds = time.perf_counter() - start
    return result


def redact(result: Result) -> None:
    """Blank out the grader's secrets wherever student-derived text could carry them.

    The sandbox never hands the worker a secret; this is the second line, for the weaker
    layers where the worker might read one elsewhere (a file, another process)."""
    secrets = secret_values()
    if not secrets:
        return

    def clean(text: str) -> str:
        for value in secrets:
            text = text.replace(value, "[redacted]")
        return text

    result.notices = [clean(n) for n in result.notices]
    for test in result.tests:
        test.message, test.printed = clean(test.message), clean(test.printed)


def run_suite(
    assignment: Assignment, submission: Path, sandbox: Sandbox, notices: list[str]
) -> list[TestResult]:
    source = assignment.reference_source
    try:
        reference = module_from_source(source, f"reference {assignment.slug}")
        catalogue = load_catalogue(assignment.suite / "mistakes.py")
        diagnoser = Diagnoser(catalogue, source, assignment.returns)
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
            GradingContext(worker=worker, reference=reference, diagnoser=diagnoser)
        )
        printed = run_pytest(assignment.suite / "test_hidden.py", plugin)
    problems = plugin.errors + incomplete(assignment, plugin)
    if problems:
        detail = "; ".join(problems) or printed.strip()[-2000:]
        raise SuiteError(neutralise(f"{assignment.slug}: the hidden suite did not run: {detail}"))
    if worker.import_problem:
        notices.append(str(worker.import_problem))
    spec = assignment.student_tests
    if spec is None:
        return plugin.results
    runner = student_tests.Runner(spec, submission, sandbox, assignment.timeout)
    return [*plugin.results, student_tests.grade(runner, diagnoser.catalogue, reference, source)]


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
        code = pytest.main(args, plugins=[plugin])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        plugin.errors.append(f"pytest stopped with {code!r}: {printed.getvalue()[-1500:]}")
    return printed.getvalue()
