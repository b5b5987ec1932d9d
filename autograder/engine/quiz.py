"""Part 1: grade a student's answers.yaml against the quiz key.

Reading the sheet and the question types live in ``autograder.standalone.sheet``, which
never sees the
key on its own; this module brings the two together into results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autograder.result import TestResult
from autograder.standalone.sheet import (
    NOT_ANSWERED,
    Verdict,
    question,
    questions,
    read_sheet,
    unknown_keys,
)

__all__ = ["Verdict", "grade", "judge"]


def judge(spec: dict[str, Any], given: Any) -> Verdict:
    """Grade one answer against one key entry."""
    return question(spec).judge(given)


def grade(key: dict[str, Any], path: Path) -> tuple[list[TestResult], list[str]]:
    sheet = read_sheet(path)
    asked = questions(key)
    unknown = sorted(set(sheet.answers) - {q.id for q in asked})
    if unknown:
        sheet.problems.append(unknown_keys(path.name, unknown))
    results = []
    for number, q in enumerate(asked, start=1):
        verdict = q.judge(sheet.answers.get(q.id))
        if verdict.fraction == 1:
            outcome = "passed"
        else:
            outcome = "not-answered" if verdict.message == NOT_ANSWERED else "wrong"
        results.append(
            TestResult(
                id=q.id,
                name=f"Q{number}. {q.title or q.ask.splitlines()[0]}",
                part="part1",
                score=round(verdict.fraction * q.points, 6),
                max_score=q.points,
                outcome=outcome,
                message=verdict.message,
                checks=q.id,
            )
        )
    return results, sheet.problems
