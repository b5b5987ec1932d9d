"""The readable summary printed after grading.

Anything that came from the student (messages quoting their values, what their code printed)
is escaped first, so a line like ``::notice::Points 100/100`` can never reach a CI runner raw.
"""

from __future__ import annotations

from autograder.result import Result, TestResult

PART_TITLES = {"part1": "Part 1: by hand (answers.yaml)", "part2": "Part 2: code"}


def neutralise(text: str) -> str:
    """Defuse GitHub workflow commands (``::name ...::``, ``##[name]``) and control characters.

    No ``::`` or ``##[`` survives, so no line of the result can start a command, however it
    is indented; carriage returns and other control characters become ``?``."""
    text = "".join(c if c.isprintable() or c in "\n\t" else "?" for c in text)
    while "::" in text or "##[" in text:
        text = text.replace("::", ": :").replace("##[", "# #[")
    return text


def points(value: float) -> str:
    return f"{value:g}"


def line(test: TestResult) -> list[str]:
    mark = "PASS" if test.passed else "FAIL"
    head = f"  [{mark}] {points(test.score):>4}/{points(test.max_score):<3} {test.name}"
    out = [neutralise(head)]
    if not test.passed and test.message:
        out += ["         " + neutralise(m) for m in test.message.splitlines()]
    if test.printed:
        out.append("         your code printed:")
        out += ["         | " + neutralise(m) for m in test.printed.splitlines()[:10]]
    return out


def summary(result: Result) -> str:
    out = [neutralise(f"{result.assignment}: grading {result.submission}")]
    out += [f"! {neutralise(n)}" for n in result.notices]
    for part, title in PART_TITLES.items():
        tests = result.part(part)
        if not tests:
            continue
        earned = sum(t.score for t in tests)
        total = sum(t.max_score for t in tests)
        out += ["", f"{title}: {points(earned)}/{points(total)}"]
        for test in tests:
            out += line(test)
    out += [
        "",
        f"Total: {points(result.score)}/{points(result.max_score)}",
        f"(sandbox: {', '.join(result.sandbox)}; {result.seconds:.1f} s)",
        f"({neutralise(result.sandbox_strength or 'sandbox strength not recorded')})",
    ]
    return "\n".join(out)
