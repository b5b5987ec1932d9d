"""The "also correct" forms the engine makes from the reference: state read-only except what
the handout lets a caller set, and `autograder check` naming a test that writes the rest."""

import numpy as np
import pytest
from tiny import tiny_assignment

from autograder.engine.compare import ATOL, RTOL
from autograder.engine.forms import in_float32, read_only_state
from autograder.engine.mistakes import module_from_source
from autograder.sandbox.layers import Sandbox
from autograder.suite import FLOAT32_STEPS, expect, tolerance
from autograder.workflows.check import Checker

REFERENCE = '''
class Counter:
    """Counts what it is given. ``total`` is the sum so far; a caller may set ``step``."""

    def __init__(self):
        ### BEGIN SOLUTION
        self.total = 0
        self.step = 1
        ### END SOLUTION

    def add(self, x):
        ### BEGIN SOLUTION
        self.total = self.total + x * self.step
        ### END SOLUTION
'''


def test_state_becomes_read_only_but_what_a_caller_may_set_stays_writable():
    (form,) = read_only_state(REFERENCE, {"Counter": ["step"]})
    counter = module_from_source(form.source, "read-only counter").Counter()
    counter.add(2)
    counter.step = 3
    counter.add(1)
    assert counter.total == 5
    with pytest.raises(AttributeError, match="no setter"):
        counter.total = 0


def test_nothing_to_hide_makes_no_form():
    assert read_only_state(REFERENCE, {"Counter": ["step", "total"]}) == []
    assert read_only_state("def f(x):\n    return x\n", {}) == []


SUITE = '''
from autograder.suite import check, points


@points(10, checks="Counter.add")
def test_add(student):
    """add(x) adds x times step to total"""
    counter = student.Counter()
    {set_up}
    counter.add(2)
    check(counter.total == {want}, "wrong total")
'''


def tiny(tmp_path, set_up):
    want = 12 if "total" in set_up else 6
    suite = SUITE.format(set_up=set_up, want=want)
    declaration = "functions: [Counter.add]\nsettable:\n  Counter: [step]\n"
    return tiny_assignment(tmp_path, REFERENCE, suite, declaration)


@pytest.mark.parametrize(
    ("set_up", "fails"),
    [("counter.step = 3", False), ("counter.total = 6; counter.step = 3", True)],
)
def test_check_names_a_test_that_sets_what_the_handout_does_not_let_it(tmp_path, set_up, fails):
    lines = []
    checker = Checker(tiny(tmp_path, set_up), Sandbox.detect("fallback"), say=lines.append)
    checker.check_engine_forms()
    assert bool(checker.failures) == fails, lines
    if fails:
        (failure,) = checker.failures
        assert "read-only state gets full marks: test_add (Counter.total raised AttributeError" in (
            failure
        )


# -- float32 ------------------------------------------------------------------------------

SCALED = '''
import numpy as np


def scaled_sum(x, k):
    """k times the sum of x over its rows, in any float dtype."""
    ### BEGIN SOLUTION
    total = np.zeros(x.shape[1])
    for row in x:
        total = total + row
    return k * total
    ### END SOLUTION
'''


def test_the_float32_form_computes_and_returns_float32():
    (form,) = in_float32(SCALED)
    module = module_from_source(form.source, "float32 scaled")
    x = np.full((3, 2), 0.1)
    got = module.scaled_sum(x, 1000.0)
    exact = module_from_source(SCALED, "float64 scaled").scaled_sum(x, 1000.0)
    assert got.dtype == np.float32
    assert 0 < np.max(np.abs(got - exact)) < 1e-3  # float32 rounding, not float64's


def test_a_float32_answer_is_compared_within_steps_of_its_size():
    want = np.array([1000.0, 0.5])  # a running max near 1000 beside a small sum
    near = (want + [0, 4.7e-5]).astype(np.float32)  # the error at scores near 1000
    rtol, atol = tolerance(near, want)
    assert atol == pytest.approx(FLOAT32_STEPS * np.finfo(np.float32).eps * 1000)
    assert tolerance(near.astype(np.float64), want) == (RTOL, ATOL)  # float64: as given
    expect(near, want)
    with pytest.raises(Exception, match="Allowed"):
        expect(near.astype(np.float64), want)
    with pytest.raises(Exception, match="Allowed"):  # a real mistake is still one
        expect((want + 1.0).astype(np.float32), want)


EXACT_SUITE = '''
import numpy as np

from autograder.suite import check, expect, points


@points(10, checks="scaled_sum")
def test_scaled_sum(student, reference):
    """k times the column sums"""
    x = np.arange(6.0).reshape(3, 2) / 7
    {compare}
'''


@pytest.mark.parametrize(
    ("compare", "fails"),
    [
        ("expect(student.scaled_sum(x, 1000.0), reference.scaled_sum(x, 1000.0))", False),
        (
            "check(np.array_equal(student.scaled_sum(x, 1000.0), "
            "reference.scaled_sum(x, 1000.0)), 'not equal')",
            True,
        ),
    ],
)
def test_check_names_a_test_too_tight_for_float32(tmp_path, compare, fails):
    suite = EXACT_SUITE.format(compare=compare)
    declaration = "functions: [scaled_sum]\nfloat32: true\n"
    assignment = tiny_assignment(tmp_path, SCALED, suite, declaration)
    checker = Checker(assignment, Sandbox.detect("fallback"), say=lambda line: None)
    checker.check_engine_forms()
    assert [f.split(":")[1].strip() for f in checker.failures] == (
        ["float32 gets full marks"] if fails else []
    )
    if fails:
        assert "test_scaled_sum (not equal)" in checker.failures[0]
