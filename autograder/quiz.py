"""Part 1: read a student's answers.yaml safely and grade it against the quiz key.

Answers are read in the trusted process, so the reader is strict: a size limit, UTF-8 text
only, no anchors or aliases, shallow nesting, and PyYAML's safe loader (no Python tags).
A sheet that does not parse is read question by question, so one typo costs one question.
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from autograder.result import TestResult

MAX_BYTES = 64 * 1024
MAX_DEPTH = 4
NOT_ANSWERED = "not answered"
TOP_LEVEL_KINDS = {
    list: "a list",
    int: "a number",
    float: "a number",
    str: "text",
    bool: "a yes/no",
}


class SheetError(ValueError):
    """An answers.yaml problem, phrased for the student."""


# -- reading --------------------------------------------------------------------------------------


def read_sheet(path: Path) -> tuple[dict[str, Any], list[str]]:
    """Return the answers that could be read, and the problems found (with line numbers)."""
    name = path.name
    if not os.path.lexists(path):
        return {}, [f"{name} was not found in the submission: Part 1 scores 0."]
    not_plain = f"{name} is a link or not a plain file; it was not read: Part 1 scores 0."
    try:  # never follow a link: it could point at a grader's file, a FIFO or /dev/zero
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}, [not_plain]
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}, [not_plain]
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        return {}, [f"{name} is larger than {MAX_BYTES // 1024} KiB; it was not read."]
    if b"\x00" in raw:
        return {}, [f"{name} is not a text file (it contains NUL bytes); it was not read."]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return {}, [f"{name} is not valid UTF-8 text (byte {error.start}); it was not read."]
    try:
        return parse(text, name), []
    except SheetError as whole:
        answers, problems = {}, [str(whole)]
        for first_line, chunk in top_level_chunks(text):
            try:
                answers.update(parse(chunk, name, first_line))
            except SheetError:
                continue
        if answers:
            problems.append(f"The other answers in {name} were read one by one and graded.")
        return answers, problems


def parse(text: str, name: str, first_line: int = 1) -> dict[str, Any]:
    def where(mark: Any) -> str:
        return f"{name}, line {mark.line + first_line}" if mark else name

    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise SheetError(
                    f"{where(event.start_mark)}: anchors and aliases (& and *) "
                    "are not allowed in answers."
                )
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise SheetError(f"{where(event.start_mark)}: nested too deeply.")
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                depth -= 1
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        problem = (error.problem or error.context or "invalid YAML").strip()
        if "constructor" in problem:
            problem = "only plain values are allowed (no !!python or other tags)"
        raise SheetError(f"{where(error.problem_mark)}: {problem}.") from None
    except yaml.YAMLError as error:
        raise SheetError(f"{name}: invalid YAML ({error}).") from None
    except RecursionError:
        raise SheetError(f"{name}: nested too deeply.") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        kind = TOP_LEVEL_KINDS.get(type(data), "something else")
        raise SheetError(f"{name} must be made of `key: answer` lines; its top level is {kind}.")
    return {str(k): v for k, v in data.items()}


def top_level_chunks(text: str) -> list[tuple[int, str]]:
    """Split a sheet into its top-level `key:` blocks, each with the line it starts on."""
    chunks: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(r"[A-Za-z_][\w-]*\s*:", line):
            chunks.append((number, [line]))
        elif chunks and (line.startswith((" ", "\t", "#")) or not line.strip()):
            chunks[-1][1].append(line)
    return [(n, "\n".join(lines)) for n, lines in chunks]


# -- answer forms ---------------------------------------------------------------------------------


def as_number(value: Any) -> float | None:
    """4, 4.0, "4", "2/3", "1e-3"; not booleans."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace("−", "-").replace("_", "").replace(",", "")
        try:
            return float(Fraction(text)) if "/" in text else float(text)
        except (ValueError, ZeroDivisionError):
            return None
    return None


def as_vector(value: Any) -> list[float | None] | None:
    if isinstance(value, str):
        value = [v for v in re.split(r"[,\s;]+", value.strip().strip("[]()")) if v]
    if not isinstance(value, list | tuple):
        return None
    return [as_number(v) for v in value]


def as_choice(value: Any, options: dict[str, str]) -> str | None:
    """A letter ("B", "b") or the option's words ("No", "no"), or a YAML boolean for yes/no."""
    if isinstance(value, bool):
        value = "yes" if value else "no"
    if not isinstance(value, str | int):
        return None
    text = str(value).strip().rstrip(".").lower()
    for letter, label in options.items():
        if text in (letter.lower(), str(label).lower(), f"{letter} {label}".lower()):
            return letter
    return None


# -- grading --------------------------------------------------------------------------------------


@dataclass
class Verdict:
    fraction: float  # 0..1 of the question's points
    message: str


