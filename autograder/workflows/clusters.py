"""Mistakes the catalogue does not know: students whose failures of one function are the same.

The hidden inputs are fixed, so two students with the same bug give the same wrong values:
each failed test carries a fingerprint of what the student's code returned in it
(engine/fingerprint.py). Students whose failing tests of a function, and the fingerprints of
those failures, are all the same make a cluster. A cluster is shown only when nothing explains
it already: no catalogued mistake was named, no other function of the student's was blamed,
and the generic error shapes (engine/shapes.py) do not fit every failure (one that fits some
is shown beside it).

For each cluster, the lines where its members' function differs from the reference's are
found statement by statement, after both are normalised (ast: formatting and comments gone,
the names of the function's own variables replaced by one placeholder), so that students
who wrote the same bug in their own words and layout point at the same statements. A
hand-written comparison: difflib on normalised statements is all it takes, and a
clone-detection library would find similar code, not the statements that differ.

``propose`` turns each cluster into a draft catalogue entry, written to a file the instructor
reviews: never into the suite.
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from autograder import PACKAGE_DIR
from autograder.errors import UsageError
from autograder.result import TestResult
from autograder.workflows.command import parent, positive
from autograder.workflows.records import Record

MIN_SIZE = 2  # the default least number of students in a cluster shown
KEPT = ("wrong", "raised")  # how a test of a misconception ends; a hang or a crash is no clue
PROPOSALS = "proposed-mistakes.py"


@dataclass
class Statement:
    """One statement of a function: its normalised text and where it is in the source."""

    text: str
    first: int  # line numbers in the module, 1-based
    last: int


@dataclass
class Cluster:
    function: str
    tests: list[str]  # the ids of the hidden tests its members fail
    students: list[str]
    shape: str = ""  # a generic error shape that fits some (not all) of the failures
    representative: str = ""
    lines: list[tuple[int, str]] = field(default_factory=list)  # (line number, source line)
    code: str = ""  # the representative's function, as written

    @property
    def size(self) -> int:
        return len(self.students)


# -- which failures are unexplained -------------------------------------------------------------


def unexplained(tests: list[TestResult]) -> tuple[tuple[tuple[str, str], ...], str] | None:
    """For one student's tests of one function: the failures' signature ((test id,
    fingerprint) pairs) and a generic shape that fits some of them, or None when nothing failed
    or something already explains the failures."""
    failed = [t for t in tests if not t.passed and t.part == "part2"]
    if not failed or any(t.outcome not in KEPT or not t.fingerprint for t in failed):
        return None
    if any(t.mistakes or t.blame for t in failed):
        return None  # the catalogue names it, or another function of theirs is the cause
    shapes = [t.shape for t in failed if t.shape]
    if len(shapes) == len(failed):
        return None  # a generic error shape already says what is wrong, in every failure
    signature = tuple(sorted((t.id, t.fingerprint) for t in failed))
    return signature, shapes[0] if shapes else ""


def find(records: Iterable[Record], reference: str, min_size: int = MIN_SIZE) -> list[Cluster]:
    """The clusters of at least ``min_size`` students, largest first."""
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[list[Record], str]] = {}
    for record in records:
        if not record.graded:
            continue
        by_function: dict[str, list[TestResult]] = {}
        for test in record.tests:
            if test.checks and test.part == "part2":
                by_function.setdefault(test.checks, []).append(test)
        for function, tests in by_function.items():
            found = unexplained(tests)
            if found:
                members, shape = groups.setdefault((function, found[0]), ([], found[1]))
                members.append(record)
    clusters = []
    for (function, signature), (members, shape) in groups.items():
        if len(members) >= min_size:
            cluster = Cluster(
                function=function,
                tests=[test for test, _ in signature],
                students=sorted((r.student for r in members), key=str.casefold),
                shape=shape,
            )
            locate(cluster, members, reference)
            clusters.append(cluster)
    return sorted(clusters, key=lambda c: (-c.size, c.function, c.tests))


# -- where the members differ from the reference ------------------------------------------------


def function_node(source: str, name: str) -> ast.FunctionDef | None:
    """The definition of ``name`` (``Class.method`` for a method) in ``source``, if any."""
    try:
        body: list[ast.stmt] = ast.parse(source).body
    except (SyntaxError, ValueError):
        return None
    *owners, last = name.split(".")
    for owner in owners:
        found = [n for n in body if isinstance(n, ast.ClassDef) and n.name == owner]
        if not found:
            return None
        body = found[-1].body
    defined = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == last]
    return defined[-1] if defined else None


def own_names(node: ast.FunctionDef) -> dict[str, str]:
    """The names the function assigns, other than its parameters, each replaced by ``_``: the
    parameters are the API's, the same for everyone, while ``scores`` and ``s`` are one
    student's word against another's. (Numbering them instead would let one removed variable
    renumber, and so mark, every statement after it.)"""
    params = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    bound = {
        sub.id
        for sub in ast.walk(node)
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id not in params
    }
    return dict.fromkeys(bound, "_")


class Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.names.get(node.id, node.id), node.ctx)


def statements(node: ast.FunctionDef) -> list[Statement]:
    """The function's statements in order, normalised; a compound statement (if, for...)
    stands for its header, and its body follows. The docstring is left out."""
    renamer = Renamer(own_names(node))
    found: list[Statement] = []

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            if is_docstring(stmt):
                continue
            blocks = [b for b in ("body", "orelse", "finalbody") if getattr(stmt, b, None)]
            handlers = getattr(stmt, "handlers", [])
            if blocks or handlers:
                header = header_text(stmt, renamer)
                found.append(Statement(header, stmt.lineno, stmt.lineno))
                for block in blocks:
                    visit(getattr(stmt, block))
                for handler in handlers:
                    visit(handler.body)
            else:
                text = ast.unparse(renamer.visit(copy_node(stmt)))
                found.append(Statement(text, stmt.lineno, stmt.end_lineno or stmt.lineno))

    visit(node.body)
    return found


def is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def copy_node(node: ast.AST) -> ast.AST:
    return ast.parse(ast.unparse(node)).body[0]


def header_text(stmt: ast.stmt, renamer: Renamer) -> str:
    """The normalised first line of a compound statement, without its body."""
    shell = copy_node(stmt)
    for block in ("body", "orelse", "finalbody", "handlers"):
        if getattr(shell, block, None):
            setattr(shell, block, [ast.Pass()] if block == "body" else [])
    return ast.unparse(renamer.visit(shell)).splitlines()[0]


def differing(code: str, function: str, reference: Iterable[str]) -> list[Statement]:
    """The statements of ``function`` in ``code`` that are not in the reference's, by diff."""
    node = function_node(code, function)
    if node is None:
        return []
    mine = statements(node)
    theirs = list(reference)
    matcher = difflib.SequenceMatcher(a=theirs, b=[s.text for s in mine], autojunk=False)
    return [
        mine[j]
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag in ("replace", "insert")
        for j in range(j1, j2)
    ]


