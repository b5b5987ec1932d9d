"""Feedback on a wrong answer: staged when no known mistake matches, named when one does."""

import contextlib
import copy
import itertools
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from tiny import tiny_assignment

from autograder import report
from autograder.cli import main
from autograder.course.assignment import Assignment
from autograder.engine import context
from autograder.engine.compare import matches, problem
from autograder.engine.context import GradingContext
from autograder.engine.diagnosis import Feedback, reattribute
from autograder.engine.grading import grade
from autograder.engine.mistakes import Catalogue, Diagnoser, load_catalogue, module_from_source
from autograder.engine.shapes import shape_of_error
from autograder.platforms.gradescope import gradescope
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.runner import calls
from autograder.sandbox.worker import StudentRaised
from autograder.suite import check, expect, raises

SLUG = "masks-and-heads"
SCHEMA = Path(__file__).parent.parent / "autograder" / "schemas" / "gradescope-results.json"

# -- staged comparison ----------------------------------------------------------------------


def test_the_type_comes_first():
    assert problem([1.0, 2.0], np.ones(2)) == (
        "returned a list of 2 values; expected a NumPy array, an array of 2 values."
    )
    assert problem("0.5", 0.5) == "returned a str; expected a number."


def test_then_the_shape_and_the_dtype():
    assert problem(np.ones((3, 2)), np.ones((2, 3))) == (
        "returned a 3×2 array; expected a 2×3 array."
    )
    assert "expected an array of booleans" in problem(np.ones((2, 2)), np.ones((2, 2), dtype=bool))


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
        "in every axis-0, rows 1-5 and every column."
    )
    assert lines[1] == "  at axis-0 0, row 1, column 0: expected 0, got 1"
    assert lines[4] == "  ... and 147 more"
    assert len(lines) == 6, "only a few entries, and only where the values differ"


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


def total_of_double(x):
    return 1.0 * total(double(x))


def pair(x):
    return x, 2 * x
"""

tiny = Catalogue()


@tiny.mistake(
    "triple", title="triple", replaces="double", why="Times three.", hint="Two, not three."
)
def triple(x):
    return 3 * x


@tiny.mistake(
    "times-three", title="times three", replaces="double", why="Also three.", hint="Count again."
)
def times_three(x):
    return x * 3


@tiny.mistake(
    "total-of-rows",
    title="total of rows",
    replaces="total",
    why="Wrong axis.",
    hint="Sum the columns.",
)
def total_of_rows(x):
    return x.sum(axis=1)


@tiny.mistake(
    "positive-unchecked",
    title="positive unchecked",
    replaces="positive",
    why="No check.",
    hint="Check it.",
)
def positive_unchecked(x):
    return x


more = Catalogue()  # for cascades, names and cases: apart, so as not to change tiny's matches


@more.mistake(
    "total-as-list", title="total as list", replaces="total", why="A list.", hint="An array."
)
def total_as_list(x):
    return list(x.sum(axis=0))


@more.mistake("pair-swapped", title="pair swapped", replaces="pair", why="Swapped.", hint="Order.")
def pair_swapped(x):
    return 2 * x, x


@more.mistake(
    "scaled",
    replaces="double",
    title="times {k}",
    why="Times {k}.",
    hint="Not {k}.",
    cases={"k": [3, 4]},
)
def scaled(x, *, k):
    return k * x


class InProcess:
    """A stand-in for the worker: runs a trusted module here, returning copies and raising as
    the worker would."""

    def __init__(self, module):
        self.module = module
        self.ran = set()
        calls.record(module, self.ran)  # as the worker does: which functions each call ran
        self.called = []

    peak = 0  # nothing is measured here

    def request(self, function, args, kwargs, target=None, op="call", measure=False):
        self.ran.clear()
        try:
            return self.call(function, *args, **kwargs)
        finally:
            self.called = sorted(self.ran)

    def call(self, function, *args, **kwargs):
        try:
            return copy.deepcopy(getattr(self.module, function)(*args, **kwargs)), ""
        except Exception as error:
            names = [c.__name__ for c in type(error).__mro__]
            raise StudentRaised(function, {"type": names[0], "mro": names}) from None


@contextlib.contextmanager
def as_student(name: str, catalogue: Catalogue | None = None) -> Iterator[context.Student]:
    """The tiny module with the mistake ``name`` (of tiny or more) as the student's, diagnosed
    with ``catalogue`` (by default the one that holds the mistake)."""
    variant = next(v for v in tiny.variants + more.variants if v.name == name)
    if catalogue is None:
        catalogue = tiny if variant in tiny.variants else more
    ctx = GradingContext(
        worker=InProcess(module_from_source(variant.source(REFERENCE), "student")),
        reference=module_from_source(REFERENCE, "reference"),
        diagnoser=Diagnoser(catalogue, REFERENCE, returns={"pair": ["once", "twice"]}),
    )
    with context.running(ctx):
        yield context.Student(ctx)


@pytest.fixture
def student(request):
    """The tiny module with the mistake named by the test's parameter, as the student."""
    with as_student(request.param) as student:
        yield student


