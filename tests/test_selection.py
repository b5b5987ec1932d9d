"""check grades a variant only on the tests that ran what it changes (engine/selection.py).

The selection must change no verdict: a test left out is one whose calls never ran the
replaced function, and its result is the reference's own. These tests pin the rules that
make the record of what ran trustworthy, the grading that takes known results, and, on a
real assignment, that every catalogued variant grades the same with and without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from threadpoolctl import threadpool_info
from tiny import tiny_assignment

from autograder.course.assignment import Assignment
from autograder.engine.grading import grade
from autograder.engine.selection import traceable, unseen
from autograder.sandbox.layers import Sandbox
from autograder.workflows.check import Checker, JobContext, Jobs

PLAIN = """
import numpy as np

SCALE = np.sqrt(2.0)


def add(x, y):
    return x + y


def twice(x):
    return add(x, x)


class Box:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value
"""


@pytest.mark.parametrize("name", ["add", "twice", "Box.get", "Box.__init__"])
def test_a_plain_function_or_method_is_traceable(name):
    assert traceable(PLAIN, name)


@pytest.mark.parametrize(
    ("extra", "name"),
    [
        ("alias = add", "add"),  # runs as "alias": the record would say another name
        ("def thrice(x, plus=add):\n    return plus(plus(x, x), x)", "add"),  # a default value
        ("TABLE = {'add': add}", "add"),  # a dispatch table
        ("START = twice(1)", "add"),  # the module calls its own code when imported
        ("class Other(Box):\n    fetch = Box.get", "Box.get"),  # a class attribute
    ],
)
def test_a_function_reachable_outside_the_record_is_not_traceable(extra, name):
    assert not traceable(PLAIN + "\n\n" + extra + "\n", name)


def test_a_decorated_function_a_global_write_or_an_unknown_name_is_not_traceable():
    decorated = PLAIN.replace("def add", "@staticmethod\ndef add")
    assert not traceable(decorated, "add")
    writes = PLAIN.replace("    return add(x, x)", "    global SCALE\n    return add(x, x)")
    assert not traceable(writes, "twice")
    assert not traceable(PLAIN, "missing")
    assert not traceable(PLAIN, "Box.missing")


REFERENCE = '''
def add(x, y):
    """x + y."""
    ### BEGIN SOLUTION
    return x + y
    ### END SOLUTION


def twice(x):
    """2 x, by add."""
    ### BEGIN SOLUTION
    return add(x, x)
    ### END SOLUTION


def negate(x):
    """-x."""
    ### BEGIN SOLUTION
    return -x
    ### END SOLUTION
'''

SUITE = '''
from autograder.suite import check, points


@points(3, checks="add")
def test_add(student):
    """add(2, 3) is 5"""
    check(student.add(2, 3) == 5, "add is wrong")


@points(3, checks="twice")
def test_twice(student):
    """twice(4) is 8"""
    check(student.twice(4) == 8, "twice is wrong")


@points(4, checks="negate")
def test_negate(student):
    """negate(4) is -4"""
    check(student.negate(4) == -4, "negate is wrong")
'''


@pytest.fixture
def tiny(tmp_path: Path) -> Assignment:
    return tiny_assignment(tmp_path, REFERENCE, SUITE, "functions: [add, twice, negate]\n")


def test_each_test_keeps_what_it_ran_and_a_known_result_stands_in_for_its_test(
    tiny: Assignment, tmp_path: Path
):
    box = Sandbox.detect("fallback")
    reference = grade(tiny, tiny.reference, box)
    ran = {t.id: t.ran for t in reference.tests}
    assert ran == {"test_add": ["add"], "test_twice": ["add", "twice"], "test_negate": ["negate"]}

    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "tiny.py").write_text(REFERENCE.replace("return x + y", "return x - y"))
    graded = grade(tiny, wrong, box)
    assert [t.passed for t in graded.tests] == [False, False, True]

    # add's change reaches test_add and test_twice, never test_negate: only it is known
    known = unseen(reference.tests, "add", tiny.reference_source)
    assert list(known) == ["test_negate"]
    # a known result is recorded as given, in its test's place, and the test does not run
    given = {"test_twice": reference.tests[1]}
    graded = grade(tiny, wrong, box, known=given)
    assert [(t.id, t.passed) for t in graded.tests] == [
        ("test_add", False),
        ("test_twice", True),
        ("test_negate", True),
    ]
    assert graded.tests[1] is not given["test_twice"]  # a copy


def verdicts(graded: dict) -> dict:
    return {
        name: [(t.id, t.outcome, t.score, t.mistakes, t.cause, t.message) for t in result.tests]
        for name, result in graded.items()
    }


def test_selection_changes_no_verdict_of_any_catalogued_variant():
    """kv-cache-and-gqa: functions that call one another, and a class whose methods build on
    its constructor. Every variant grades the same with the selection as without it."""
    assignment = Assignment.load("kv-cache-and-gqa")
    box = Sandbox.detect("fallback")
    with Jobs(box) as jobs:
        checker = Checker(assignment, box, lambda _: None, jobs)
        reference = checker.grade(assignment.reference)
        variants = jobs.here.session(assignment).catalogue.variants
        every = checker.submit_variants(variants)  # both queued at once: the pool stays busy
        checker.gradings = {}  # no reuse between the two
        selected = checker.submit_variants(variants, reference)
        assert verdicts(every()) == verdicts(selected())
    left_out = {
        v.name: unseen(reference.tests, v.replaces, assignment.reference_source) for v in variants
    }
    assert sum(map(len, left_out.values())) > len(variants), "the selection leaves nothing out"


def blas_threads(assignment: Assignment, context: JobContext, item: int) -> int:
    return max(pool["num_threads"] for pool in threadpool_info())


def test_job_processes_and_the_checker_take_one_blas_thread_each():
    """One grading process per core: a BLAS thread pool per process would fight for them."""
    assignment = Assignment.load("masks-and-heads")
    with Jobs(Sandbox.detect("fallback"), cores=2) as jobs:
        jobs.start()
        assert jobs.map(blas_threads, assignment, list(range(8))) == [1] * 8
        assert blas_threads(assignment, jobs.here, 0) == 1
