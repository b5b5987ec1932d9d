"""An nbgrader course built from our sources, and the way back from a submitted notebook.

One notebook per assignment, ``source/<slug>/<slug>.ipynb``:

- the handout, as Markdown;
- a read-only cell with the module's header (docstring, imports), from the reference;
- per top-level function or class, an autograded-answer cell holding the reference's with
  its ``### BEGIN SOLUTION`` markers (nbgrader clears them at release), followed by a test
  cell worth the points of its hidden tests (a class's cell, those of all its methods);
- where the suite grades tests the student writes (``student_tests``), an answer cell for
  that test module and a test cell worth the item's points;
- a last test cell for Part 1, worth the quiz's points.

Part 1 stays in ``answers.yaml`` beside the notebook (the blank sheet in ``source/``, listed in
``exclude_overwriting``): the same file, read by the same strict reader, as on every other
route, so a broken sheet costs Part 1 only and can never stop a cell of Part 2 from running.

A test cell's code sits between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``: it
calls ``autograder.platforms.nbgrader.kernel.check``, which grades the notebook file with
our sandboxed
grader. The release shows only a comment; no solution, quiz key or hidden test ships in it.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from autograder.course import stubs
from autograder.course.assignment import Assignment
from autograder.errors import UsageError
from autograder.standalone import escape
from autograder.standalone.sheet import MAX_BYTES, blank_sheet, describe

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
ANSWERS = "answers.yaml"
PART1 = "part1"


def test_cell_id(piece: str) -> str:
    return PART1 if piece == PART1 else f"test_{piece}"


def piece_of(checks: str) -> str:
    """The cell a test's points go to: ``Class.method`` to its class's cell, a test module
    ``test_layer.py`` to the cell of ``test_layer``, a function to its own."""
    return checks.split(".")[0]


# -- the pieces of an assignment --------------------------------------------------------------


def split_module(source: str) -> tuple[str, dict[str, str]]:
    """The module's header (everything before the first function or class) and each top-level
    function's or class's source, in order. Whatever follows one up to the next belongs to
    it."""
    lines = source.splitlines(keepends=True)
    starts = [
        (node.name, (node.decorator_list[0] if node.decorator_list else node).lineno - 1)
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    ]
    if not starts:
        raise UsageError("the reference module defines no function or class")
    ends = [start for _, start in starts[1:]] + [len(lines)]
    pieces = {
        name: "".join(lines[s:e]).strip() + "\n" for (name, s), e in zip(starts, ends, strict=True)
    }
    return "".join(lines[: starts[0][1]]).strip() + "\n", pieces


def points_by_piece(suite_file: Path) -> dict[str, float]:
    """Sum the ``@points(value, checks=...)`` of the hidden suite per cell (``piece_of``),
    read statically: the suite is never imported to build a course."""
    totals: dict[str, float] = {}
    for node in ast.walk(ast.parse(suite_file.read_text())):
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test"):
            continue
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call) or getattr(decorator.func, "id", "") != "points":
                continue
            try:
                value = float(ast.literal_eval(decorator.args[0]))
                checks = next(k.value for k in decorator.keywords if k.arg == "checks")
                name = ast.literal_eval(checks)
            except (ValueError, IndexError, StopIteration) as error:
                raise UsageError(f"{suite_file}: {node.name}: @points needs literals") from error
            piece = piece_of(name)
            totals[piece] = totals.get(piece, 0.0) + value
    return totals


# -- building the course ----------------------------------------------------------------------


def cell(kind: str, source: str, nbgrader: dict[str, Any] | None = None) -> dict[str, Any]:
    made: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": source.rstrip("\n")}
    if nbgrader is not None:
        made["metadata"]["nbgrader"] = {
            "grade": False,
            "locked": False,
            "solution": False,
            "schema_version": 3,
        } | nbgrader
    if kind == "code":
        made |= {"execution_count": None, "outputs": []}
    return made


def test_cell(slug: str, checks: str, points: float, what: str) -> dict[str, Any]:
    # The cell ends in float(...): nbgrader reads that as partial credit; any other trailing
    # expression would read as full credit. Feedback is printed to stdout, never raised, so no
    # traceback can quote the hidden lines.
    source = (
        f"# {what}: {points:g} points, checked when your notebook is graded.\n"
        f"{HIDDEN_BEGIN}\n"
        "from autograder.platforms.nbgrader import kernel\n"
        f"score = kernel.check({slug!r}, {checks!r})\n"
        "float(score)\n"
        f"{HIDDEN_END}"
    )
    meta = {"grade": True, "locked": True, "grade_id": test_cell_id(checks), "points": points}
    return cell("code", source, meta)


def notebook(assignment: Assignment) -> dict[str, Any]:
    header, pieces = split_module(assignment.reference_source)
    points = points_by_piece(assignment.suite / "test_hidden.py")
    quiz_points = sum(float(q["points"]) for q in assignment.key["questions"])
    handout = assignment.starter / "README.md"
    cells = [
        cell("markdown", handout.read_text() if handout.is_file() else f"# {assignment.title}"),
        cell(
            "markdown",
            "## How to work in this notebook\n\n"
            f"- **Part 1**: write your answers in `{ANSWERS}`, beside this notebook.\n"
            "- **Part 2**: complete each function or class in its cell below. Only those cells "
            "are graded, as one module: put any helper you need inside one of them. Cells you "
            "add are for your experiments.\n"
            "- The test cells run the hidden tests when your notebook is graded.",
        ),
        cell("code", header, {"locked": True, "grade_id": "header"}),
    ]
    for name, source in pieces.items():
        cells.append(cell("code", source, {"solution": True, "grade_id": name}))
        if name in points:
            cells.append(test_cell(assignment.slug, name, points.pop(name), f"Tests of {name}"))
    for name, value in points.items():  # tests of something that is not one piece
        cells.append(test_cell(assignment.slug, name, value, f"Tests of {name}"))
    spec = assignment.student_tests
    if spec:  # the student's own tests: one answer cell, graded as the item
        source = (assignment.reference / spec.filename).read_text()
        cells.append(cell("code", source, {"solution": True, "grade_id": spec.module}))
        what = f"Your tests ({spec.filename})"
        cells.append(test_cell(assignment.slug, spec.module, spec.points, what))
    cells.append(test_cell(assignment.slug, PART1, quiz_points, f"Part 1 ({ANSWERS})"))
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 4,
    }


EXCLUDE_SETTING = "c.Autograde.exclude_overwriting"


def built_exclusions(config_file: Path) -> dict[str, list[str]]:
    """``exclude_overwriting`` of a course built before, read as data (never run): a build of
    one assignment must keep every other assignment's answer sheet safe."""
    if not config_file.is_file():
        return {}
    for node in ast.walk(ast.parse(config_file.read_text())):
        if isinstance(node, ast.Assign) and any(
            ast.unparse(target) == EXCLUDE_SETTING for target in node.targets
        ):
            found = ast.literal_eval(node.value)
            return {str(slug): [str(name) for name in names] for slug, names in found.items()}
    return {}