X = np.array([[1.0, 2.0], [3.0, -4.0]])


def named(error: pytest.ExceptionInfo) -> list[str]:
    return [m.name for m in error.value.mistakes]


@pytest.mark.parametrize("student", ["total-of-rows"], indirect=True)
def test_a_matching_mistake_is_named_with_its_explanation_and_hint(student):
    with pytest.raises(Feedback) as error:
        expect(student.total(X), np.array([4.0, -2.0]))
    assert named(error) == ["total-of-rows"]
    assert error.value.cause == "total of rows"  # no title given: the id in words
    assert str(error.value).endswith(
        "Likely cause: total of rows.\nWrong axis.\nHint: Sum the columns."
    )


@pytest.mark.parametrize("student", ["triple"], indirect=True)
def test_several_matching_mistakes_are_all_named(student):
    with pytest.raises(Feedback) as error:
        expect(student.double(X), 2 * X)
    assert named(error) == ["triple", "times-three"]
    text = str(error.value)
    assert "Any of these 2 mistakes gives exactly this:" in text
    assert "- triple: Times three.\n  Hint: Two, not three." in text


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
    assert "Likely cause" not in str(error.value)


@pytest.mark.parametrize("student", ["positive-unchecked"], indirect=True)
def test_returning_where_an_error_was_expected_is_diagnosed(student):
    with pytest.raises(Feedback) as error, raises("ValueError"):
        student.positive(X)
    assert str(error.value).startswith(
        "positive([[ 1.,  2.], [ 3., -4.]]) returned a 2×2 array instead of raising ValueError."
    )
    assert named(error) == ["positive-unchecked"]


def test_a_missing_check_is_said_with_the_references_own_words():
    not_catalogued = as_student("positive-unchecked", Catalogue())
    with not_catalogued as student, pytest.raises(Feedback) as error, raises("ValueError"):
        student.positive(X)
    assert error.value.cause == (
        "a check is missing, or lets this input through: it should be refused with ValueError "
        "(the handout's rule: negative entries)"
    )


@pytest.mark.parametrize("student", ["triple"], indirect=True)
def test_a_probe_states_its_own_cause_unless_a_mistake_is_named(student):
    got = student.double(X)
    with pytest.raises(Feedback) as error:
        check(False, "not doubled.", about=got, cause="the own cause")
    assert named(error) == ["triple", "times-three"] and error.value.cause != "the own cause"
    with pytest.raises(Feedback) as error:
        check(False, "not doubled.", cause="the own cause")
    assert error.value.cause == "the own cause"
    assert str(error.value) == "not doubled.\n\nLikely cause: the own cause."


def test_a_variant_that_gives_none_matches_only_none():
    assert not matches(np.ones(2), None) and not matches(None, np.ones(2))
    assert matches(None, None)


@pytest.mark.parametrize("student", ["triple"], indirect=True)
def test_the_expected_error_passes(student):
    with raises("ValueError"):
        student.positive(X)


@pytest.mark.parametrize("student", ["triple"], indirect=True)
def test_a_caller_failing_only_through_its_callee_points_to_the_callee(student):
    with pytest.raises(Feedback) as error:
        expect(student.total_of_double(X), np.array([8.0, -4.0]))
    assert error.value.blame == ["double"]
    assert error.value.cause == "it uses your double: fix that first"
    assert "Known" not in str(error.value) and error.value.explanation == ""


@pytest.mark.parametrize("student", ["total-as-list"], indirect=True)
def test_a_raise_in_a_correct_caller_is_not_shown_but_blamed_on_the_callee(student):
    with pytest.raises(StudentRaised) as raised:
        student.total_of_double(X)  # the reference's code raises on the list total returns
    error = reattribute(raised.value)
    assert isinstance(error, Feedback) and error.blame == ["total"]
    assert error.outcome == "raised" and "list" not in str(error)


