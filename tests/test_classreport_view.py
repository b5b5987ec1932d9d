"""The class report as a browser shows it (issue 23): whole students on count axes, chart titles
that fit in their image, and the mistakes table with titles, ids beside them.

Built from small hand-made statistics, so no class has to be graded."""

from __future__ import annotations

import re

import pytest

from autograder.standalone import escape
from autograder.workflows import classreport
from autograder.workflows.classreport import ClassStats
from autograder.workflows.classreport import TestRate as Rate

pytest.importorskip("matplotlib")

LONG_IDS = [
    "part2:test_multi_head_attention_padding_is_ignored_causal",
    "part2:test_cross_attention_more_keys_and_an_empty_one",
    "part1:training_examples",
]


@pytest.fixture(scope="module")
def stats() -> ClassStats:
    return ClassStats(
        assignment="padding-and-batches",
        students=["ada", "bo"],
        graded=[],
        scores={"part1": [0.0, 30.0], "part2": [70.0, 35.5], "total": [0.0, 100.0]},
        maxima={"part1": 30.0, "part2": 70.0, "total": 100.0},
        rates=[Rate(c, c.split(":")[1], 1, 2) for c in LONG_IDS],
        mistakes=[("mask-after-softmax", ["ada"]), ("untitled-one", ["bo"])],
        problems=[],
        why={"mask-after-softmax": "The mask | came after."},
        titles={"mask-after-softmax": "the mask applied after the softmax"},
    )


def drawn(figure, tmp_path):
    """The figure laid out and rendered as the report saves it."""
    classreport.save(figure, tmp_path / "figure.png")
    return figure.canvas.get_renderer()


@pytest.mark.parametrize("part", ["part1", "part2", "total"])
def test_histograms_count_whole_students(stats, part, tmp_path):
    figure = classreport.histogram_figure(stats, part)
    drawn(figure, tmp_path)
    ticks = figure.axes[0].get_yticks()
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks


def test_the_mistakes_chart_counts_whole_students(stats, tmp_path):
    figure = classreport.mistakes_figure(stats)
    drawn(figure, tmp_path)
    ticks = figure.axes[0].get_xticks()
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks


def titles_of(figure) -> list:
    found = [axes.title for axes in figure.axes if axes.get_title()]
    if figure._suptitle is not None:  # matplotlib keeps the figure's title only here
        found.append(figure._suptitle)
    return found


@pytest.mark.parametrize("which", ["pass_rates", "mistakes", "histogram"])
def test_every_chart_title_fits_in_its_image(stats, which, tmp_path):
    figure = {
        "pass_rates": lambda: classreport.pass_rates_figure(stats),
        "mistakes": lambda: classreport.mistakes_figure(stats),
        "histogram": lambda: classreport.histogram_figure(stats, "total"),
    }[which]()
    renderer = drawn(figure, tmp_path)
    titles = titles_of(figure)
    assert titles, "every chart has a title"
    width = figure.bbox.width
    for title in titles:
        box = title.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= width, f"{title.get_text()!r} is cut off"


def test_the_pass_rate_title_is_whole(stats):
    figure = classreport.pass_rates_figure(stats)
    assert [t.get_text() for t in titles_of(figure)] == [
        "Pass rate per hidden test and quiz question, worst first"
    ]


def test_the_mistakes_table_shows_titles_with_ids_beside_them(stats):
    images = {name: f"report-images/{name}" for name in ("pass-rates.png", "mistakes.png")}
    images |= {f"scores-{p}.png": f"report-images/scores-{p}.png" for p in stats.scores}
    text = classreport.markdown(stats, images)
    rows = re.findall(r"^\| (.*?) \| `([a-z-]+)` \| (\d+) \| (.*) \| (.*) \|$", text, re.M)
    assert rows[0][:3] == ("the mask applied after the softmax", "mask-after-softmax", "1")
    # a | in the why stays inside its cell (our words are escaped as Markdown text)
    assert rows[0][3] == escape.markdown_text("The mask | came after.")
    assert rows[1][:2] == (escape.markdown_text("untitled-one"), "untitled-one")  # id for title
    assert "| mistake | id | students | why | who |" in text


def test_the_html_table_shows_titles_with_ids_beside_them(stats):
    names = ["pass-rates.png", "mistakes.png", *(f"scores-{p}.png" for p in stats.scores)]
    page = classreport.to_html(stats, dict.fromkeys(names, b"png"))
    assert "<th>mistake</th><th>id</th>" in page
    assert "<td>the mask applied after the softmax</td><td>mask-after-softmax</td>" in page
