"""The hidden run is hermetic, and a broken suite is the instructor's error, never the student's.

The broken suites here are real files in a temporary suites folder, loaded by real pytest: a
small suite of its own (so each run is quick), then broken one way at a time.
"""

import shutil
import textwrap
from pathlib import Path

import pytest

from autograder.course.assignment import SUITES, Assignment
from autograder.engine.grading import grade
from autograder.errors import SuiteError
from autograder.sandbox.layers import Sandbox

SLUG = "masks-and-heads"

TINY = '''
import numpy as np

from autograder.suite import expect, points


@points(2, checks="causal_mask")
def test_values(student, reference):
    """is True exactly where j <= i"""
    expect(student.causal_mask(4), reference.causal_mask(4))


@points(4, checks="causal_mask")
def test_count(student):
    """has n (n + 1) / 2 True entries"""
    assert int(np.sum(student.causal_mask(4) ^ False)) == 10, "wrong count"
'''

BREAKAGES = {
    # name: (what replaces what in TINY, words the suite error must contain)
    "syntax error": (("import numpy as np", "import numpy as np +"), "could not be loaded"),
    "points off": (("@points(4,", "@points(5,"), "suite.yaml declares 6"),
    "a test skipped by its marker": (
        ("@points(4,", '@__import__("pytest").mark.skip\n@points(4,'),
        "1 tests recorded of 2 collected",
    ),
    "a test that skips itself": (
        ('"""has n', 'import pytest; pytest.skip("no")\n    """has n'),
        "Skipped",
    ),
    "no points marker": (('@points(4, checks="causal_mask")\n', ""), "no @points marker"),
    "reference raises": (
        ("reference.causal_mask(4)", 'reference.causal_mask("four")'),
        "the reference's causal_mask raised TypeError",
    ),
    "a name error after the student's call": (("== 10", "== ten"), "NameError"),
    "a fixture that does not exist": (
        ("def test_count(student)", "def test_count(teacher)"),
        "set-up failed",
    ),
}


@pytest.fixture(scope="module")
def box():
    return Sandbox.detect("fallback")


@pytest.fixture(scope="module")
def reference_folder():
    return Assignment.load(SLUG).reference


def tiny_suite(folder: Path, source: str) -> Assignment:
    """A suites folder holding one suite: masks-and-heads' key and catalogue, ``source`` as
    its hidden tests, worth 6 points of Part 2."""
    suite = folder / "suites" / SLUG
    shutil.copytree(SUITES / SLUG, suite)
    declaration = suite / "suite.yaml"
    declaration.write_text(declaration.read_text().replace("part2: 70", "part2: 6"))
    (suite / "test_hidden.py").write_text(source)
    return Assignment.load(SLUG, suites=folder / "suites")


def test_the_tiny_suite_grades_the_reference(tmp_path, box, reference_folder):
    result = grade(tiny_suite(tmp_path, TINY), reference_folder, box)
    assert [t.score for t in result.part("part2")] == [2, 4], [t.message for t in result.tests]


@pytest.mark.parametrize("case", sorted(BREAKAGES))
def test_a_broken_suite_is_a_suite_error(tmp_path, box, reference_folder, case):
    (old, new), words = BREAKAGES[case]
    assert old in TINY
    with pytest.raises(SuiteError, match="the hidden suite did not run") as error:
        grade(tiny_suite(tmp_path, TINY.replace(old, new)), reference_folder, box)
    assert words in str(error.value)
    assert "could not use what your code returned" not in str(error.value)


def test_what_the_student_returned_is_still_the_students(tmp_path, box):
    """The same test, tripping over a string the student's code returned, blames the code."""
    (tmp_path / "attention.py").write_text("def causal_mask(n):\n    return 'mask'\n")
    result = grade(tiny_suite(tmp_path / "suite", TINY), tmp_path, box)
    count = next(t for t in result.tests if t.id == "test_count")
    assert count.outcome == "invalid-output"
    assert "could not use what your code returned" in count.message


def test_pytest_addopts_cannot_deselect_hidden_tests(monkeypatch, box, reference_folder):
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k causal_mask")
    result = grade(Assignment.load(SLUG), reference_folder, box)
    assert (result.score, result.max_score) == (100, 100), [t.message for t in result.tests][-3:]
    assert len(result.part("part2")) > 8
    import os

    assert os.environ["PYTEST_ADDOPTS"] == "-k causal_mask"  # the caller's setting is back


def test_installed_plugins_are_not_loaded(tmp_path, monkeypatch, box, reference_folder):
    """A pytest plugin installed by entry point (here one that drops every test but the first,
    or one named in PYTEST_PLUGINS) changes nothing."""
    (tmp_path / "dropper.py").write_text(
        textwrap.dedent(
            """
            def pytest_collection_modifyitems(items):
                del items[1:]
            """
        )
    )
    info = tmp_path / "dropper-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dropper\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\ndropper = dropper\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTEST_PLUGINS", "dropper")
    result = grade(Assignment.load(SLUG), reference_folder, box)
    assert (result.score, result.max_score) == (100, 100), [t.message for t in result.tests][-3:]
