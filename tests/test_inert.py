"""Every text a student controls is inert wherever it is rendered (issue 24).

hypothesis draws adversarial strings (Markdown, HTML, ANSI and OSC escapes, workflow
commands, formula prefixes, newlines, bidirectional overrides) into every field a student
controls: exception messages, what their code printed, answers.yaml keys (the notices quote
them), notebook cells and outputs, logins. Each output of each route is rendered and held to
its format's invariant:

- Markdown (Gradescope's ``output``, Classroom 50's release body, the job summaries, commit
  comments, the class report), rendered by markdown-it-py as CommonMark with GFM's tables and
  autolinks: the HTML it gives has the same elements, attributes and text outside
  ``<code>``/``<pre>`` as when the student's text is a plain ``x``;
- HTML (the class report): the same, by parsing;
- the terminal, nbgrader's text feedback and JSON text fields: no control character or escape
  sequence, no line that starts a workflow command, the real total the only ``Total:`` line;
- scores.csv: no cell starts with ``= + - @``.

Results are built here, so hundreds of examples run in seconds; the real grader runs once, on
fixed adversarial submissions (``graded``), and its result goes through the same checks.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from autograder import report
from autograder.course.assignment import Assignment
from autograder.errors import UsageError
from autograder.platforms.classroom50 import classroom50
from autograder.platforms.gradescope import gradescope
from autograder.platforms.nbgrader import kernel
from autograder.result import Result, TestResult
from autograder.standalone import escape, github
from autograder.workflows import classreport, publish
from autograder.workflows.batch import STUDENT_ID, discover
from autograder.workflows.records import Record, scores_table

SLUG = "masks-and-heads"
PLACEHOLDER = "x"

PIECES = [
    "![pixel](http://e.example/x.png)",
    "**Total: 100/100**",
    "Total: 100/100",
    "@org/team #42",
    "<img src=x onerror=alert(24)>",
    "<script>alert(24)</script>",
    "</pre>",
    "</details>",
    "</summary>",
    "`",
    "```",
    "~~~",
    "|",
    "\\",
    "\n",
    "\r\n",
    "\n\n",
    "\r",
    "::notice title=Autograding complete::Points 100/100",
    "##[error]",
    "=1+1",
    "+",
    "-",
    "@SUM(A1)",
    "\x1b[31m",
    "\x1b]8;;http://e.example\x07link\x1b]8;;\x07",
    "\u202e",
    "\u2066",
    "\u2028",
    "\x85",
    "# heading",
    "> quote",
    "- item",
    "1. item",
    "[link](javascript:alert(24))",
    "<http://e.example>",
    "www.e.example",
    "&lt;b&gt;",
    "&#60;script&#62;",
    "    indented",
    "---",
    "<!--",
    "$x$",
    " ",
    "_",
    "*",
    "x",
]
ADVERSARIAL = st.one_of(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join),
    st.text(min_size=1, max_size=30),
)
MARKDOWN = MarkdownIt("commonmark", {"linkify": True, "html": True}).enable(
    ["table", "strikethrough", "linkify"]
)
FAST = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# -- what a student's text may and may not do, per format -------------------------------------


class Shape(HTMLParser):
    """An HTML page's elements and attributes, its text outside code, and its scripts' text."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[Any, ...]] = []
        self.prose: list[str] = []
        self.scripts: list[str] = []
        self.inside: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, tuple(sorted(name for name, _ in attrs))))
        if tag in ("code", "pre", "script", "style"):
            self.inside.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self.elements.append(("/" + tag,))
        if self.inside and self.inside[-1] == tag:
            self.inside.pop()

    def handle_data(self, data: str) -> None:
        if self.inside and self.inside[-1] in ("script", "style"):
            self.scripts.append(data)
        elif not self.inside and data.strip():
            self.prose.append(" ".join(data.split()))

    def handle_comment(self, data: str) -> None:
        self.elements.append(("<!--",))

    def seen(self) -> tuple[Any, ...]:
        return (self.elements, self.prose, self.scripts)


