"""The nbgrader route, end to end: build, generate_assignment, autograde (nbgrader's and ours),
generate_feedback and export, with nbgrader's own commands on a temporary course.

One session-scoped round trip grades every submission in one ``nbgrader autograde`` run and
one ``autograder nbgrader autograde`` run; the tests read what those left behind.
"""

from __future__ import annotations

import ast
import csv
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install -e '.[nbgrader]')")

from helpers import jupyter_env, nbgrader
from nbgrader.api import Gradebook  # noqa: E402

from autograder import cli  # noqa: E402
from autograder.course.assignment import Assignment, slugs  # noqa: E402
from autograder.platforms.nbgrader import gradebook, notebook  # noqa: E402

# The round trip runs in the first test that asks for it: nbgrader is slow.
pytestmark = pytest.mark.timeout(3600)

SLUG = "masks-and-heads"
SECOND = "kv-cache-and-gqa"  # built into the same course after SLUG
ROOT = Path(__file__).resolve().parent.parent
REFERENCE_ANSWERS = (ROOT / "reference" / SLUG / "answers.yaml").read_text()


def cells_by_id(nb: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        c["metadata"]["nbgrader"]["grade_id"]: c
        for c in nb["cells"]
        if "nbgrader" in c.get("metadata", {})
    }


def source_of(cell: dict[str, Any]) -> str:
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


# Each submission: how to edit the notebook (grade_id -> new source, None deletes the cell),
# which notebook to start from, and the answer sheet.
TRANSPOSED = "def causal_mask(n):\n    return np.triu(np.ones((n, n), dtype=bool))\n"
LOOP = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n"
# Right shapes, wrong values everywhere (no test of masked_attention accepts all ones).
ONES = (
    "def masked_attention(Q, K, V, mask=None):\n"
    "    return np.ones((len(Q), len(K))), np.ones((len(Q), V.shape[1]))\n"
)
PATCH_NUMPY = (
    "np.isclose = lambda a, b, *args, **kwargs: np.ones(np.shape(a), dtype=bool)\n"
    "np.allclose = np.array_equal = lambda *args, **kwargs: True\n"
    "np.testing.assert_allclose = np.testing.assert_array_equal = lambda *a, **k: None\n" + ONES
)
REWRITE_ASSERTION = (
    "import builtins\n"
    "class AssertionError(BaseException):\n    pass\n"
    "builtins.AssertionError = AssertionError\n" + ONES
)
# Forgery inside the kernel: the test cells that follow call the patched grader.
PATCH_GRADER = (
    "from autograder.platforms.nbgrader import kernel\nkernel.check = lambda slug, checks: 5.0\n"
    + ONES
)
STDERR = (
    "import sys, warnings\n"
    "print('debugging output', file=sys.stderr)\n"
    "warnings.warn('a warning at the top level')\n"
)
SUBMISSIONS: dict[str, tuple[str, dict[str, str | None], str]] = {
    "reference": ("source", {}, REFERENCE_ANSWERS),
    "untouched": ("release", {}, ""),
    "mistake": (
        "source",
        {"causal_mask": TRANSPOSED},
        REFERENCE_ANSWERS.replace("masked_weight: 0", "masked_weight: 1"),  # Q2 wrong
    ),
    "crash": ("source", {"split_heads": "raise RuntimeError('oops')\n"}, REFERENCE_ANSWERS),
    "loop": ("source", {"merge_heads": LOOP}, REFERENCE_ANSWERS),
    "exits": ("source", {"causal_mask": "import os\nos._exit(1)\n"}, REFERENCE_ANSWERS),
    # Prints to stderr, deletes one test cell, rewrites another, and breaks answers.yaml:
    # Part 2 keeps every point.
    "tampered": (
        "source",
        {"causal_mask": STDERR, "test_causal_mask": None, "test_split_heads": "True"},
        "third_token_positions: [3\n  : {{ not yaml\n",
    ),
    "patches_numpy": ("release", {"masked_attention": PATCH_NUMPY}, ""),
    "rewrites_assertion": ("release", {"masked_attention": REWRITE_ASSERTION}, ""),
    "patches_grader": ("release", {"masked_attention": PATCH_GRADER}, ""),
    # Script, an onerror image, a forged total and a forged text/html output (issue 24).
    "injects": ("source", {}, REFERENCE_ANSWERS + '"<script>alert(24)</script>": 1\n'),
}
MARKER = "alert(24)"
FORGED_TOTAL = "Total: 100/100"
INJECTED_CELLS = [
    {
        "cell_type": "markdown",
        "metadata": {},
        "source": f"## {FORGED_TOTAL} ✅\n\n<img src=x onerror={MARKER}>\n"
        f"<script>{MARKER}</script>",
    },
    {"cell_type": "raw", "metadata": {"format": "text/html"}, "source": f"<b>{MARKER}</b>"},
    {
        "cell_type": "code",
        "metadata": {},
        "execution_count": 1,
        "source": "from IPython.display import HTML, display\n"
        f"display(HTML('<img src=x onerror={MARKER}><script>{MARKER}</script>'))",
        "outputs": [
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"text/html": f"<h2>{FORGED_TOTAL}</h2><script>{MARKER}</script>"},
            }
        ],
    },
]
FORGERS = ["patches_numpy", "rewrites_assertion", "patches_grader"]
HOSTILE = [*FORGERS, "exits"]


