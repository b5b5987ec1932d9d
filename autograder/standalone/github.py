"""GitHub Actions formats: the runner result the reporter reads, the job summary, step outputs.

- The runner result is what a grader step of GitHub Classroom's workflows writes as its
  ``result`` output: base64 of ``{"version": 1, "status", "max_score", "tests": [...]}``.
  ``classroom-resources/autograding-grading-reporter@v1`` reads it from ``<ID>_RESULTS`` and
  prints ``Points <sum of tests[].score>/<sum of max_score>``. It prints a test's ``message``
  only for status ``error``, so feedback goes to the job summary instead.
- The job summary is Markdown appended to ``$GITHUB_STEP_SUMMARY``, shown on the run's page.

Standard library only, and no import from this package but ``escape`` (the one rule per
format for student text): both files are copied verbatim into each student template, where
the practice checks use them. A "test" here is anything with ``name``,
``score``, ``max_score``, ``passed`` and ``message`` (a ``TestResult``, or a practice check).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import sys
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, TextIO

try:  # in the package
    from . import escape
except ImportError:  # copied into a template: escape.py sits beside this file
    import escape  # type: ignore[no-redef]


class Item(Protocol):  # a check that passes or fails, with no points (a practice check)
    @property
    def name(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def passed(self) -> bool: ...


class Test(Item, Protocol):  # read-only, so a dataclass field and a property both fit
    @property
    def score(self) -> float: ...
    @property
    def max_score(self) -> float: ...


def number(value: float) -> float | int:
    """Whole numbers as integers, so the reporter prints ``Points 5/12``, not ``5.0/12``."""
    return int(value) if float(value).is_integer() else round(value, 6)


def runner_result(tests: Sequence[Test], line_numbers: Sequence[int] = ()) -> dict[str, Any]:
    """The reporter's input: its ``Points`` line is the sum of these scores over max_score."""
    lines = list(line_numbers) + [0] * (len(tests) - len(line_numbers))
    return {
        "version": 1,
        "status": "pass" if all(t.passed for t in tests) else "fail",
        "max_score": number(sum(t.max_score for t in tests)),
        "tests": [
            {
                "name": escape.plain(t.name),  # the reporter prints names raw into the log
                "status": "pass" if t.passed else "fail",
                "score": number(t.score),
                "message": escape.plain(t.message),
                "line_no": line,
                "test_code": "",
                "filename": "",
                "duration": 0,
            }
            for t, line in zip(tests, lines, strict=True)
        ],
    }


def encode(result: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(result).encode()).decode()


def job_summary(
    title: str, tests: Sequence[Test], intro: str = "", notices: Sequence[str] = ()
) -> str:
    """Markdown for the run's page: a table of checks, then what went wrong in each failure."""
    earned = number(sum(t.score for t in tests))
    total = number(sum(t.max_score for t in tests))
    out = [f"## {escape.markdown_text(title)}: {earned}/{total}", ""]
    if intro:
        out += [intro, ""]
    if notices:  # student text (a sheet's keys, an error message): shown as text
        lines = [line for n in notices for line in escape.prefixed("! ", n)]
        out += [escape.fenced("\n".join(lines)), ""]
    out += ["| | check | points |", "|---|---|---|"]
    for t in tests:
        mark = "✅" if t.passed else "❌"
        out.append(f"| {mark} | {cell(t.name)} | {number(t.score)}/{number(t.max_score)} |")
    out += what_to_fix(tests)
    return "\n".join(out).rstrip() + "\n"


def checklist_summary(heading: str, items: Sequence[Item], *notes: str) -> str:
    """Markdown for a run of checks that carry no points: ``heading``, the notes, a table of
    passed and failed, then what went wrong in each failure. No x/y anywhere."""
    out = [f"## {cell(heading)}", ""]
    for note in notes:
        out += [note, ""]
    out += ["| | check |", "|---|---|"]
    out += [f"| {'✅' if t.passed else '❌'} | {cell(t.name)} |" for t in items]
    out += what_to_fix(items)
    return "\n".join(out).rstrip() + "\n"


def what_to_fix(items: Sequence[Item]) -> list[str]:
    failed = [t for t in items if not t.passed and t.message]
    out = ["", "### What to fix", ""] if failed else []
    for t in failed:
        out += [f"**{cell(t.name)}**", "", escape.fenced(t.message), ""]
    return out


def cell(text: str) -> str:
    """Our text or a student's, inert in a Markdown table cell."""
    return escape.markdown_text(text)


def set_output(name: str, value: str) -> bool:
    """Append ``name=value`` to $GITHUB_OUTPUT; False when not running in Actions."""
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        return False
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{name}={value}\n")
    return True


def append_summary(markdown: str) -> bool:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    with open(path, "a", encoding="utf-8") as f:
        f.write(markdown)
    return True


@contextlib.contextmanager
def commands_stopped(stream: TextIO = sys.stdout) -> Iterator[None]:
    """Switch workflow-command parsing off while printing text that came from students.

    Outside Actions this prints nothing extra. Inside, the token is random per run, so text
    printed in between cannot switch parsing back on."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        yield
        return
    token = secrets.token_hex(16)
    print(f"::stop-commands::{token}", file=stream, flush=True)
    try:
        yield
    finally:
        print(f"::{token}::", file=stream, flush=True)