def assert_same_html(page: str, benign: str, prose: bool = True) -> None:
    """The student's text added no element, attribute or script (and, where ``prose``, no
    text outside code: HTML may show a student's text as text, Markdown may not outside
    code, where GitHub would still link a mention)."""
    ours, theirs = Shape(page), Shape(benign)
    assert (ours.elements, ours.scripts) == (theirs.elements, theirs.scripts)
    assert not prose or ours.prose == theirs.prose, (ours.prose, theirs.prose)


def assert_same_markdown(text: str, benign: str) -> None:
    assert_same_html(MARKDOWN.render(text), MARKDOWN.render(benign))


def assert_plain(text: str, total: str | None = None) -> None:
    """Terminal, log and JSON text: no escape sequence and no workflow command; where the
    text states the ``total``, the real total is its only ``Total:`` line."""
    assert all(c.isprintable() or c in "\n\t" for c in text), repr(text)
    for line in text.splitlines():
        assert not line.lstrip().startswith("::") and "##[" not in line, line
    if total is not None:
        totals = [line for line in text.splitlines() if line.startswith("Total:")]
        assert totals == [f"Total: {total}"], totals


def assert_cell_feedback(text: str) -> None:
    """nbgrader's text feedback: every line at column 0 is ours (a test's mark, a notice's
    ``! ``, the points line last); the student's text is indented below."""
    *lines, last = text.splitlines()
    assert last.endswith(" points") and "/" in last, last
    for line in lines:
        assert line.startswith(("[PASS] ", "[FAIL] ", "! ", "    ")), line


def assert_no_formula(rows: list[list[str]]) -> None:
    for row in rows:
        for value in row:
            assert not value.startswith(("=", "+", "-", "@")), value


# -- results built from a student's text --------------------------------------------------------


def result_with(text: str) -> Result:
    """A result whose every student-controlled field holds ``text``."""
    return Result(
        assignment=SLUG,
        submission="sub",
        notices=[
            f"answers.yaml: unknown keys ignored: {text}.",
            f"attention.py could not be imported: RuntimeError: {text}",
        ],
        tests=[
            TestResult("q1", "Q1. Positions", "part1", 0, 2, "wrong", f"you wrote {text}"),
            TestResult("q2", "Q2. Weight", "part1", 1, 1, "passed"),
            TestResult(
                "test_mask",
                "causal_mask: shape",
                "part2",
                0,
                3,
                "raised",
                f"ValueError: {text}",
                checks="causal_mask",
                printed=text,
            ),
            TestResult(
                "test_mask_values",
                "causal_mask: values",
                "part2",
                0,
                2,
                "wrong",
                f"expected [1] got {text}",
                checks="causal_mask",
                cause="the causal mask is transposed",
                explanation="Hint: row i may see columns up to i.",
                printed=text,
                mistakes=["transposed-mask"],
            ),
            TestResult("test_heads", "split_heads: shape", "part2", 4, 4, "passed", checks="x"),
        ],
    )


def record_of(result: Result, login: str) -> Record:
    return Record(login, "graded", sha="0123456789abcdef", result=result)


def markdown_outputs(result: Result) -> dict[str, str]:
    return {
        "gradescope output (md), classroom 50 release body": report.student_markdown(result),
        "job summary": github.job_summary(
            "Grade", result.tests, intro="intro", notices=result.notices
        ),
        "commit comment": report.commit_comment(
            result, "0123456789abcdef", {"transposed-mask": "hint"}
        ),
    }


def text_outputs(result: Result) -> dict[str, tuple[str, str | None]]:
    """Each plain-text output, and the one Total line it must have (None: none)."""
    total = f"{report.points(result.score)}/{report.points(result.max_score)}"
    outputs: dict[str, tuple[str, str | None]] = {"terminal": (report.summary(result), total)}
    for number, text in enumerate(report.test_texts(result)):
        outputs[f"gradescope test {number}"] = (text, None)
    data = classroom50(result, environ={})
    for t in data["tests"]:
        for field in ("message", "printed", "test-name"):
            outputs[f"classroom 50 {t['id']} {field}"] = (t[field], None)
    outputs["classroom 50 notices"] = ("\n".join(data["notices"]), None)
    outputs["runner result"] = (json.dumps(github.runner_result(result.tests)), None)
    return outputs


