"""``autograder check``: is an assignment's suite sound?

It grades the reference, the starter and every catalogued variant, and fails unless:
the reference gets full marks; the starter gets 0 (stubs on Part 2, blank sheet on Part 1);
the starter files equal what the reference and the key generate; the public tests pass on the
reference; every known mistake loses points on the function it breaks; every "also correct"
form gets full marks; and every hidden test can fail (on the stubs or on some mistake).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from autograder.assignment import Assignment
from autograder.grading import grade
from autograder.mistakes import Variant, load_catalogue
from autograder.result import Result
from autograder.sandbox import Sandbox
from autograder.stubs import has_markers


class Checker:
    def __init__(
        self, assignment: Assignment, sandbox: Sandbox, say: Callable[[str], None] = print
    ) -> None:
        self.assignment, self.sandbox, self.say = assignment, sandbox, say
        self.failures: list[str] = []

    def verify(self, ok: bool, what: str, detail: str = "") -> None:
        self.say(f"  [{'ok' if ok else 'FAIL'}] {what}" + (f": {detail}" if detail else ""))
        if not ok:
            self.failures.append(f"{what}: {detail}" if detail else what)

    def grade(self, folder: Path) -> Result:
        return grade(self.assignment, folder, self.sandbox)

    def run(self) -> bool:
        a = self.assignment
        self.say(f"checking {a.slug} ({a.title})")
        self.check_generated()
        reference = self.grade(a.reference)
        lost = [
            f"{t.id} ({t.message.splitlines()[0] if t.message else t.outcome})"
            for t in reference.tests
            if not t.passed
        ]
        self.verify(not lost, "the reference gets full marks", "; ".join(lost))
        self.check_points(reference)
        starter = self.grade(a.starter)
        for part, what in (("part1", "the blank sheet"), ("part2", "the stubs")):
            earned = sum(t.score for t in starter.part(part))
            self.verify(earned == 0, f"{what} score 0 on {part}", f"got {earned:g}")
        self.check_public_tests()
        self.check_catalogue(reference, starter)
        return not self.failures

    def check_generated(self) -> None:
        for name, content in self.assignment.generated().items():
            path = self.assignment.starter / name
            same = path.is_file() and path.read_text() == content
            self.verify(
                same,
                f"assignments/{self.assignment.slug}/{name} is generated",
                "" if same else "it differs: run `autograder generate`",
            )
        leaked = [
            p.name
            for p in self.assignment.starter.rglob("*")
            if p.is_file()
            and p.suffix in (".py", ".yaml", ".md")
            and has_markers(p.read_text(errors="replace"))
        ]
        self.verify(not leaked, "no solution markers in the starter", ", ".join(leaked))

    def check_points(self, reference: Result) -> None:
        for part, declared in self.assignment.points.items():
            total = sum(t.max_score for t in reference.part(part))
            self.verify(
                total == declared,
                f"{part} is worth {declared:g} points",
                "" if total == declared else f"the tests add up to {total:g}",
            )

    def check_public_tests(self) -> None:
        a = self.assignment
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / a.slug
            shutil.copytree(a.starter, work)
            for path in a.reference.iterdir():
                if path.is_file():
                    shutil.copy(path, work / path.name)
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "."],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=300,
            )
        tail = done.stdout.strip().splitlines()[-1:] if done.stdout else []
        self.verify(
            done.returncode == 0,
            "the public tests pass on the reference",
            tail[0] if tail else done.stderr[-300:],
        )

    def check_catalogue(self, reference: Result, starter: Result) -> None:
        catalogue = load_catalogue(self.assignment.suite / "mistakes.py")
        failed_by: dict[str, set[str]] = {
            t.id: {"stubs"} for t in starter.part("part2") if not t.passed
        }
        rows = []
        for variant in catalogue.variants:
            graded = self.grade_variant(variant)
            lost = [t for t in graded.part("part2") if not t.passed]
            if variant.correct:
                self.verify(
                    not lost,
                    f"also correct: {variant.name} gets full marks",
                    ", ".join(t.id for t in lost),
                )
                continue
            for t in lost:
                failed_by.setdefault(t.id, set()).add(variant.name)
            on_target = [t for t in lost if t.checks == variant.replaces]
            self.verify(
                bool(on_target),
                f"mistake {variant.name} loses points on {variant.replaces}",
                "" if on_target else "no test caught it",
            )
            rows.append((variant.name, [t.id for t in lost]))
        for test in reference.part("part2"):
            self.verify(
                test.id in failed_by,
                f"hidden test {test.id} can fail",
                "" if test.id in failed_by else "no stub or mistake fails it",
            )
        if rows:
            self.say("\n  mistake -> hidden tests that caught it")
            width = max(len(name) for name, _ in rows)
            for name, tests in rows:
                self.say(f"  {name:<{width}}  {', '.join(tests) or '(none)'}")

    def grade_variant(self, variant: Variant) -> Result:
        a = self.assignment
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            shutil.copy(a.reference / "answers.yaml", folder / "answers.yaml")
            (folder / a.module_file).write_text(variant.source(a.reference_source))
            return self.grade(folder)


def check(assignment: Assignment, sandbox: Sandbox, say: Callable[[str], None] = print) -> bool:
    checker = Checker(assignment, sandbox, say)
    ok = checker.run()
    say(f"{assignment.slug}: {'OK' if ok else f'{len(checker.failures)} problem(s)'}\n")
    return ok
