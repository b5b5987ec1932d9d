"""The catalogue of known mistakes, and how `autograder check` validates a suite against it."""

import re

import numpy as np
import pytest

from autograder import report
from autograder.course.assignment import Assignment
from autograder.engine import grading
from autograder.engine.grading import grade
from autograder.engine.mistakes import Catalogue, load_catalogue
from autograder.result import Result
from autograder.result import TestResult as Outcome
from autograder.sandbox.layers import Sandbox
from autograder.workflows import check as checking
from autograder.workflows.check import Checker, table

SLUG = "masks-and-heads"


@pytest.fixture(scope="module")
def assignment():
    return Assignment.load(SLUG)


@pytest.fixture(scope="module")
def catalogue(assignment):
    return load_catalogue(assignment.suite / "mistakes.py")


@pytest.fixture(scope="module")
def checked(assignment):
    """One full `autograder check` of the assignment: (ok, printed lines, the checker)."""
    lines: list[str] = []
    checker = Checker(assignment, Sandbox.detect("fallback"), lines.append)
    return checker.run(), lines, checker


@pytest.fixture(scope="module")
def reference_result(assignment):
    return grade(assignment, assignment.reference, Sandbox.detect("fallback"))


# -- the masks-and-heads catalogue ----------------------------------------------------------


def test_the_catalogue_has_a_mistake_for_every_function(assignment, catalogue):
    assert len(catalogue.mistakes) >= 15
    assert catalogue.problems(assignment.functions) == []
    for function in assignment.functions:
        assert any(m.replaces == function for m in catalogue.mistakes), function


@pytest.mark.parametrize(
    "name",
    [
        "attention-einsum",
        "attention-loop",
        "attention-large-negative-fill",
        "attention-renormalise-after-masking",
        "attention-scale-q-first",
        "attention-float32",
    ],
)
def test_the_required_also_correct_forms_are_catalogued(catalogue, name):
    assert name in {v.name for v in catalogue.correct}


def test_explanations_are_sentences_and_hints_do_not_give_code_away(catalogue):
    code = re.compile(r"np\.|`|\w\(|\s=\s|\[.*:.*\]|\breturn\b|\bdef\b")
    for m in catalogue.mistakes:
        assert m.why.endswith(".") and m.hint.endswith((".", "?")), m.name
        assert not code.search(m.hint), f"{m.name}: the hint reads like code: {m.hint}"
        assert len(m.why) < 400 and len(m.hint) < 250, m.name


# -- autograder check on the real suite -----------------------------------------------------


def test_check_is_green_and_prints_the_table(checked, catalogue):
    ok, lines, checker = checked
    assert ok, "\n".join(lines)
    assert not checker.failures
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("mistake "))
    rows = lines[start + 1 : start + 1 + len(catalogue.mistakes)]
    assert [row.split()[0] for row in rows] == [m.name for m in catalogue.mistakes]
    assert len({len(row) for row in [lines[start], *rows]}) == 1, "the table is not aligned"
    assert all(set(row.split()[1:]) <= set("Nnx.") for row in rows)


def test_every_mistake_is_named_alone_on_a_test_of_its_own_function(checked, catalogue):
    graded = checked[2].graded
    for m in catalogue.mistakes:
        own = [t for t in graded[m.name].part("part2") if t.checks == m.replaces]
        assert any(not t.passed and t.mistakes == [m.name] for t in own), m.name


def test_every_mistake_is_summarised_by_its_title_in_a_short_feedback(checked, catalogue):
    """The student's summary line for the broken function names the mistake in plain words,
    and that function's whole feedback (summary line and details) stays within 15 lines."""
    for m in catalogue.mistakes:
        text = report.student_text(checked[2].graded[m.name])
        lines = text.splitlines()
        line = next(line for line in lines if line.startswith(f"  {m.replaces} "))
        assert m.title in line.split("likely cause: ")[-1], (m.name, line)
        start = lines.index(next(x for x in lines if x.startswith(f"{m.replaces}: ")))
        end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("  "))
        assert 1 + end - start <= 15, "\n".join([line, *lines[start:end]])
        assert m.name not in text, "catalogue ids are for instructors"


def test_one_entry_covers_each_projection_transposed(checked, catalogue):
    cases = [m for m in catalogue.mistakes if m.family == "projection-transposed"]
    assert [m.bound["which"] for m in cases] == ["Wq", "Wk", "Wv", "Wo"]
    for m in cases:  # each case is validated by check, and named alone
        own = [t for t in checked[2].graded[m.name].part("part2") if not t.passed]
        assert any(t.mistakes == [m.name] for t in own), m.name
        assert m.title == f"{m.bound['which']} is transposed"


def test_a_mistake_is_never_named_on_a_test_it_passes(checked, catalogue):
    for m in catalogue.mistakes:
        assert all(not t.mistakes for t in checked[2].graded[m.name].tests if t.passed)


def test_every_also_correct_form_gets_full_marks(checked, catalogue):
    for v in catalogue.correct:
        result = checked[2].graded[v.name]
        assert result.score == result.max_score, v.name