@pytest.mark.parametrize("student", ["triple"], indirect=True)
def test_a_callers_own_mistake_is_not_blamed_on_its_callee(student):
    with pytest.raises(Feedback) as error:
        expect(student.total(X), np.array([5.0, -2.0]))  # total is right; this is not
    assert error.value.blame == []


def test_returned_values_are_named_and_their_order_said():
    with as_student("pair-swapped", Catalogue()) as student:  # not catalogued: said from its shape
        with pytest.raises(Feedback) as error:
            expect(student.pair(X), (X, 2 * X))
        assert "in the once (value 0) of the returned tuple" in str(error.value)
        with pytest.raises(Feedback) as error:
            once, _ = student.pair(X)
            expect(once, X)
        assert "you return (twice, once); the order is (once, twice)" in str(error.value)


def test_one_entry_with_cases_registers_one_variant_per_case():
    cases = [v for v in more.variants if v.family == "scaled"]
    assert [(v.name, v.title, v.why, v.hint) for v in cases] == [
        ("scaled-3", "times 3", "Times 3.", "Not 3."),
        ("scaled-4", "times 4", "Times 4.", "Not 4."),
    ]
    module = module_from_source(cases[1].source(REFERENCE), "scaled-4")
    assert module.double(1.0) == 4.0  # the case's value is bound, the signature is the same


@pytest.mark.parametrize("student", ["scaled-4"], indirect=True)
def test_each_case_of_an_entry_is_named_by_itself(student):
    with pytest.raises(Feedback) as error:
        expect(student.double(X), 2 * X)
    assert named(error) == ["scaled-4"] and error.value.cause == "times 4"


# -- generic error shapes, one by one --------------------------------------------------------

W = np.arange(1.0, 25.0).reshape(4, 6) / 7


def SOFT(scores):  # noqa: N802 (a constant-like helper of the table below)
    """Softmax over the last axis, with a causal-like pattern of zeros."""
    e = np.exp(scores) * (np.arange(6)[None, :] <= np.arange(4)[:, None] + 1)
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize(
    ("got", "want", "words"),
    [
        ((W.T, W), (W, W.T), "you return (second, first); the order is (first, second)"),
        (W.T, W, "the expected one transposed"),
        (W[[1, 0, 2, 3]], W, "your row 0 is the expected row 1, your row 1 is the expected row 0"),
        (W[:, [*range(1, 6), 0]], W, "your columns are the expected ones moved along by -1"),
        (W / np.sqrt(8), W, "every value is 0.354 times the expected one: a factor of 1/sqrt(8)?"),
        (W * 24, W, "every value is 24 times the expected one: a factor of 24?"),
        (-W, W, "every value has the wrong sign"),
        (W - 1, W, "every value is off by the same amount: yours = expected -1"),
        (np.where(np.arange(4)[:, None] == 2, np.nan, W), W, "row 2 of your result is all NaN"),
        (np.stack([W, 2 * W]).transpose(1, 0, 2), np.stack([W, 2 * W]), "axes in another order"),
        (np.zeros_like(W), W, "every value of your result is 0"),
        (np.where(np.arange(4)[:, None] < 2, 0, W), W, "rows 0, 1 of your result are all zeros"),
        (~np.eye(3, dtype=bool), np.eye(3, dtype=bool), "every True should be False"),
        (np.tri(4, k=-1, dtype=bool), np.tri(4, dtype=bool), "only on the main diagonal"),
        (np.tri(4, k=1, dtype=bool), np.tri(4, dtype=bool), "diagonal 1 place right of the"),
        (W, np.zeros_like(W), "every expected value is 0 and yours are not"),
        (SOFT(W / 8), SOFT(W / np.sqrt(8)), "softmax of the expected scores times 0.354"),
    ],
)
def test_a_generic_error_shape_is_said_in_plain_words(got, want, words):
    assert words in shape_of_error(got, want, names=("first", "second"))