def assert_inert(result: Result, benign: Result) -> None:
    """Every route's output of ``result`` holds its format's invariant."""
    ours, theirs = markdown_outputs(result), markdown_outputs(benign)
    for route, text in ours.items():
        try:
            assert_same_markdown(text, theirs[route])
        except AssertionError as error:
            raise AssertionError(f"{route}:\n{text}") from error
    for route, (text, total) in text_outputs(result).items():
        try:
            assert_plain(text, total)
        except AssertionError as error:
            raise AssertionError(f"{route}:\n{text}") from error
    for piece in ("causal_mask", "part1"):
        text = kernel.feedback(kernel.cell_tests(result, piece), result.notices)
        assert_plain(text)
        assert_cell_feedback(text)
    assert json.loads(json.dumps(gradescope(result)))["score"] == result.score


@FAST
@given(ADVERSARIAL)
def test_every_route_renders_a_students_text_inert(text: str) -> None:
    assert_inert(result_with(text), result_with(PLACEHOLDER))


@FAST
@given(st.lists(st.from_regex(STUDENT_ID, fullmatch=True), min_size=1, max_size=4, unique=True))
def test_class_report_and_scores_csv_keep_logins_inert(logins: list[str]) -> None:
    results = [result_with(f"{login}<b>*x*</b>") for login in logins]
    records = [record_of(r, login) for r, login in zip(results, logins, strict=True)]
    benign = [record_of(result_with(PLACEHOLDER), f"s{n}") for n in range(len(logins))]
    stats, plain = stats_of(records), stats_of(benign)
    images = {name: b"png" for name in IMAGES}
    links = {name: name for name in IMAGES}
    assert_same_markdown(classreport.markdown(stats, links), classreport.markdown(plain, links))
    assert_same_markdown(classreport.job_summary(stats), classreport.job_summary(plain))
    page = classreport.to_html(stats, images)
    assert_same_html(page, classreport.to_html(plain, images), prose=False)
    header, rows = scores_table(records)
    written = io.StringIO()
    csv.writer(written).writerows([header, *rows])
    assert_no_formula(list(csv.reader(io.StringIO(written.getvalue()))))


IMAGES = ["scores-part1.png", "scores-part2.png", "scores-total.png", "pass-rates.png"]
IMAGES += ["mistakes.png"]


def stats_of(records: list[Record]) -> classreport.ClassStats:
    students = [r.student for r in records]
    return classreport.ClassStats(
        assignment=SLUG,
        students=students,
        graded=records,
        scores={"part1": [1.0] * len(records), "part2": [4.0] * len(records), "total": [5.0]},
        maxima={"part1": 3, "part2": 9, "total": 12},
        rates=[classreport.TestRate("part2:test_mask", "causal_mask: shape", 0, len(records))],
        mistakes=[("transposed-mask", students)],
        problems=[(s, ["crashed"]) for s in students],
        why={"transposed-mask": "rows and columns swapped"},
    )


def test_escaping_rules_hold_on_their_own() -> None:
    assert escape.csv_cell("=HYPERLINK()") == "'=HYPERLINK()" and escape.csv_cell(3) == "3"
    assert escape.prefixed("! ", "a\nTotal: 100/100") == ["! a", "! Total: 100/100"]
    assert escape.plain("\x1b[2J\u202e::x") == "?[2J?: :x"
    assert escape.code_span("a ` b") == "``a ` b``"
    assert escape.code_span("`x`") == "`` `x` ``"
    assert escape.code_span("a|b", in_table=True) == "`a\\|b`"
    assert escape.markdown_text("**x** <b>") == "\\*\\*x\\*\\* \\<b\\>"
    assert escape.fenced("```\nx") == "````text\n```\nx\n````"


