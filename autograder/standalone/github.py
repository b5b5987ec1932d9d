"""GitHub Actions formats: the runner result the reporter reads, the job summary, step outputs.

- The runner result is what a grader step of GitHub Classroom's workflows writes as its
  ``result`` output: base64 of ``{"version": 1, "status", "max_score", "tests": [...]}``.
  ``classroom-resources/autograding-grading-reporter@v1`` reads it from ``<ID>_RESULTS`` and
  prints ``Points <sum of tests[].score>/<sum of max_score>``. It prints a test's ``message``
  only for status ``error``, so feedback goes to the job summary instead.
- The job summary is Markdown appended to ``$GITHUB_STEP_SUMMARY``, shown on the run's page.

Standard library only, and no import from this package: the file is copied verbatim into each
student template, where the practice checks use it. A "test" here is anything with ``name``,
``score``, ``max_score``, ``passed`` and ``message`` (a ``TestResult``, or a practice check).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets
import sys
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, TextIO


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


def neutralise(text: str) -> str:
    """Defuse GitHub workflow commands (``::name ...::``, ``##[name]``) and control characters.

    No ``::`` or ``##[`` survives, so no line of the result can start a command, however it
    is indented; carriage returns and other control characters become ``?``. (Stdlib only:
    the student template carries this module; the engine's report uses it too.)"""
    text = "".join(c if c.isprintable() or c in "\n\t" else "?" for c in text)
    while "::" in text or "##[" in text:
        text = text.replace("::", ": :").replace("##[", "# #[")
    return text


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
                "name": neutralise(t.name),  # the reporter prints names raw into the log
                "status": "pass" if t.passed else "fail",
                "score": number(t.score),
                "message": neutralise(t.message),
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


def fenced(text: str) -> str:
    """A Markdown code block that no backtick run inside ``text`` can close early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{neutralise(text)}\n{fence}"


def cell(text: str) -> str:
    """One Markdown table cell: no line breaks, pipes or HTML from student-derived text."""
    text = neutralise(" ".join(text.split()))
    for raw, safe in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        text = text.replace(raw, safe)
    return text


def job_summary(
    title: str, tests: Sequence[Test], intro: str = "", notices: Sequence[str] = ()
) -> str:
    """Markdown for the run's page: a table of checks, then what went wrong in each failure."""
    earned = number(sum(t.score for t in tests))
    total = number(sum(t.max_score for t in tests))
    out = [f"## {cell(title)}: {earned}/{total}", ""]
    if intro:
        out += [intro, ""]
    out += [f"> {cell(n)}" for n in notices]
    if notices:
        out.append("")
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
        out += [f"**{cell(t.name)}**", "", fenced(t.message), ""]
    return out


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
