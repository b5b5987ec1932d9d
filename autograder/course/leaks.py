"""No quiz answer printed under the question: find a key's answers in what students read.

A quiz whose answers are printed in the handout teaches nothing. An answer is *telling* when
it is not a choice letter and not a small integer (small integers are everywhere in a text:
counts, indices, sizes). A telling number is found in a text when a number written there with
at least the answer's decimals rounds to it; a list of numbers, when a bracketed list there
holds the same numbers (so `[2, 0]` is found in `np.array([[2.0, 0.0]])`), and each of its
telling elements is also looked for alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SMALL = 10  # integers up to this size are not telling
NUMBER = re.compile(
    r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d[\d_]*)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])"
)
BRACKETED = re.compile(r"\[([^\[\]]*)\]")
READ = (".md", ".py", ".yaml", ".yml", ".txt", ".ipynb")


@dataclass(frozen=True)
class Value:
    """A number as the key states it: its value and how many decimals it is written with."""

    number: float
    decimals: int

    @classmethod
    def stated(cls, value: Any) -> Value:
        text = repr(value) if isinstance(value, float) else str(value)
        decimals = len(text.split(".")[1]) if "." in text and "e" not in text.lower() else 0
        return cls(float(value), decimals)

    @property
    def telling(self) -> bool:
        return self.decimals > 0 or abs(self.number) > SMALL

    def written_as(self, token: str) -> bool:
        """Is ``token`` (a number as written in a text) this value, at its stated precision?"""
        clean = token.replace(",", "").replace("_", "")
        places = len(clean.split(".")[1]) if "." in clean and "e" not in clean.lower() else 0
        try:
            number = float(clean)
        except ValueError:
            return False
        return places >= self.decimals and round(number, self.decimals) == round(
            self.number, self.decimals
        )


@dataclass(frozen=True)
class Answer:
    """One answer of the key, under the id a student would look for."""

    id: str
    values: tuple[Value, ...]
    listed: bool  # a list of numbers, rather than one

    @property
    def telling(self) -> bool:
        return self.listed or any(v.telling for v in self.values)

    def found_in(self, line: str) -> str | None:
        """The text in ``line`` that prints this answer, if any."""
        line = line.replace("−", "-")
        if self.listed:
            for inside in BRACKETED.findall(line):
                tokens = NUMBER.findall(inside)
                if len(tokens) == len(self.values) and all(
                    v.written_as(t) for v, t in zip(self.values, tokens, strict=True)
                ):
                    return f"[{inside}]"
        for value in self.values:
            if value.telling:
                for token in NUMBER.findall(line):
                    if value.written_as(token):
                        return token
        return None


def answers(key: dict[str, Any]) -> list[Answer]:
    """The telling answers of a quiz key (choice letters and small integers left out)."""
    found = []
    for question in key["questions"]:
        parts = question.get("fields") or [question]
        for part in parts:
            name = question["id"] if part is question else f"{question['id']}.{part['id']}"
            if part["type"] == "number":
                answer = Answer(name, (Value.stated(part["answer"]),), listed=False)
            elif part["type"] == "vector":
                values = tuple(Value.stated(v) for v in part["answer"])
                answer = Answer(name, values, listed=True)
            else:
                continue
            if answer.telling:
                found.append(answer)
    return found


def printed(key: dict[str, Any], folder: Path) -> list[str]:
    """Where a telling answer of ``key`` is printed in the files of ``folder``: one line each."""
    telling = answers(key)
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in READ):
        lines = path.read_text(errors="replace").splitlines()
        for number, line in enumerate(lines, start=1):
            for answer in telling:
                text = answer.found_in(line)
                if text:
                    where = f"{path.relative_to(folder)}, line {number}"
                    found.append(f"{where}: the answer to {answer.id}, {text}")
    return found
