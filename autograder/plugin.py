"""The pytest plugin that runs a hidden suite in the trusted process and records the outcomes.

Small hooks, plain functions: fixtures hand tests the student proxy and the reference; the
report hook turns each test's exception into a ``TestResult`` with a message for the student.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

from autograder.context import GradingContext, Student, TestLog
from autograder.result import TestResult
from autograder.testing import Feedback, reattribute
from autograder.worker import StudentProblem


class GradingPlugin:
    def __init__(self, context: GradingContext) -> None:
        self.context = context
        self.results: list[TestResult] = []
        self.errors: list[str] = []  # collection problems: a broken suite, not a student

    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", "points(value, checks): points and checked function")
        config.option.tbstyle = "native"  # nobody reads pytest's tracebacks; skip the rich ones

    @pytest.fixture
    def student(self) -> Student:
        return Student(self.context)

    @pytest.fixture
    def reference(self) -> Any:
        return self.context.reference

    @pytest.fixture
    def rng(self, request: pytest.FixtureRequest) -> np.random.Generator:
        """Inputs are random but fixed per test: same submission, same result."""
        return np.random.default_rng(zlib.crc32(request.node.name.encode()))

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.context.log = TestLog()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.errors.append(f"the hidden suite could not be loaded: {report.longreprtext}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and report.failed):
            self.results.append(self.record(item, call))

    def record(self, item: pytest.Item, call: pytest.CallInfo) -> TestResult:
        marker = item.get_closest_marker("points")
        if marker is None:
            raise pytest.UsageError(f"{item.name} has no @points marker")
        value = float(marker.args[0])
        checks = str(marker.kwargs.get("checks", ""))
        doc = (getattr(item, "obj", None).__doc__ or item.name).strip().splitlines()[0]
        result = TestResult(
            id=item.name,
            name=f"{checks}: {doc}",
            part="part2",
            score=0.0,
            max_score=value,
            outcome="passed",
            checks=checks,
            printed="\n".join(self.context.log.output),
        )
        if call.excinfo is None:
            result.score = value
        else:
            error = reattribute(call.excinfo.value)
            result.outcome, result.message, result.mistakes = verdict(error)
            if isinstance(error, Feedback):
                result.cause, result.explanation, result.blame = (
                    error.cause,
                    error.explanation,
                    error.blame,
                )
        return result


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
