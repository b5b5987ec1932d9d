"""Mutation testing: the operators make one change each, inside solution regions only, and
`autograder check` fails on a mutant no test kills unless suite.yaml declares it equivalent."""

import textwrap

import numpy as np
import pytest
from tiny import tiny_assignment

from autograder.engine import mutants as mutation
from autograder.engine.mistakes import module_from_source
from autograder.errors import SuiteError
from autograder.sandbox.layers import Sandbox
from autograder.workflows.check import Checker

SOURCE = '''
import numpy as np


def given(x):
    """Not the student's: never mutated."""
    return x.max(axis=0) < 1


def attend(Q, K, V, mask=None, causal=False, seed=0):
    """Attention of Q over K and V. Raise ValueError when Q and K differ in width.

    A masked key gets weight 0; the softmax is stable, whatever the size of the scores."""
    ### BEGIN SOLUTION
    if Q.shape[1] != K.shape[1]:
        raise ValueError("Q and K differ in width")
    rng = np.random.default_rng(seed)
    scores = Q @ K.T
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape, dtype=bool), k=0), scores, -np.inf)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ np.swapaxes(V, 0, 1).T + 0 * rng.random()
    ### END SOLUTION
'''


@pytest.fixture(scope="module")
def found():
    return mutation.mutants(SOURCE)


def after(found, operator):
    return [m.after for m in found if m.operator == operator]


def test_a_raise_is_removed_and_turned_into_an_assertion(found):
    assert after(found, "raise removed") == ["pass"]
    assert after(found, "ValueError raised as AssertionError") == [
        "raise AssertionError('Q and K differ in width')"
    ]


def test_comparisons_are_flipped_or_moved_by_one(found):
    assert "if Q.shape[1] == K.shape[1]:" in after(found, "!= -> ==")
    k_moves = {op for m in found for op in [m.operator] if op.startswith("k=")}
    assert k_moves == {"k=0 -> k=1", "k=0 -> k=-1"}


def test_minus_inf_becomes_zero_or_a_large_negative_number(found):
    assert len(after(found, "-inf -> 0.0")) == 2  # the causal and the padding mask
    assert len(after(found, "-inf -> -1000000000.0")) == 2


def test_axes_move_transposes_drop_and_the_max_subtraction_goes(found):
    operators = {m.operator for m in found}
    assert {"axis=1 -> axis=0", "axis=1 -> axis=2", "axis=-1 -> axis=-2"} <= operators
    assert {".T dropped", "swapaxes() dropped"} <= operators
    assert after(found, "max subtraction removed (- scores.max(axis=1, keepdims=True))") == [
        "e = np.exp(scores)"
    ]


def test_flags_seeds_and_masks_become_constants(found):
    assert "rng = np.random.default_rng(0)" in after(found, "seed -> 0")
    assert {"if True:", "if False:"} <= {m.after for m in found if m.operator.startswith("causal")}
    assert "if None is not None:" in after(found, "mask -> None")


def test_only_solution_regions_are_mutated_and_each_mutant_is_one_change(found):
    assert all(m.function == "attend" for m in found)
    for m in found:
        changed = [
            (a, b)
            for a, b in zip(SOURCE.splitlines(), m.source.splitlines(), strict=False)
            if a.strip() != b.strip()
        ]
        assert m.source.count("def given") == 1 and m.before != m.after
        assert len({m.source for m in found}) == len(found)  # no two alike
        assert changed, m.diff()


def test_an_operand_is_replaced_by_a_variable_of_the_same_shape():
    source = textwrap.dedent(
        """
        def mix(a, b, c):
            ### BEGIN SOLUTION
            return a * b + c
            ### END SOLUTION
        """
    )
    module = module_from_source(source, "mixing")
    with mutation.trace_shapes(module) as shapes:
        module.mix(np.ones(3), np.ones(3), np.ones((2, 3)))
    assert shapes["mix"] == [{"a": (3,), "b": (3,), "c": (2, 3)}]
    swaps = {m.operator for m in mutation.mutants(source, shapes)}
    assert swaps == {"operand a -> b", "operand b -> a"}  # never c, of another shape


def test_a_survivor_names_the_promise_it_breaks(found):
    removed = next(m for m in found if m.operator == "raise removed")
    assert mutation.promise(removed, SOURCE) == "Raise ValueError when Q and K differ in width."


# -- check: a tiny assignment whose suite forgets a promise ----------------------------------

REFERENCE = '''
def scaled(x, k):
    """x times k. Raise ValueError when k is negative."""
    ### BEGIN SOLUTION
    if k < 0:
        raise ValueError("k must not be negative")
    return x * k
    ### END SOLUTION
'''

SUITE = '''
import numpy as np

from autograder.suite import expect, points, raises


@points(10, checks="scaled")
def test_scaled(student):
    """x times k"""
    expect(student.scaled(np.arange(3.0), 3), np.arange(3.0) * 3)
{more}
'''

PROMISE_TESTS = '''

@points(0, checks="scaled")
def test_scaled_rejects_negative(student):
    """ValueError when k < 0, and k = 0 is fine"""
    expect(student.scaled(np.arange(3.0), 0), np.zeros(3))
    with raises("ValueError"):
        student.scaled(np.arange(3.0), -1)
'''


def tiny(tmp_path, more="", equivalent=""):
    declaration = "functions: [scaled]\n" + equivalent
    return tiny_assignment(tmp_path, REFERENCE, SUITE.format(more=more), declaration)


def check_mutants(assignment):
    lines = []
    checker = Checker(assignment, Sandbox.detect("fallback"), say=lines.append)
    checker.check_mutants({})()  # queue the mutants, then judge them
    return checker.failures, lines


def test_check_fails_on_survivors_and_prints_the_line_and_the_promise(tmp_path):
    failures, lines = check_mutants(tiny(tmp_path))
    survivors = [f for f in failures if f.startswith("mutant survives")]
    assert len(survivors) == 3, failures  # raise removed, raised as AssertionError, k <= 0
    removed = next(f for f in survivors if "+ pass" in f)
    assert "scaled line 6: - raise ValueError('k must not be negative')  + pass" in removed
    assert "breaks the promise: 'Raise ValueError when k is negative.'" in removed
    assert "mutants: 4 generated, 1 killed, 0 declared equivalent" in lines[-1]


def test_check_passes_once_the_promises_are_tested(tmp_path):
    failures, lines = check_mutants(tiny(tmp_path, more=PROMISE_TESTS))
    assert failures == []
    assert "mutants: 4 generated, 4 killed" in lines[-1]


def test_a_declared_equivalent_passes_and_a_stale_one_fails(tmp_path):
    equivalent = textwrap.dedent(
        """
        equivalent_mutants:
          - mutant: "scaled: raise ValueError('k must not be negative') -> pass"
            why: pretend numpy raises it anyway
          - mutant: "scaled: return x * k -> return x + k"
            why: no such mutant
        """
    )
    failures, lines = check_mutants(tiny(tmp_path, equivalent=equivalent))
    assert not any("+ pass" in f for f in failures)
    assert any(
        "'scaled: return x * k -> return x + k'" in f and "no longer generated" in f
        for f in failures
    )
    assert "1 declared equivalent" in lines[-1]


def test_an_equivalent_needs_a_one_line_why(tmp_path):
    with pytest.raises(
        SuiteError,
        match="suite.yaml, line 6: equivalent_mutants: item 1 needs a mutant and a one-line why",
    ):
        tiny(tmp_path, equivalent="equivalent_mutants:\n  - mutant: x\n")
