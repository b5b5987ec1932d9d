"""`autograder export gradescope --help` documents the zip's local dry run, and the commands it
prints work as written."""

import json
import subprocess

import pytest
from helpers import clean_env

from autograder.cli import main
from autograder.course.assignment import Assignment
from autograder.platforms import gradescope

SLUG = "masks-and-heads"


def test_export_help_prints_the_dry_run(capsys):
    with pytest.raises(SystemExit) as done:
        main(["export", "gradescope", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert 'AUTOGRADER_HOME="$PWD/home" bash home/source/run_autograder' in out
    assert gradescope.DRY_RUN.strip().splitlines()[-1] in out  # its lines, unwrapped


def test_the_dry_run_grades_as_gradescope_would(tmp_path):
    assert main(["export", "gradescope", SLUG, str(tmp_path / "OUT.zip")]) == 0
    reference = Assignment.load(SLUG).reference
    commands = [
        line.strip().replace("STUDENT_DIR", str(reference))
        for line in gradescope.DRY_RUN.splitlines()
        if line.startswith("  ")
    ]
    done = subprocess.run(
        ["bash", "-euc", "\n".join(commands)],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "home" / "results" / "results.json").read_text())
    assert results["score"] == 100
