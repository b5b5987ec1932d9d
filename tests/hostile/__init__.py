"""A corpus of hostile submissions, one attack per file, and helpers to build submissions.

Each file is a small module that is appended to the reference attention.py: it redefines a
function (usually causal_mask) or does its damage at the top level. Everything else in the
submission is the reference, so what the attack breaks, and only that, should score 0.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from autograder.course.assignment import Assignment
from autograder.sandbox import runtime
from autograder.sandbox.layers import Sandbox, helper_pids

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


def landlock_sandbox() -> Sandbox:
    """Bubblewrap hidden: what a GitHub ubuntu-24.04 runner or a fresh Debian machine gets."""
    box = Sandbox.detect("landlock")
    if not box.landlock_abi:
        pytest.skip("Landlock is not available here: " + "; ".join(box.notes))
    return box


def fallback_sandbox() -> Sandbox:
    return Sandbox.detect("fallback")


@functools.cache
def uid_runtime() -> Path | None:
    """As root, a runtime the sandbox uid can read (``autograder sandbox runtime``), copied
    once per test process into a 0755 folder under /var/tmp, since this machine's Python may
    live under the 0700 /root; about 1.5 s (5 s on a loaded machine), so it is shared."""
    if os.geteuid() != 0:
        return None
    folder = Path(tempfile.mkdtemp(prefix="autograder-runtime-", dir="/var/tmp"))
    os.chmod(folder, 0o755)
    atexit.register(shutil.rmtree, folder, True)
    return runtime.install(folder / "runtime").folder


def uid_sandbox(mode: str = "fallback") -> Sandbox:
    """The sandbox with the dedicated uid, running the copied runtime."""
    if os.geteuid() != 0:
        pytest.skip("the dedicated uid is for a grader running as root")
    box = Sandbox.detect(mode, runtime=uid_runtime())
    if box.uid is None:
        pytest.skip("no dedicated uid here: " + "; ".join(box.notes))
    return box


SANDBOXES = {"full": full_sandbox, "landlock": landlock_sandbox, "fallback": fallback_sandbox}
STRONG = ("full", "landlock")


_EARLIER: set[int] = set()  # this process's descendants before the current test


def forget_earlier_processes() -> None:
    """Called as a test starts: helpers that other tests left running (multiprocessing's
    resource tracker, a kernel) are not this test's leftovers."""
    _EARLIER.clear()
    _EARLIER.update(_descendants())


def _descendants() -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo += children.get(pid, [])
    return found


def leftovers(box: Sandbox) -> list[int]:
    """Live descendants of this (grading) process started during this test, other than its
    helpers, and live processes of the sandbox uid: found independently of the reaper's own
    bookkeeping."""
    alive, owner = set(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            owner[int(entry.name)] = entry.stat().st_uid
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            alive.add(int(entry.name))
    found = _descendants() - _EARLIER - helper_pids()
    found |= {pid for pid, uid in owner.items() if box.uid is not None and uid == box.uid}
    return sorted(found & alive)


ZEROS = """
import numpy as np


def causal_mask(n):
    return np.zeros((n, n), dtype=bool)
"""


def twin_submission(folder: Path, name: str | None, params: dict) -> Path:
    """An honest submission whose causal_mask returns zeros, with an escape attempt appended:
    the attack returns the right mask only if it escaped, so any escape changes the value."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "attention.py").write_text(ZEROS + ("\n\n" + attack(name) if name else ""))
    (folder / "params.json").write_text(json.dumps(params))
    return folder
