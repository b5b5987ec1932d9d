"""The answer sheet, answers.yaml: reading it safely, and the question types of Part 1.

Each question type is one class that reads an answer in every form the blank sheet shows,
judges it against the key, and writes its own entry of the blank sheet. The key is only ever
passed in: this module imports nothing but the standard library and PyYAML, so it can be
copied as is into a student's repository, where ``check_forms`` checks the *form* of each
answer (every question answered, each readable) from ``describe(key)``, a description of the
questions that holds no answers.

The sheet is read strictly, because the grader reads it in the trusted process: a size limit,
UTF-8 text only, no anchors or aliases, shallow nesting, and PyYAML's safe loader (no Python
tags). A sheet that does not parse is read question by question, so one typo costs one
question.
"""

from __future__ import annotations

import math
import os
import re
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import yaml

MAX_BYTES = 64 * 1024
MAX_DEPTH = 4
NOT_ANSWERED = "not answered"
TOP_LEVEL_KINDS = {list: "a list", int: "a number", float: "a number", str: "text"}
TOP_LEVEL_KINDS[bool] = "a yes/no"
HEADER = [
    "# Part 1: answer each question by replacing `null` with your answer.",
    '# Numbers may be written 4, 4.0, "4" or 2/3 (decimals with a point: 0.5, not 0,5);',
    "# lists as [0.5, 0.5]; choices as the letter, e.g. B, or as shown, e.g. B (No).",
    "# Leave `null` for a question you skip. Grading: see README.md.",
]


class SheetError(ValueError):
    """An answers.yaml problem, phrased for the student."""


class FormError(ValueError):
    """An answer that is not of the form its question expects, phrased for the student."""


# -- reading the sheet ----------------------------------------------------------------------------


@dataclass
class Sheet:
    answers: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # for the student, with line numbers
    lines: dict[str, int] = field(default_factory=dict)  # answer id -> the line it starts on


def read_sheet(path: Path) -> Sheet:
    """The answers that could be read, where each one is, and the problems found."""
    name = path.name
    if not os.path.lexists(path):
        return Sheet(problems=[f"{name} was not found in the submission: Part 1 scores 0."])
    not_plain = f"{name} is a link or not a plain file; it was not read: Part 1 scores 0."
    try:  # never follow a link: it could point at a grader's file, a FIFO or /dev/zero
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return Sheet(problems=[not_plain])
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Sheet(problems=[not_plain])
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        return Sheet(problems=[f"{name} is larger than {MAX_BYTES // 1024} KiB; it was not read."])
    if b"\x00" in raw:
        return Sheet(problems=[f"{name} is not a text file (it contains NUL bytes); not read."])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return Sheet(problems=[f"{name} is not valid UTF-8 text (byte {error.start}); not read."])
    return read_text(text, name)


def read_text(text: str, name: str = "answers.yaml") -> Sheet:
    try:
        return parse(text, name)
    except SheetError as whole:
        sheet = Sheet(problems=[str(whole)])
        for first_line, chunk in top_level_chunks(text):
            try:
                part = parse(chunk, name, first_line)
            except SheetError:
                continue
            sheet.answers.update(part.answers)
            sheet.lines.update(part.lines)
        if sheet.answers:
            sheet.problems.append(f"The other answers in {name} were read one by one and graded.")
        return sheet


def parse(text: str, name: str, first_line: int = 1) -> Sheet:
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
        node = yaml.compose(text, Loader=yaml.SafeLoader)
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
        return Sheet()
    if not isinstance(data, dict):
        kind = TOP_LEVEL_KINDS.get(type(data), "something else")
        raise SheetError(f"{name} must be made of `key: answer` lines; its top level is {kind}.")
    pairs = node.value if isinstance(node, yaml.MappingNode) else []
    lines = {str(k.value): k.start_mark.line + first_line for k, _ in pairs}
    return Sheet(answers={str(k): v for k, v in data.items()}, lines=lines)


def top_level_chunks(text: str) -> list[tuple[int, str]]:
    """Split a sheet into its top-level `key:` blocks, each with the line it starts on.

    A block goes on over indented lines, comments, blank lines and list items written at
    column 0 (`- 0.5`); any other line starts a block of its own, so a stray line breaks
    nothing but itself."""
    chunks: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        continues = line.startswith((" ", "\t", "#", "-")) or not line.strip()
        if not continues:
            chunks.append((number, [line]))
        elif chunks:
            chunks[-1][1].append(line)
    return [(n, "\n".join(lines)) for n, lines in chunks]