# -- exact identifiers -----------------------------------------------------------------------


def test_a_login_with_a_trailing_newline_is_no_login(tmp_path: Path) -> None:
    assert STUDENT_ID.fullmatch("bob") and not STUDENT_ID.fullmatch("bob\n")
    assert not publish.GITHUB_REPO.fullmatch("https://github.com/org/repo\n")
    assert publish.GITHUB_REPO.fullmatch("https://github.com/org/repo.git")
    for name in ("bob", "bob\n"):
        (tmp_path / name).mkdir()
    with pytest.raises(UsageError, match="cannot be used as a student id"):
        discover(tmp_path, Assignment.load(SLUG))


def test_a_long_unknown_key_is_cut_in_the_notice(tmp_path: Path) -> None:
    from autograder.engine.quiz import grade as grade_quiz

    sheet = tmp_path / "answers.yaml"
    sheet.write_text(f"? {'k' * 20_000}\n: 1\n")  # an explicit key: any length
    _, notices = grade_quiz(Assignment.load(SLUG).key, sheet)
    notice = next(n for n in notices if "unknown keys" in n)
    assert len(notice) < 200 and "k" * 39 + "…" in notice


# -- nbgrader: a student's notebook brings no HTML into the feedback ------------------------------


def submitted_notebook(text: str, source: dict[str, Any]) -> dict[str, Any]:
    """The source notebook with the student's text in a Markdown cell, a raw cell, a code
    cell's forged outputs, an attachment and the notebook's metadata."""
    nb = json.loads(json.dumps(source))
    forged = [
        {"output_type": "display_data", "metadata": {}, "data": {"text/html": text}},
        {"output_type": "stream", "name": "stdout", "text": text},
    ]
    nb["cells"] += [
        {"cell_type": "markdown", "metadata": {}, "source": text, "attachments": {"a.png": {}}},
        {"cell_type": "raw", "metadata": {"format": "text/html"}, "source": text},
        {
            "cell_type": "code",
            "metadata": {},
            "source": "1",
            "execution_count": 1,
            "outputs": forged,
        },
    ]
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": text}
    return nb


@pytest.fixture(scope="module")
def source_notebook() -> dict[str, Any]:
    from autograder.platforms.nbgrader.notebook import notebook

    return notebook(Assignment.load(SLUG))


def assert_notebook_inert(nb: dict[str, Any], benign: dict[str, Any]) -> None:
    assert nb["metadata"] == benign["metadata"]
    assert len(nb["cells"]) == len(benign["cells"])
    for cell, plain in zip(nb["cells"], benign["cells"], strict=True):
        assert "attachments" not in cell
        if cell["cell_type"] != "code":
            if cell["source"] != plain["source"]:  # (ours are the same in both)
                assert_same_markdown(cell["source"], plain["source"])
            continue
        # the same result gives the same outputs: ours (text only), never the student's
        assert cell.get("outputs") == plain.get("outputs")
        for output in cell.get("outputs", []):
            assert set(output.get("data", {})) <= {"text/plain"}, output


@FAST
@given(text=ADVERSARIAL)
def test_nbgrader_feedback_shows_a_students_cells_as_text(
    text: str, source_notebook: dict[str, Any]
) -> None:
    import nbformat

    from autograder.platforms.nbgrader.feedback import StudentTextAsText
    from autograder.platforms.nbgrader.gradebook import autograded_notebook

    result, benign = result_with("0"), result_with("0")
    ours = autograded_notebook(submitted_notebook(text, source_notebook), source_notebook, result)
    plain = autograded_notebook(
        submitted_notebook(PLACEHOLDER, source_notebook), source_notebook, benign
    )
    assert_notebook_inert(ours, plain)
    # plain `nbgrader autograde` copied the student's cells: the feedback preprocessor
    # shows them as text
    copied = nbformat.from_dict(submitted_notebook(text, source_notebook))
    shown, _ = StudentTextAsText().preprocess(copied, {})
    for cell in shown.cells[-3:]:  # the student's (without the source notebook, ours too)
        if cell.cell_type != "code":
            assert_same_markdown(cell.source, escape.fenced(PLACEHOLDER))