def locate(cluster: Cluster, members: list[Record], reference: str) -> None:
    """Pick the representative (the member whose function differs least from the reference)
    and its differing lines, keeping those whose normalised text every member shares."""
    node = function_node(reference, cluster.function)
    if node is None:
        return
    wanted = [s.text for s in statements(node)]
    diffs: dict[str, tuple[str, list[Statement]]] = {}
    for record in members:
        code = next(iter(record.code.values()), "")  # the module comes first
        found = differing(code, cluster.function, wanted)
        if found:
            diffs[record.student] = (code, found)
    if not diffs:
        return
    shared = set.intersection(*({s.text for s in found} for _, found in diffs.values()))
    chosen = min(diffs, key=lambda student: (len(diffs[student][1]), student.casefold()))
    code, found = diffs[chosen]
    kept = [s for s in found if s.text in shared] or found
    lines = code.splitlines()
    cluster.representative = chosen
    cluster.lines = [(n, lines[n - 1]) for s in kept for n in range(s.first, s.last + 1)]
    chosen_node = function_node(code, cluster.function)
    segment = ast.get_source_segment(code, chosen_node) if chosen_node else None
    cluster.code = textwrap.dedent(segment or "")


# -- draft catalogue entries -------------------------------------------------------------------


def entry_name(cluster: Cluster, number: int) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", cluster.function.lower()).strip("-")
    return f"{base}-unnamed-{number}"