# -- the question types ---------------------------------------------------------------------------


@dataclass
class Verdict:
    fraction: float  # 0..1 of the question's points
    message: str


def is_blank(given: Any) -> bool:
    return given is None or (isinstance(given, str) and not given.strip())


class Question:
    """One question of the quiz, built from its entry in quiz.yaml or from ``describe``."""

    type: ClassVar[str]
    examples: ClassVar[list[Any]] = []  # forms the sheet's header shows, as YAML text

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.id = str(spec.get("id", ""))
        self.ask = str(spec.get("ask", ""))
        self.title = spec.get("title")
        self.points = float(spec.get("points", 0))
        self.idea = str(spec.get("idea", ""))

    # what each type defines
    def form(self) -> str:
        raise NotImplementedError

    def read(self, given: Any) -> Any:
        """The answer in a canonical form, or FormError; ``given`` is not blank."""
        raise NotImplementedError

    def matches(self, value: Any, answer: Any) -> bool:
        """Whether ``value`` (read) is ``answer`` (from the key), within the tolerance."""
        raise NotImplementedError

    def shown(self) -> list[str]:
        """Every answer the sheet displays as a form for this question (YAML text)."""
        return list(self.examples)

    # shared
    def describe(self) -> dict[str, Any]:
        """This question without its answer, tolerance or hint: safe to publish."""
        kept = ("id", "type", "ask", "title", "points")
        return {k: self.spec[k] for k in kept if self.spec.get(k) is not None}

    def heading(self, number: int) -> list[str]:
        """The question's number and every line of its text, as comments."""
        ask = self.ask.strip().splitlines() or [self.id]
        return [f"# Q{number}. {ask[0]}", *(f"#     {line}" for line in ask[1:])]

    def blank(self, number: int) -> list[str]:
        return self.heading(number) + [f"#     ({self.form()})", f"{self.id}: null"]

    def problem(self, given: Any) -> str:
        """Why ``given`` is not an answer of the expected form; "" when it is."""
        if is_blank(given):
            return NOT_ANSWERED
        try:
            self.read(given)
        except FormError as error:
            return str(error)
        return ""

    def judge(self, given: Any) -> Verdict:
        if is_blank(given):
            return Verdict(0.0, NOT_ANSWERED)
        try:
            value = self.read(given)
        except FormError as error:
            return Verdict(0.0, str(error))
        if self.correct(value):
            return Verdict(1.0, "correct")
        return Verdict(0.0, f"not quite. {self.idea_for(value)}".strip())

    def idea_for(self, value: Any) -> str:
        """The feedback for a wrong answer: the key's ``wrong`` entry that matches it, which
        speaks to the reading behind that answer, or else the question's ``idea``."""
        for known in self.spec.get("wrong", []):
            if self.matches(value, known["answer"]):
                return str(known["idea"])
        return self.idea

    def correct(self, value: Any) -> bool:
        return self.matches(value, self.spec["answer"])

    @property
    def tolerance(self) -> float:
        return float(self.spec.get("tolerance", 1e-9))


NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
THOUSANDS = re.compile(r"[+-]?\d{1,3}(,\d{3}){2,}")


def read_number(given: Any) -> float:
    """4, 4.0, "4", "2/3", "1e-3", "1_000", "67,108,864"; not booleans, not "3,0"."""
    unreadable = FormError(f"could not read {given!r} as a number.")
    if isinstance(given, bool) or not isinstance(given, int | float | str):
        raise unreadable
    if isinstance(given, str):
        text = given.strip().replace("−", "-").replace("_", "").replace(" ", "")
        if THOUSANDS.fullmatch(text):
            text = text.replace(",", "")
        elif "," in text:
            raise FormError(
                f"{given!r} has a comma: write decimals with a point "
                f"({text.replace(',', '.')}) and large numbers without separators."
            )
        top, _, bottom = text.partition("/")
        if not NUMBER.fullmatch(top) or (bottom and not NUMBER.fullmatch(bottom)):
            raise unreadable
        try:
            given = float(Fraction(top) / Fraction(bottom)) if bottom else float(top)
        except ZeroDivisionError:
            raise unreadable from None
    if not math.isfinite(given):
        raise unreadable
    return float(given)