def judge(spec: dict, given: Any) -> Verdict:
    """Grade one answer against one key entry."""
    if given is None or given == "":
        return Verdict(0.0, NOT_ANSWERED)
    kind, idea = spec["type"], spec.get("idea", "")
    tolerance = float(spec.get("tolerance", 1e-9))
    if kind == "number":
        x = as_number(given)
        if x is None:
            return Verdict(0.0, f"could not read {given!r} as a number.")
        ok = math.isclose(x, float(spec["answer"]), rel_tol=0, abs_tol=tolerance)
    elif kind == "vector":
        want = [float(v) for v in spec["answer"]]
        got = as_vector(given)
        if got is None or any(v is None for v in got):
            return Verdict(0.0, f"could not read {given!r} as a list of {len(want)} numbers.")
        if len(got) != len(want):
            return Verdict(0.0, f"expected a list of {len(want)} numbers, got {len(got)}.")
        ok = all(abs(g - w) <= tolerance for g, w in zip(got, want, strict=True))  # type: ignore[operator]
    elif kind == "choice":
        letter = as_choice(given, spec["options"])
        if letter is None:
            choices = ", ".join(f"{k} ({v})" for k, v in spec["options"].items())
            return Verdict(0.0, f"{given!r} is not one of the choices: {choices}.")
        ok = letter == spec["answer"]
    elif kind == "fields":
        return judge_fields(spec, given)
    else:
        raise ValueError(f"unknown question type {kind!r}")
    return Verdict(1.0, "correct") if ok else Verdict(0.0, f"not quite. {idea}".strip())


def judge_fields(spec: dict, given: Any) -> Verdict:
    if not isinstance(given, dict):
        keys = ", ".join(f["id"] for f in spec["fields"])
        return Verdict(0.0, f"expected a mapping with the keys {keys}.")
    total = sum(float(f["points"]) for f in spec["fields"])
    earned, notes = 0.0, []
    for field_spec in spec["fields"]:
        verdict = judge(field_spec, given.get(field_spec["id"]))
        earned += verdict.fraction * float(field_spec["points"])
        notes.append(f"{field_spec['id']}: {verdict.message}")
    return Verdict(earned / total, "; ".join(notes))


def grade(key: dict, sheet: Path) -> tuple[list[TestResult], list[str]]:
    answers, problems = read_sheet(sheet)
    known = {q["id"] for q in key["questions"]}
    unknown = sorted(set(answers) - known)
    if unknown:
        problems.append(f"{sheet.name}: unknown keys ignored: {', '.join(unknown[:10])}.")
    results = []
    for number, question in enumerate(key["questions"], start=1):
        given = answers.get(question["id"])
        verdict = judge(question, given)
        points = float(question["points"])
        score = round(verdict.fraction * points, 6)
        outcome = (
            "passed"
            if verdict.fraction == 1
            else ("not-answered" if verdict.message == NOT_ANSWERED else "wrong")
        )
        results.append(
            TestResult(
                id=question["id"],
                name=f"Q{number}. {question.get('title') or question['ask'].splitlines()[0]}",
                part="part1",
                score=score,
                max_score=points,
                outcome=outcome,
                message=verdict.message,
                checks=question["id"],
            )
        )
    return results, problems


# -- the blank sheet ------------------------------------------------------------------------------

FORMS = {
    "number": "a number",
    "vector": "a list of numbers, e.g. [0.5, 0.5]",
    "choice": "a letter",
}


def form(spec: dict) -> str:
    if spec["type"] == "choice":
        return "one of " + ", ".join(f"{k} ({v})" for k, v in spec["options"].items())
    if spec["type"] == "vector":
        return f"a list of {len(spec['answer'])} numbers, e.g. [0.5, 0.5]"
    return FORMS[spec["type"]]


def blank_sheet(key: dict) -> str:
    lines = [
        "# Part 1: answer each question by replacing `null` with your answer.",
        '# Numbers may be written 4, 4.0, "4" or 2/3; lists as [0.5, 0.5]; choices as a letter.',
        "# Leave `null` for a question you skip. Grading: see README.md.",
    ]
    for number, q in enumerate(key["questions"], start=1):
        lines.append("")
        ask = q["ask"].strip().splitlines()
        lines.append(f"# Q{number}. {ask[0]}")
        lines += [f"#     {line}" for line in ask[1:]]
        if q["type"] == "fields":
            lines.append(f"{q['id']}:")
            for f in q["fields"]:
                lines.append(f"  # {f['ask']} ({form(f)})")
                lines.append(f"  {f['id']}: null")
        else:
            lines.append(f"#     ({form(q)})")
            lines.append(f"{q['id']}: null")
    return "\n".join(lines) + "\n"
