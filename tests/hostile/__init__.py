"""A corpus of hostile submissions, one attack per file, and helpers to build submissions.

Each file is a small module that is appended to the reference attention.py: it redefines a
function (usually causal_mask) or does its damage at the top level. Everything else in the
submission is the reference, so what the attack breaks, and only that, should score 0.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autograder.assignment import Assignment
from autograder.sandbox import Sandbox

HERE = Path(__file__).resolve().parent
SLUG = "masks-and-heads"


def attack(name: str) -> str:
    return (HERE / f"{name}.py").read_text()


def submission(folder: Path, name: str | None = None, files: dict[str, str] | None = None) -> Path:
    """The reference submission, with the attack ``name`` appended, plus extra ``files``."""
    assignment = Assignment.load(SLUG)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(assignment.reference / "answers.yaml", folder / "answers.yaml")
    source = assignment.reference_source + ("\n\n" + attack(name) if name else "")
    (folder / assignment.module_file).write_text(source)
    for filename, content in (files or {}).items():
        (folder / filename).write_text(content)
    return folder


def full_sandbox() -> Sandbox:
    box = Sandbox.detect("auto")
    if not box.bwrap:
        pytest.skip("bubblewrap is not usable here: " + "; ".join(box.notes))
    return box


def fallback_sandbox() -> Sandbox:
    return Sandbox.detect("fallback")


def uid_sandbox() -> Sandbox:
    box = Sandbox.detect("fallback")
    if box.uid is None:
        pytest.skip("no dedicated uid here: " + "; ".join(box.notes))
    return box


SANDBOXES = {"full": full_sandbox, "fallback": fallback_sandbox}


def marked(box: Sandbox) -> list[int]:
    """Live processes started by this sandbox (its marker) or running as its uid."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            mine = box.marker.encode() in (entry / "environ").read_bytes()
            if state != b"Z" and (mine or entry.stat().st_uid == box.uid):
                found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found
