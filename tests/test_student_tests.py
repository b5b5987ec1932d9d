"""Student-written tests graded against hidden implementations: correct ones must pass, and
the score is the share of buggy ones caught. The implementations stay in the grader; the
student's tests get a stand-in whose every use is a callback."""

import textwrap

import numpy as np
import pytest

from autograder.engine import student_tests
from autograder.engine.mistakes import Catalogue, module_from_source
from autograder.engine.student_tests import Lender, Runner, StudentTests
from autograder.sandbox.layers import Sandbox

REFERENCE = textwrap.dedent(
    '''
    import numpy as np


    class Scaler:
        """Multiplies by factor; refuses a factor of 0."""

        def __init__(self, factor):
            if factor == 0:
                raise ValueError("factor must not be 0")
            self.factor = factor

        def apply(self, x):
            return self.factor * np.asarray(x)
    '''
)

catalogue = Catalogue()


@catalogue.mistake("adds", replaces="Scaler.apply", why="It adds the factor.", hint="Multiply.")
def adds(self, x):
    return self.factor + np.asarray(x)


@catalogue.mistake("zero-accepted", replaces="Scaler.__init__", why="0 is let in.", hint="Check.")
def zero_accepted(self, factor):
    self.factor = factor


@catalogue.also_correct("multiply-method", replaces="Scaler.apply")
def multiply_method(self, x):
    return np.multiply(x, self.factor)


SPEC = StudentTests(
    module="test_scaler", argument="Impl", implements="Scaler", required=("test_doubles",), points=6
)

GOOD = """
import numpy as np

def test_doubles(Impl):
    assert np.allclose(Impl(2).apply([1.0, 3.0]), [2.0, 6.0])

def test_refuses_zero(Impl):
    try:
        Impl(0)
    except ValueError:
        return
    raise AssertionError("Impl(0) was accepted")
"""

WEAK = GOOD.split("def test_refuses_zero")[0]

WRONG = (
    GOOD
    + """
def test_expects_the_wrong_thing(Impl):
    assert Impl(3).apply(1.0) == 4.0, "3 times 1 should be 4"
"""
)

# reads the implementation instead of testing it: every way of looking must find nothing
SNOOP = (
    GOOD
    + """
import inspect, os, sys

def test_snoops(Impl):
    found = []
    for look in (lambda: inspect.getsource(Impl), lambda: Impl.__module__,
                 lambda: Impl.__class__.__dict__, lambda: Impl(2)._private,
                 lambda: type(Impl(2).apply).__name__, lambda: Impl.apply.__globals__):
        try:
            found.append(str(look()))
        except Exception as error:
            found.append(type(error).__name__)
    secret = [f for f in found if "factor +" in f or "Scaler.apply" in f or "variant" in f]
    for root in ("/", os.getcwd(), *sys.path):
        for path, _, files in os.walk(root) if os.path.isdir(root) else ():
            if "autograder" in path and "suites" in path:
                raise AssertionError("found the suites")
            break
    assert not secret, secret
"""
)


def grade(tmp_path, tests, box):
    (tmp_path / "test_scaler.py").write_text(tests)
    reference = module_from_source(REFERENCE, "reference")
    runner = Runner(SPEC, tmp_path, box, timeout=30)
    return student_tests.grade(runner, catalogue, reference, REFERENCE)


@pytest.fixture(scope="module")
def box():
    return Sandbox.detect("auto")


def test_tests_that_catch_every_bug_get_full_marks(tmp_path, box):
    result = grade(tmp_path, GOOD, box)
    assert (result.score, result.max_score, result.outcome) == (6, 6, "passed")
    assert "catch 2 of 2 buggy ones" in result.message


def test_the_score_is_the_share_of_bugs_caught_and_the_hint_names_a_missed_kind(tmp_path, box):
    result = grade(tmp_path, WEAK, box)
    assert result.score == 3 and "catch 1 of 2" in result.message
    assert "A kind of bug they still miss: 0 is let in." in result.message
    assert "zero-accepted" not in result.message  # which one is never said


def test_a_test_that_rejects_correct_code_scores_zero_and_says_which(tmp_path, box):
    result = grade(tmp_path, WRONG, box)
    assert result.score == 0
    assert result.message.startswith("test_expects_the_wrong_thing rejected a correct Scaler")
    assert "3 times 1 should be 4" in result.message


def test_a_missing_required_test_is_named(tmp_path, box):
    result = grade(tmp_path, "def test_other(Impl):\n    pass\n", box)
    assert result.score == 0 and "has no test named test_doubles" in result.message


def test_the_implementations_cannot_be_read_from_the_tests(tmp_path, box):
    result = grade(tmp_path, SNOOP, box)
    assert result.score == 6, result.message  # the snooping test passed on every version


def test_the_lender_reaches_only_public_names_and_returns_plain_data():
    reference = module_from_source(REFERENCE, "reference")
    lender = Lender(reference.Scaler)

    def ask(op, target, name, *args):
        blobs = []
        from autograder.sandbox.runner import wire

        header = {
            "callback": op,
            "target": target,
            "name": name,
            "args": wire.encode(args, blobs),
            "kwargs": wire.encode([], blobs),
        }
        return lender(header, blobs)[0]

    made = ask("call", 1, None, 2.0)["result"]
    assert made["t"] == "remote" and made["type"] == "Scaler"
    for name in ("__class__", "__dict__", "_secret", "__init__"):
        assert ask("get", made["id"], name)["error"]["type"] == "AttributeError"
    assert ask("get", made["id"], "apply") == {"method": True}
    assert ask("call", 1, None, 0.0)["error"] == {
        "type": "ValueError",
        "message": "factor must not be 0",
    }
    assert np.isclose(ask("get", made["id"], "factor")["result"]["v"], 2.0)