def make_submission(course: Path, student: str) -> None:
    start, edits, answers = SUBMISSIONS[student]
    base = course / start / SLUG
    nb = json.loads((base / f"{SLUG}.ipynb").read_text())
    kept = []
    for c in nb["cells"]:
        grade_id = c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in edits:
            if edits[grade_id] is None:
                continue
            original = source_of(c)
            # Answer cells get the edit after their code (a def there replaces the original);
            # test cells are replaced.
            is_answer = not c["metadata"]["nbgrader"]["grade"]
            c["source"] = (original + "\n" if is_answer else "") + edits[grade_id]
        kept.append(c)
    nb["cells"] = kept + (INJECTED_CELLS if student == "injects" else [])
    folder = course / "submitted" / student / SLUG
    folder.mkdir(parents=True)
    (folder / f"{SLUG}.ipynb").write_text(json.dumps(nb))
    (folder / "answers.yaml").write_text(answers)


def stored_scores(course: Path) -> dict[str, dict[str, float | None]]:
    scores: dict[str, dict[str, float | None]] = {}
    with Gradebook(gradebook.database(course)) as gb:
        for submission in gb.assignment_submissions(SLUG):
            grades = submission.notebooks[0].grades
            scores[submission.student_id] = {g.name: g.auto_score for g in grades}
    return scores


