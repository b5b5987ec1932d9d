"""A class of a dozen mixed submissions, graded once per test session and shared.

Correct, wrong (known mistakes, a wrong quiz answer, the starter) and hostile (from
tests/hostile/), with ids chosen so that shard and sort orders are not the same.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from hostile import SLUG, submission

from autograder.course.assignment import Assignment
from autograder.engine.mistakes import load_catalogue
from autograder.workflows import batch

HOSTILE = {
    "gus": "exit_at_import",
    "hal": "lying_eq",
    "ivy": "os_exit_in_function",
    "jo": "patch_numpy",
    "Kim": "segfault",
    "lu": "fake_output",
}
MISTAKES = {"cy": "mask-after-softmax", "dee": "mask-after-softmax", "eve": "mask-after-softmax"}
MISTAKES["fay"] = "split-without-transpose"


def mistake_source(name: str) -> str:
    assignment = Assignment.load(SLUG)
    catalogue = load_catalogue(assignment.suite / "mistakes.py")
    variant = next(v for v in catalogue.mistakes if v.name == name)
    return variant.source(assignment.reference_source)


def build(folder: Path) -> Path:
    """Write the dozen into ``folder`` (one sub-folder per student); return ``folder``."""
    assignment = Assignment.load(SLUG)
    submission(folder / "ada")
    shutil.copytree(assignment.starter, folder / "bo")
    for student, mistake in MISTAKES.items():
        submission(folder / student, files={assignment.module_file: mistake_source(mistake)})
    sheet = (folder / "dee" / "answers.yaml").read_text()
    (folder / "dee" / "answers.yaml").write_text(sheet.replace("head_width: 4", "head_width: 8"))
    for student, attack in HOSTILE.items():
        submission(folder / student, attack)
    return folder


def patient() -> Assignment:
    """The assignment with a long per-call timeout. On a loaded machine a fresh worker can need
    more than the suite's 5 s to import numpy; these tests compare gradings with each other,
    not the time bound (tests/test_hostile.py tests that). None of the dozen hangs."""
    return dataclasses.replace(Assignment.load(SLUG), timeout=30)


_cache: dict[str, Path] = {}


def graded(tmp_path_factory) -> tuple[Path, Path]:
    """(the class folder, the batch output folder), graded once per session."""
    if not _cache:
        root = tmp_path_factory.mktemp("dozen")
        _cache["class"] = build(root / "class")
        _cache["out"] = root / "out"
        batch.grade_batch(patient(), _cache["class"], _cache["out"], jobs=2)
    return _cache["class"], _cache["out"]
