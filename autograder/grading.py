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
import time
from pathlib import Path

import pytest

from autograder import context, examplar, quiz
from autograder.assignment import Assignment, UsageError
from autograder.context import GradingContext
from autograder.mistakes import Diagnoser, load_catalogue, module_from_source
from autograder.plugin import GradingPlugin
from autograder.report import neutralise
from autograder.result import Result, TestResult
from autograder.sandbox import Sandbox, secret_values
from autograder.worker import Worker


class SuiteError(RuntimeError):
    """The hidden suite itself is broken: an instructor's problem, never a student's."""


def grade(assignment: Assignment, submission: Path, sandbox: Sandbox | None = None) -> Result:
    submission = Path(submission)
    if not submission.is_dir():
        raise UsageError(f"no such submission folder: {submission}")
    sandbox = sandbox or Sandbox.detect()
    start = time.perf_counter()
    result = Result(assignment=assignment.slug, submission=str(submission), sandbox=sandbox.layers)
    if sandbox.weak:
        result.notices.append("WARNING: weak sandbox (no namespaces): " + "; ".join(sandbox.notes))
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
    reference = module_from_source(source, f"reference {assignment.slug}")
    diagnoser = Diagnoser(load_catalogue(assignment.suite / "mistakes.py"), source)
    if not (submission / assignment.module_file).is_file():
        found = sorted(p.name for p in submission.glob("*.py"))[:10]
        hint = f" (found: {', '.join(found)}; rename yours)" if found else ""
        notices.append(
            f"{assignment.module_file} was not found in the submission{hint}: Part 2 scores 0."
        )
    with Worker(submission, assignment.module, sandbox, assignment.timeout) as worker:
        grading = GradingContext(worker=worker, reference=reference, diagnoser=diagnoser)
        plugin = GradingPlugin(grading)
        context.active = grading
        try:
            printed = run_pytest(assignment.suite / "test_hidden.py", plugin)
        finally:
            context.active = None
    if plugin.errors or not plugin.results:
        detail = "; ".join(plugin.errors) or printed.strip()[-2000:]
        raise SuiteError(neutralise(f"{assignment.slug}: the hidden suite did not run: {detail}"))
    if worker.import_problem:
        notices.append(str(worker.import_problem))
    spec = assignment.student_tests
    if spec is None:
        return plugin.results
    runner = examplar.Runner(spec, submission, sandbox, assignment.timeout)
    return [*plugin.results, examplar.grade(runner, diagnoser.catalogue, reference, source)]


def run_pytest(path: Path, plugin: GradingPlugin) -> str:
    """Run one suite file in this process, quietly, ignoring any project configuration.

    Returns what pytest printed, for the error message when the suite itself is broken."""
    args = [
        str(path),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:terminal",
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
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        pytest.main(args, plugins=[plugin])
    return printed.getvalue()