def test_no_shape_is_claimed_for_a_value_that_merely_looks_alike():
    noisy = W * 0.354 + np.random.default_rng(0).normal(scale=1e-3, size=W.shape)
    assert shape_of_error(noisy, W) is None
    assert shape_of_error(W, W.T.T + 1e-3 * np.eye(4, 6)) is None
    two_diagonals = np.tri(4, k=1, dtype=bool) & np.tri(4, k=-1, dtype=bool).T
    assert shape_of_error(two_diagonals, np.tri(4, dtype=bool)) is None
    scores = np.random.default_rng(1).normal(size=(4, 6))
    almost = SOFT(scores / 8 + 1e-3 * np.random.default_rng(2).normal(size=(4, 6)))
    assert shape_of_error(almost, SOFT(scores / np.sqrt(8))) is None


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
    assert "Likely cause: the mask is applied after the softmax." in causal["output"]
    assert "mask-after-softmax" not in causal["output"]  # the id is for instructors
    outputs = "\n".join(t["output"] for t in failed)
    assert outputs.count("You applied the mask to the weights after the softmax.") == 1
    assert outputs.count("Hint: Mask the scores, not the weights") == 1  # once per function
    assert "likely cause: the mask is applied after the softmax" in capsys.readouterr().out


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
        "causal_mask(5): 1 of 25 entries differ from the expected values, in query 4 and key 0.",
        "  query 4: expected [ True,  True,  True,  True,  True]",
        "                got [False,  True,  True,  True,  True]   <- key 0",
        "0 True where False was expected, 1 the other way.",
    ]


# -- what a struggling student reads: a summary first, plain words, no cascades --------------


def reference_with(assignment, *replacements: tuple[str, str]) -> str:
    """The reference's source with each (old, new) text replaced, as a student would edit it."""
    source = assignment.reference_source
    for old, new in replacements:
        assert old in source, old
        source = source.replace(old, new)
    return source


def wrapped(assignment, **bodies: str) -> str:
    """The reference with functions wrapped: ``f="{}.T"`` makes f return the reference's f
    transposed (``{}`` is the reference's value); the others still call the wrapped ones."""
    source = assignment.reference_source
    for function, body in bodies.items():
        source += (
            f"\n\n_reference_{function} = {function}\n\n\n"
            f"def {function}(*args, **kwargs):\n"
            f"    value = _reference_{function}(*args, **kwargs)\n"
            f"    return {body.format('value')}\n"
        )
    return source


BAD_CASES = {
    # the three submissions of issue 14, as a struggling student wrote them
    "swapped-tuple": ("return weights, weights @ V", "return weights @ V, weights"),
    "only-wo-transposed": ("return merge_heads(heads) @ Wo", "return merge_heads(heads) @ Wo.T"),
    "no-scale": ("scores = Q @ K.T / np.sqrt(d_k)", "scores = Q @ K.T"),
}


@pytest.fixture(scope="module")
def graded(assignment, tmp_path_factory):
    """Grade a submission made from ``source`` once per module: name -> Result."""
    done = {}

    def grading(name, source):
        if name not in done:
            folder = tmp_path_factory.mktemp(name)
            shutil.copy(assignment.reference / "answers.yaml", folder / "answers.yaml")
            (folder / assignment.module_file).write_text(source)
            done[name] = grade(assignment, folder, Sandbox.detect("fallback"))
        return done[name]

    return grading


def section_of(text: str, function: str) -> list[str]:
    """A function's whole feedback in the student's text: its summary line and its details."""
    lines = text.splitlines()
    summary = [line for line in lines if line.startswith(f"  {function} ")]
    start = next((i for i, line in enumerate(lines) if line.startswith(f"{function}: ")), None)
    if start is None:
        return summary
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), None)
    return summary + lines[start:end]


def summary_line(text: str, function: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"  {function} "))


MACHINE = re.compile(r"/tmp/|/root|/home/|/work/|chmod|sandbox|WARNING|gufunc|matmul:|<array")