def config(slugs: list[str], kept: dict[str, list[str]] | None = None) -> str:
    """nbgrader_config.py, with every trap of nbgrader's defaults closed (see the README);
    ``kept``: the exclusions of assignments built before, merged with these."""
    exclude = dict(kept or {})
    for slug in slugs:
        exclude[slug] = sorted({*exclude.get(slug, []), ANSWERS})
    exclude = dict(sorted(exclude.items()))
    return f'''"""nbgrader's settings, written by `autograder nbgrader build`: rebuild, not edit."""

import warnings

from nbgrader.converters import Autograde, GenerateFeedback
from nbconvert.preprocessors.sanitize import SanitizeHTML
from nbgrader.preprocessors import ClearHiddenTests, Execute

from autograder.platforms.nbgrader.execute import KeepGoing
from autograder.platforms.nbgrader.feedback import StudentTextAsText

c = get_config()  # noqa: F821


def default(cls, name):
    return list(cls.class_traits()[name].default())


# The student's answer sheet is theirs: never overwrite it with the blank one from source/.
{EXCLUDE_SETTING} = {exclude!r}
# Deleted test cells come back (and are graded) instead of silently scoring nothing.
c.OverwriteCells.add_missing_cells = True
# A kernel that dies or hangs in one cell is restarted; the rest of the notebook still runs.
c.Autograde.autograde_preprocessors = [
    KeepGoing if p is Execute else p for p in default(Autograde, "autograde_preprocessors")
]
c.Execute.kernel_name = "python3"
# Grading one notebook takes seconds; 120 s leaves room for a submission that hangs everywhere.
c.Execute.timeout = 120
c.Execute.extra_arguments = [
    "--HistoryManager.hist_file=:memory:",
    "--InteractiveShell.xmode=Minimal",
]
# A warning printed to stderr must not turn a test cell into 0 points.
c.IgnorePattern.pattern = r"Warning:"
# Feedback never shows the hidden tests, nor renders anything a student's notebook brings:
# their Markdown and raw cells as plain text, then nbconvert's sanitiser over every cell and
# output (a script, an onerror attribute, a forged text/html output).
c.GenerateFeedback.preprocessors = [
    ClearHiddenTests,
    StudentTextAsText,
    *default(GenerateFeedback, "preprocessors"),
    SanitizeHTML,
]
# nbgrader registers these without enabling them; nbconvert's are off unless told
c.SanitizeHTML.enabled = True
c.HTMLExporter.sanitize_html = True
warnings.filterwarnings("ignore", message=".*not in session")
'''


