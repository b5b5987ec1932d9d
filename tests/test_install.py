"""An installed (non-editable) grader grades against the reference it was built with, from any
folder, and never against a reference found where it runs."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course.assignment import Assignment
from autograder.engine.grading import grade
from autograder.sandbox.layers import Sandbox

SLUG = "masks-and-heads"
pytestmark = pytest.mark.timeout(900)  # the first test waits for a real package build
SOURCE = Path(__file__).resolve().parents[1]
BUILT_FROM = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md"]
WRONG_MASK = "np.tril(np.ones((n, n), dtype=bool), -1)"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """`pip install --no-deps --target SITE` of a copy of this repository: a real build."""
    tmp = tmp_path_factory.mktemp("install")
    source = tmp / "source"
    for folder in ("autograder", "assignments", "reference"):
        shutil.copytree(SOURCE / folder, source / folder, ignore=shutil.ignore_patterns("__py*"))
    for name in BUILT_FROM:
        shutil.copy(SOURCE / name, source / name)
    target = tmp / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
        + ["--target", str(target), str(source)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    return target


def autograder(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "AUTOGRADER_ROOT"}
    env["PYTHONPATH"] = str(site)
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def total(done: subprocess.CompletedProcess) -> float:
    found = re.search(r"Total: ([\d.]+)/100", done.stdout)
    assert found, done.stdout + done.stderr
    return float(found[1])


def test_the_installed_package_is_the_one_run(site, tmp_path):
    done = autograder(site, tmp_path, "--help")
    assert done.returncode == 0
    where = subprocess.run(
        [sys.executable, "-c", "import autograder; print(autograder.__file__)"],
        env={**os.environ, "PYTHONPATH": str(site)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(site))


def test_a_reference_in_the_submission_folder_is_ignored(site, tmp_path):
    """A wrong solution next to a 'reference' that agrees with it gets its honest grade."""
    reference = Assignment.load(SLUG).reference
    source = (reference / "attention.py").read_text()
    wrong = source.replace("np.tril(np.ones((n, n), dtype=bool))", WRONG_MASK)
    assert wrong != source
    trap = tmp_path / "trap"
    for folder in (trap, trap / "reference" / SLUG, trap / "assignments" / SLUG):
        folder.mkdir(parents=True)
    for folder in (trap, trap / "reference" / SLUG):
        (folder / "attention.py").write_text(wrong)
        shutil.copy(reference / "answers.yaml", folder / "answers.yaml")
    honest = grade(Assignment.load(SLUG), trap, Sandbox.detect("fallback")).score
    assert honest < 100
    done = autograder(site, trap, "grade", SLUG, ".", "--sandbox", "fallback")
    assert done.returncode == 0, done.stderr
    assert total(done) == honest


def test_an_honest_folder_is_graded_from_anywhere(site, tmp_path):
    submission = tmp_path / "work"
    shutil.copytree(Assignment.load(SLUG).reference, submission)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = autograder(site, elsewhere, "grade", SLUG, str(submission), "--sandbox", "fallback")
    assert done.returncode == 0, done.stderr
    assert total(done) == 100


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_without_the_course_grade_says_what_to_run_instead(site, tmp_path):
    """A grader installed without course material (as in a student's repository)."""
    bare = tmp_path / "site"
    shutil.copytree(site, bare)
    shutil.rmtree(bare / "autograder" / "course_material")
    student = tmp_path / "student"
    shutil.copytree(Assignment.load(SLUG).starter, student)
    error = one_line_error(autograder(bare, student, "grade", SLUG, "."))
    assert "practice checks" in error and "`pytest`" in error
    assert "AUTOGRADER_ROOT" not in error


def test_a_missing_reference_is_a_one_line_error(site, tmp_path):
    broken = tmp_path / "site"
    shutil.copytree(site, broken)
    (broken / "autograder" / "course_material" / "reference" / SLUG / "attention.py").unlink()
    submission = Assignment.load(SLUG).reference
    error = one_line_error(autograder(broken, tmp_path, "grade", SLUG, str(submission)))
    assert "reference solution of masks-and-heads is missing" in error


def test_a_named_course_folder_must_be_one(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", SLUG, "--course", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert one_line_error(done).endswith("is not a course folder (no reference/ and assignments/)")