def test_every_hidden_test_is_failed_by_some_mistake(checked, catalogue, reference_result):
    graded = checked[2].graded
    for test in reference_result.part("part2"):
        assert any(checking.failed(graded[m.name], test.id) for m in catalogue.mistakes), test.id


# -- check fails when the catalogue and the suite do not fit --------------------------------


def run_catalogue_check(assignment, reference_result, monkeypatch, catalogue):
    """check_catalogue with this catalogue in place of the suite's (the grading session's,
    which check_catalogue reads too)."""
    monkeypatch.setattr(grading, "load_catalogue", lambda path: catalogue)
    checker = Checker(assignment, Sandbox.detect("fallback"), say=lambda line: None)
    checker.check_catalogue(reference_result)()
    return checker.failures


def test_check_fails_on_a_mistake_that_loses_no_points(assignment, reference_result, monkeypatch):
    catalogue = Catalogue()

    @catalogue.mistake("harmless", replaces="causal_mask", why="Nothing.", hint="Nothing.")
    def harmless(n):
        return np.tril(np.ones((n, n), dtype=bool))

    failures = run_catalogue_check(assignment, reference_result, monkeypatch, catalogue)
    assert "mistake harmless loses points on causal_mask: no test caught it" in failures
    assert "mistake harmless is named in its own feedback: no failed test names it" in failures
    assert any(f.startswith("the catalogue covers every function") for f in failures)
    assert any("hidden test test_split_heads_values is failed by" in f for f in failures)


def test_check_fails_when_two_mistakes_cannot_be_told_apart(
    assignment, reference_result, monkeypatch
):
    catalogue = Catalogue()
    for name in ("twin-a", "twin-b"):

        @catalogue.mistake(name, replaces="causal_mask", why="Twins.", hint="Twins.")
        def twin(n):
            return np.triu(np.ones((n, n), dtype=bool))

    failures = run_catalogue_check(assignment, reference_result, monkeypatch, catalogue)
    assert (
        "mistake twin-a is named in its own feedback: never alone on causal_mask: "
        "always together with twin-b"
    ) in failures


def test_check_fails_on_an_also_correct_form_that_is_wrong(
    assignment, reference_result, monkeypatch
):
    catalogue = Catalogue()

    @catalogue.also_correct("not-really", replaces="merge_heads")
    def not_really(Xh):
        return Xh.transpose(1, 2, 0).reshape(Xh.shape[1], -1)

    failures = run_catalogue_check(assignment, reference_result, monkeypatch, catalogue)
    assert any(
        f.startswith("also correct: not-really gets full marks: test_merge") for f in failures
    )


def test_a_variant_is_graded_once_per_set_of_inputs(assignment, catalogue, monkeypatch):
    gradings: dict = {}  # shared by the checkers, as the engine's tests may share one
    checker = Checker(assignment, Sandbox.detect("fallback"), lambda line: None, None, gradings)
    variant = catalogue.mistakes[0]
    first = checker.grade_variants([variant])[variant.name]
    first.tests.clear()  # the caller's copy: changing it must not change what is reused
    calls = []
    monkeypatch.setattr(checking, "grade_job", lambda a, context, files: calls.append(files))
    again = Checker(assignment, Sandbox.detect("fallback"), lambda line: None, None, gradings)
    assert again.grade_variants([variant])[variant.name].tests and calls == []
    other = Checker(assignment, Sandbox.detect("plain"), lambda line: None, None, gradings)
    other.grade_variants([variant])  # another sandbox is another input: graded, not reused
    assert len(calls) == 1


# -- the table ------------------------------------------------------------------------------


def test_table_marks_named_shared_unnamed_and_passed():
    tests = [
        Outcome(id=f"test_{i}", name="", part="part2", score=0, max_score=1, outcome="wrong")
        for i in range(1, 11)
    ]

    def result(outcomes: dict[int, list[str]]) -> Result:
        return Result(
            assignment="a",
            submission="s",
            tests=[
                Outcome(
                    id=t.id,
                    name="",
                    part="part2",
                    score=0,
                    max_score=1,
                    outcome="wrong" if i in outcomes else "passed",
                    mistakes=outcomes.get(i, []),
                )
                for i, t in enumerate(tests, start=1)
            ],
        )

    rows = [
        ("short", result({1: ["short"], 2: ["short", "a-much-longer-name"], 10: []})),
        ("a-much-longer-name", result({2: ["short", "a-much-longer-name"]})),
    ]
    lines = table(rows, tests)
    header = next(line for line in lines if line.strip().startswith("mistake"))
    body = lines[lines.index(header) + 1 : lines.index(header) + 4]
    assert header.split()[1:] == [str(i) for i in range(1, 11)]
    assert body[0].split() == ["short", "N", "n", *"." * 7, "x"]
    assert body[1].split() == ["a-much-longer-name", ".", "n", *"." * 8]
    assert body[2].split() == ["(mistakes", "caught)", "1", "2", *"0" * 7, "1"]
    assert len({len(line) for line in [header, *body]}) == 1
    assert "   10 test_10 (, 1 points)" in lines