class Number(Question):
    type = "number"
    examples = ["4", "4.0", '"4"', "2/3"]

    def form(self) -> str:
        return "a number"

    def read(self, given: Any) -> float:
        return read_number(given)

    def matches(self, value: float, answer: Any) -> bool:
        return math.isclose(value, float(answer), rel_tol=0, abs_tol=self.tolerance)


class Vector(Question):
    type = "vector"

    @property
    def length(self) -> int:
        return int(self.spec["length"]) if "length" in self.spec else len(self.spec["answer"])

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "length": self.length}

    def form(self) -> str:
        return f"a list of {self.length} numbers, e.g. {self.shown()[0]}"

    def shown(self) -> list[str]:
        return ["[" + ", ".join(["0.5"] * self.length) + "]"]

    def read(self, given: Any) -> list[float]:
        unreadable = FormError(f"could not read {given!r} as a list of {self.length} numbers.")
        items = given
        if isinstance(given, str):  # "[2, 0]", "2, 0", "2 0", "(2, 0)", "[[2, 0]]"
            items = [v for v in re.split(r"[,;\s]+", re.sub(r"[\[\]()]", " ", given)) if v]
        if not isinstance(items, list | tuple):
            raise unreadable
        if items and all(isinstance(v, list | tuple) for v in items):  # a 1 x n or n x 1 array
            if len(items) == 1:
                items = items[0]
            elif all(len(v) == 1 for v in items):
                items = [v[0] for v in items]
        try:
            numbers = [read_number(v) for v in items]
        except FormError:
            raise unreadable from None
        if len(numbers) != self.length:
            raise FormError(f"expected a list of {self.length} numbers, got {len(numbers)}.")
        return numbers

    def matches(self, value: list[float], answer: Any) -> bool:
        want = [float(v) for v in answer]
        return len(want) == len(value) and all(
            abs(g - w) <= self.tolerance for g, w in zip(value, want, strict=True)
        )


class Choice(Question):
    type = "choice"

    @property
    def options(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.spec["options"].items()}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "options": self.options}

    def form(self) -> str:
        return "one of " + ", ".join(f"{k} ({v})" for k, v in self.options.items())

    def shown(self) -> list[str]:
        return [f"{k} ({v})" for k, v in self.options.items()] + list(self.options)

    def read(self, given: Any) -> str:
        """The letter: "B", "b", "B.", "(B)", "B (No)", "B) No", "B. No", "No", or a YAML
        boolean for a Yes/No option."""
        if isinstance(given, bool):
            given = "yes" if given else "no"
        if not isinstance(given, str | int):
            raise FormError(f"{given!r} is not one of the choices: {self.choices()}.")
        text = str(given).strip().lower()
        labels = {k.lower(): v.strip().lower() for k, v in self.options.items()}
        by_label = [k for k, v in labels.items() if text.rstrip(".") == v]
        if by_label:
            return self.letter(by_label[0])
        found = re.fullmatch(r"\(?\s*([a-z0-9])\s*[).:\-]?\s*(.*?)\s*\.?", text)
        if found and found[1] in labels:
            rest = found[2].strip("() ")
            if not rest or rest == labels[found[1]]:
                return self.letter(found[1])
        raise FormError(f"{given!r} is not one of the choices: {self.choices()}.")

    def letter(self, lowered: str) -> str:
        return next(k for k in self.options if k.lower() == lowered)

    def choices(self) -> str:
        return ", ".join(f"{k} ({v})" for k, v in self.options.items())

    def matches(self, value: str, answer: Any) -> bool:
        return value == str(answer)


class Fields(Question):
    """Several small answers under one key, each with its points."""

    type = "fields"

    def __init__(self, spec: dict[str, Any]) -> None:
        super().__init__(spec)
        self.fields = [question(f) for f in spec["fields"]]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "fields": [f.describe() for f in self.fields]}

    def form(self) -> str:
        return "the fields below"

    def shown(self) -> list[str]:
        return []

    def blank(self, number: int) -> list[str]:
        lines = [*self.heading(number), f"{self.id}:"]
        for f in self.fields:
            lines += [f"  # {f.ask} ({f.form()})", f"  {f.id}: null"]
        return lines

    def answers(self, given: Any) -> dict[str, Any]:
        if not isinstance(given, dict):
            keys = ", ".join(f.id for f in self.fields)
            raise FormError(f"expected a mapping with the keys {keys}.")
        return given

    def blank_answer(self, given: Any) -> bool:
        return is_blank(given) or (
            isinstance(given, dict) and all(is_blank(v) for v in given.values())
        )

    def problem(self, given: Any) -> str:
        if self.blank_answer(given):
            return NOT_ANSWERED
        try:
            given = self.answers(given)
        except FormError as error:
            return str(error)
        found = [(f.id, f.problem(given.get(f.id))) for f in self.fields]
        return notes(f"{name}: {problem}" for name, problem in found if problem)

    def judge(self, given: Any) -> Verdict:
        if self.blank_answer(given):
            return Verdict(0.0, NOT_ANSWERED)
        try:
            given = self.answers(given)
        except FormError as error:
            return Verdict(0.0, str(error))
        total = sum(f.points for f in self.fields)
        earned, said = 0.0, []
        for f in self.fields:
            verdict = f.judge(given.get(f.id))
            earned += verdict.fraction * f.points
            said.append(f"{f.id}: {verdict.message}")
        return Verdict(earned / total, notes(said))