def draft(cluster: Cluster, number: int) -> str:
    """One draft catalogue entry: the representative's function, renamed, decorated with the
    name, what it replaces, and a why and a hint for the instructor to write."""
    name = entry_name(cluster, number)
    python_name = name.replace("-", "_")
    node = function_node(cluster.code, cluster.function.split(".")[-1]) if cluster.code else None
    if node is None:
        body = "    raise NotImplementedError  # the representative's code could not be read\n"
        signature = f"def {python_name}(*args, **kwargs):\n"
        function = signature + body
    else:
        node.name, node.decorator_list = python_name, []
        function = ast.unparse(node) + "\n"
    where = "\n".join(f"#   line {n}: {text.strip()}" for n, text in cluster.lines) or "#   (none)"
    return (
        f"# Cluster {number}: {cluster.size} students fail {', '.join(cluster.tests)} "
        f"of {cluster.function} in the same way.\n"
        f"# Representative: {cluster.representative or '(none)'}; where it differs from the "
        "reference:\n"
        f"{where}\n"
        + (
            f"# A generic error shape fits some failures: {cluster.shape}\n"
            if cluster.shape
            else ""
        )
        + "@catalogue.mistake(\n"
        f'    "{name}",  # TODO: a short, stable name for the misconception\n'
        '    title="TODO: the mistake in plain words, as a student reads it",\n'
        f'    replaces="{cluster.function}",\n'
        '    why="TODO: what goes wrong, and why it is wrong",\n'
        '    hint="TODO: a hint toward the fix, without giving the code",\n'
        ")\n"
        f"{function}"
    )


def proposals(assignment: str, clusters: list[Cluster]) -> str:
    """The text of the drafts file: every cluster's entry, ready to review and copy."""
    head = (
        f'"""Draft catalogue entries for {assignment}, one per cluster of unexplained mistakes.\n'
        "\n"
        "Written by `autograder propose` from the graded class: review each one, name it, write\n"
        "its title, why and hint, keep only the lines that make the mistake, then copy it into\n"
        f"autograder/suites/{assignment}/mistakes.py. `autograder check` validates it there like\n"
        "any other entry, and a regrade names the mistake for every student in the cluster.\n"
        "The code is a student's own: other helpers it calls must exist in the reference.\n"
        '"""\n\n'
        "# ruff: noqa\n"
        "import numpy as np\n\n"
        "from autograder.suite import Catalogue\n\n"
        "catalogue = Catalogue()\n"
    )
    if not clusters:
        return head + "\n# No cluster of unexplained mistakes was found.\n"
    return head + "".join(f"\n\n{draft(c, i)}" for i, c in enumerate(clusters, 1))


def write_proposals(path: Path, assignment: str, clusters: list[Cluster]) -> Path:
    """Write the drafts to ``path``; refused inside the package's suites (a draft is never
    put into a suite without the instructor's review)."""
    path = Path(path)
    suites = (PACKAGE_DIR / "suites").resolve()
    if path.resolve().is_relative_to(suites) or path.resolve().name == "mistakes.py":
        raise UsageError(
            f"{path}: drafts are never written into a suite; write them elsewhere and review them"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(proposals(assignment, clusters))
    return path


# report and propose: how large a cluster must be to be shown
MIN_CLUSTER = parent()
MIN_CLUSTER.add_argument(
    "--min-cluster",
    type=positive,
    default=MIN_SIZE,
    metavar="N",
    help="the least number of students in a cluster of unexplained mistakes (default: %(default)s)",
)
