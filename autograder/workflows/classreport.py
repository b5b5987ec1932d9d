"""The class report: how a whole class did and what it misunderstood, for the instructor.

``autograder report DIR`` reads a grade-batch (or merge) output folder and writes
``DIR/report.md`` (images in ``DIR/report-images/``) and ``DIR/report.html`` (one file, images
inlined, works offline): score histograms per part and in total (whole students on the count
axes), the pass rate of every hidden test and quiz question (worst first), the most frequent
diagnosed mistakes by title (the id beside it, for instructors) with their "why" and the
students who made each, and the submissions that timed out, crashed, returned invalid output
or were not graded. Instructor's eyes only: it names students and quotes the catalogue.
"""

from __future__ import annotations

import argparse
import base64
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.course.assignment import Assignment
from autograder.engine.mistakes import load_catalogue
from autograder.errors import ExitCode, UsageError, not_installed
from autograder.result import atomic_write_text
from autograder.standalone.escape import code_span, html_text, markdown_text
from autograder.workflows import clusters, insight
from autograder.workflows.command import Command
from autograder.workflows.gradebook import course_of
from autograder.workflows.records import (
    Record,
    mistakes,
    open_results,
    problems,
    stored_records,
    test_column,
)

IMAGES = "report-images"
PART_TITLES = {"part1": "Part 1 (by hand)", "part2": "Part 2 (code)", "total": "Total"}


@dataclass
class TestRate:
    column: str  # part:id
    name: str
    passed: int
    taken: int

    @property
    def rate(self) -> float:
        return self.passed / self.taken if self.taken else 0.0


@dataclass
class ClassStats:
    assignment: str
    students: list[str]
    graded: list[Record]  # the records with a grade
    scores: dict[str, list[float]]  # part1, part2, total -> one score per graded student
    maxima: dict[str, float]
    rates: list[TestRate]  # worst first
    mistakes: list[tuple[str, list[str]]]  # (mistake, students), most frequent first
    problems: list[tuple[str, list[str]]]  # (student, what went wrong)
    why: dict[str, str] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)  # mistake id -> what a person reads

    def title(self, mistake: str) -> str:
        """A mistake's title, or its id where the catalogue gives none (or is not here)."""
        return self.titles.get(mistake, mistake)

    # with a course file: (student, days late, grace days used, penalty %), the late ones
    lateness: list[tuple[str, int, int, float]] = field(default_factory=list)


def gather(out: Path) -> ClassStats:
    out = Path(out)
    state = open_results(out)
    records = stored_records(out, state)
    if not records:
        raise UsageError(f"{out} holds no graded results yet")
    graded = [r for r in records if r.graded]
    scores: dict[str, list[float]] = {}
    maxima: dict[str, float] = {}
    rates: dict[str, TestRate] = {}
    for record in graded:
        for part in sorted({t.part for t in record.tests}):
            tests = [t for t in record.tests if t.part == part]
            scores.setdefault(part, []).append(sum(t.score for t in tests))
            maxima[part] = sum(t.max_score for t in tests)
        scores.setdefault("total", []).append(record.score)
        maxima["total"] = record.max_score
        for test in record.tests:
            column = test_column(test)
            rate = rates.setdefault(column, TestRate(column, test.name, 0, 0))
            rate.taken += 1
            rate.passed += test.passed
    who: dict[str, list[str]] = {}
    for record in graded:
        for name in mistakes(record):
            who.setdefault(name, []).append(record.student)
    counted = Counter({name: len(students) for name, students in who.items()})
    flagged = [(r.student, problems(r)) for r in records]
    why, titles = {}, {}
    try:
        catalogue = load_catalogue(Assignment.load(state["assignment"]).suite / "mistakes.py")
        why = {v.name: v.why for v in catalogue.mistakes}
        titles = {v.name: v.title for v in catalogue.mistakes if v.titled}
    except UsageError:
        pass  # an assignment this checkout does not have: the report goes without the whys
    course = course_of(state)
    charge = course.charger(state["assignment"]) if course else None
    late = [(r.student, charge(r.student)) for r in records] if charge else []
    return ClassStats(
        lateness=[(s, c.late_days, c.grace_used, c.percent) for s, c in late if c.late_seconds],
        assignment=state["assignment"],
        students=[r.student for r in records],
        graded=graded,
        scores=scores,
        maxima=maxima,
        rates=sorted(rates.values(), key=lambda r: (r.rate, r.column)),
        mistakes=[
            (name, sorted(who[name], key=str.casefold))
            for name, _ in sorted(counted.items(), key=lambda item: (-item[1], item[0]))
        ],
        problems=[(student, found) for student, found in flagged if found],
        why=why,
        titles=titles,
    )