def notes(each: Iterable[str]) -> str:
    """One line from the notes of several fields: "a: not quite. Why; b: correct", never
    the ".;" of a sentence's full stop run into the separator."""
    return "; ".join(note.rstrip(".") for note in each)


TYPES: dict[str, type[Question]] = {t.type: t for t in (Number, Vector, Choice, Fields)}


def question(spec: dict[str, Any]) -> Question:
    kind = spec.get("type")
    if kind not in TYPES:
        raise ValueError(f"question {spec.get('id')!r}: unknown type {kind!r}")
    return TYPES[kind](spec)


def questions(key_or_description: dict[str, Any]) -> list[Question]:
    return [question(spec) for spec in key_or_description["questions"]]


# -- what a student's repository may hold: the forms, never the answers ---------------------------


def describe(key: dict[str, Any]) -> dict[str, Any]:
    """The questions of a quiz key with their forms and without their answers."""
    return {"questions": [q.describe() for q in questions(key)]}


def blank_sheet(description: dict[str, Any]) -> str:
    lines = list(HEADER)
    for number, q in enumerate(questions(description), start=1):
        lines += ["", *q.blank(number)]
    return "\n".join(lines) + "\n"


@dataclass
class FormCheck:
    """One question of a sheet checked for form: answered, and readable."""

    id: str
    title: str
    line: int | None  # where its answer starts in the sheet, when it is there
    problem: str  # "" when the answer has the expected form

    @property
    def ok(self) -> bool:
        return not self.problem

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "missing"
        return f"{self.title} ({self.id}, {where}): {self.problem or 'ok'}"


def check_forms(description: dict[str, Any], path: Path) -> tuple[list[FormCheck], list[str]]:
    """Check a sheet without the key: one FormCheck per question, and the sheet's problems."""
    sheet = read_sheet(path)
    checks = []
    for number, q in enumerate(questions(description), start=1):
        given = sheet.answers.get(q.id)
        title = f"Q{number}. {q.title or q.ask.strip().splitlines()[0]}"
        checks.append(FormCheck(q.id, title, sheet.lines.get(q.id), q.problem(given)))
    unknown = sorted(set(sheet.answers) - {q.id for q in questions(description)})
    if unknown:
        sheet.problems.append(unknown_keys(path.name, unknown))
    return checks, sheet.problems


SHOWN_KEYS, SHOWN_KEY_CHARS = 10, 40


def unknown_keys(filename: str, keys: list[str]) -> str:
    """The notice for keys the key does not ask about: at most 10, each cut to 40
    characters (a key is the student's text, and can be 20,000 characters long)."""
    cut = SHOWN_KEY_CHARS - 1
    shown = [k if len(k) <= SHOWN_KEY_CHARS else k[:cut] + "…" for k in map(str, keys)]
    more = f" and {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else ""
    return f"{filename}: unknown keys ignored: {', '.join(shown[:SHOWN_KEYS])}{more}."


def main(argv: list[str]) -> int:
    """python sheet.py QUESTIONS.yaml answers.yaml: check the form of every answer."""
    if len(argv) != 2:
        print("usage: python sheet.py QUESTIONS.yaml answers.yaml", file=sys.stderr)
        return 2
    description = yaml.safe_load(Path(argv[0]).read_text())
    checks, problems = check_forms(description, Path(argv[1]))
    for line in problems + [str(c) for c in checks]:
        print(line)
    bad = sum(not c.ok for c in checks)
    print(f"{len(checks) - bad}/{len(checks)} answers of the expected form")
    return 1 if bad or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
