"""Stubs are generated from the reference; the blank sheet from the quiz key."""

import pytest

from autograder.course.assignment import Assignment, slugs
from autograder.course.stubs import MarkerError, clear_solutions, has_markers


def test_clear_solutions_keeps_signature_and_docstring():
    source = (
        'def f(x):\n    """Doc."""\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n'
    )
    assert clear_solutions(source) == (
        'def f(x):\n    """Doc."""\n    # YOUR CODE HERE\n    raise NotImplementedError()\n'
    )


@pytest.mark.parametrize(
    "source, problem",
    [
        ("### BEGIN SOLUTION\n", "never closed"),
        ("### END SOLUTION\n", "without"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n", "nested"),
    ],
)
def test_unbalanced_markers_are_reported_with_the_line(source, problem):
    with pytest.raises(MarkerError, match=problem):
        clear_solutions(source, "attention.py")


@pytest.mark.parametrize("slug", slugs())
def test_starter_files_are_exactly_what_the_reference_generates(slug):
    assignment = Assignment.load(slug)
    for name, content in assignment.generated().items():
        assert (assignment.starter / name).read_text() == content, "run `autograder generate`"
        assert not has_markers(content)


@pytest.mark.parametrize("slug", slugs())
def test_every_reference_function_has_a_solution_region(slug):
    assignment = Assignment.load(slug)
    stub = assignment.generated()[assignment.module_file]
    for function in assignment.functions:  # a method is graded as Class.method
        owner, _, name = function.rpartition(".")
        assert f"def {name}(" in stub and (not owner or f"class {owner}" in stub)
    # at least one region per graded function (a class's __init__ may have one too)
    assert stub.count("raise NotImplementedError()") >= len(assignment.functions)
