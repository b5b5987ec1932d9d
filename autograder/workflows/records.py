"""What grade-batch stores for each student, and what merge, the report and publish read back.

``<out>/<student>/results.json`` holds the batch's facts about the submission (login, commit,
status, content hash, grader version, notes) beside the canonical ``Result`` (``to_dict``),
or, where there is no grade, why. Only the Gradescope adapter knows Gradescope's schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.course.assignment import Assignment
from autograder.errors import UsageError
from autograder.platforms.record import handed_in_files
from autograder.result import Result, TestResult, write_json

RESULTS = "results.json"
# In a folder of formative results (workflows/formative.py): they never count as the grade,
# so publish and merge refuse such a folder.
FORMATIVE_MARKER = ".formative"
FORMAT = "autograder-record/1"
# status: graded, or why there is no grade (collect's missing, empty, failed; the grader's own
# suite-error, grader-error)
DONE = ("graded", "missing", "empty", "failed")


@dataclass
class Record:
    student: str
    status: str
    sha: str = ""
    content_hash: str = ""
    grader_version: str = ""
    notes: list[str] = field(default_factory=list)
    result: Result | None = None  # None: not graded (see failure)
    failure: str = ""  # why there is no result, for the student
    # the graded code, file name -> text (capped), for the instructor's analyses of the class
    # (workflows/clusters.py, workflows/similarity.py); stored here so merged shards keep it
    code: dict[str, str] = field(default_factory=dict)

    @property
    def graded(self) -> bool:
        return self.status == "graded" and self.result is not None

    @property
    def tests(self) -> list[TestResult]:
        return self.result.tests if self.result else []

    @property
    def score(self) -> float:
        return self.result.score if self.result else 0.0

    @property
    def max_score(self) -> float:
        return self.result.max_score if self.result else 0.0

    def to_dict(self) -> dict[str, Any]:
        batch = {
            "student": self.student,
            "status": self.status,
            "sha": self.sha,
            "content_hash": self.content_hash,
            "grader_version": self.grader_version,
            "notes": self.notes,
        }
        result = self.result.to_dict() if self.result else None
        return {
            "format": FORMAT,
            "batch": batch,
            "result": result,
            "failure": self.failure,
            "code": self.code,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        batch, result = data["batch"], data.get("result")
        return cls(
            student=str(batch["student"]),
            status=str(batch["status"]),
            sha=str(batch.get("sha", "")),
            content_hash=str(batch.get("content_hash", "")),
            grader_version=str(batch.get("grader_version", "")),
            notes=list(batch.get("notes", [])),
            result=Result.from_dict(result) if result else None,
            failure=str(data.get("failure", "")),
            code={str(k): str(v) for k, v in (data.get("code") or {}).items()},
        )

    def write(self, out: Path) -> None:
        write_json(Path(out) / self.student / RESULTS, self.to_dict())


CODE_CAP = 256 * 1024  # characters kept of one graded file


def graded_code(assignment: Assignment, submission: Path | None) -> dict[str, str]:
    """The code files that grading saw (for a notebook, those its answer cells stand for),
    each capped; unreadable ones are left out. Read as text only, never run."""
    code: dict[str, str] = {}
    if submission is None:
        return code
    try:
        with handed_in_files(assignment, Path(submission)) as files:
            for name in assignment.code_files:
                path = files / name
                if path.is_file() and not path.is_symlink():
                    code[name] = path.read_text(errors="replace")[:CODE_CAP]
    except (OSError, ValueError, UsageError):
        return code
    return code


def load_record(out: Path, student: str) -> Record | None:
    """The stored record, or None where there is none (or it is not one of ours)."""
    try:
        data = json.loads((Path(out) / student / RESULTS).read_text())
        return Record.from_dict(data) if data.get("format") == FORMAT else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def refuse_formative(out: Path) -> None:
    if (Path(out) / FORMATIVE_MARKER).exists():
        raise UsageError(
            f"{out} holds formative results, which never count as the grade: collect at the "
            "deadline and grade that (autograder collect, then grade-batch)"
        )
