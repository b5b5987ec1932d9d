"""What the class got wrong that the catalogue does not know, and which submissions look
alike: the two instructor-only analyses of a graded class (a grade-batch or merge folder), as
the commands ``propose`` and ``similarity`` and as sections of the class report.

Everything here names students and quotes their code: it goes into the instructor's report
and files only, never into the job summary or anything published to students.
"""

from __future__ import annotations

import argparse
import html
from dataclasses import dataclass
from pathlib import Path

from autograder.course.assignment import Assignment
from autograder.errors import ExitCode, UsageError
from autograder.result import atomic_write_text
from autograder.workflows import clusters, similarity
from autograder.workflows.command import COURSE, Command, positive
from autograder.workflows.records import Record, open_results, stored_records

SIMILARITY_MD = "similarity.md"
SIMILARITY_HTML = "similarity.html"
SHOWN_SIDE_BY_SIDE = 3  # pairs shown side by side in the report itself


@dataclass
class Class:
    """A graded class as these analyses need it."""

    assignment: str
    records: list[Record]
    reference: str  # the reference module's text ("" when this checkout lacks it)
    starter: str  # the starter's code, subtracted from similarity


def load(out: Path, course: Path | str | None = None) -> Class:
    """The class graded in ``out``, its assignment's reference and starter from ``course``."""
    out = Path(out)
    state = open_results(out)
    records = stored_records(out, state)
    slug = str(state["assignment"])
    try:
        assignment = Assignment.load(slug, course)
        reference = assignment.reference_source
        starter = "\n".join(
            (assignment.starter / name).read_text()
            for name in assignment.code_files
            if (assignment.starter / name).is_file()
        )
    except (UsageError, OSError):
        reference = starter = ""  # an assignment this checkout lacks: fewer details, no crash
    return Class(slug, records, reference, starter)


# -- the commands -------------------------------------------------------------------------------


def propose(
    slug: str, out: Path, target: Path | None, min_size: int, course: Path | str | None = None
) -> tuple[Path, int]:
    """Write draft catalogue entries for the clusters of ``out`` (graded for ``slug``)."""
    graded = load(out, course)
    if graded.assignment != slug:
        raise UsageError(f"{out} holds {graded.assignment}, not {slug}")
    found = clusters.find(graded.records, graded.reference, min_size)
    path = clusters.write_proposals(target or Path(out) / clusters.PROPOSALS, slug, found)
    return path, len(found)


def write_similarity(
    out: Path, top: int = similarity.TOP, course: Path | str | None = None
) -> similarity.Similarity:
    """Write similarity.md (every pair, ranked) and similarity.html (the top pairs side by
    side) into the batch folder ``out``."""
    graded = load(out, course)
    found = similarity.of_records(graded.records, graded.starter)
    title = f"# {graded.assignment}: code similarity\n\n"
    atomic_write_text(
        Path(out) / SIMILARITY_MD, title + similarity.markdown(found, limit=len(found.pairs))
    )
    atomic_write_text(Path(out) / SIMILARITY_HTML, similarity.page(graded.assignment, found, top))
    return found


# -- the report's sections ----------------------------------------------------------------------


@dataclass
class Sections:
    markdown: str
    html: str


def sections(out: Path, min_size: int = clusters.MIN_SIZE) -> Sections:
    graded = load(out)
    found = clusters.find(graded.records, graded.reference, min_size)
    try:
        alike: similarity.Similarity | None = similarity.of_records(graded.records, graded.starter)
        why = ""
    except UsageError as error:
        alike, why = None, str(error)
    return Sections(
        clusters_markdown(found, min_size) + similarity_markdown(alike, why),
        clusters_html(found, min_size) + similarity_html(alike, why),
    )


CLUSTERS_TITLE = "Unexplained mistakes, clustered"


def cluster_intro(min_size: int) -> str:
    return (
        f"Groups of at least {min_size} students whose code fails the same tests of a function "
        "with the same wrong values, where no catalogued mistake and no generic error shape "
        "explains it: likely a misconception the catalogue does not know yet. "
        "`autograder propose` turns each into a draft catalogue entry."
    )


def clusters_markdown(found: list[clusters.Cluster], min_size: int) -> str:
    lines = ["", f"## {CLUSTERS_TITLE}", "", cluster_intro(min_size), ""]
    if not found:
        return "\n".join([*lines, "None found.", ""])
    for number, cluster in enumerate(found, 1):
        lines += [
            f"### {number}. `{cluster.function}`: {cluster.size} students",
            "",
            f"- fails: {', '.join(f'`{t}`' for t in cluster.tests)}",
            f"- who: {', '.join(cluster.students)}",
        ]
        if cluster.shape:
            lines.append(f"- a generic error shape fits some of the failures: {cluster.shape}")
        if cluster.lines:
            lines += [f"- where {cluster.representative} differs from the reference:", ""]
            lines += ["```python", *(f"{n:4d}  {text}" for n, text in cluster.lines), "```"]
        lines.append("")
    return "\n".join(lines)


