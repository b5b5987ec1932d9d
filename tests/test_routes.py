"""Every assignment through every route, with no code specific to any of them.

The reference solution goes, as a student would hand it in, through: the released template's
practice checks; the Gradescope bundle; the Classroom 50 bundle; and an nbgrader course
(real `nbgrader generate_assignment`, then our `autograder nbgrader autograde` into nbgrader's
real gradebook). Each gives full marks, and the released files carry no solution.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import (
    IDENTITY,
    clean_env,
    jupyter_env,
    nbgrader,
    practice_check,
    run_autograder,
    unpack,
    validate,
)

from autograder import cli
from autograder.course.assignment import Assignment, slugs
from autograder.course.stubs import has_markers
from autograder.platforms import classroom50, gradescope
from autograder.workflows.release import release

pytestmark = [pytest.mark.timeout(600), pytest.mark.parametrize("slug", slugs())]


def handed_in(assignment: Assignment, folder: Path) -> Path:
    """The reference's code files and answer sheet, as a student's submission."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in [*assignment.code_files, "answers.yaml"]:
        shutil.copy(assignment.reference / name, folder / name)
    return folder


def test_the_practice_checks_pass_on_the_reference(slug, tmp_path):
    assignment = Assignment.load(slug)
    repo = tmp_path / "repo"
    release(assignment, repo)
    released = [p for p in repo.rglob("*") if p.is_file() and p.suffix in (".py", ".yaml")]
    assert not [p.name for p in released if has_markers(p.read_text())]
    handed_in(assignment, repo)
    done = practice_check(repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "practice checks passed" in done.stdout


def test_the_gradescope_bundle_gives_full_marks(slug, tmp_path):
    assignment = Assignment.load(slug)
    unpack(gradescope.export(assignment, tmp_path / "grader.zip"), tmp_path)
    handed_in(assignment, tmp_path / "submission")
    results = run_autograder(tmp_path)
    lost = [t["name"] for t in results["tests"] if t["score"] != t["max_score"]]
    assert results["score"] == 100 and not lost, (lost, results["output"])


def test_the_classroom50_bundle_gives_full_marks(slug, tmp_path):
    assignment = Assignment.load(slug)
    out = classroom50.export(assignment, tmp_path / "autograders" / slug)
    checkout = handed_in(assignment, tmp_path / "checkout")
    done = subprocess.run(
        [sys.executable, str(out / "autograder.py")],
        cwd=checkout,
        env=clean_env(**(IDENTITY | {"ASSIGNMENT": slug})),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((checkout / "result.json").read_text())
    validate(result, "classroom50-result.json")
    assert (result["score"], result["max-score"]) == (100, 100), result["notices"]


def test_an_nbgrader_course_grades_the_reference_notebook_in_full(slug, tmp_path):
    pytest.importorskip(
        "nbgrader", reason="nbgrader is not installed (pip install -e '.[nbgrader]')"
    )
    from nbgrader.api import Gradebook

    from autograder.platforms.nbgrader import gradebook

    course = tmp_path / "course"
    assert cli.main(["nbgrader", "build", str(course), slug]) == 0
    done = nbgrader(course, jupyter_env(tmp_path / "jupyter"), "generate_assignment", slug)
    assert done.returncode == 0, done.stdout + done.stderr
    release = course / "release" / slug
    released = [p for p in release.rglob("*") if p.is_file()]
    assert not [p.name for p in released if "### BEGIN SOLUTION" in p.read_text()]
    # The instructor's source notebook holds the reference: handed in as it is.
    student = course / "submitted" / "reference" / slug
    shutil.copytree(course / "source" / slug, student)
    shutil.copy(Assignment.load(slug).reference / "answers.yaml", student / "answers.yaml")
    gradebook.autograde(course, slug)
    with Gradebook(gradebook.database(course)) as gb:
        submission = gb.find_submission(slug, "reference")
        assert (submission.score, submission.max_score) == (100, 100)
