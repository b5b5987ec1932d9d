"""``autograder check``: is an assignment's suite sound?

It grades the reference, the starter and every catalogued variant, and fails unless:
the reference gets full marks; the starter gets 0 (stubs on Part 2, blank sheet on Part 1);
the starter files equal what the reference and the key generate; the public tests pass on the
reference; every known mistake loses points on the function it breaks, and only there (or on
a function the suite grades together with it); every "also correct" form gets full marks; the
feedback on every mistake names it (alone, on a test of the function it breaks); every hidden
test is failed by at least one known mistake; and no quiz answer is printed in what students
get. It prints a table of mistakes against the tests that caught them, and, after every
assignment, one summary table (assignment, result, what failed, seconds). The tables are plain
aligned text rather than rich's boxes: a CI log keeps them, and each line greps on its own.

Then mutation testing: every one-change mutant of the reference's solution regions
(``engine/mutants.py``) must lose Part 2 points, or be listed in suite.yaml's
``equivalent_mutants`` with a one-line reason. Mutants are graded as students are, in the
same worker and sandbox; a survivor is printed as the one line it changed, with the handout
promise it breaks.

The catalogued variants, the engine's forms and the mutants are graded on every core, by one
pool of job processes (``Jobs``, each with its own sandbox) shared by every assignment of a
run, while the public tests run in a pytest of their own. Variants and forms are graded
without the item that grades the student's own tests: they change only the module, that
item's test file is the reference's, and it is checked once, on the reference.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from threadpoolctl import threadpool_limits

from autograder.course import leaks
from autograder.course.assignment import Assignment
from autograder.course.stubs import has_markers
from autograder.engine import forms, selection
from autograder.engine import mutants as mutation
from autograder.engine.grading import GradingSession, grade, losses
from autograder.engine.mistakes import Variant
from autograder.engine.student_tests import STUDENT_TESTS
from autograder.result import Result, TestResult
from autograder.sandbox.layers import THREAD_VARS, Sandbox


class Checker:
    def __init__(
        self,
        assignment: Assignment,
        sandbox: Sandbox,
        say: Callable[[str], None] = print,
        jobs: Jobs | None = None,
        gradings: dict[str, Result] | None = None,
    ) -> None:
        self.assignment, self.sandbox, self.say = assignment, sandbox, say
        self.jobs = jobs or Jobs(sandbox)  # a caller checking many assignments shares one
        if jobs is None:  # ours: its job processes end with this checker
            weakref.finalize(self, self.jobs.close)
        # the variants' gradings by the digest of their inputs: a caller that checks again and
        # again (the engine's tests) may share one dict between checkers
        self.gradings: dict[str, Result] = {} if gradings is None else gradings
        self.failures: list[str] = []
        self.graded: dict[str, Result] = {}  # variant name -> its grading, once checked

    def verify(self, ok: bool, what: str, detail: str = "") -> None:
        self.say(f"  [{'ok' if ok else 'FAIL'}] {what}" + (f": {detail}" if detail else ""))
        if not ok:
            self.failures.append(f"{what}: {detail}" if detail else what)

    def grade(self, folder: Path) -> Result:
        a = self.assignment
        return grade(a, folder, self.sandbox, self.jobs.here.session(a))

    def run(self) -> bool:
        a = self.assignment
        self.say(f"checking {a.slug} ({a.title})")
        self.jobs.start()  # the job processes import while this one grades the reference
        public = PublicTests(a)  # a pytest of its own, run meanwhile
        self.check_generated()
        self.check_no_printed_answers()
        # The pool's gradings are queued as soon as their inputs are known, and judged in
        # order afterwards: the forms need nothing, the variants the reference's record of
        # what each test ran, the mutants the shapes it traced. No core waits for a phase.
        forms = self.check_engine_forms()
        with mutation.trace_shapes(filename=f"<reference {a.slug}>") as shapes:
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
        catalogue = self.check_catalogue(reference)
        mutants = self.check_mutants(shapes)
        self.check_public_tests(public)
        for finish in (catalogue, forms, mutants):
            finish()
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

    def check_no_printed_answers(self) -> None:
        """A telling quiz answer must not appear in the handout, stubs, public tests or sheet."""
        found = leaks.printed(self.assignment.key, self.assignment.starter)
        self.verify(
            not found,
            "no quiz answer is printed in what students get",
            "; ".join(found[:5]) + ": use other numbers there" if found else "",
        )

    def check_points(self, reference: Result) -> None:
        for part, declared in self.assignment.points.items():
            total = sum(t.max_score for t in reference.part(part))
            self.verify(
                total == declared,
                f"{part} is worth {declared:g} points",
                "" if total == declared else f"the tests add up to {total:g}",
            )

    def check_public_tests(self, public: PublicTests) -> None:
        ok, tail = public.outcome()
        self.verify(ok, "the public tests pass on the reference", tail)

    def check_catalogue(self, reference: Result) -> Finish:
        """Queues the catalogued variants' gradings; what it returns judges them."""
        catalogue = self.jobs.here.session(self.assignment).catalogue  # the gradings' own
        problems = catalogue.problems(self.assignment.functions)
        self.verify(not problems, "the catalogue covers every function", "; ".join(problems))
        unnamed = self.assignment.unnamed_returns()
        self.verify(
            not unnamed,
            "suite.yaml names every returned tuple",
            "no returns: for " + ", ".join(unnamed),
        )
        self.say(f"  grading {len(catalogue.variants)} catalogued variants...")
        pending = self.submit_variants(catalogue.variants, reference)
        return lambda: self.judge_catalogue(reference, pending())

    def judge_catalogue(self, reference: Result, graded: dict[str, Result]) -> None:
        catalogue = self.jobs.here.session(self.assignment).catalogue
        self.graded = graded
        for variant in catalogue.correct:
            lost = [t.id for t in self.graded[variant.name].part("part2") if not t.passed]
            self.verify(not lost, f"also correct: {variant.name} gets full marks", ", ".join(lost))
        for variant in catalogue.mistakes:
            self.check_mistake(variant, self.graded[variant.name].part("part2"))
            self.check_charges(variant, self.graded[variant.name].part("part2"))
        # the student-tests item grades the student's tests, not their code: no mistake in
        # the code can fail it (tests/test_student_tests.py checks it on its own terms)
        tests = [t for t in reference.part("part2") if t.id != STUDENT_TESTS]
        for test in tests:
            caught = [v.name for v in catalogue.mistakes if failed(self.graded[v.name], test.id)]
            self.verify(
                bool(caught),
                f"hidden test {test.id} is failed by a known mistake",
                "" if caught else "no catalogued mistake fails it: add one that it catches",
            )
        if catalogue.mistakes:
            rows = [(v.name, self.graded[v.name]) for v in catalogue.mistakes]
            for line in table(rows, tests):
                self.say(line)

    def check_mistake(self, variant: Variant, tests: list[TestResult]) -> None:
        """A mistake must lose points on its own function, and its feedback must name it."""
        lost = [t for t in tests if not t.passed and t.checks == variant.replaces]
        self.verify(
            bool(lost),
            f"mistake {variant.name} loses points on {variant.replaces}",
            "" if lost else "no test caught it",
        )
        alone = [t for t in lost if t.mistakes == [variant.name]]
        shared = sorted({m for t in tests if variant.name in t.mistakes for m in t.mistakes})
        if alone:
            detail = ""
        elif shared:
            others = ", ".join(m for m in shared if m != variant.name)
            detail = f"never alone on {variant.replaces}: always together with {others}"
        else:
            detail = "no failed test names it"
        self.verify(not detail, f"mistake {variant.name} is named in its own feedback", detail)

    def check_charges(self, variant: Variant, tests: list[TestResult]) -> None:
        """A mistake in one function must not cost the tests of another, unless the suite
        grades the two together: a test builds its inputs with the reference."""
        a = self.assignment
        wrongly = [
            f"{t.id} (charged to {t.checks})"
            for t in tests
            if not t.passed and not a.graded_together(t.checks, variant.replaces)
        ]
        self.verify(
            not wrongly,
            f"mistake {variant.name} costs only tests of {variant.replaces}",
            f"also fails {', '.join(wrongly)}: build that test's inputs with the reference, "
            "or declare the functions graded_together in suite.yaml"
            if wrongly
            else "",
        )

    def check_engine_forms(self) -> Finish:
        """The forms the engine makes from the reference (engine/forms.py) get full marks.
        Queues their gradings; what it returns judges them."""
        a = self.assignment
        made = forms.read_only_state(a.reference_source, a.settable)
        made += forms.state_as_lists(a.reference_source, a.handout, a.settable)
        if a.float32:
            made += forms.in_float32(a.reference_source)
        files = [self.reference_files | {a.module_file: form.source} for form in made]
        pending = self.jobs.submit(grade_job, a, [(f, {}) for f in files])
        return lambda: self.judge_engine_forms(made, pending())

    def judge_engine_forms(self, made: list[forms.Form], results: list[Result]) -> None:
        for form, result in zip(made, results, strict=True):
            lost = [
                f"{t.id} ({t.message.splitlines()[0] if t.message else t.outcome})"
                for t in result.part("part2")
                if not t.passed
            ]
            self.verify(
                not lost,
                f"also correct, made by the engine: {form.name} gets full marks",
                "; ".join(lost) + ": test only what the handout promises" if lost else "",
            )

    def check_mutants(self, shapes: mutation.Shapes) -> Finish:
        """Every mutant loses Part 2 points, or suite.yaml lists it as equivalent. Queues
        their gradings; what it returns judges them."""
        a = self.assignment
        found = mutation.mutants(a.reference_source, shapes)
        self.say(f"  grading {len(found)} mutants of the reference...")
        start = time.perf_counter()
        jobs = [(self.reference_files | {a.module_file: m.source}, m.function) for m in found]
        pending = self.jobs.submit(losses_job, a, jobs)
        return lambda: self.judge_mutants(found, pending(), time.perf_counter() - start)

    def judge_mutants(
        self, found: list[mutation.Mutant], killed: list[list[str]], seconds: float
    ) -> None:
        a = self.assignment
        declared = a.equivalent_mutants
        survivors = [m for m, lost in zip(found, killed, strict=True) if not lost]
        for mutant in survivors:
            if mutant.key in declared:
                continue
            broken = mutation.promise(mutant, a.reference_source)
            self.verify(
                False,
                f"mutant survives: {mutant.diff()}",
                f"no test loses a point ({mutant.operator})"
                + (f"; it breaks the promise: {broken!r}" if broken else "")
                + f". Add a test, or list it in suite.yaml's equivalent_mutants as {mutant.key!r}"
                " with why",
            )
        live = {m.key for m in survivors}
        for key in declared:
            if key not in live:
                why = "no longer generated" if key not in {m.key for m in found} else "killed"
                self.verify(False, f"equivalent mutant {key!r} is listed in suite.yaml", why)
        equivalent = sum(m.key in declared for m in survivors)
        self.say(
            f"  mutants: {len(found)} generated, {len(found) - len(survivors)} killed, "
            f"{equivalent} declared equivalent (graded within {seconds:.1f} s of being queued)"
        )

    @functools.cached_property
    def reference_files(self) -> dict[str, str]:
        """The reference's code files and answers: every variant starts from them."""
        a = self.assignment
        names = [*a.code_files, "answers.yaml"]
        return {name: (a.reference / name).read_text() for name in names}

    @functools.cached_property
    def shared_inputs(self) -> str:
        """What every variant's grading depends on besides its own files, hashed once: the
        suite's files (by path within the suite: a copy elsewhere grades the same), the
        sandbox and the timeout."""
        a, box = self.assignment, self.sandbox
        suite = sorted(p for p in a.suite.rglob("*") if p.is_file() and p.suffix != ".pyc")
        parts = [(str(p.relative_to(a.suite)), p.read_text()) for p in suite]
        return digest([*parts, ("settings", f"{box.mode} {box.layers} {box.limits} {a.timeout}")])

    def grade_variants(
        self, variants: list[Variant], reference: Result | None = None
    ) -> dict[str, Result]:
        return self.submit_variants(variants, reference)()

    def submit_variants(
        self, variants: list[Variant], reference: Result | None = None
    ) -> Callable[[], dict[str, Result]]:
        """Grade each variant as a submission: the reference with one function replaced, in
        parallel. A grading depends only on the variant's files and ``shared_inputs``; one
        already in ``gradings`` with the same inputs is reused, not graded again. Returns
        what waits for the gradings, by variant name.

        Given the ``reference``'s grading, a variant runs only the tests that ran the function
        it replaces; the others are the reference's own results (engine/selection.py). The
        item that grades the student's own tests is left out: a variant changes only the
        module, its test file is the reference's, and that item is checked on the reference."""
        a = self.assignment
        files = {
            v.name: self.reference_files | {a.module_file: v.source(a.reference_source)}
            for v in variants
        }
        passed = reference.part("part2") if reference else []
        known = {v.name: selection.unseen(passed, v.replaces, a.reference_source) for v in variants}
        keys = {
            name: digest([("shared", self.shared_inputs), *f.items()]) for name, f in files.items()
        }
        todo = sorted({key for key in keys.values() if key not in self.gradings})
        first = {key: name for name, key in reversed(keys.items())}  # one grading per digest
        jobs = [(files[first[key]], known[first[key]]) for key in todo]
        pending = self.jobs.submit(grade_job, a, jobs)

        def results() -> dict[str, Result]:
            self.gradings.update(zip(todo, pending(), strict=True))
            return {name: copy.deepcopy(self.gradings[key]) for name, key in keys.items()}

        return results


