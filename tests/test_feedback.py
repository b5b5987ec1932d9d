"""Feedback on a wrong answer: staged when no known mistake matches, named when one does."""

import copy
import json
import shutil

import numpy as np
import pytest

from autograder import context
from autograder.assignment import Assignment
from autograder.cli import main
from autograder.compare import problem
from autograder.context import GradingContext
from autograder.grading import grade
from autograder.mistakes import Catalogue, Diagnoser, load_catalogue, module_from_source
from autograder.sandbox import Sandbox
from autograder.testing import Feedback, check, expect, raises
from autograder.worker import StudentRaised

SLUG = "masks-and-heads"

# -- staged comparison ----------------------------------------------------------------------


def test_the_type_comes_first():
    assert problem([1.0, 2.0], np.ones(2)) == (
        "returned a list; expected a NumPy array of shape (2,)."
    )
    assert problem("0.5", 0.5) == "returned a str; expected a number."


def test_then_the_shape_and_the_dtype():
    assert problem(np.ones((3, 2)), np.ones((2, 3))) == (
        "returned shape (3, 2); expected shape (2, 3)."
    )
    assert "expected a boolean array" in problem(np.ones((2, 2)), np.ones((2, 2), dtype=bool))


def test_then_the_wrong_rows_expected_above_got_with_their_columns():
    want = np.tril(np.ones((4, 4), dtype=bool))
    got = want.copy()
    got[2, 3] = True
    assert problem(got, want).splitlines() == [
        "1 of 16 entries differ from the expected values, in row 2 and column 3.",
        "  row 2: expected [ True,  True,  True, False]",
        "              got [ True,  True,  True,  True]   <- column 3",
        "1 True where False was expected, 0 the other way.",
    ]


def test_then_the_size_of_the_error():
    want = np.arange(12.0).reshape(3, 4)
    got = want.copy()
    got[1:, 0] += 0.5
    lines = problem(got, want).splitlines()
    assert lines[0] == "2 of 12 entries differ from the expected values, in rows 1, 2 and column 0."
    assert lines[1:3] == [
        "  row 1: expected [  4,   5,   6,   7]",
        "              got [4.5,   5,   6,   7]   <- column 0",
    ]
    assert lines[-1] == (
        "Largest error: 0.5 at row 1, column 0. "
        "Allowed: |got - expected| <= 1e-07 + 1e-05 * |expected|."
    )


def test_large_arrays_list_the_first_wrong_entries():
    want = np.zeros((3, 6, 10))
    got = want.copy()
    got[:, 1:, :] = 1.0
    lines = problem(got, want).splitlines()
    assert lines[0] == (
        "150 of 180 entries differ from the expected values, "
        "in every head, rows 1-5 and every column."
    )
    assert lines[1] == "  at head 0, row 1, column 0: expected 0, got 1"
    assert lines[7] == "  ... and 144 more"


def test_nan_is_called_out_instead_of_an_error_size():
    got = np.array([1.0, np.nan])
    assert problem(got, np.ones(2)).splitlines()[-1] == (
        "Your result has NaN in 1 entry (0/0 or inf - inf somewhere?)."
    )


def test_scalars_and_tuples():
    assert problem(np.float64(2.0), 1.0).splitlines()[0] == "returned 2; expected 1."
    assert problem((np.ones(2), 3.0), (np.ones(2), 3.0)) is None
    assert problem((np.ones(2), 3.0), (np.ones(2), 4.0)).startswith(
        "in value 1 of the returned tuple, returned 3; expected 4."
    )


# -- diagnosis, on a tiny module run in this process ----------------------------------------

REFERENCE = """
import numpy as np


def double(x):
    return 2 * x


def total(x):
    return x.sum(axis=0)


def positive(x):
    if (x < 0).any():
        raise ValueError("negative entries")
    return x
"""

tiny = Catalogue()


@tiny.mistake("triple", replaces="double", why="Times three.", hint="Two, not three.")
def triple(x):
    return 3 * x


@tiny.mistake("times-three", replaces="double", why="Also three.", hint="Count again.")
def times_three(x):
    return x * 3


@tiny.mistake("total-of-rows", replaces="total", why="Wrong axis.", hint="Sum the columns.")
def total_of_rows(x):
    return x.sum(axis=1)


@tiny.mistake("positive-unchecked", replaces="positive", why="No check.", hint="Check it.")
def positive_unchecked(x):
    return x


class InProcess:
    """A stand-in for the worker: runs a trusted module here, returning copies and raising as
    the worker would."""

    def __init__(self, module):
        self.module = module

    def request(self, function, args, kwargs, target=None, op="call"):
        return self.call(function, *args, **kwargs)

    def call(self, function, *args, **kwargs):
        try:
            return copy.deepcopy(getattr(self.module, function)(*args, **kwargs)), ""
        except Exception as error:
            names = [c.__name__ for c in type(error).__mro__]
            raise StudentRaised(function, {"type": names[0], "mro": names}) from None


@pytest.fixture
def student(request):
    """The tiny module with the mistake named by the test's parameter, as the student."""
    variant = next(v for v in tiny.variants if v.name == request.param)
    ctx = GradingContext(
        worker=InProcess(module_from_source(variant.source(REFERENCE), "student")),
        reference=module_from_source(REFERENCE, "reference"),
        diagnoser=Diagnoser(tiny, REFERENCE),
    )
    context.active = ctx
    yield context.Student(ctx)
    context.active = None