def build(course: Path, assignments: list[Assignment]) -> list[Path]:
    """Write the course (or add to it: the assignments built before keep their settings);
    return the files written."""
    written = []
    kept = built_exclusions(course / "nbgrader_config.py")

    def write(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)

    write(course / "nbgrader_config.py", config([a.slug for a in assignments], kept))
    for assignment in assignments:
        folder = course / "source" / assignment.slug
        nb = json.dumps(notebook(assignment), indent=1) + "\n"
        write(folder / f"{assignment.slug}.ipynb", nb)
        write(folder / ANSWERS, blank_sheet(describe(assignment.key)))
    return written


# -- a student's text cells, shown as text -----------------------------------------------------


def text_of(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(map(str, source))


def our_texts(source: dict[str, Any]) -> set[str]:
    """The text of every Markdown or raw cell of our source notebook (the handout)."""
    return {text_of(c) for c in source.get("cells", []) if c.get("cell_type") != "code"}


def shown_as_text(cell: dict[str, Any], ours: set[str]) -> dict[str, Any]:
    """A Markdown or raw cell as it may be shown: ours (the same text as a cell of the source
    notebook) as Markdown; anything a student wrote as a fenced block of plain text, so no
    HTML, script, image or heading of theirs renders. Attachments are never kept."""
    text = text_of(cell)
    shown = {k: v for k, v in cell.items() if k not in ("attachments", "source", "cell_type")}
    shown["cell_type"] = "markdown"
    shown["source"] = text if text in ours else escape.fenced(text)
    return shown


# -- the way back: a submitted notebook as the files `autograder grade` reads -------------------


def answer_cells(nb: dict[str, Any]) -> dict[str, str]:
    """The student's answer cells, by grade_id."""
    answers = {}
    for c in nb.get("cells", []):
        meta = c.get("metadata", {}).get("nbgrader", {})
        if c.get("cell_type") == "code" and meta.get("solution") and not meta.get("grade"):
            text = c.get("source", "")
            answers[meta.get("grade_id")] = text if isinstance(text, str) else "".join(text)
    return answers


def module_source(nb: dict[str, Any], assignment: Assignment) -> str:
    """The student's module: our header, then each answer cell, found by its grade_id. A
    missing answer cell counts as the stub, so it scores 0 without breaking the others."""
    header, pieces = split_module(assignment.reference_source)
    answers = answer_cells(nb)
    parts = [header]
    for name, source in pieces.items():
        parts.append(answers.get(name, stubs.clear_solutions(source)))
    return "\n\n".join(p.strip("\n") + "\n" for p in parts)


def code_files(nb: dict[str, Any], assignment: Assignment) -> dict[str, str]:
    """Every file the student completes, as the notebook holds it: the module, and their
    own test module where the suite grades one (its stub when the cell is missing)."""
    files = {assignment.module_file: module_source(nb, assignment)}
    spec = assignment.student_tests
    if spec:
        stub = stubs.clear_solutions((assignment.reference / spec.filename).read_text())
        files[spec.filename] = answer_cells(nb).get(spec.module, stub)
    return files


def as_notebook(assignment: Assignment, files: dict[str, str]) -> dict[str, Any]:
    """The notebook a student would hand in for these code files (the way there, for
    benchmarks and tests): each answer cell holds the student's function or class of that
    name; the first also holds the student's header (imports) and helpers."""
    nb = notebook(assignment)
    source = files.get(assignment.module_file, "")
    try:
        header, pieces = split_module(source)
    except (SyntaxError, UsageError):  # not a module of functions: all of it in the first cell
        header, pieces = source, {}
    spec = assignment.student_tests
    if spec and spec.filename in files:
        pieces[spec.module] = files[spec.filename]
    answers = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    ids = {c["metadata"]["nbgrader"]["grade_id"] for c in answers}
    helpers = [text for name, text in pieces.items() if name not in ids]  # no cell of their own
    for c in answers:
        c["source"] = pieces.get(c["metadata"]["nbgrader"]["grade_id"], "")
    answers[0]["source"] = "\n\n".join([header, *helpers, answers[0]["source"]])
    return nb


def extract(notebook_file: Path, assignment: Assignment, into: Path) -> None:
    """Write into INTO the code files and answers.yaml that the notebook beside them stands
    for."""
    try:
        nb = json.loads(notebook_file.read_text())
    except (OSError, ValueError):  # unreadable: every function counts as its stub
        nb = {}
    for name, content in code_files(nb, assignment).items():
        (into / name).write_text(content)
    sheet = notebook_file.parent / ANSWERS
    if sheet.is_file() and not sheet.is_symlink():
        (into / ANSWERS).write_bytes(sheet.read_bytes()[: MAX_BYTES + 1])
