"""Feedback on real code (issue 19): each case is the reference with one change, graded
end to end, and the cause it names (or the error it shows) must be the true one."""

import functools
import re
import shutil

import pytest

from autograder import report
from autograder.course.assignment import Assignment, slugs
from autograder.engine.compare import plural
from autograder.engine.grading import grade
from autograder.engine.mistakes import Catalogue, load_catalogue
from autograder.sandbox.layers import Sandbox


def edited(slug: str, *replacements: tuple[str, str]) -> str:
    """The reference's source of ``slug`` with each (old, new) text replaced once."""
    source = Assignment.load(slug).reference_source
    for old, new in replacements:
        assert old in source, old
        source = source.replace(old, new)
    return source


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade a source as a submission of a slug, once per module: (slug, source) -> Result."""

    @functools.cache
    def grading(slug: str, source: str):
        assignment = Assignment.load(slug)
        folder = tmp_path_factory.mktemp("sub")
        shutil.copy(assignment.reference / "answers.yaml", folder / "answers.yaml")
        (folder / assignment.module_file).write_text(source)
        return grade(assignment, folder, Sandbox.detect("fallback"))

    return grading


def summary_line(text: str, function: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"  {function} "))


# -- a cascade only when measured -------------------------------------------------------------

INT_PADDING = (
    "return np.arange(T)[None, :] < lengths[:, None]",
    "return (np.arange(T)[None, :] < lengths[:, None]).astype(int)",
)
OWN_INT_ATTENTION_MASK = (
    "    real_keys = padding_mask(lengths, T)[:, None, :]",
    "    real_keys = (np.arange(T)[None, None, :] < np.asarray(lengths)[:, None, None]) * 1",
)


def test_a_function_that_never_calls_the_failing_one_shows_its_own_error(graded):
    result = graded(
        "padding-and-batches", edited("padding-and-batches", INT_PADDING, OWN_INT_ATTENTION_MASK)
    )
    text = report.student_text(result)
    assert "fix that first" not in text
    mask_tests = [t for t in result.tests if t.checks == "attention_mask"]
    assert all(not t.blame for t in mask_tests)
    assert "expected an array of booleans" in "\n".join(t.message for t in mask_tests)


def test_a_function_that_calls_the_failing_one_is_still_pointed_to_it(graded):
    result = graded("padding-and-batches", edited("padding-and-batches", INT_PADDING))
    text = report.student_text(result)
    assert summary_line(text, "attention_mask").endswith("fix that first")


# -- merge only what is the same --------------------------------------------------------------

ASSERT_AND_BROADCAST = (
    (
        "    T, d = Q.shape\n",
        "    T, d = Q.shape\n    assert block_size <= len(K), 'block too big'\n",
    ),
    ("i = np.arange(start, T)[:, None]", "i = np.arange(T)[:, None]"),
)


def test_two_different_errors_are_not_merged(graded):
    result = graded("flash-attention", edited("flash-attention", *ASSERT_AND_BROADCAST))
    text = report.student_text(result)
    assert "raised AssertionError: block too big" in text
    assert "raised ValueError: operands could not be broadcast" in text
    assert "same cause as above" not in text


def test_the_same_error_twice_is_merged(graded):
    no_causal = ("    T, d = Q.shape\n", "    T, d = Q.shape\n    assert not causal, 'no causal'\n")
    result = graded("flash-attention", edited("flash-attention", no_causal))
    text = report.student_text(result)
    assert text.count("raised AssertionError: no causal") == 1
    assert text.count("same cause as above") == 2


# -- names from the suite, nothing internal ---------------------------------------------------

INTERNAL = re.compile(r"RemoteObject|Handle\(|Unsupported|autograder-job|/tmp/|/sub/|/runner/")


@pytest.mark.parametrize("slug", slugs())
def test_every_suite_names_its_tuples_and_axes_and_titles_every_entry(slug):
    assignment = Assignment.load(slug)
    assert assignment.unnamed_returns() == []
    assert assignment.axes, "suite.yaml has axes:"
    catalogue = load_catalogue(assignment.suite / "mistakes.py")
    assert catalogue.untitled == []
    for variant in catalogue.mistakes:  # every text of every entry a student can receive
        for text in (variant.title, variant.why, variant.hint):
            assert not INTERNAL.search(text), (variant.name, text)
        assert variant.family not in variant.title, "the id is for instructors"


def test_check_fails_on_an_unnamed_tuple_and_an_untitled_entry():
    assignment = Assignment.load("flash-attention")
    assignment.returns = {}
    assert assignment.unnamed_returns() == ["online_softmax_update", "chunked_attention"]
    catalogue = Catalogue()
    catalogue.mistake("no-title", replaces="f", why="Why.", hint="Hint.")(lambda: None)
    assert "no-title has no title= (what a student reads)" in catalogue.problems(["f"])


def test_a_3d_array_is_pointed_into_with_the_suites_axis_names(graded):
    wo_transposed = (
        "return heads.transpose(0, 2, 1, 3).reshape(B, T, C) @ Wo\n",
        "return heads.transpose(0, 2, 1, 3).reshape(B, T, C) @ Wo.T\n",
    )
    result = graded("padding-and-batches", edited("padding-and-batches", wo_transposed))
    text = report.student_text(result)
    assert "at sequence 0, position 0, channel 0" in text
    assert "head 0" not in text


def test_a_job_path_printed_by_the_student_is_not_shown(graded):
    printing = (
        "    lengths = np.asarray(lengths)\n",
        "    lengths = np.asarray(lengths)\n    print(__file__)\n",
    )
    result = graded("padding-and-batches", edited("padding-and-batches", printing))
    printed = "\n".join(t.printed for t in result.tests)
    assert "batches.py" in printed and not INTERNAL.search(printed)


def test_axis_names_are_pluralised_in_plain_english():
    assert (plural("key", 2), plural("entry", 2), plural("query", 3)) == (
        "keys",
        "entries",
        "queries",
    )
