"""What a student reads after grading, as text and as Markdown, and what only the instructor reads.

A summary comes first, one line per function (points and the likely cause), then the details
of each failed test, shortest first (Part 1's in question order). A cause is explained once per
function; later tests with the same cause refer back to it in one line. Platform adapters call
the renderers here:

- ``student_text(result)``: the student's feedback as plain text (a terminal, nbgrader, a log);
- ``student_markdown(result)``: the same as Markdown, details folded under ``<details>`` (the
  job summary, nbgrader feedback, Gradescope's ``md`` output);
- ``test_texts(result)``: each test's feedback alone (per-test output boxes), a cause
  explained once per function;
- ``instructor_text(result)``: the instructor-only notes (sandbox strength, machine set-up),
  for stderr or a batch report; never part of what a student sees;
- ``summary(result)``: the instructor's whole terminal view, the two above together.

Anything that came from the student (messages quoting their values, what their code printed,
notices quoting their sheet) goes through the rule of its format in
``autograder.standalone.escape``: a line like ``::notice::Points 100/100`` never reaches a CI
runner raw, every line of a notice keeps its ``! `` prefix, and in Markdown student text sits
in fenced blocks or ``<pre>``, never where it could render as an element.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from autograder.result import Outcome, Result, TestResult
from autograder.standalone import escape
from autograder.standalone.escape import plain as neutralise
from autograder.text import listed

PART1 = "Part 1 (answers.yaml)"
INDENT = "    "

# the likely cause of a failure that carries none, from its outcome
OUTCOME_CAUSES = {
    "timeout": "it takes too long (an endless loop?)",
    "crashed": "it crashes Python",
    "missing": "it is missing from your file",
    "import": "your file could not be imported",
    "raised": "it raises an error",
    "invalid-output": "it returns something the tests cannot use",
    "wrong": "",
}


def points(value: float) -> str:
    return f"{value:g}"


def cause_of(test: TestResult) -> str:
    """One test's likely cause in plain words ('' when unknown)."""
    if test.cause:
        return test.cause
    if "is not implemented yet" in test.message:
        return "it is not implemented yet"
    return OUTCOME_CAUSES.get(test.outcome, "")