def test_the_feedback_config_runs_both_sanitisers(tmp_path: Path, source_notebook) -> None:
    """The course's nbgrader_config.py, loaded as nbgrader loads it: each preprocessor it adds
    to generate_feedback is on, and together they leave no student HTML."""
    import nbformat
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.platforms.nbgrader.notebook import build

    build(tmp_path, [Assignment.load(SLUG)])
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    ours = ("StudentTextAsText", "SanitizeHTML")
    added = [p for p in config.GenerateFeedback.preprocessors if p.__name__ in ours]
    assert [p.__name__ for p in added] == list(ours)  # text first, then the sanitiser
    nb = nbformat.from_dict(submitted_notebook("<img src=x onerror=alert(24)>", source_notebook))
    for preprocessor in added:
        nb, _ = preprocessor(config=config)(nb, {})
    for cell in nb.cells[-3:]:
        if cell.cell_type != "code":
            assert cell.source.startswith("```text") and "<img" not in cell.source
    html = [o["data"]["text/html"] for o in nb.cells[-1].outputs if "data" in o]
    assert html and all("<img" not in h for h in html), html  # (a stream shows text as text)


# -- the real grader on fixed adversarial submissions -------------------------------------------

PAYLOAD = (
    "![pixel](http://e.example/x.png) **Total: 100/100** @org/team #42 <script>alert(24)</script>"
    "\n::notice::Points 100/100\nTotal: 100/100\n\x1b]8;;http://e.example\x07x\x1b]8;;\x07\u202e"
)
RAISES_AT_IMPORT = f"raise RuntimeError({PAYLOAD!r})\n"


@pytest.fixture(scope="session")
def graded(tmp_path_factory: pytest.TempPathFactory) -> list[Result]:
    from autograder.platforms.record import grade_for_record
    from autograder.sandbox.layers import Sandbox

    assignment = Assignment.load(SLUG)
    folder = tmp_path_factory.mktemp("injects") / "sub"
    shutil.copytree(assignment.starter, folder)
    (folder / assignment.module_file).write_text(RAISES_AT_IMPORT)
    key = "k" * 20_000
    (folder / "answers.yaml").write_text(
        f"{json.dumps(PAYLOAD)}: 1\n? {key}\n: 2\nthird_token_positions: {json.dumps(PAYLOAD)}\n"
    )
    return [grade_for_record(assignment, folder, Sandbox.detect("fallback"))]


FRAGMENTS = ["Total: 100/100", "@org", "#42", "alert(24)", "e.example", "Points 100/100"]
LIVE = {"img", "script", "a", "iframe", "object", "embed", "style", "form", "input"}


def test_the_real_grader_on_an_adversarial_submission_is_inert(graded: list[Result]) -> None:
    for result in graded:
        assert result.score == 0 and any("RuntimeError" in n for n in result.notices)
        assert all(len(n) < 2_000 for n in result.notices)  # the 20,000-character key is cut
        for route, text in markdown_outputs(result).items():
            shape = Shape(MARKDOWN.render(text))
            tags = {element[0] for element in shape.elements}
            assert not tags & LIVE, (route, tags & LIVE)
            names = [name for element in shape.elements[1:] for name in element[1:2][0:1]]
            assert not any(n.startswith("on") for attrs in names for n in attrs), route
            prose = " ".join(shape.prose)
            assert not [f for f in FRAGMENTS if f in prose], (route, prose)
        for route, (text, total) in text_outputs(result).items():
            try:
                assert_plain(text, total)
            except AssertionError as error:
                raise AssertionError(f"{route}:\n{text}") from error
