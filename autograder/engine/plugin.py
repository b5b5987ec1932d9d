"""The pytest plugin that runs a hidden suite in the trusted process and records the outcomes.

Small hooks, plain functions: fixtures hand tests the student proxy and the reference; the
report hook turns each test's exception into a ``TestResult`` with a message for the student,
or, when trusted code failed (the reference, the suite itself), into an error of the suite.
The grading context lives on ``config.stash`` and is current only while a test runs.
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autograder import PACKAGE_DIR
from autograder.engine import context
from autograder.engine.context import GradingContext, Reference, Student, SuiteFault, TestLog
from autograder.engine.diagnosis import Feedback, reattribute
from autograder.engine.fingerprint import fingerprint
from autograder.errors import GraderFault
from autograder.result import TestResult
from autograder.sandbox.worker import StudentProblem, StudentRaised

GRADING = pytest.StashKey[GradingContext]()
SUITES = PACKAGE_DIR / "suites"
# Exceptions that only a mistake in the suite's own code raises, whatever the student returned.
SUITE_MISTAKES = (NameError, ImportError, SyntaxError, RecursionError, SuiteFault)


class GradingPlugin:
    def __init__(
        self, grading: GradingContext, known: Mapping[str, TestResult] | None = None
    ) -> None:
        self.grading = grading
        # results known without running their tests (``grade``'s ``known``): each stands in,
        # as a copy, where its test would have run
        self.known = dict(known or {})
        self.results: list[TestResult] = []
        self.collected: list[str] = []
        self.errors: list[str] = []  # a broken suite, not a student
        self.faults: list[str] = []  # the grader or its machine failed (GraderFault)

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[GRADING] = self.grading
        config.addinivalue_line("markers", "points(value, checks): points and checked function")
        config.option.tbstyle = "native"  # nobody reads pytest's tracebacks; skip the rich ones

    @pytest.fixture
    def student(self, request: pytest.FixtureRequest) -> Student:
        return Student(request.config.stash[GRADING])

    @pytest.fixture
    def reference(self, request: pytest.FixtureRequest) -> Any:
        grading = request.config.stash[GRADING]
        return Reference(grading.reference, grading.memo)

    @pytest.fixture
    def rng(self, request: pytest.FixtureRequest) -> np.random.Generator:
        return rng_for(request.node.name)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        grading = item.config.stash[GRADING]
        grading.log = TestLog()
        with context.running(grading):
            return (yield)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.errors.append(f"the hidden suite could not be loaded: {report.longreprtext}")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = [item.name for item in session.items]

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.errors.append(f"{len(items)} hidden test(s) were deselected")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        outcome = yield
        report = outcome.get_result()
        if report.when == "setup" and report.failed:
            self.errors.append(f"{item.name}: its set-up failed: {report.longreprtext[-500:]}")
        elif report.when == "call":
            self.record(item, call)

    def record(self, item: pytest.Item, call: pytest.CallInfo) -> None:
        marker = item.get_closest_marker("points")
        if marker is None:
            self.errors.append(f"{item.name} has no @points marker")
            return
        value = float(marker.args[0])
        checks = str(marker.kwargs.get("checks", ""))
        doc = (getattr(item, "obj", None).__doc__ or item.name).strip().splitlines()[0]
        grading = item.config.stash[GRADING]
        result = TestResult(
            id=item.name,
            name=f"{checks}: {doc}",
            part="part2",
            score=0.0,
            max_score=value,
            outcome="passed",
            checks=checks,
            printed="\n".join(grading.log.output),
            ran=sorted(grading.log.ran),
        )
        if call.excinfo is None:
            result.score = value
        elif isinstance(call.excinfo.value, GraderFault):
            self.faults.append(f"{item.name}: {str(call.excinfo.value)[:300]}")
        elif trusted_fault(call.excinfo, grading.log):
            error = call.excinfo.value
            self.errors.append(f"{item.name}: {type(error).__name__}: {str(error)[:300]}")
        else:
            error = reattribute(call.excinfo.value)
            result.outcome, result.message, result.mistakes = verdict(error)
            if isinstance(error, Feedback):
                result.cause, result.explanation, result.blame = (
                    error.cause,
                    error.explanation,
                    error.blame,
                )
                result.shape = error.shape
            result.fingerprint = fingerprint_of(grading.log, error)
        self.results.append(result)


class KnownResults:
    """Beside a ``GradingPlugin``: a test whose result is known is recorded in its place, as a
    copy, and does not run (a plugin of its own: a hook wrapper cannot keep a test from
    running, and pytest reads hooks only by their names)."""

    def __init__(self, grading: GradingPlugin) -> None:
        self.grading = grading

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> bool | None:
        known = self.grading.known.get(item.name)
        if known is None:
            return None
        self.grading.results.append(copy.deepcopy(known))
        return True


def rng_for(test_name: str) -> np.random.Generator:
    """Inputs are random but fixed per test: same submission, same result."""
    return np.random.default_rng(zlib.crc32(test_name.encode()))


def trusted_fault(excinfo: pytest.ExceptionInfo, log: TestLog) -> bool:
    """Did trusted code fail, rather than a check of what the student's code returned?

    So it did when the reference raised, when the error is one only code can make (a
    NameError...), when the engine itself raised, or when nothing came back from the student's
    code for the test to trip over."""
    error = excinfo.value
    if isinstance(error, Feedback | StudentProblem):
        return False
    if isinstance(error, SUITE_MISTAKES):
        return True
    if isinstance(error, AssertionError):
        return False  # a plain assert in the test: a check that failed
    innermost = Path(excinfo.traceback[-1].path)
    if innermost.is_relative_to(PACKAGE_DIR) and not innermost.is_relative_to(SUITES):
        return True
    return not log.calls


def fingerprint_of(log: TestLog, error: BaseException) -> str:
    """The fingerprint of a failed test: every whole value the student's code returned in
    it, in order, and the exception it raised (engine/fingerprint.py)."""
    calls = sorted((c for _, c in log.calls.values() if not c.path), key=lambda c: c.seq)
    by_call = {id(c): v for v, c in log.calls.values()}
    raised = error.type_name if isinstance(error, StudentRaised) else type(error).__name__
    return fingerprint([by_call[id(c)] for c in calls], raised)


def verdict(error: BaseException) -> tuple[str, str, list[str]]:
    """Outcome, message and matched mistakes for the exception that failed a test."""
    if isinstance(error, Feedback):
        return error.outcome, error.detail, [m.name for m in error.mistakes]
    if isinstance(error, StudentProblem):
        return error.outcome, str(error), []
    if isinstance(error, AssertionError):
        return "wrong", str(error).split("\nassert ")[0] or "a check failed.", []
    detail = f"{type(error).__name__}: {str(error)[:300]}"
    return "invalid-output", f"the test could not use what your code returned ({detail}).", []
