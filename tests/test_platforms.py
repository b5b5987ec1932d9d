"""The Gradescope and Classroom 50 bundles, run the way each platform runs them.

Each bundle is exported, unpacked into a temporary folder and run with the platform's paths and
environment; every result it writes is validated against the format's JSON Schema.
"""

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import IDENTITY, clean_env, run_autograder, unpack, validate

from autograder.course.assignment import Assignment
from autograder.platforms import classroom50, gradescope

ROOT = Path(__file__).parents[1]
SCHEMAS = ROOT / "autograder" / "schemas"
SLUG = "masks-and-heads"
# Each run starts Python, numpy and pytest in child processes: slow on a loaded machine.
pytestmark = pytest.mark.timeout(600)


# -- Gradescope -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gradescope_zip(tmp_path_factory):
    return gradescope.export(Assignment.load(SLUG), tmp_path_factory.mktemp("gs") / "grader.zip")


def test_the_zip_has_its_scripts_at_the_root_and_only_this_assignment(gradescope_zip):
    with zipfile.ZipFile(gradescope_zip) as z:
        names = set(z.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
    assert {"setup.sh", "run_autograder", "requirements.txt"} <= names
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    assert f"course/autograder/suites/{SLUG}/test_hidden.py" in names
    assert f"course/reference/{SLUG}/attention.py" in names
    suites = {n.split("/")[3] for n in names if n.startswith("course/autograder/suites/")}
    assert suites == {SLUG}
    assert not any("__pycache__" in n for n in names)


def test_run_autograder_grades_a_crashing_submission(gradescope_zip, tmp_path):
    unpack(gradescope_zip, tmp_path)
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "attention.py").write_text("import os\nos._exit(3)\n")
    results = run_autograder(tmp_path)
    assert results["score"] == 0 and results["extra_data"]["max_score"] == 100
    assert len(results["tests"]) > 10 and not any(t["status"] == "passed" for t in results["tests"])
    assert "answers.yaml was not found" in results["output"]


def test_run_autograder_writes_results_when_the_grader_breaks(gradescope_zip, tmp_path):
    source = unpack(gradescope_zip, tmp_path)
    (tmp_path / "submission").mkdir()
    (source / "course" / "autograder" / "suites" / SLUG / "test_hidden.py").write_text("1/0\n")
    results = run_autograder(tmp_path)
    assert results["tests"] == [] and "Grading could not run" in results["output"]
    shutil.rmtree(source / "course")  # now the grader cannot even start
    results = run_autograder(tmp_path)
    assert results == {
        "score": 0,
        "output": "Grading could not run (not a problem with your work): "
        "please tell your instructor.",
        "tests": [],
    }


# -- Classroom 50 ---------------------------------------------------------------------------------


def files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}  # fmt: skip


@pytest.fixture(scope="module")
def classroom50_run(tmp_path_factory):
    """Classroom 50 runs `python autograder.py` with the student's checkout as cwd."""
    tmp = tmp_path_factory.mktemp("c50")
    out = classroom50.export(Assignment.load(SLUG), tmp / "autograders" / SLUG)
    checkout = tmp / "checkout"
    shutil.copytree(ROOT / "reference" / SLUG, checkout)
    before = files(checkout)
    done = subprocess.run(
        [sys.executable, str(out / "autograder.py")],
        cwd=checkout,
        env=clean_env(**IDENTITY),
        capture_output=True,
        text=True,
        timeout=600,
    )
    return out, checkout, before, done


def test_classroom50_bundle_is_found_by_its_own_path(classroom50_run):
    out, *_ = classroom50_run
    assert (out / "autograder.py").is_file()
    assert (out / "course" / "autograder" / "suites" / SLUG / "quiz.yaml").is_file()
    assert (out / "course" / "reference" / SLUG / "attention.py").is_file()


def test_classroom50_writes_its_result_json(classroom50_run):
    _, checkout, before, done = classroom50_run
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((checkout / "result.json").read_text())
    validate(result, "classroom50-result.json")
    assert result["schema"] == "classroom50/result/v1"
    failed = [(t["test-name"], t["message"]) for t in result["tests"] if not t["passed"]]
    assert (result["score"], result["max-score"]) == (100, 100), (failed[:3], result["notices"])
    assert result["classroom"] == "attention-2026" and result["username"] == "octocat"
    assert result["submission"] == "submission-3"
    assert (result["commit"], result["release"], result["review"]) == (
        IDENTITY["COMMIT_URL"],
        IDENTITY["RELEASE_URL"],
        IDENTITY["REVIEW_URL"],
    )
    assert all(t["passed"] and t["score"] == t["max-score"] for t in result["tests"])
    assert {t["part"] for t in result["tests"]} == {"part1", "part2"}
    # Only result.json and the release body were added; the student's files are untouched.
    after = files(checkout)
    body = after.pop("release-body.md")
    assert after.pop("result.json") and after == before
    assert body.startswith(b"### masks\\-and\\-heads: 100/100") and b"<script" not in body


def test_classroom50_result_carries_our_feedback():
    from autograder.result import Result, TestResult

    result = Result(
        assignment=SLUG,
        submission=".",
        tests=[
            TestResult("q", "Q1", "part1", 1.5, 3, "wrong", "not quite", mistakes=["m"]),
            TestResult("t", "causal_mask: shape", "part2", 2, 2, "passed"),
        ],
    )
    data = classroom50.classroom50(result, IDENTITY)
    validate(data, "classroom50-result.json")
    first = data["tests"][0]
    assert (first["score"], first["points"], first["max-score"]) == (2, 1.5, 3)
    assert (first["message"], first["mistakes"], first["passed"]) == ("not quite", ["m"], False)
    assert (data["score"], data["max-score"]) == (4, 5)