@dataclass
class Section:
    """The tests of one function (or Part 1), with what the summary line says about them."""

    title: str
    tests: list[TestResult]
    cause: str = ""

    @property
    def earned(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def total(self) -> float:
        return sum(t.max_score for t in self.tests)

    @property
    def said(self) -> str:
        """What the summary says about this section, after its points."""
        if self.earned == self.total:
            return "all correct"
        if self.title == PART1:
            return f"{len(self.failed)} of {len(self.tests)} questions to look at again"
        return self.cause or "see the details"

    @property
    def failed(self) -> list[TestResult]:
        """Failed tests: Part 1's in question order (a student reads them beside the sheet),
        a function's shortest feedback first."""
        failed = [t for t in self.tests if not t.passed]
        if self.title == PART1:
            return failed
        return sorted(failed, key=lambda t: len(t.message))


def sections(result: Result) -> list[Section]:
    """Part 1, then each checked function in the order of its first test."""
    found: list[Section] = []
    if result.part("part1"):
        found.append(Section(PART1, result.part("part1")))
    by_function: dict[str, list[TestResult]] = {}
    for test in result.part("part2"):
        by_function.setdefault(test.checks or "other tests", []).append(test)
    failing = {f for f, tests in by_function.items() if any(not t.passed for t in tests)}
    for function, tests in by_function.items():
        found.append(Section(function, tests, likely_cause(tests, failing)))
    return found


def detailed(result: Result) -> list[Section]:
    """The sections whose failures need details: not those only a notice explains (a file
    that could not be imported fails every test the same way)."""
    return [s for s in sections(result) if any(t.outcome != "import" for t in s.failed)]


def likely_cause(tests: list[TestResult], failing: set[str]) -> str:
    """The cause most failed tests of one function share; a failure that comes from another
    function points there."""
    causes = Counter(cause_of(t) for t in tests if not t.passed and cause_of(t))
    if not causes:
        return ""
    cause = causes.most_common(1)[0][0]
    blamed = next((t.blame for t in tests if t.cause == cause and t.blame), [])
    if blamed and all(b in failing for b in blamed):
        which = "fail their" if len(blamed) > 1 else "fails its"
        return f"it uses your {listed(blamed)}, which {which} own tests: fix that first"
    return cause


def summary_lines(result: Result) -> list[str]:
    found = sections(result)
    width = max((len(s.title) for s in found), default=0)
    score_width = max((len(f"{points(s.earned)}/{points(s.total)}") for s in found), default=0)
    lines = []
    for s in found:
        score = f"{points(s.earned)}/{points(s.total)}"
        said = (
            s.said
            if s.earned == s.total or s.title == PART1 or not s.cause
            else f"likely cause: {s.cause}"
        )
        lines.append(neutralise(f"  {s.title:<{width}}  {score:>{score_width}}  {said}"))
    return lines


def details(section: Section) -> list[str]:
    """Each failed test of one section, on one screen: the first shows its numbers in full;
    a later one says in one line how it differs, and one that fails the same way (see
    ``same_as``) refers back to the first in one line."""
    lines = []
    said: set[tuple[str, str]] = set()
    printed = numbers = False
    for test in section.failed:
        head = f"  [FAIL] {points(test.score)}/{points(test.max_score)} {short_name(test)}"
        key = same_as(test)
        if key in said:
            lines.append(neutralise(f"{head}: same cause as above."))
            continue
        said.add(key)
        lines.append(neutralise(head))
        body = test_lines(test, brief=numbers, printed=not printed)
        printed = printed or bool(test.printed)
        numbers = numbers or len(test.message.splitlines()) > 1
        lines += [INDENT + line for line in body]
    return lines


def same_as(test: TestResult) -> tuple[str, str]:
    """What two failed tests must share to be 'the same cause': a diagnosed cause, or else
    the same error (type and message), never only the outcome ('it raises an error')."""
    if test.cause:
        return "cause", test.cause
    if test.outcome != "wrong":
        return "error", test.message
    return "test", test.id


def short_name(test: TestResult) -> str:
    """The test's name without the function it checks, which the section already says."""
    prefix = f"{test.checks}: "
    return test.name[len(prefix) :] if test.checks and test.name.startswith(prefix) else test.name


def test_lines(
    test: TestResult, explained: bool = False, brief: bool = False, printed: bool = True
) -> list[str]:
    """One failed test's feedback, escaped: what went wrong, the likely cause and why (unless
    ``explained`` already, on an earlier test of the same function). ``brief`` keeps only the
    first line of what went wrong, the numbers having been shown on an earlier test;
    ``printed`` shows what the student's code printed."""
    lines = test.message.splitlines()[: 1 if brief else None]
    if test.cause:
        lines.append(f"Likely cause: {sentence(test.cause)}")
    if explained and test.explanation:
        lines.append("(Explained on the first test of this function that it fails.)")
    else:
        lines += test.explanation.splitlines()
    if test.printed and printed:
        lines.append("your code printed:")
        lines += ["| " + m for m in test.printed.splitlines()[:PRINTED_LINES]]
    return [neutralise(line) for line in lines]


PRINTED_LINES = 5  # of what the student's code printed, once per function


def sentence(text: str) -> str:
    return text if text.endswith((".", "?", "!")) else text + "."


def test_texts(result: Result) -> list[str]:
    """Each test's feedback alone, for a platform that shows each test in its own box: a
    cause is explained on the first failed test of a function, and only named on the next."""
    seen: set[tuple[str, str]] = set()
    texts = []
    for test in result.tests:
        key = (test.checks, test.cause)
        texts.append(test_text(test, explained=key in seen))
        if not test.passed and test.cause:
            seen.add(key)
    return texts


def test_text(test: TestResult, explained: bool = False) -> str:
    """One test's feedback alone."""
    if test.passed:
        return "Passed."
    return "\n".join(test_lines(test, explained))


def student_text(result: Result) -> str:
    """The student's feedback as plain text: summary first, then the details."""
    out = [neutralise(f"{result.assignment}: {points(result.score)}/{points(result.max_score)}")]
    out += notice_lines(result.notices)
    out += ["", "Summary:", *summary_lines(result)]
    for section in detailed(result):
        if section.failed:
            score = f"{points(section.earned)}/{points(section.total)}"
            out += ["", neutralise(f"{section.title}: {score}"), *details(section)]
    out += ["", f"Total: {points(result.score)}/{points(result.max_score)}"]
    return "\n".join(out)


def notice_lines(notices: list[str]) -> list[str]:
    """Whole-submission notices, every line of each behind ``! `` (a student's text in one
    can never reach column 0)."""
    return [line for n in notices for line in escape.prefixed("! ", n)]


def student_markdown(result: Result) -> str:
    """The student's feedback as Markdown: a summary table, each function's details folded.
    Notices (which quote the student) are one fenced block; details sit in ``<pre>`` blocks,
    HTML-escaped; our own words in the table are backslash-escaped."""
    score = f"{points(result.score)}/{points(result.max_score)}"
    out = [f"### {escape.markdown_text(result.assignment)}: {score}", ""]
    if result.notices:
        out += [escape.fenced("\n".join(notice_lines(result.notices))), ""]
    out += ["| | points | likely cause |", "|---|---|---|"]
    for s in sections(result):
        title = escape.markdown_text(s.title)
        title = title if s.title == PART1 else escape.code_span(s.title, in_table=True)
        said = escape.markdown_text(s.said)
        out.append(f"| {title} | {points(s.earned)}/{points(s.total)} | {said} |")
    for section in detailed(result):
        if section.failed:
            heading = f"{section.title}: {points(section.earned)}/{points(section.total)}"
            out += ["", f"<details><summary>{escape.html_text(heading)}</summary>", "", "<pre>"]
            out += [escape.html_text(line) for line in details(section)]
            out += ["</pre>", "</details>"]
    return "\n".join(out) + "\n"


def instructor_text(result: Result) -> str:
    """What only the instructor reads: sandbox strength, machine set-up, timing."""
    lines = [f"note: {neutralise(n)}" for n in result.instructor_notes]
    lines.append(f"(sandbox: {', '.join(result.sandbox)}; {result.seconds:.1f} s)")
    return "\n".join(lines)


def summary(result: Result) -> str:
    """The instructor's terminal view: the student's feedback, then the instructor's notes."""
    return student_text(result) + "\n" + instructor_text(result)


# -- the commit comment (workflows/publish.py posts it) ----------------------------------------

# The one outcome-to-words table: what each Outcome reads as, for a student.
OUTCOME_WORDS = {
    Outcome.PASSED: "passed",
    Outcome.WRONG: "wrong result",
    Outcome.RAISED: "raised an error",
    Outcome.TIMEOUT: "timed out",
    Outcome.CRASHED: "crashed",
    Outcome.IMPORT: "could not be imported",
    Outcome.MISSING: "function missing",
    Outcome.INVALID_OUTPUT: "returned something unusable",
    Outcome.NOT_ANSWERED: "not answered",
    Outcome.ERROR: "could not be graded",
}


DEADLINE_LEAD = (
    "Graded commit `{sha}`, collected at the deadline. This is the grade "
    "that counts; the checks in your own repository were practice."
)
LATE_LEAD = (
    "Graded commit `{sha}`, collected after your deadline (the late policy below applies). "
    "This is the grade that counts; the checks in your own repository were practice."
)


def commit_comment(
    result: Result, sha: str, hints: dict[str, str], lead: str = DEADLINE_LEAD, title: str = ""
) -> str:
    """The Markdown a student reads under their graded commit: points per part and per test,
    the outcome in words, and the names and hints of the known mistakes diagnosed. Never the
    failure messages (they quote expected values), never a "why" meant for the instructor.
    ``lead`` says what this result is ({sha} is the short commit); ``title`` prefixes the
    heading (e.g. "Formative feedback")."""
    assignment = escape.markdown_text(result.assignment or "Assignment")
    heading = f"{assignment}: {result.score:g}/{result.max_score:g} points"
    lines = [
        f"## {title}: {heading}" if title else f"## {heading}",
        "",
        lead.format(sha=sha[:12]),
        "",
        "| part | test | points | result |",
        "|---|---|---|---|",
    ]
    for test in result.tests:
        outcome = OUTCOME_WORDS.get(Outcome(test.outcome), test.outcome)
        name = escape.markdown_text(test.name)
        lines.append(f"| {test.part} | {name} | {test.score:g}/{test.max_score:g} | {outcome} |")
    found = sorted({m for t in result.tests for m in t.mistakes})
    if found:
        lines += ["", "**What went wrong, we think:**", ""]
        lines += [
            f"- {escape.code_span(name)}: {escape.markdown_text(hints.get(name, ''))}".rstrip(": ")
            for name in found
        ]
    return "\n".join(lines) + "\n"