@pytest.fixture(scope="session")
def course(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    course = tmp_path_factory.mktemp("course")
    env = jupyter_env(course / ".jupyter")
    # Two separate builds, as in a term: the second must keep the first's settings.
    assert cli.main(["nbgrader", "build", str(course), SLUG]) == 0
    assert cli.main(["nbgrader", "build", str(course), SECOND]) == 0
    steps: dict[str, Any] = {"course": course}
    steps["generate"] = nbgrader(course, env, "generate_assignment", SLUG)
    for student in SUBMISSIONS:
        make_submission(course, student)
    steps["autograde"] = nbgrader(course, env, "autograde", SLUG)
    steps["plain"] = stored_scores(course)
    # Read now: our autograde, later, writes autograded/ again.
    steps["plain_sheets"] = {
        s: (course / "autograded" / s / SLUG / "answers.yaml").read_text()
        for s in ("reference", "mistake")
    }
    steps["feedback"] = nbgrader(course, env, "generate_feedback", SLUG)
    steps["plain_feedback"] = {
        s: (course / "feedback" / s / SLUG / f"{SLUG}.html").read_text()
        for s in SUBMISSIONS
        if (course / "feedback" / s / SLUG / f"{SLUG}.html").is_file()
    }
    # Ours, into the same gradebook, then nbgrader's export of our scores.
    steps["ours"] = gradebook.autograde(course, SLUG)
    steps["stored"] = stored_scores(course)
    steps["export"] = nbgrader(course, env, "export", "--to", str(course / "grades.csv"))
    page = course / "feedback" / "injects" / SLUG / f"{SLUG}.html"
    steps["our_feedback"] = nbgrader(course, env, "generate_feedback", SLUG, "--force")
    steps["our_injects_page"] = page.read_text() if page.is_file() else ""
    return steps


def test_build_writes_the_course_from_our_sources(tmp_path: Path) -> None:
    assignment = Assignment.load(SLUG)
    assert cli.main(["nbgrader", "build", str(tmp_path), SLUG]) == 0
    nb = json.loads((tmp_path / "source" / SLUG / f"{SLUG}.ipynb").read_text())
    cells = cells_by_id(nb)
    _, functions = notebook.split_module(assignment.reference_source)
    for name, source in functions.items():  # the reference, markers and all, never a copy
        meta = cells[name]["metadata"]["nbgrader"]
        assert (meta["solution"], meta["grade"]) == (True, False)
        assert source_of(cells[name]) == source.rstrip("\n")
        assert "### BEGIN SOLUTION" in source_of(cells[name])
    tests = {k: c for k, c in cells.items() if c["metadata"]["nbgrader"]["grade"]}
    assert sum(c["metadata"]["nbgrader"]["points"] for c in tests.values()) == 100
    for c in tests.values():
        meta = c["metadata"]["nbgrader"]
        assert meta["locked"] and set(meta) <= {
            "grade",
            "solution",
            "locked",
            "grade_id",
            "points",
            "schema_version",
            "task",
        }
        assert notebook.HIDDEN_BEGIN in source_of(c) and notebook.HIDDEN_END in source_of(c)
    config = (tmp_path / "nbgrader_config.py").read_text()
    assert f"exclude_overwriting = {{'{SLUG}': ['answers.yaml']}}" in config
    assert "add_missing_cells = True" in config and "ClearHiddenTests" in config
    sheet = (tmp_path / "source" / SLUG / "answers.yaml").read_text()
    assert sheet == (ROOT / "assignments" / SLUG / "answers.yaml").read_text()  # the blank one


def test_test_cells_end_in_a_float_never_another_trailing_expression(tmp_path: Path) -> None:
    """nbgrader gives full credit for a trailing expression it cannot read as a number."""
    cli.main(["nbgrader", "build", str(tmp_path), SLUG])
    nb = json.loads((tmp_path / "source" / SLUG / f"{SLUG}.ipynb").read_text())
    for c in cells_by_id(nb).values():
        if c["metadata"]["nbgrader"]["grade"]:
            last = ast.parse(source_of(c)).body[-1]
            assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            assert getattr(last.value.func, "id", "") == "float"


def test_release_has_no_solution_and_no_hidden_test(course: dict[str, Any]) -> None:
    assert course["generate"].returncode == 0, course["generate"].stderr[-2000:]
    release = course["course"] / "release" / SLUG
    assert sorted(p.name for p in release.iterdir()) == ["answers.yaml", f"{SLUG}.ipynb"]
    text = "".join(p.read_text() for p in release.iterdir())
    for secret in ("BEGIN SOLUTION", "HIDDEN TESTS", "kernel.check", "np.tril", "67108864"):
        assert secret not in text
    assert "raise NotImplementedError()" in text


def test_stock_autograde_after_two_builds_keeps_the_students_sheet(
    course: dict[str, Any],
) -> None:
    """`build C SLUG`, then `build C SECOND`, then stock `nbgrader autograde SLUG`: the sheet
    in autograded/ is the student's, not source/'s blank one, and Part 1 scores the student's."""
    assert course["autograde"].returncode == 0, course["autograde"].stderr[-3000:]
    sheets, plain = course["plain_sheets"], course["plain"]
    assert sheets["reference"] == REFERENCE_ANSWERS
    assert sheets["mistake"] == SUBMISSIONS["mistake"][2]
    assert plain["reference"]["part1"] == 30
    assert 0 < plain["mistake"]["part1"] < 30  # one answer swapped: the student's own sheet


def test_nbgrader_autograde_grades_everyone(course: dict[str, Any]) -> None:
    """A crash, an endless loop and a kernel-killing cell are each graded: nobody is dropped,
    no grade is NULL."""
    assert course["autograde"].returncode == 0, course["autograde"].stderr[-3000:]
    plain = course["plain"]
    assert set(plain) == set(SUBMISSIONS)
    for student, cells in plain.items():
        assert None not in cells.values(), student
    total = {s: sum(cells.values()) for s, cells in plain.items()}
    assert total["reference"] == 100
    assert total["untouched"] == 0
    assert 0 < total["mistake"] < 100 and plain["mistake"]["test_causal_mask"] < 8
    assert total["crash"] == total["loop"] == total["exits"] == 30  # Part 1 only
    tampered = plain["tampered"]  # stderr, a deleted and a rewritten test cell, broken sheet
    assert tampered["part1"] == 0 and total["tampered"] == 70


def test_same_scores_as_autograder_grade(course: dict[str, Any]) -> None:
    """For every submission not built to forge, nbgrader's stored scores equal our grader's,
    cell by cell; ours are `autograder grade` of the same code and answers."""
    for student, result in course["ours"].items():
        for grade_id, score in course["stored"][student].items():
            tests = notebook_tests(result, grade_id)
            assert score == pytest.approx(sum(t.score for t in tests)), (student, grade_id)
        if student not in FORGERS:
            assert course["plain"][student] == pytest.approx(course["stored"][student]), student


def notebook_tests(result: Any, grade_id: str) -> list:
    from autograder.platforms.nbgrader.kernel import cell_tests

    return cell_tests(result, gradebook.checks_of(grade_id))


def test_the_extracted_code_grades_the_same_on_the_command_line(
    course: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    submitted = course["course"] / "submitted" / "mistake" / SLUG
    notebook.extract(submitted / f"{SLUG}.ipynb", Assignment.load(SLUG), tmp_path)
    assert cli.main(["grade", SLUG, str(tmp_path)]) == 0
    expected = course["ours"]["mistake"].score
    assert f"Total: {expected:g}/100" in capsys.readouterr().out
    assert sum(course["plain"]["mistake"].values()) == pytest.approx(expected)


def test_hostile_notebooks_forge_plain_nbgrader_but_not_ours(course: dict[str, Any]) -> None:
    plain = {s: sum(course["plain"][s].values()) for s in HOSTILE}
    ours = {s: course["ours"][s].score for s in HOSTILE}
    print(f"hostile notebooks, plain nbgrader autograde: {plain}; ours: {ours}")
    # Part 1 is blank in the forgers; `exits` keeps the reference's Part 1 answers.
    assert ours == {"patches_numpy": 0, "rewrites_assertion": 0, "patches_grader": 0, "exits": 30}
    # Our test cells grade the notebook file in the sandbox, so patching NumPy or AssertionError
    # in the kernel buys nothing even there; patching the grader the test cells call does.
    assert plain["patches_grader"] > 0
    assert sum(t.score for t in course["ours"]["exits"].part("part2")) == 0


def test_feedback_shows_our_messages_and_no_hidden_test(course: dict[str, Any]) -> None:
    assert course["feedback"].returncode == 0, course["feedback"].stderr[-2000:]
    html = course["plain_feedback"]
    assert set(html) == set(SUBMISSIONS)
    # Ours leaves the same feedback as the test cells' outputs in autograded/.
    ours = (course["course"] / "autograded" / "mistake" / SLUG / f"{SLUG}.ipynb").read_text()
    for page in (html["mistake"], ours):
        assert "the causal mask is transposed" in page and "Hint:" in page  # the diagnosis
    for page in html.values():
        assert "kernel.check" not in page and "HIDDEN TESTS" not in page


class Live(HTMLParser):
    """Where a page shows a marker live: in an attribute, in a script, or (``as_text``) as
    text outside ``<pre>``/``<code>`` (a heading, say). Escaped markup shown as text is inert."""

    def __init__(self, page: str, marker: str, as_text: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.marker, self.found, self.inside = marker, list[str](), list[str]()
        self.as_text = as_text
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [f"<{tag} {n}=...>" for n, v in attrs if self.marker in (v or "")]
        self.inside.append(tag)

    def handle_endtag(self, tag: str) -> None:
        while self.inside and self.inside.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        quoted = {"pre", "code", "textarea"} & set(self.inside)
        live = "script" in self.inside[-1:] or (self.as_text and not quoted)
        if self.marker in data and live:
            self.found.append(f"{'/'.join(self.inside[-3:])}: {data.strip()[:80]}")


def test_feedback_renders_nothing_a_students_notebook_brings(course: dict[str, Any]) -> None:
    """Plain nbgrader autograde copies the student's Markdown, raw cells and outputs into the
    graded notebook, ours shows none of them: on both routes the feedback page has no script,
    attribute or heading of theirs."""
    assert course["our_feedback"].returncode == 0, course["our_feedback"].stderr[-2000:]
    pages = {"plain": course["plain_feedback"]["injects"], "ours": course["our_injects_page"]}
    for route, page in pages.items():
        assert "<html" in page, route
        assert Live(page, MARKER, as_text=False).found == [], route  # no script, no onerror
        assert Live(page, FORGED_TOTAL, as_text=True).found == [], route  # no heading of theirs
    ours = (course["course"] / "autograded" / "injects" / SLUG / f"{SLUG}.ipynb").read_text()
    outputs = [o for c in json.loads(ours)["cells"] for o in c.get("outputs", [])]
    assert all(set(o.get("data", {})) <= {"text/plain"} for o in outputs)  # ours only: text


def test_export_writes_our_scores(course: dict[str, Any]) -> None:
    assert course["export"].returncode == 0, course["export"].stderr[-2000:]
    with open(course["course"] / "grades.csv") as f:
        rows = {r["student_id"]: float(r["raw_score"]) for r in csv.DictReader(f)}
    assert rows == {s: course["ours"][s].score for s in SUBMISSIONS}


def test_our_autograde_keeps_the_students_answer_sheet(course: dict[str, Any]) -> None:
    autograded = course["course"] / "autograded" / "reference" / SLUG / "answers.yaml"
    assert autograded.read_text() == REFERENCE_ANSWERS
    assert course["ours"]["reference"].score == 100
    # Our autograde never writes into submitted/.
    assert not any(p.name.endswith(".html") for p in (course["course"] / "submitted").rglob("*"))


def test_usage_errors_are_one_line(
    course: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(course["course"])
    assert cli.main(["nbgrader", "autograde", path, SLUG, "--student", "nobody"]) == 2
    assert "no submission of masks-and-heads by 'nobody'" in capsys.readouterr().err
    assert cli.main(["nbgrader", "autograde", str(tmp_path), SLUG]) == 2
    assert "run `autograder nbgrader build` first" in capsys.readouterr().err


def test_the_module_is_the_answer_cells_and_a_missing_one_is_the_stub(tmp_path: Path) -> None:
    assignment = Assignment.load(SLUG)
    nb = notebook.notebook(assignment)
    nb["cells"] = [c for c in nb["cells"] if cells_by_id({"cells": [c]}).keys() != {"split_heads"}]
    source = notebook.module_source(nb, assignment)
    reference = assignment.reference_source
    assert source.count("### BEGIN SOLUTION") == reference.count("### BEGIN SOLUTION") - 1
    stub = (ROOT / "assignments" / SLUG / assignment.module_file).read_text()
    _, stubs = notebook.split_module(stub)
    assert stubs["split_heads"].strip() in source  # the stub stands in for the deleted cell
    (tmp_path / f"{SLUG}.ipynb").write_text("{not json")
    notebook.extract(tmp_path / f"{SLUG}.ipynb", assignment, tmp_path)  # unreadable: all stubs
    assert "### BEGIN SOLUTION" not in (tmp_path / assignment.module_file).read_text()


def test_the_test_cells_carry_the_hidden_suites_points() -> None:
    assignment = Assignment.load(SLUG)
    by_function = notebook.points_by_piece(assignment.suite / "test_hidden.py")
    assert set(by_function) == set(assignment.functions)
    assert sum(by_function.values()) == assignment.points["part2"]


def test_a_second_build_keeps_the_first_assignments_settings(tmp_path: Path) -> None:
    """`build C a` then `build C b`: nbgrader, reading the config, still spares a's sheet."""
    from traitlets.config.loader import PyFileConfigLoader

    other = next(s for s in slugs() if s != SLUG)
    assert cli.main(["nbgrader", "build", str(tmp_path), SLUG]) == 0
    assert cli.main(["nbgrader", "build", str(tmp_path), other]) == 0
    assert cli.main(["nbgrader", "build", str(tmp_path), other]) == 0  # a rebuild adds nothing
    loaded = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert loaded.Autograde.exclude_overwriting == {SLUG: ["answers.yaml"], other: ["answers.yaml"]}
    assert (tmp_path / "source" / SLUG / f"{SLUG}.ipynb").is_file()