def assert_student_safe(result) -> None:
    """No instructor-only notice, machine path or raw NumPy internal error a student can see."""
    for text in (report.student_text(result), report.student_markdown(result)):
        assert not MACHINE.search(text), MACHINE.search(text)
        assert result.submission not in text
        for note in result.instructor_notes:
            assert note not in text


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_the_three_bad_cases_of_issue_14_read_well(assignment, graded, case):
    result = graded(case, reference_with(assignment, BAD_CASES[case]))
    text = report.student_text(result)
    assert_student_safe(result)
    if case == "swapped-tuple":
        line = summary_line(text, "masked_attention")
        assert line.endswith(
            "likely cause: you return (output, weights); the order is (weights, output)"
        )
        assert summary_line(text, "multi_head_attention").endswith(
            "likely cause: it uses your masked_attention, which fails its own tests: fix that first"
        )
        mha = [t for t in result.tests if t.checks == "multi_head_attention"]
        assert all(t.blame == ["masked_attention"] for t in mha if not t.passed)
        assert "weights (value 0)" in text  # the suite's names for the returned values
    elif case == "only-wo-transposed":
        assert summary_line(text, "multi_head_attention").endswith("likely cause: Wo is transposed")
        failed = [t for t in result.tests if not t.passed]
        assert failed and all(t.mistakes == ["projection-transposed-wo"] for t in failed)
    else:
        assert summary_line(text, "masked_attention").endswith(
            "likely cause: the scores are not divided by sqrt(d_k)"
        )
        assert text.count("You did not divide the scores by sqrt(d_k).") == 1
        assert "no-scale" not in text
        assert summary_line(text, "multi_head_attention").endswith("fix that first")
    assert "144 of 144" not in text or "Likely cause" in text
    for function in assignment.functions:
        assert len(section_of(text, function)) <= 15, "\n".join(section_of(text, function))


SHAPES = {
    # name: (wrapped functions, {function: words its summary line must end with})
    "order-transpose-permute": (
        {
            "masked_attention": "{0}[1], {0}[0]",
            "merge_heads": "{}.T",
            "split_heads": "{}[::-1]",
        },
        {
            "masked_attention": "you return (output, weights); the order is (weights, output)",
            "merge_heads": "your result is exactly the expected one transposed (rows and "
            "columns swapped)",
            "split_heads": "your heads are the expected ones in another order: your head 0 is "
            "the expected head 2, your head 2 is the expected head 0",
            # measured: each of these two alone makes a correct one raise
            "multi_head_attention": "it uses your masked_attention and merge_heads, which "
            "fail their own tests: fix that first",
        },
    ),
    "nan-rows-axis-shift": (
        {
            "masked_attention": "{0}[0], np.where(np.arange(len({0}[1]))[:, None] == 0, "
            "np.nan, {0}[1])",
            "merge_heads": "np.roll({}, 1, axis=0)",
            "split_heads": "np.moveaxis({}, 0, -1)",
        },
        {
            "masked_attention": "the output (value 1): row 0 of your result is all NaN",
            "merge_heads": "your positions are the expected ones moved along by 1 place",
            "split_heads": "the right values, with the axes in another order: yours are "
            "(positions, channels, heads)",
        },
    ),
    "zeros-factor-sign": (
        {
            "masked_attention": "0 * {0}[0], {0}[1]",
            "merge_heads": "{} / np.sqrt(8)",
        },
        {
            "masked_attention": "the weights (value 0): every value of your result is 0",
            "merge_heads": "every value is 0.354 times the expected one: a factor of 1/sqrt(8)?",
        },
    ),
    "sign": (
        {"split_heads": "-{}"},
        {"split_heads": "every value has the wrong sign"},
    ),
    "offset": (
        {"multi_head_attention": "{} + 0.5"},
        {"multi_head_attention": "every value is off by the same amount: yours = expected +0.5"},
    ),
}


@pytest.mark.parametrize("case", sorted(SHAPES))
def test_generic_error_shapes_applied_to_the_reference_are_said_in_plain_words(
    assignment, graded, case
):
    bodies, said = SHAPES[case]
    result = graded(case, wrapped(assignment, **bodies))
    text = report.student_text(result)
    assert_student_safe(result)
    for function, words in said.items():
        line = summary_line(text, function)
        assert f"likely cause: {words}" in line, line
        assert len(section_of(text, function)) <= 15, "\n".join(section_of(text, function))


def test_markdown_folds_the_details_and_keeps_instructor_notes_out(assignment, graded):
    result = graded("no-scale", reference_with(assignment, BAD_CASES["no-scale"]))
    result.instructor_notes.append("WARNING: weak sandbox: chmod o+x /root")
    markdown = report.student_markdown(result)
    table = markdown.index(
        "| `masked_attention` | 4/22 | the scores are not divided by sqrt\\(d\\_k\\) |"
    )
    assert table < markdown.index("<details><summary>masked_attention: 4/22</summary>")
    assert markdown.count("<details>") == markdown.count("</details>") == 2
    assert "chmod" not in markdown and "chmod" not in report.student_text(result)
    assert "chmod" in report.instructor_text(result) and "chmod" in report.summary(result)
    data = gradescope(result)
    assert data["output_format"] == "md" and "chmod" not in json.dumps(data["tests"])
    assert "chmod" not in data["output"]
    assert data["extra_data"]["instructor_notes"] == result.instructor_notes
    wrong = next(t for t in data["tests"] if t["extra_data"]["mistakes"] == ["no-scale"])
    assert "Likely cause: the scores are not divided by sqrt(d_k)." in wrong["output"]
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))