X = np.array([[1.0, 2.0], [3.0, -4.0]])


def named(error: pytest.ExceptionInfo) -> list[str]:
    return [m.name for m in error.value.mistakes]


@pytest.mark.parametrize("student", ["total-of-rows"], indirect=True)
def test_a_matching_mistake_is_named_with_its_explanation_and_hint(student):
    with pytest.raises(Feedback) as error:
        expect(student.total(X), np.array([4.0, -2.0]))
    assert named(error) == ["total-of-rows"]
    assert str(error.value).endswith(
        "Diagnosis: this is exactly what the known mistake `total-of-rows` gives.\n"
        "Wrong axis.\nHint: Sum the columns."
    )


@pytest.mark.parametrize("student", ["triple"], indirect=True)
def test_several_matching_mistakes_are_all_named(student):
    with pytest.raises(Feedback) as error:
        expect(student.double(X), 2 * X)
    assert named(error) == ["triple", "times-three"]
    text = str(error.value)
    assert "this is exactly what each of 2 known mistakes gives" in text
    assert "- `triple`: Times three.\n  Hint: Two, not three." in text


@pytest.mark.parametrize("student", ["triple"], indirect=True)
def test_a_chain_of_calls_is_replayed_on_each_mistake(student):
    """total is right; the wrong value comes from the double that fed it."""
    with pytest.raises(Feedback) as error:
        expect(student.total(student.double(X)), np.array([8.0, -4.0]))
    assert named(error) == ["triple", "times-three"]


@pytest.mark.parametrize("student", ["total-of-rows"], indirect=True)
def test_a_probe_diagnoses_the_value_it_is_about(student):
    got = student.total(X)
    with pytest.raises(Feedback) as error:
        check(got[0] == 4.0, "the first column should add up to 4.", about=got)
    assert named(error) == ["total-of-rows"]
    assert str(error.value).startswith("the first column should add up to 4.")


@pytest.mark.parametrize("student", ["total-of-rows"], indirect=True)
def test_nothing_is_named_for_a_value_the_student_did_not_return(student):
    with pytest.raises(Feedback) as error:
        expect(student.total(X) + 1, np.array([4.0, -2.0]))
    assert named(error) == []
    assert "Diagnosis" not in str(error.value)


@pytest.mark.parametrize("student", ["positive-unchecked"], indirect=True)
def test_returning_where_an_error_was_expected_is_diagnosed(student):
    with pytest.raises(Feedback) as error, raises("ValueError"):
        student.positive(X)
    assert str(error.value).startswith(
        "positive([[ 1.,  2.], [ 3., -4.]]) returned an array of shape (2, 2) and dtype float64 "
        "instead of raising ValueError."
    )
    assert named(error) == ["positive-unchecked"]


@pytest.mark.parametrize("student", ["triple"], indirect=True)
def test_the_expected_error_passes(student):
    with raises("ValueError"):
        student.positive(X)


# -- end to end, through `autograder grade --json` ------------------------------------------


@pytest.fixture(scope="module")
def assignment():
    return Assignment.load(SLUG)


def submission_with(assignment, tmp_path, name):
    """A submission folder holding the catalogued variant ``name`` of the reference."""
    catalogue = load_catalogue(assignment.suite / "mistakes.py")
    variant = next(v for v in catalogue.variants if v.name == name)
    shutil.copy(assignment.reference / "answers.yaml", tmp_path / "answers.yaml")
    (tmp_path / assignment.module_file).write_text(variant.source(assignment.reference_source))
    return tmp_path


def test_a_student_who_masks_after_the_softmax_reads_so(assignment, tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    folder = submission_with(assignment, tmp_path / "sub", "mask-after-softmax")
    out = tmp_path / "results.json"
    argv = ["grade", SLUG, str(folder), "--json", str(out), "--sandbox", "fallback"]
    assert main(argv) == 0
    tests = json.loads(out.read_text())["tests"]
    failed = [t for t in tests if t["status"] == "failed"]
    assert failed and all(t["extra_data"]["mistakes"] == ["mask-after-softmax"] for t in failed)
    causal = next(t for t in failed if t["extra_data"]["id"] == "test_masked_attention_causal")
    assert "known mistake `mask-after-softmax`" in causal["output"]
    assert "You applied the mask to the weights after the softmax." in causal["output"]
    assert "Hint: Mask the scores, not the weights" in causal["output"]
    assert "Diagnosis" in capsys.readouterr().out


def test_an_unknown_mistake_gets_staged_feedback_only(assignment, tmp_path):
    source = assignment.reference_source.replace(
        "return np.tril(np.ones((n, n), dtype=bool))",
        "m = np.tril(np.ones((n, n), dtype=bool))\n    m[-1, 0] = n < 2\n    return m",
    )
    assert source != assignment.reference_source
    shutil.copy(assignment.reference / "answers.yaml", tmp_path / "answers.yaml")
    (tmp_path / assignment.module_file).write_text(source)
    result = grade(assignment, tmp_path, Sandbox.detect("fallback"))
    values = next(t for t in result.tests if t.id == "test_causal_mask_values")
    assert values.mistakes == []
    assert values.message.splitlines() == [
        "causal_mask(5): 1 of 25 entries differ from the expected values, in row 4 and column 0.",
        "  row 4: expected [ True,  True,  True,  True,  True]",
        "              got [False,  True,  True,  True,  True]   <- column 0",
        "0 True where False was expected, 1 the other way.",
    ]
