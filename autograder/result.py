"""The canonical result of grading one submission.

Every report (the terminal summary, and each platform's format in ``autograder.platforms``)
is written from a ``Result``; nothing else decides a score.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any


class Outcome(StrEnum):
    """How one test ended. A str, so stored results and comparisons read as plain words; the
    words a person reads for each are in report.py (OUTCOME_WORDS)."""

    PASSED = "passed"
    WRONG = "wrong"
    NOT_ANSWERED = "not-answered"
    RAISED = "raised"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    MISSING = "missing"
    IMPORT = "import"
    INVALID_OUTPUT = "invalid-output"
    ERROR = "error"


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class, though its name starts with "Test"

    id: str  # stable: a question key or a test function name
    name: str  # what a student reads
    part: str  # "part1" or "part2"
    score: float
    max_score: float
    outcome: str  # passed, wrong, not-answered, raised, timeout, crashed, missing, import...
    message: str = ""  # what went wrong in this test: what was checked, expected and got
    checks: str = ""  # the function or question this test is about
    mistakes: list[str] = field(default_factory=list)  # catalogue ids (for instructors)
    cause: str = ""  # the likely cause in one line of plain words, when one is known
    explanation: str = ""  # why that cause is wrong, and a hint; said once per function
    blame: list[str] = field(default_factory=list)  # other functions this failure comes from
    printed: str = ""  # what the student's code printed, capped; shown escaped
    # for the instructor's analyses only (engine/fingerprint.py): a hash of what the student's
    # code gave in a failed test, and the generic error shape that fits, even where a
    # catalogued mistake was named instead
    fingerprint: str = ""
    shape: str = ""
    # the student's functions and methods this test ran ("KVCache.append"), as the worker saw
    # them: ``check`` grades a variant of the reference only on the tests that ran what it changes
    ran: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.outcome == Outcome.PASSED

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TestResult:
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


@dataclass
class Result:
    assignment: str
    submission: str
    tests: list[TestResult] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # whole-submission messages
    # for the instructor only (sandbox strength, machine set-up): never in student-visible text
    instructor_notes: list[str] = field(default_factory=list)
    sandbox: list[str] = field(default_factory=list)  # the isolation layers used
    sandbox_strength: str = ""  # "strong sandbox: ..." or "weak sandbox: ...", with why
    seconds: float = 0.0

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tests), 6)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_score for t in self.tests), 6)

    def part(self, name: str) -> list[TestResult]:
        return [t for t in self.tests if t.part == name]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"score": self.score, "max_score": self.max_score}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """The Result that ``to_dict`` wrote (score and max_score are derived, not read)."""
        known = {f.name for f in fields(cls)} - {"tests"}
        result = cls(**{k: v for k, v in data.items() if k in known})
        result.tests = [TestResult.from_dict(t) for t in data.get("tests", [])]
        return result


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON, atomically."""
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def atomic_write_text(path: Path, text: str) -> None:
    """Write atomically (a temporary file beside it, then renamed), so a reader never sees
    half a file; the folders above are made as needed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:  # a full disk, an interrupt: no half-written temporary left behind
        Path(tmp).unlink(missing_ok=True)
        raise
