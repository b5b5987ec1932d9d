"""The reference's answers are remembered across a session's gradings, and only where a
remembered answer is the answer (autograder/engine/memo.py)."""

from __future__ import annotations

import types

import numpy as np

from autograder.course.assignment import Assignment
from autograder.engine.context import Reference
from autograder.engine.grading import GradingSession, grade
from autograder.engine.memo import Memo
from autograder.sandbox.layers import Sandbox


def counting(function):
    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return function(*args, **kwargs)

    return counted, calls


def test_a_pure_call_is_computed_once_and_handed_out_as_copies():
    memo = Memo()
    double, calls = counting(lambda x, scale=2.0: x * scale)
    x = np.arange(4.0)
    first = memo.call("double", double, (x,), {"scale": 3.0})
    first[0] = 99.0  # the caller's copy
    again = memo.call("double", double, (x.copy(),), {"scale": 3.0})
    assert len(calls) == 1 and memo.hits == 1
    assert np.array_equal(again, x * 3.0)


def test_other_values_dtypes_and_names_are_other_questions():
    memo = Memo()
    same, calls = counting(lambda x: x.sum())
    memo.call("f", same, (np.ones(3),), {})
    memo.call("f", same, (np.ones(3, dtype=np.float32),), {})  # same values, other dtype
    memo.call("f", same, (np.ones((3, 1)),), {})  # other shape
    memo.call("f", same, (np.array([1.0, np.nan, 1.0]),), {})
    memo.call("f", same, (np.array([1.0, np.nan, 1.0]),), {})  # NaN keys alike
    memo.call("g", same, (np.ones(3),), {})  # another function
    assert len(calls) == 5 and memo.hits == 1


def test_a_call_that_writes_into_its_input_runs_every_time():
    memo = Memo()

    def scale_in_place(x):
        x *= 2.0
        return x.sum()

    for _ in range(2):
        x = np.ones(3)
        memo.call("scale_in_place", scale_in_place, (x,), {})
        assert np.array_equal(x, [2.0, 2.0, 2.0])  # the caller sees the write each time
    assert memo.hits == 0


def test_objects_and_answers_that_are_not_plain_are_not_remembered():
    memo = Memo()
    make, calls = counting(lambda n: types.SimpleNamespace(n=n))
    memo.call("make", make, (3,), {})
    memo.call("make", make, (3,), {})
    takes, taken = counting(lambda obj: 1.0)
    thing = types.SimpleNamespace()
    memo.call("takes", takes, (thing,), {})
    memo.call("takes", takes, (thing,), {})
    assert len(calls) == 2 and len(taken) == 2 and memo.hits == 0


def test_answers_stop_being_kept_past_the_byte_budget():
    memo = Memo(max_bytes=1000)
    big, calls = counting(lambda n: np.zeros(n))
    for _ in range(2):
        memo.call("big", big, (200,), {})  # 1600 bytes: over the budget
    for _ in range(2):
        memo.call("big", big, (10,), {})  # 80 bytes: kept
    assert len(calls) == 3 and memo.hits == 1


def test_the_reference_proxy_remembers_functions_but_never_classes():
    module = types.ModuleType("ref")
    exec(
        "import numpy as np\n"
        "def f(x):\n    return x + 1\n"
        "class Counter:\n    def __init__(self, x):\n        self.x = x\n",
        module.__dict__,
    )
    memo = Memo()
    reference = Reference(module, memo)
    x = np.zeros(2)
    assert np.array_equal(reference.f(x), reference.f(x)) and memo.hits == 1
    one, two = reference.Counter(x), reference.Counter(x)
    assert one is not two and memo.hits == 1


def test_a_session_asks_the_reference_once_for_every_submission():
    assignment, box = Assignment.load("masks-and-heads"), Sandbox.detect("fallback")
    session = GradingSession(assignment)
    first = grade(assignment, assignment.reference, box, session)
    computed = len(session.memo.answers)
    again = grade(assignment, assignment.reference, box, session)
    assert computed and session.memo.hits >= computed
    assert [(t.id, t.score) for t in first.tests] == [(t.id, t.score) for t in again.tests]
    assert again.score == again.max_score
