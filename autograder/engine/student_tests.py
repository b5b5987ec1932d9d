"""Student-written tests, graded against hidden implementations ("wheats and chaffs").

Examplar (Brown University) grades a student's tests by running them on implementations the
student cannot see: correct ones in several styles (wheats) and buggy ones (chaffs). A test
that fails a wheat is wrong, whatever else it catches; otherwise the tests are worth the share
of chaffs they catch. Here the wheats are the reference and the catalogue's "also correct"
forms, and the chaffs its known mistakes, so one catalogue serves the suite, the diagnosis and
this item.

A suite declares the item in suite.yaml:

    student_tests:
      module: test_layer            # the file of tests the student writes
      argument: Layer               # the name of the argument each test receives
      implements: CausalSelfAttention   # the class handed to each test, in every version
      required: [test_future_cannot_leak, test_rows_sum_to_one]
      points: 10

The student's tests are student code: they run in the sandboxed worker. The implementations
are instructor code: they stay in the grader. The test receives a ``wire.Remote`` stand-in,
and every use of it (making an instance, calling a method, reading or setting an attribute)
is a callback that the ``Lender`` below serves with plain data, so no source, module name or
file of an implementation ever reaches the worker. Each implementation gets a fresh worker,
so a test cannot remember one implementation's answers to judge the next.
"""

from __future__ import annotations

import types
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autograder.course.assignment import StudentTests
from autograder.engine.mistakes import Catalogue, Variant
from autograder.result import TestResult
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.runner import wire
from autograder.sandbox.worker import StudentProblem, Worker

STUDENT_TESTS = "student_tests"  # the id of the item in results


class Lender:
    """Serves the callbacks of a student's test: the one class it was lent, and the instances
    made from it. Only public names are reachable (no ``__class__``, ``__globals__`` or
    ``_private``), and only plain data comes back, so the test can use the objects but never
    walk from them to the grader's code, modules or files."""

    def __init__(self, lent: type) -> None:
        self.objects = wire.Objects("remote")
        self.lent = self.objects.keep(lent)  # the class itself: calling it makes an instance

    def argument(self) -> wire.Remote:
        return wire.Remote(self.lent["id"], self.lent["type"])

    def __call__(self, header: dict, blobs: list) -> tuple[dict, list[bytes]]:
        target = self.objects.get(header.get("target"))
        args = wire.decode(header.get("args"), blobs, objects=self.objects)
        kwargs = dict(wire.decode(header.get("kwargs"), blobs, objects=self.objects))
        op, name = header.get("callback"), header.get("name")
        public = name is None or name == "__len__" or (isinstance(name, str) and name[:1] != "_")
        if not public or (name is None and op != "call"):
            return refusal(f"{name!r} is not part of the API")
        out: list[bytes] = []
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                if op == "set":
                    setattr(target, str(name), args[0])
                    return {"result": wire.encode(None, out)}, out
                if op == "get":
                    value = getattr(target, str(name))
                    if callable(value):
                        return {"method": True}, []
                elif op == "call":
                    function = target if name is None else getattr(target, name)
                    value = function(*args, **kwargs)
                else:
                    return refusal(f"unknown operation {op!r}")
        except Exception as error:  # the implementation refuses, as a real one would
            return {"error": {"type": type(error).__name__, "message": str(error)[:500]}}, []
        made = isinstance(value, self.objects.table[self.lent["id"]])
        return {"result": wire.encode(value, out, self.objects if made else None)}, out


def refusal(message: str) -> tuple[dict, list[bytes]]:
    return {"error": {"type": "AttributeError", "message": message}}, []


def implementations(
    catalogue: Catalogue, reference: types.ModuleType, source: str, cls: str
) -> tuple[list[type], list[tuple[Variant, type]]]:
    """The wheats (the reference's class and every "also correct" form of it) and the chaffs
    (every known mistake in it, with the mistake)."""

    def ours(variant: Variant) -> bool:
        return variant.replaces == cls or variant.replaces.startswith(f"{cls}.")

    def version(variant: Variant) -> type:
        return getattr(catalogue.module(variant, source), cls)

    wheats = [getattr(reference, cls)] + [version(v) for v in catalogue.correct if ours(v)]
    return wheats, [(v, version(v)) for v in catalogue.mistakes if ours(v)]


@dataclass
class Runner:
    """Runs a student's tests on one implementation at a time, each in a fresh worker."""

    spec: StudentTests
    submission: Path
    sandbox: Sandbox
    timeout: float

    def worker(self) -> Worker:
        return Worker(self.submission, self.spec.module, self.sandbox, self.timeout)

    def failures(self, tests: list[str], lent: type) -> dict[str, str]:
        """Which tests failed on ``lent``, and how."""
        failed: dict[str, str] = {}
        with self.worker() as worker:
            worker.lender = lender = Lender(lent)
            for test in tests:
                try:
                    worker.request(test, (lender.argument(),))
                except StudentProblem as problem:
                    failed[test] = str(problem)
        return failed

    def tests(self) -> tuple[list[str], str]:
        """The student's test names, or a message saying why there are none to run."""
        spec = self.spec
        if not (self.submission / spec.filename).is_file():
            return [], f"{spec.filename} was not found in the submission."
        try:
            with self.worker() as worker:
                names, _ = worker.request("", op="tests")
        except StudentProblem as problem:
            return [], str(problem)
        found = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
        absent = [n for n in spec.required if n not in found]
        if absent:
            missing = ", ".join(absent)
            return (
                [],
                f"{spec.filename} has no test named {missing} (it takes {spec.argument})",
            )
        return found, ""


def grade(
    runner: Runner, catalogue: Catalogue, reference: types.ModuleType, source: str
) -> TestResult:
    """The item's result: 0 when a test rejects a correct implementation, else the share of
    buggy implementations that at least one test catches."""
    spec = runner.spec
    result = TestResult(
        id=STUDENT_TESTS,
        name=f"{spec.filename}: your tests accept correct code and catch bugs",
        part="part2",
        score=0.0,
        max_score=spec.points,
        outcome="wrong",
        checks=spec.filename,
    )
    tests, problem = runner.tests()
    if problem:
        result.message = problem
        return result
    wheats, chaffs = implementations(catalogue, reference, source, spec.implements)
    for lent in wheats:
        failures = runner.failures(tests, lent)
        if failures:
            test, why = next(iter(failures.items()))
            result.message = (
                f"{test} rejected a correct {spec.implements}: {why} A test that fails correct "
                "code scores 0, whatever else it catches: check what it assumes that the "
                "handout does not promise."
            )
            return result
    missed = [variant for variant, lent in chaffs if not runner.failures(tests, lent)]
    caught = len(chaffs) - len(missed)
    result.score = spec.points * caught / len(chaffs) if chaffs else spec.points
    result.outcome = "wrong" if missed else "passed"
    result.message = (
        f"Your tests accept every correct {spec.implements} and catch {caught} of "
        f"{len(chaffs)} buggy ones."
    )
    if missed:
        result.message += f" A kind of bug they still miss: {missed[0].why}"
    return result