def clusters_html(found: list[clusters.Cluster], min_size: int) -> str:
    parts = [f"<h2>{CLUSTERS_TITLE}</h2>", f"<p>{html.escape(cluster_intro(min_size))}</p>"]
    if not found:
        return "\n".join([*parts, "<p>None found.</p>"])
    for number, cluster in enumerate(found, 1):
        tests = ", ".join(f"<code>{html.escape(t)}</code>" for t in cluster.tests)
        parts += [
            f"<h3>{number}. <code>{html.escape(cluster.function)}</code>: "
            f"{cluster.size} students</h3>",
            f"<p>Fails {tests}.<br>Who: {html.escape(', '.join(cluster.students))}.</p>",
        ]
        if cluster.shape:
            parts.append(
                "<p>A generic error shape fits some of the failures: "
                f"{html.escape(cluster.shape)}</p>"
            )
        if cluster.lines:
            shown = "\n".join(f"{n:4d}  {text}" for n, text in cluster.lines)
            parts.append(
                f"<p>Where {html.escape(cluster.representative)} differs from the reference:</p>"
                f"<pre>{html.escape(shown)}</pre>"
            )
    return "\n".join(parts)


SIMILARITY_TITLE = "Similar submissions"


def similarity_markdown(found: similarity.Similarity | None, why: str) -> str:
    lines = ["", f"## {SIMILARITY_TITLE}", ""]
    if found is None:
        return "\n".join([*lines, f"Not compared: {why}.", ""])
    return "\n".join(lines) + similarity.markdown(found, limit=20)


def similarity_html(found: similarity.Similarity | None, why: str) -> str:
    head = f"<h2>{SIMILARITY_TITLE}</h2>"
    if found is None:
        return f"{head}<p>Not compared: {html.escape(why)}.</p>"
    rows = "".join(
        f"<tr><td>{rank}</td><td>{html.escape(p.first)}, {html.escape(p.second)}</td>"
        f"<td>{p.score:.2f}</td><td>{p.shares[0]:.2f}, {p.shares[1]:.2f}</td></tr>"
        for rank, p in enumerate(found.pairs[:20], 1)
    )
    table = (
        f"<table><tr><th>rank</th><th>students</th><th>score</th><th>shares</th></tr>{rows}</table>"
        if rows
        else "<p>No two submissions share code beyond the starter.</p>"
    )
    return (
        f"{head}<style>{similarity.STYLE}</style>{table}"
        f"{similarity.side_by_side(found, SHOWN_SIDE_BY_SIDE)}"
    )


# -- the command -----------------------------------------------------------------------------------


def run_propose(args: argparse.Namespace) -> int:
    target = Path(args.out) if args.out else None
    path, count = propose(
        args.assignment, Path(args.results), target, args.min_cluster, args.course
    )
    print(f"{count} draft catalogue entries, to review before use: {path}")
    return ExitCode.OK


def add_propose_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("assignment", help="the assignment the class was graded for")
    p.add_argument("results", metavar="RESULTS", help="a grade-batch or merge output folder")
    p.add_argument(
        "--out",
        metavar="FILE",
        help=f"where the drafts go (default: RESULTS/{clusters.PROPOSALS}; never a suite)",
    )


def run_similarity(args: argparse.Namespace) -> int:
    found = write_similarity(Path(args.results), args.top, args.course)
    print(similarity.CAVEAT)
    for rank, pair in enumerate(found.top(args.top), 1):
        print(f"{rank:3d}. {pair.score:.2f}  {pair.first}  {pair.second}")
    print(
        f"{len(found.pairs)} pairs ranked in {found.seconds:.1f} s: {Path(args.results)}/"
        f"{SIMILARITY_MD}, side by side in {SIMILARITY_HTML}"
    )
    return ExitCode.OK


def add_similarity_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="RESULTS", help="a grade-batch or merge output folder")
    p.add_argument(
        "--top",
        type=positive,
        default=similarity.TOP,
        metavar="N",
        help="pairs printed and shown side by side (default: %(default)s)",
    )


PROPOSE = Command(
    "propose",
    help="draft catalogue entries from the clusters of unexplained mistakes of a class",
    description="Read a grade-batch or merge output folder RESULTS of ASSIGNMENT, find the "
    "clusters of students who fail the same tests of a function with the same wrong values "
    "that no catalogued mistake or generic error shape explains, and write one draft "
    "catalogue entry per cluster (the representative student's function, with a name, "
    "replaces, and a title, why and hint to fill in) to a file for review, never into the "
    "suite. Once reviewed and added to the suite, `check` validates it.",
    add_arguments=add_propose_arguments,
    parents=(clusters.MIN_CLUSTER, COURSE),
    run=run_propose,
)
SIMILARITY = Command(
    "similarity",
    help="rank every pair of submissions of a class by code similarity (instructor only)",
    description="Compare every pair of submissions of a grade-batch or merge output folder "
    "RESULTS with copydetect (winnowing over normalised tokens), the starter code "
    "subtracted, and write RESULTS/similarity.md (every pair that shares code, ranked, with "
    "scores) and RESULTS/similarity.html (the top pairs side by side, matching regions "
    "marked). A high score is a signal for a person to look at, not a verdict. It names "
    "students: never publish it.",
    add_arguments=add_similarity_arguments,
    parents=(COURSE,),
    run=run_similarity,
)
