"""`autograder check` is green on the repository and red when an assignment is broken."""

import multiprocessing
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from autograder.cli import main
from autograder.course.assignment import SUITES, Assignment, find_root, slugs
from autograder.engine.grading import grade
from autograder.sandbox.layers import Sandbox
from autograder.workflows.check import Checker, Jobs, Outcome, summary_table

SLUG = "masks-and-heads"


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A copy of the course folders, used as the repository by the `autograder` command."""
    root = find_root()
    for folder in ("assignments", "reference"):
        shutil.copytree(root / folder / SLUG, tmp_path / folder / SLUG)
    monkeypatch.setenv("AUTOGRADER_ROOT", str(tmp_path))
    return tmp_path


def run_check(capsys) -> tuple[int, str]:
    code = main(["check", SLUG, "--sandbox", "fallback"])
    return code, capsys.readouterr().out


@pytest.fixture
def light(monkeypatch):
    """A check without the catalogue, the engine's forms and the mutants, for tests of what
    comes before them: every variant is built from the reference, so their grading adds
    minutes and nothing to what these tests look at (tests/test_assignments_check.py runs
    the whole check on every assignment)."""
    for step in ("check_catalogue", "check_engine_forms", "check_mutants"):
        monkeypatch.setattr(Checker, step, lambda self, *args: lambda: None)


MERGE_SUITE = """
from autograder.suite import expect, points


@points(70, checks="merge_heads")
def test_merge_undoes_split(student, reference, rng):
    \"""merge_heads(split_heads(X, h)) gives X back\"""
    X = rng.normal(size=(6, 24))
    expect(student.merge_heads({split}.split_heads(X, 3)), X)
"""

SPLIT_MISTAKE = """
from autograder.suite import Catalogue

catalogue = Catalogue()


@catalogue.mistake("split-by-reshape", replaces="split_heads", why="Rows.", hint="Columns.")
def split_by_reshape(X, h):
    return X.reshape(h, len(X), X.shape[1] // h)
"""


@pytest.mark.parametrize("split", ["student", "reference"])
def test_check_flags_a_test_that_fails_for_another_functions_mistake(tmp_path, split):
    """A merge_heads test that splits with the student's split_heads loses merge_heads points
    under a split_heads mistake: check says so. Built with the reference's, it does not."""
    suite = tmp_path / SLUG
    shutil.copytree(SUITES / SLUG, suite)
    (suite / "test_hidden.py").write_text(MERGE_SUITE.format(split=split))
    (suite / "mistakes.py").write_text(textwrap.dedent(SPLIT_MISTAKE))
    assignment = Assignment.load(SLUG, suites=tmp_path)
    box = Sandbox.detect("fallback")
    checker = Checker(assignment, box, say=lambda line: None)
    checker.check_catalogue(grade(assignment, assignment.reference, box))()
    flagged = (
        "mistake split-by-reshape costs only tests of split_heads: also fails "
        "test_merge_undoes_split (charged to merge_heads)"
    )
    assert any(f.startswith(flagged) for f in checker.failures) == (split == "student")


def test_check_fails_when_a_stub_drifts_from_the_reference(course: Path, capsys, light):
    stub = course / "assignments" / SLUG / "attention.py"
    stub.write_text(stub.read_text().replace("def merge_heads(Xh):", "def merge_heads(Xh, h):"))
    code, out = run_check(capsys)
    assert code == 1
    assert "[FAIL] assignments/masks-and-heads/attention.py is generated" in out


def test_check_fails_when_the_reference_loses_points(course: Path, capsys, light):
    reference = course / "reference" / SLUG / "attention.py"
    source = reference.read_text().replace(
        "np.tril(np.ones((n, n), dtype=bool))", "np.tril(np.ones((n, n), dtype=bool), -1)"
    )
    reference.write_text(source)
    main(["generate", SLUG])  # keep the stubs in step, so only the reference is wrong
    code, out = run_check(capsys)
    assert code == 1
    assert "[FAIL] the reference gets full marks" in out


def test_check_fails_when_a_public_test_fails_on_the_reference(course: Path, capsys, light):
    public = course / "assignments" / SLUG / "test_public.py"
    public.write_text(public.read_text() + "\n\ndef test_broken():\n    assert False\n")
    code, out = run_check(capsys)
    assert code == 1
    assert "[FAIL] the public tests pass on the reference" in out


