"""README.md's command blocks work as written, after the install the README gives before them.

Each fenced `sh` block runs with bash, from the top of a fresh copy of this repository, in a
virtual environment of its own (with this machine's packages visible, and no package index):
the first block is the Quick start's `pip install -e .`, which installs the copy there and
nowhere else. A block may carry one marker on the line above it:

- ``<!-- readme-test: skip: WHY -->``: not run here (it needs GitHub, a token, or a long run);
  its `autograder` lines are still parsed by the real argument parser;
- ``<!-- readme-test: exit N: WHY -->``: it is expected to exit N (the starter fails its tests).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.cli import parser

ROOT = Path(__file__).resolve().parents[1]
COPIED = ["autograder", "assignments", "reference"]
COPIED_FILES = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "course.yaml"]
MARKER = re.compile(r"^<!-- readme-test: (skip|exit (\d+)): (.+) -->$")
pytestmark = pytest.mark.timeout(600)


@dataclass
class Block:
    line: int
    script: str
    skip: str = ""  # why it is not run here
    exit: int = 0

    @property
    def id(self) -> str:
        return f"line {self.line}: {self.script.splitlines()[0][:50]}"


def blocks(text: str) -> list[Block]:
    """The README's ```sh blocks, with the marker above each (if any)."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            script = textwrap.dedent("\n".join(lines[i + 1 : end]))
            above = next((ln.strip() for ln in reversed(lines[:i]) if ln.strip()), "")
            marker = MARKER.match(above)
            block = Block(i + 1, script)
            if marker and marker[1] == "skip":
                block.skip = marker[3]
            elif marker:
                block.exit = int(marker[2])
            found.append(block)
            i = end
        i += 1
    return found


README_BLOCKS = blocks((ROOT / "README.md").read_text())
INSTALL, *REST = [b for b in README_BLOCKS if not b.skip]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A fresh copy of the repository, and an environment whose `pip` and `autograder` are
    a virtual environment's, after the README's install block has run in it."""
    root = tmp_path_factory.mktemp("readme")
    copy = root / "repository"
    for folder in COPIED:
        ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
        shutil.copytree(ROOT / folder, copy / folder, ignore=ignore)
    for name in COPIED_FILES:
        shutil.copy(ROOT / name, copy / name)
    venv = root / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
        timeout=120,
    )
    pip = venv / "bin" / "pip"  # the venv's own pip: this machine's, installing into the venv
    pip.write_text(f'#!/bin/sh\nexec "{venv / "bin" / "python"}" -m pip "$@"\n')
    pip.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AUTOGRADER_ROOT")}
    env = {k: v for k, v in env.items() if not k.startswith(("PYTEST_", "GITHUB_", "VIRTUAL"))}
    env |= {
        "PATH": f"{venv / 'bin'}:{env['PATH']}",
        "VIRTUAL_ENV": str(venv),
        "PIP_NO_INDEX": "1",  # what it needs is installed here; tests reach no index
        "PIP_NO_BUILD_ISOLATION": "0",  # build with the setuptools installed here
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    run(INSTALL, copy, env)
    return copy, env


def bash(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def run(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = bash(block, cwd, env)
    assert done.returncode == block.exit, f"{block.id}:\n{done.stdout[-3000:]}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def ran(checkout) -> dict[int, subprocess.CompletedProcess]:
    """Every block after the install, in the README's order, as a reader would run them."""
    copy, env = checkout
    return {block.line: bash(block, copy, env) for block in REST}


def test_the_first_block_run_is_the_install():
    assert INSTALL.script.splitlines()[0] == "pip install -e ."
    assert len(REST) >= 4


def test_the_install_installs_the_copy_and_nothing_else(checkout):
    copy, env = checkout
    where = subprocess.run(
        ["python", "-c", "import autograder; print(autograder.__file__)"],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where == str(copy / "autograder" / "__init__.py")
    found = shutil.which("autograder", path=env["PATH"])
    assert found and found.startswith(env["VIRTUAL_ENV"])


@pytest.mark.parametrize("block", REST, ids=lambda b: b.id)
def test_a_readme_block_works_as_written(ran, block):
    done = ran[block.line]
    assert done.returncode == block.exit, f"{block.id}:\n{done.stdout[-3000:]}\n{done.stderr}"


def test_the_blocks_wrote_what_the_checklist_says(checkout, ran):
    copy, _ = checkout
    assert (copy / "template" / "practice" / "check.py").is_file()  # release
    assert (copy / "results" / "scores.csv").is_file()  # the rehearsed grade-batch
    assert (copy / "results" / "report.html").is_file()  # report
    assert (copy / "masks-and-heads.zip").is_file()  # export
    scores = (copy / "results" / "scores.csv").read_text()
    assert ",100," in scores.splitlines()[1]  # ada, the reference, has full marks


SKIPPED = [b for b in README_BLOCKS if b.skip]


@pytest.mark.parametrize("block", SKIPPED, ids=lambda b: b.id)
def test_a_skipped_block_says_why_and_parses(block):
    """Not run here, but each `autograder` line is one the real parser accepts."""
    assert len(block.skip) > 10
    for line in block.script.splitlines():
        for command in line.split("&&"):
            words = shlex.split(command)
            if words and words[0] == "autograder":
                parser().parse_args(words[1:])


def test_a_marker_the_test_cannot_read_would_be_caught():
    text = "<!-- readme-test: maybe: why -->\n```sh\nfalse\n```\n"
    assert blocks(text)[0].skip == "" and blocks(text)[0].exit == 0
    marked = "<!-- readme-test: skip: needs GitHub -->\n```sh\nfalse\n```\n"
    assert blocks(marked)[0].skip == "needs GitHub"


# -- what a newcomer reads first -------------------------------------------------------------------

README = (ROOT / "README.md").read_text()
STEPS = [
    "**Write the course file**",
    "**Check**",
    "**Release**",
    "**The formative round**",
    "**Collect at the deadline**",
]
STEPS += ["**Grade, report, publish**", "**Export**"]


def test_the_start_of_term_checklist_is_near_the_top_and_in_order():
    headings = re.findall(r"(?m)^## (.+)$", README)
    assert headings.index("Start of term, in order") <= 1, headings
    checklist = README.split("## Start of term, in order", 1)[1].split("\n## ", 1)[0]
    where = [checklist.find(f"{n}. {step}") for n, step in enumerate(STEPS, start=1)]
    assert -1 not in where and where == sorted(where), where


def test_one_section_per_route_and_the_sandbox_internals_on_their_own_page():
    routes = README.split("## Routes:", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"(?m)^### (.+)$", routes)
    assert [r.split(":")[0].split(" (")[0] for r in found] == [
        "GitHub",
        "nbgrader",
        "Gradescope",
        "Classroom 50",
        "Offline",
    ]
    sandbox = (ROOT / "docs" / "sandbox.md").read_text()
    for internal in ("| layer | what it blocks |", "**What stays possible.**", "subreaper"):
        assert internal in sandbox and internal not in README, internal
    assert "docs/sandbox.md" in README


def test_the_two_releases_are_told_apart():
    words = " ".join(README.split())
    assert "This is *our* release" in words and "nbgrader's `release/` folder is another" in words
    assert "(Not `autograder release`, which writes a template repository" in words