class PublicTests:
    """The starter's public tests run on the reference's files, in a pytest of their own,
    started at once and awaited when the check comes to them."""

    def __init__(self, assignment: Assignment) -> None:
        self.folder = tempfile.TemporaryDirectory()
        work = Path(self.folder.name) / assignment.slug
        shutil.copytree(assignment.starter, work)
        for path in assignment.reference.iterdir():
            if path.is_file():
                shutil.copy(path, work / path.name)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "."],
            cwd=work,
            env=os.environ | dict.fromkeys(THREAD_VARS, "1"),  # it runs beside the job processes
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def outcome(self) -> tuple[bool, str]:
        """Whether they passed, and pytest's last line (or its error) to say so."""
        try:
            out, err = self.process.communicate(timeout=PUBLIC_TESTS_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            return False, f"they took more than {PUBLIC_TESTS_TIMEOUT} s"
        finally:
            self.folder.cleanup()
        tail = out.strip().splitlines()[-1:] if out else []
        return self.process.returncode == 0, tail[0] if tail else err[-300:]


PUBLIC_TESTS_TIMEOUT = 300  # seconds


@dataclass
class JobContext:
    """What one process grades with: its sandbox, and one grading session per assignment (the
    catalogue and its variant modules, built once for all the jobs of that assignment)."""

    sandbox: Sandbox
    sessions: dict[tuple[str, str], GradingSession] = field(default_factory=dict)

    def session(self, assignment: Assignment) -> GradingSession:
        key = (assignment.slug, str(assignment.suite))
        if key not in self.sessions:
            self.sessions[key] = GradingSession(assignment)
        return self.sessions[key]


class Jobs:
    """Job processes that grade variants and mutants in parallel, each with a sandbox of its
    own (its own marker and uid), shared by every assignment of one check.

    Fewer jobs than ``SERIAL_BELOW`` are graded in this process, one after the other, with the
    checker's own sandbox: starting job processes would cost more."""

    def __init__(self, sandbox: Sandbox, cores: int | None = None) -> None:
        self.here = JobContext(sandbox)
        self.cores = cores or os.cpu_count() or 1
        self.pool: ProcessPoolExecutor | None = None
        self.limits: threadpool_limits | None = None

    def start(self) -> None:
        if self.pool is None and self.cores > 1:
            # One process per core, and this one grades too: each process's own NumPy takes
            # one BLAS thread. A spinning BLAS pool on a core another process needs wastes
            # both (flash-attention's check: a sixth of its CPU time).
            self.limits = threadpool_limits(1)
            spawn = multiprocessing.get_context("spawn")  # a clean process: no grader state
            mode = self.here.sandbox.mode
            self.pool = ProcessPoolExecutor(
                self.cores, mp_context=spawn, initializer=_start, initargs=(mode,)
            )
            for _ in range(self.cores):  # a pool starts its processes only when given work
                self.pool.submit(int)

    def submit(
        self, task: Callable[..., T], assignment: Assignment, items: list
    ) -> Callable[[], list[T]]:
        """Queue ``task`` on each item; what it returns waits for the results, in order.
        Each item is a job of its own, so the jobs of every phase share the processes to the
        end (a phase's slowest jobs never leave a core idle)."""
        if self.cores == 1 or (self.pool is None and len(items) < SERIAL_BELOW):
            return lambda: [task(assignment, self.here, item) for item in items]
        self.start()
        assert self.pool is not None
        futures = [self.pool.submit(_run, (task, assignment, item)) for item in items]
        return lambda: [future.result() for future in futures]

    def map(self, task: Callable[..., T], assignment: Assignment, items: list) -> list[T]:
        return self.submit(task, assignment, items)()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None
        if self.limits is not None:
            self.limits.restore_original_limits()
            self.limits = None

    def __enter__(self) -> Jobs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


T = TypeVar("T")
Finish = Callable[[], None]  # what judges a step's gradings, once they are done
SERIAL_BELOW = 8  # jobs: fewer are graded in this process, one after the other
# A job process's context: a ProcessPool initializer has no other place to leave it.
_job: dict[str, JobContext] = {}


def _start(mode: str) -> None:
    """Runs once per job process."""
    threadpool_limits(1)  # see Jobs.start
    _job["context"] = JobContext(Sandbox.detect(mode))


def _run(work: tuple[Callable[..., T], Assignment, object]) -> T:
    task, assignment, item = work
    return task(assignment, _job["context"], item)


def written(files: dict[str, str], folder: Path) -> Path:
    for name, content in files.items():
        (folder / name).write_text(content)
    return folder


def grade_job(
    assignment: Assignment,
    context: JobContext,
    job: tuple[dict[str, str], dict[str, TestResult]],
) -> Result:
    """A variant's or a form's grading, without the student-tests item and the tests whose
    results are known (see submit_variants)."""
    files, known = job
    with tempfile.TemporaryDirectory() as tmp:
        folder, session = written(files, Path(tmp)), context.session(assignment)
        return grade(assignment, folder, context.sandbox, session, student_tests=False, known=known)


def losses_job(
    assignment: Assignment, context: JobContext, job: tuple[dict[str, str], str]
) -> list[str]:
    """The tests a mutant of one function fails (at most the first)."""
    files, function = job
    with tempfile.TemporaryDirectory() as tmp:
        folder, session = written(files, Path(tmp)), context.session(assignment)
        return losses(assignment, folder, context.sandbox, function, session)


def digest(parts: list[tuple[str, str]]) -> str:
    """One hash of named texts, unambiguous (each is length-prefixed)."""
    hashed = hashlib.sha256()
    for name, text in parts:
        hashed.update(f"{len(name)}:{name}{len(text)}:{text}".encode())
    return hashed.hexdigest()


@dataclass
class Outcome:
    """One assignment's check, for the summary table."""

    slug: str
    failures: list[str]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.failures


def check_one(
    assignment: Assignment,
    sandbox: Sandbox,
    say: Callable[[str], None] = print,
    jobs: Jobs | None = None,
) -> Outcome:
    start = time.monotonic()
    with contextlib.ExitStack() as stack:
        own = jobs or stack.enter_context(Jobs(sandbox))
        checker = Checker(assignment, sandbox, say, own)
        ok = checker.run()
    say(f"{assignment.slug}: {'OK' if ok else f'{len(checker.failures)} problem(s)'}\n")
    return Outcome(assignment.slug, checker.failures, time.monotonic() - start)


def check(
    assignment: Assignment,
    sandbox: Sandbox,
    say: Callable[[str], None] = print,
) -> bool:
    return check_one(assignment, sandbox, say).ok


def check_all(
    assignments: Iterable[Assignment],
    sandbox: Sandbox,
    say: Callable[[str], None] = print,
    quiet: bool = False,
) -> list[Outcome]:
    """Check each assignment, then print the summary table. Quiet: only the failures (each
    named with its assignment, as soon as that assignment is done) and the table."""
    outcomes = []
    with Jobs(sandbox) as jobs:
        for assignment in assignments:
            outcome = check_one(assignment, sandbox, (lambda line: None) if quiet else say, jobs)
            if quiet:
                for failure in outcome.failures:
                    say(f"FAIL {outcome.slug}: {failure}")
            outcomes.append(outcome)
    for line in summary_table(outcomes):
        say(line)
    return outcomes


WHAT_FAILED_WIDTH = 70  # the table stays readable in a terminal; the details are above it


def what_failed(outcome: Outcome) -> str:
    if outcome.ok:
        return ""
    first = outcome.failures[0].split(": ", 1)[0]
    more = len(outcome.failures) - 1
    text = first + (f" (and {more} more)" if more else "")
    return text if len(text) <= WHAT_FAILED_WIDTH else text[: WHAT_FAILED_WIDTH - 3] + "..."


def summary_table(outcomes: list[Outcome]) -> list[str]:
    """Assignment, result, what failed, seconds: one aligned row per assignment, and a total."""
    header = ("assignment", "result", "what failed", "seconds")
    rows = [
        (o.slug, "ok" if o.ok else "FAIL", what_failed(o), f"{o.seconds:.1f}") for o in outcomes
    ]
    failed_count = sum(not o.ok for o in outcomes)
    total = sum(o.seconds for o in outcomes)
    rows.append(
        ("(all)", "FAIL" if failed_count else "ok", f"{failed_count} failed", f"{total:.1f}")
    )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]

    def line(row: tuple[str, str, str, str]) -> str:
        cells = [f"{cell:<{width}}" for cell, width in zip(row[:3], widths, strict=True)]
        return "  ".join([*cells, f"{row[3]:>7}"]).rstrip()

    rule = "  ".join(["-" * w for w in widths] + ["-" * 7])
    return [
        "",
        "summary:",
        line(header),
        rule,
        *[line(row) for row in rows[:-1]],
        rule,
        line(rows[-1]),
    ]