# -- images (matplotlib, imported only here) -------------------------------------------------------


def new_figure(width: float, height: float) -> Any:
    """A figure drawn by the Agg backend, without pyplot's global state (imported late, so
    that other commands never pay for matplotlib)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise not_installed("matplotlib", "report", "the class report") from None

    figure = Figure(figsize=(width, height))
    FigureCanvasAgg(figure)
    return figure


def save(figure: Any, path: Path) -> bytes:
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=100, metadata={"Software": None})
    return path.read_bytes()


def counts_axis(axes: Any, axis: str) -> None:
    """Whole-number ticks on an axis that counts students: no 0.5 of a student."""
    from matplotlib.ticker import MaxNLocator

    getattr(axes, f"{axis}axis").set_major_locator(MaxNLocator(integer=True))


def histogram_figure(stats: ClassStats, part: str) -> Any:
    figure = new_figure(5, 3)
    axes = figure.add_subplot()
    top = stats.maxima.get(part, 0) or 1
    axes.hist(
        stats.scores.get(part, []), bins=10, range=(0, top), color="#4c72b0", edgecolor="white"
    )
    axes.set_title(f"{PART_TITLES.get(part, part)}: scores out of {top:g}")
    axes.set_xlabel("score")
    axes.set_ylabel("students")
    counts_axis(axes, "y")
    return figure


def pass_rates_figure(stats: ClassStats) -> Any:
    height = max(2.5, 0.28 * len(stats.rates) + 1)
    figure = new_figure(8, height)
    axes = figure.add_subplot()
    shown = list(reversed(stats.rates))  # barh draws bottom-up: the worst ends on top
    axes.barh([r.column for r in shown], [100 * r.rate for r in shown], color="#dd8452")
    axes.set_xlim(0, 100)
    axes.set_xlabel("students who passed (%)")
    axes.tick_params(axis="y", labelsize=7)
    # over the whole figure, not the axes: long test ids push the axes right, and a title
    # centred on them ran off the edge ("...worst firs")
    figure.suptitle("Pass rate per hidden test and quiz question, worst first")
    return figure


def mistakes_figure(stats: ClassStats) -> Any:
    shown = list(reversed(stats.mistakes[:15]))
    figure = new_figure(7, max(2.5, 0.35 * len(shown) + 1))
    axes = figure.add_subplot()
    axes.barh([name for name, _ in shown], [len(who) for _, who in shown], color="#c44e52")
    axes.set_xlabel("students")
    counts_axis(axes, "x")
    figure.suptitle("Most frequent diagnosed mistakes")
    return figure


def draw(stats: ClassStats, folder: Path) -> dict[str, bytes]:
    """Every image, by file name: the PNG bytes written to ``folder``."""
    figures = {f"scores-{part}.png": histogram_figure(stats, part) for part in stats.scores}
    if stats.rates:
        figures["pass-rates.png"] = pass_rates_figure(stats)
    if stats.mistakes:
        figures["mistakes.png"] = mistakes_figure(stats)
    return {name: save(figure, folder / name) for name, figure in figures.items()}


# -- text ---------------------------------------------------------------------------------------


def markdown(stats: ClassStats, image: dict[str, str]) -> str:
    """The report in Markdown; ``image`` maps an image file name to where it is linked from."""
    total = stats.scores.get("total", [])
    lines = [f"# {markdown_text(stats.assignment)}: class report", ""]
    lines.append(
        f"{len(stats.students)} students, {len(stats.graded)} graded"
        + (
            f"; total mean {statistics.mean(total):.1f}, median {statistics.median(total):g} "
            f"of {stats.maxima['total']:g}"
            if total
            else ""
        )
        + "."
    )
    lines += ["", "## Score distribution", ""]
    lines += [f"![{PART_TITLES.get(p, p)}]({image[f'scores-{p}.png']})" for p in stats.scores]
    lines += lateness_markdown(stats)
    lines += ["", "## Pass rate per test, worst first", ""]
    if stats.rates:
        lines += [f"![pass rates]({image['pass-rates.png']})", ""]
        lines += ["| test | passed | rate |", "|---|---|---|"]
        lines += [
            f"| {code_span(r.column, in_table=True)} {markdown_text(r.name)} "
            f"| {r.passed}/{r.taken} | {100 * r.rate:.0f}% |"
            for r in stats.rates
        ]
    lines += ["", "## Most frequent mistakes", ""]
    if stats.mistakes:
        lines += [f"![mistakes]({image['mistakes.png']})", ""]
        lines += ["| mistake | id | students | why | who |", "|---|---|---|---|---|"]
        for name, who in stats.mistakes:
            title, why = (markdown_text(t) for t in (stats.title(name), stats.why.get(name, "")))
            students = ", ".join(code_span(w, in_table=True) for w in who)
            mistake = code_span(name, in_table=True)
            lines.append(f"| {title} | {mistake} | {len(who)} | {why} | {students} |")
    else:
        lines.append("No known mistake was diagnosed.")
    lines += ["", "## Timed out, crashed, invalid output or not graded", ""]
    if stats.problems:
        lines += [
            f"- {code_span(student)}: {markdown_text(', '.join(found))}"
            for student, found in stats.problems
        ]
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


LATENESS_HEADER = ["student", "days late", "grace days used", "penalty"]


def lateness_rows(stats: ClassStats) -> list[list[str]]:
    return [[s, f"{d}", f"{g}", f"{p:g}%"] for s, d, g, p in stats.lateness]


def lateness_markdown(stats: ClassStats) -> list[str]:
    """Beside the histograms: who was late, the grace days spent and the penalty (the
    histograms show raw scores)."""
    if not stats.lateness:
        return []
    lines = ["", "## Lateness", "", "Scores above are before the late policy.", ""]
    lines += ["| " + " | ".join(LATENESS_HEADER) + " |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in lateness_rows(stats)]
    return lines


def to_html(stats: ClassStats, images: dict[str, bytes], extra: str = "") -> str:
    """One self-contained page: images inlined as data URIs, no script, nothing fetched."""
    total = stats.scores.get("total", [])

    def img(name: str, alt: str) -> str:
        data = base64.b64encode(images[name]).decode()
        return f'<img alt="{html_text(alt)}" src="data:image/png;base64,{data}">'

    def table(header: list[str], rows: list[list[str]]) -> str:
        head = "".join(f"<th>{html_text(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        return f"<table><tr>{head}</tr>{body}</table>"

    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html_text(stats.assignment)}: class report</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;"
        "vertical-align:top}img{max-width:100%}</style></head><body>",
        f"<h1>{html_text(stats.assignment)}: class report</h1>",
        f"<p>{len(stats.students)} students, {len(stats.graded)} graded"
        + (
            f"; total median {statistics.median(total):g} of {stats.maxima['total']:g}"
            if total
            else ""
        )
        + ".</p>",
        "<h2>Score distribution</h2>",
        *(img(f"scores-{p}.png", PART_TITLES.get(p, p)) for p in stats.scores),
        *(
            ["<h2>Lateness</h2>", table(LATENESS_HEADER, lateness_rows(stats))]
            if stats.lateness
            else []
        ),
        "<h2>Pass rate per test, worst first</h2>",
    ]
    if stats.rates:
        parts.append(img("pass-rates.png", "pass rates"))
        parts.append(
            table(
                ["test", "passed", "rate"],
                [
                    [f"{r.column} {r.name}", f"{r.passed}/{r.taken}", f"{100 * r.rate:.0f}%"]
                    for r in stats.rates
                ],
            )
        )
    parts.append("<h2>Most frequent mistakes</h2>")
    if stats.mistakes:
        parts.append(img("mistakes.png", "mistakes"))
        parts.append(
            table(
                ["mistake", "id", "students", "why", "who"],
                [
                    [stats.title(n), n, str(len(w)), stats.why.get(n, ""), ", ".join(w)]
                    for n, w in stats.mistakes
                ],
            )
        )
    else:
        parts.append("<p>No known mistake was diagnosed.</p>")
    parts.append("<h2>Timed out, crashed, invalid output or not graded</h2>")
    parts.append(
        table(["student", "what"], [[s, ", ".join(f)] for s, f in stats.problems])
        if stats.problems
        else "<p>None.</p>"
    )
    return "\n".join([*parts, extra]) + "\n</body></html>\n"


def job_summary(stats: ClassStats, buckets: int = 10) -> str:
    """A short Markdown summary for an Actions run page: the distribution of totals and the
    most frequent mistakes, in counts only (no student is named)."""
    total, top = stats.scores.get("total", []), stats.maxima.get("total", 0) or 1
    title = markdown_text(stats.assignment)
    lines = [f"### {title}: {len(stats.graded)} of {len(stats.students)} graded", ""]
    if total:
        lines += [
            f"Mean {statistics.mean(total):.1f}, median {statistics.median(total):g} of {top:g}.",
            "",
            "| total | students |",
            "|---|---|",
        ]
        width = top / buckets
        counts = Counter(min(int(score // width), buckets - 1) for score in total)
        for b in range(buckets):
            closing = "]" if b == buckets - 1 else ")"
            lines.append(f"| [{b * width:g}, {(b + 1) * width:g}{closing} | {counts[b]} |")
    lines += ["", "| most frequent mistake | students |", "|---|---|"]
    lines += [
        f"| {code_span(name, in_table=True)} | {len(who)} |" for name, who in stats.mistakes[:10]
    ] or ["| none | 0 |"]
    if stats.problems:
        lines += ["", f"{len(stats.problems)} submission(s) timed out, crashed or misbehaved."]
    return "\n".join(lines) + "\n"


def write(out: Path, min_cluster: int = clusters.MIN_SIZE) -> ClassStats:
    """Write report.md, report-images/*.png and report.html into the batch folder ``out``,
    with the sections of workflows/insight.py (unexplained mistakes, similar submissions)."""
    out = Path(out)
    stats = gather(out)
    images = draw(stats, out / IMAGES)
    extra = insight.sections(out, min_cluster)
    text = markdown(stats, {n: f"{IMAGES}/{n}" for n in images}) + extra.markdown
    atomic_write_text(out / "report.md", text)
    atomic_write_text(out / "report.html", to_html(stats, images, extra.html))
    return stats


# -- the command -----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    say_written(Path(args.folder), args.min_cluster, args.summary_to)
    return ExitCode.OK


def say_written(folder: Path, min_cluster: int = clusters.MIN_SIZE, summary_to: str = "") -> None:
    """Write the report of ``folder`` and say where; with ``summary_to``, append the job
    summary there too."""
    stats = write(folder, min_cluster)
    print(f"class report for {len(stats.students)} students: {folder / 'report.html'}")
    if summary_to:
        with open(summary_to, "a") as summary:
            summary.write(job_summary(stats))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", metavar="DIR", help="a grade-batch or merge output folder")
    p.add_argument(
        "--summary-to",
        metavar="FILE",
        help="also append a short Markdown summary (distribution, frequent mistakes, no names) "
        "to FILE, e.g. $GITHUB_STEP_SUMMARY",
    )


COMMAND = Command(
    "report",
    help="write the class report (Markdown and HTML with charts) for a batch folder",
    description="Read a grade-batch or merge output folder DIR and write DIR/report.md "
    "(images in DIR/report-images/) and DIR/report.html (one file, works offline): score "
    "histograms, pass rate per test worst first, the most frequent diagnosed mistakes with "
    "who made them, and the submissions that timed out, crashed or misbehaved. For the "
    "instructor only: it names students.",
    add_arguments=add_arguments,
    parents=(clusters.MIN_CLUSTER,),
    run=run,
)