def test_the_grade_command_sends_instructor_notes_to_stderr(assignment, capsys):
    assert main(["grade", SLUG, str(assignment.reference), "--sandbox", "fallback"]) == 0
    out, err = capsys.readouterr()
    assert "WARNING: weak sandbox" in err and "WARNING" not in out
    assert "sandbox:" in err and "sandbox" not in out
    assert "Summary:" in out and "Total: 100/100" in out


@pytest.mark.parametrize("path", ["README.md", "assignments/masks-and-heads/README.md"])
def test_the_readme_and_the_handout_show_real_feedback(assignment, graded, path):
    text = (assignment.root / path).read_text()
    after = text.split("returns `(output, weights)`:\n\n", 1)[1].splitlines()
    block = itertools.takewhile(lambda line: not line or line.startswith("    "), after)
    shown = [line[4:] for line in block if line.strip() not in ("", "...")]
    result = graded("swapped-tuple", reference_with(assignment, BAD_CASES["swapped-tuple"]))
    real = report.student_text(result).splitlines()
    assert len(shown) >= 10 and all(line in real for line in shown), shown


MATCH_CASES = [
    (np.ones(3), np.ones(3)),
    (np.ones(3), np.ones(3) + 1e-12),
    (np.ones(3), np.ones(4)),
    (np.ones((2, 3)), np.zeros((2, 3))),
    (np.array([1.0, np.nan]), np.array([1.0, np.nan])),
    (np.array([1.0, np.nan]), np.array([1.0, 2.0])),
    (np.tril(np.ones((3, 3), bool)), np.tril(np.ones((3, 3), bool))),
    (np.ones((3, 3)), np.tril(np.ones((3, 3), bool))),
    ((np.ones(2), np.zeros(2)), (np.ones(2), np.zeros(2))),
    ((np.ones(2), np.zeros(2)), (np.ones(2), np.ones(2))),
    ((np.ones(2),), (np.ones(2), np.ones(2))),
    (2.0, 2.0),
    (2.0, 3.0),
    ("two", 2.0),
    ([1.0], np.ones(1)),
]


@pytest.mark.parametrize("got, want", MATCH_CASES)
def test_matches_says_what_problem_would_without_the_words(got, want):
    assert matches(got, want) == (problem(got, want) is None)


# -- graded positions -----------------------------------------------------------------------

GRADED_REFERENCE = '''
def double(x):
    """2 x; the last position is free (like a padded query)."""
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION
'''

GRADED_SUITE = '''
import numpy as np
from autograder.suite import expect, points


@points(10, checks="double")
def test_double(student, reference, rng):
    """2 x, the last position not graded"""
    x = rng.normal(size=4) + 3
    expect(student.double(x), reference.double(x), graded=np.array([True, True, True, False]))
'''

GRADED_MISTAKES = """
from autograder.suite import Catalogue

catalogue = Catalogue()


@catalogue.mistake("triple", title="x is tripled", replaces="double", why="3 x.", hint="2 x.")
def triple(x):
    return 3 * x
"""


@pytest.mark.parametrize(
    ("body", "passed", "named"),
    [
        ("y = 2 * x; y[-1] = 99.0; return y", True, []),  # the free position is not compared
        ("y = 3 * x; y[-1] = 0.0; return y", False, ["triple"]),  # nor is it in the diagnosis
        ("y = 2 * x; y[0] = 99.0; return y", False, []),  # a graded one is
    ],
)
def test_only_the_graded_positions_are_compared_and_diagnosed(tmp_path, body, passed, named):
    assignment = tiny_assignment(tmp_path, GRADED_REFERENCE, GRADED_SUITE, "functions: [double]\n")
    (assignment.suite / "mistakes.py").write_text(GRADED_MISTAKES)
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "tiny.py").write_text(f"def double(x):\n    {body}\n")
    (test,) = grade(assignment, submission, Sandbox.detect("fallback")).part("part2")
    assert (test.passed, test.mistakes) == (passed, named), test.message