def failed(result: Result, test_id: str) -> bool:
    return any(t.id == test_id and not t.passed for t in result.tests)


MARKS = {"alone": "N", "shared": "n", "unnamed": "x", "passed": "."}
LEGEND = [
    "N  failed, and the feedback named this mistake alone",
    "n  failed, and the feedback named it among other mistakes",
    "x  failed without naming it (e.g. the call raised)",
    ".  passed",
]


def mark(result: Result, variant: str, test_id: str) -> str:
    test = next((t for t in result.tests if t.id == test_id), None)
    if test is None or test.passed:
        return MARKS["passed"]
    if test.mistakes == [variant]:
        return MARKS["alone"]
    return MARKS["shared"] if variant in test.mistakes else MARKS["unnamed"]


def table(rows: list[tuple[str, Result]], tests: list[TestResult]) -> list[str]:
    """Known mistakes (rows) against hidden tests (numbered columns), aligned, with a key."""
    width = max(len(name) for name, _ in rows)
    cell = len(str(len(tests))) + 1
    numbers = "".join(f"{i:>{cell}}" for i in range(1, len(tests) + 1))
    lines = ["", "  known mistakes (rows) against the hidden tests (columns):"]
    lines += [f"    {key}" for key in LEGEND] + [""]
    lines.append(f"  {'mistake':<{width}} {numbers}")
    for name, result in rows:
        cells = "".join(f"{mark(result, name, t.id):>{cell}}" for t in tests)
        lines.append(f"  {name:<{width}} {cells}")
    counts = [sum(mark(r, n, t.id) != MARKS["passed"] for n, r in rows) for t in tests]
    lines.append(f"  {'(mistakes caught)':<{width}} " + "".join(f"{c:>{cell}}" for c in counts))
    lines += ["", "  hidden tests:"]
    lines += [
        f"  {i:>{cell}} {t.id} ({t.checks}, {t.max_score:g} points)"
        for i, t in enumerate(tests, start=1)
    ]
    return lines
