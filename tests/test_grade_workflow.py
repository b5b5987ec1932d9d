"""grade.yml, step by step: the same commands the workflow runs, on file:// repositories.

Artifacts are passed between the jobs as upload-artifact/download-artifact would: the
submissions folder to every shard, each shard's folder to shards/shard-K for the merge.
"""

from __future__ import annotations

import csv
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import git, student_repo
from hostile import SLUG

from autograder.course.assignment import Assignment

ROOT = Path(__file__).parents[1]
WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "grade.yml").read_text())
pytestmark = pytest.mark.timeout(900)


def step(job: str, name: str) -> dict:
    return next(s for s in WORKFLOW["jobs"][job]["steps"] if s.get("name", "").startswith(name))


def run(job: str, name: str, cwd: Path, env: dict[str, str]) -> None:
    """Run one step's shell exactly as written, in ``cwd``, as Actions would (bash -e)."""
    script = step(job, name)["run"]
    assert "${{" not in script, "run lines take values from env, never from expressions"
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{job}/{name}:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("workflow")
    remotes = root / "remotes"
    remotes.mkdir()
    assignment = Assignment.load(SLUG)
    files = {p.name: p.read_text() for p in assignment.reference.iterdir() if p.is_file()}
    student_repo(remotes, "ada", files)
    student_repo(remotes, "bo", {p.name: p.read_text() for p in assignment.starter.glob("*.*")})
    (root / "rosters").mkdir()
    (root / "rosters" / "class.csv").write_text("github_username\nada\nbo\ncy\n")
    bin_dir = root / "bin"  # `autograder` on PATH, running this checkout
    bin_dir.mkdir()
    shim = bin_dir / "autograder"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m autograder "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "ASSIGNMENT": SLUG,
        "ROSTER": "rosters/class.csv",
        "SHARDS": "2",
        "ORG": "course-org",
        "URL_TEMPLATE": f"file://{remotes}/{{login}}.git",
        "GITHUB_OUTPUT": str(root / "github_output"),
        "GITHUB_STEP_SUMMARY": str(root / "step_summary.md"),
    }
    return {"root": root, "env": env}


def test_the_workflow_commands_collect_grade_in_shards_and_merge(workspace):
    root, env = workspace["root"], workspace["env"]
    run("collect", "Collect every student", root, env)
    run("collect", "Plan the shards", root, env)
    assert (root / "github_output").read_text() == "shards=[1,2]\n"
    assert WORKFLOW["jobs"]["grade"]["strategy"]["matrix"]["shard"] == (
        "${{ fromJSON(needs.collect.outputs.shards) }}"
    )
    for shard in (1, 2):
        run("grade", "Grade this shard", root, env | {"SHARD": str(shard)})
        shutil.copytree(root / f"shard-{shard}", root / "shards" / f"shard-{shard}")
    run("merge", "Merge the shards", root, env)
    run("merge", "Job summary", root, env)

    with (root / "scores" / "scores.csv").open() as f:
        rows = {r["login"]: r for r in csv.DictReader(f)}
    assert rows["ada"]["total"] == "100" and rows["bo"]["total"] == "0"
    assert rows["cy"]["status"] == "missing"
    assert rows["ada"]["sha"] == git("rev-parse", "HEAD", cwd=root / "remotes" / "ada-work")
    summary = (root / "step_summary.md").read_text()
    assert "| total | students |" in summary and "2 of 3 graded" in summary
    for upload in ("scores/scores.csv", "scores/report.md", "scores/report.html"):
        assert (root / upload).is_file(), upload
    assert sorted(p.parent.name for p in root.glob("scores/*/results.json")) == ["ada", "bo", "cy"]


def test_publishing_is_off_unless_asked_for():
    publish = step("merge", "Post each student's feedback")
    assert publish["if"] == "${{ inputs.publish }}"
    assert WORKFLOW[True]["workflow_dispatch"]["inputs"]["publish"]["default"] is False
    assert "secrets.CLASSROOM_TOKEN" in publish["env"]["AUTOGRADER_GIT_TOKEN"]
