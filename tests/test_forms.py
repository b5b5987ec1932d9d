"""The "also correct" forms the engine makes from the reference: state read-only except what
the handout lets a caller set, the reference in float32, state grown by joining arrays kept as
a list of pieces, and `autograder check` naming a test that asks for more than the handout."""

import shutil

import numpy as np
import pytest
from tiny import tiny_assignment

from autograder.course.assignment import Assignment
from autograder.engine.compare import ATOL, RTOL
from autograder.engine.forms import in_float32, read_only_state, state_as_lists
from autograder.engine.grading import grade
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
    checker.check_engine_forms()()  # queue the forms' gradings, then judge them
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
    failed = failed_forms(tiny_assignment(tmp_path, SCALED, suite, declaration))
    assert list(failed) == (["float32 gets full marks"] if fails else [])
    if fails:
        assert "test_scaled_sum (not equal)" in failed["float32 gets full marks"]


def failed_forms(assignment):
    """What `autograder check` fails among the engine's forms: "<form> gets full marks" ->
    the tests it names."""
    checker = Checker(assignment, Sandbox.detect("fallback"), say=lambda line: None)
    checker.check_engine_forms()()  # queue the forms' gradings, then judge them
    return {f.split(":")[1].strip(): f.split(":", 2)[2] for f in checker.failures}


# -- state as lists -----------------------------------------------------------------------

LOG = '''
import numpy as np


class Log:
    """What was added so far (the handout says what a caller may read)."""

    def __init__(self):
        ### BEGIN SOLUTION
        self.rows = None
        ### END SOLUTION

    def add(self, x):
        """Add x, shape (t, d)."""
        ### BEGIN SOLUTION
        if self.rows is None:
            self.rows = x
        else:
            self.rows = {grow}
        ### END SOLUTION

    def total(self):
        ### BEGIN SOLUTION
        return self.rows.sum(axis=0)
        ### END SOLUTION
'''
CONCATENATE = "np.concatenate([self.rows, x], axis=0)"
PROMISES = (
    "``Log()`` starts with ``rows`` None; then ``log.rows`` is every row added so far, in "
    "order, and ``log.total()`` their sum."
)


def log_form(grow=CONCATENATE, handout=PROMISES, settable=None):
    (form,) = state_as_lists(LOG.format(grow=grow), handout, settable)
    return module_from_source(form.source, "log as lists").Log()


def test_a_grown_attribute_is_kept_as_a_list_of_pieces_and_joined_when_read():
    log, pieces = log_form(), [np.full((t, 2), float(t)) for t in (1, 2, 3)]
    assert log.rows is None  # what the reference exposes before it grows
    for piece in pieces:
        log.add(piece)
    assert log._parts_of_rows == pieces  # the storage: a list, nothing joined yet
    assert np.array_equal(log.rows, np.concatenate(pieces))
    assert np.array_equal(log.total(), np.concatenate(pieces).sum(axis=0))
    with pytest.raises(AttributeError, match="no setter"):
        log.rows = None


def test_what_the_handout_lets_a_caller_set_stays_settable():
    log = log_form(settable={"Log": ["rows"]})
    log.add(np.ones((2, 2)))
    log.rows = np.zeros((1, 2))
    log.add(np.ones((1, 2)))
    assert np.array_equal(log.rows, [[0, 0], [1, 1]])


def test_storage_the_handout_does_not_name_is_hidden():
    log = log_form(handout="``log.total()`` is the sum of every row added so far.")
    log.add(np.ones((2, 2)))
    log.add(np.ones((1, 2)))
    assert np.array_equal(log.total(), [3, 3])
    assert not hasattr(log, "rows")


@pytest.mark.parametrize(
    ("grow", "columns"),
    [
        ("np.vstack([self.rows, x])", False),
        ("np.hstack((self.rows, x))", True),  # hstack joins 2-D pieces along their columns
        ("np.append(self.rows, x, axis=0)", False),
        ("np.concatenate((self.rows, x, x))", False),
    ],
)
def test_every_join_reads_the_same_joined_late(grow, columns):
    x = np.arange(6.0).reshape(3, 2)
    pieces = [p.T if columns else p for p in (x, x[:1], x)]
    reference = module_from_source(LOG.format(grow=grow), "log").Log()
    form = log_form(grow)
    for log in (reference, form):
        for piece in pieces:
            log.add(piece)
    assert len(form._parts_of_rows) > 1  # the form did join late
    assert np.array_equal(form.rows, reference.rows)


@pytest.mark.parametrize(
    ("grow", "handout", "why"),
    [
        (CONCATENATE, "``rows`` is an ndarray that grows.", "the handout fixes the type"),
        (CONCATENATE, "``rows`` grows in place.", "the handout fixes the storage"),
        ("np.append(self.rows, x)", PROMISES, "np.append without an axis flattens"),
        ("np.concatenate([self.rows, x], axis=self.axis)", PROMISES, "an axis not a literal"),
        ("np.concatenate([x, self.rows])", PROMISES, "a join that prepends"),
        (CONCATENATE + "\n        self.rows[0] = 0", PROMISES, "a write into the array"),
        (CONCATENATE + "\n        self.rows += 1", PROMISES, "an update of the array"),
        (CONCATENATE + "\n        self.rows.sort(axis=0)", PROMISES, "an in-place sort"),
    ],
)
def test_a_class_it_cannot_split_safely_makes_no_form(grow, handout, why):
    assert state_as_lists(LOG.format(grow=grow), handout) == [], why


def test_a_write_from_outside_the_class_makes_no_form():
    outside = LOG.format(grow=CONCATENATE) + "\n\ndef reset(log):\n    log.rows = None\n"
    assert state_as_lists(outside, PROMISES) == []
    assert state_as_lists(outside, PROMISES, {"Log": ["rows"]}) != []  # the handout allows it


def test_the_kv_cache_reference_as_lists_gets_full_marks_on_part_2(tmp_path):
    a = Assignment.load("kv-cache-and-gqa")
    (form,) = state_as_lists(a.reference_source, a.handout, a.settable)
    assert "self._parts_of_keys.extend([k])" in form.source
    shutil.copytree(a.reference, tmp_path, dirs_exist_ok=True)
    (tmp_path / a.module_file).write_text(form.source)
    result = grade(a, tmp_path, Sandbox.detect("fallback"))
    lost = [t.id for t in result.part("part2") if not t.passed]
    assert not lost and result.part("part2")


READS_SUITE = '''
import numpy as np

from autograder.suite import check, points


@points(10, checks="Log.add")
def test_add(student):
    """add(x) adds the rows of x"""
    log = student.Log()
    log.add(np.ones((2, 2)))
    log.add(np.ones((1, 2)))
    check(np.array_equal({read}, [3.0, 3.0]), "wrong rows")
'''


@pytest.mark.parametrize(
    ("read", "fails"), [("log.total()", False), ("log.rows.sum(axis=0)", True)]
)
def test_check_names_a_test_that_reads_storage_the_handout_does_not_promise(tmp_path, read, fails):
    suite = READS_SUITE.format(read=read)
    assignment = tiny_assignment(
        tmp_path, LOG.format(grow=CONCATENATE), suite, "functions: [Log.add, Log.total]\n"
    )
    (assignment.starter / "README.md").write_text("``log.total()`` sums every row added.\n")
    failed = failed_forms(assignment)
    assert list(failed) == (["state as lists gets full marks"] if fails else [])
    if fails:
        assert "test_add (" in failed["state as lists gets full marks"]