def test_check_fails_when_a_solution_marker_leaks_into_the_starter(course: Path, capsys, light):
    leaked = course / "assignments" / SLUG / "helpers.py"
    leaked.write_text("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n")
    code, out = run_check(capsys)
    assert code == 1
    assert "[FAIL] no solution markers in the starter: helpers.py" in out


@pytest.mark.parametrize(
    "file, planted",
    [
        ("README.md", "\nSo the weights are 0.804430 and 0.195570.\n"),
        ("test_public.py", "\nEXPECTED = np.array([[1.0, 2.0]])\n"),
        ("README.md", "\nOne pass gives 1,024 examples.\n"),
    ],
)
def test_check_fails_when_a_quiz_answer_is_printed(course: Path, file, planted):
    assignment = Assignment.load(SLUG, course)
    checker = Checker(assignment, Sandbox.detect("fallback"), say=lambda line: None)
    checker.check_no_printed_answers()
    assert checker.failures == []
    path = assignment.starter / file
    path.write_text(path.read_text() + planted)
    checker.check_no_printed_answers()
    [failure] = checker.failures
    assert failure.startswith("no quiz answer is printed in what students get: " + file)


def test_small_integers_choices_and_lesser_precision_are_not_answers(course: Path):
    assignment = Assignment.load(SLUG, course)
    readme = assignment.starter / "README.md"
    readme.write_text(readme.read_text() + "\nScores 3, 4 and 0; option B; weights near 0.80.\n")
    checker = Checker(assignment, Sandbox.detect("fallback"), say=lambda line: None)
    checker.check_no_printed_answers()
    assert checker.failures == []


def fake_run(self) -> bool:
    """A check without the grading: masks-and-heads fails once, every other assignment passes."""
    self.say(f"checking {self.assignment.slug}")
    self.verify(True, "the starter files are generated")
    if self.assignment.slug == SLUG:
        self.verify(False, "the reference gets full marks", "test_mask (wrong values)")
    return not self.failures


@pytest.mark.parametrize("quiet", [False, True])
def test_check_ends_with_a_summary_table(monkeypatch, capsys, quiet):
    monkeypatch.setattr(Checker, "run", fake_run)
    code = main(["check", "--sandbox", "fallback", *(["--quiet"] if quiet else [])])
    out = capsys.readouterr().out
    assert code == 1
    table = out[out.index("summary:") :].splitlines()
    assert table[1].split() == ["assignment", "result", "what", "failed", "seconds"]
    rows = {line.split()[0]: line for line in table[3:] if line and not line.startswith("-")}
    assert set(rows) == {*slugs(), "(all)"}
    assert rows[SLUG].split()[1:3] == ["FAIL", "the"]
    assert "the reference gets full marks" in rows[SLUG]
    assert all(rows[s].split()[1] == "ok" for s in slugs() if s != SLUG)
    assert rows["(all)"].split()[1:4] == ["FAIL", "1", "failed"]
    assert re.fullmatch(r"\d+\.\d", rows[SLUG].split()[-1])
    failure = f"FAIL {SLUG}: the reference gets full marks: test_mask (wrong values)"
    details = out[: out.index("summary:")]
    if quiet:  # only the failures, each named with its assignment, then the table
        assert details.strip() == failure
    else:
        assert "[ok] the starter files are generated" in details
        assert "[FAIL] the reference gets full marks" in details


def test_the_summary_shortens_a_long_failure_and_counts_the_rest():
    outcome = Outcome("x", ["a " * 60 + ": detail", "second"], 1.25)
    row = next(line for line in summary_table([outcome]) if line.startswith("x "))
    assert "..." in row and "(and 1 more)" not in row
    short = Outcome("x", ["one: detail", "two"], 2.0)
    row = next(line for line in summary_table([short]) if line.startswith("x "))
    assert "one (and 1 more)" in row and row.endswith("2.0")


def test_the_job_processes_start_with_the_check_not_with_its_first_variant():
    """They import and detect their sandbox while the checker grades the reference."""
    before = set(multiprocessing.active_children())
    with Jobs(Sandbox.detect("fallback"), cores=2) as jobs:
        jobs.start()
        started = set(multiprocessing.active_children()) - before
    assert len(started) == 2
