"""autograder report: the class report's images exist, decode, and show the class's data."""

from __future__ import annotations

import base64
import copy
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from dozen import HOSTILE, MISTAKES, graded

from autograder.cli import main
from autograder.workflows import classreport
from autograder.workflows.records import Record, load_record

matplotlib_image = pytest.importorskip("matplotlib.image")
pytestmark = pytest.mark.timeout(900)  # shares the dozen's grading with test_batch


@pytest.fixture(scope="session")
def dozen(tmp_path_factory) -> tuple[Path, Path]:
    return graded(tmp_path_factory)


@pytest.fixture
def reported(dozen, tmp_path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(dozen[1], out)
    assert main(["report", str(out)]) == 0
    return out


def decode(data: bytes):
    return matplotlib_image.imread(io.BytesIO(data), format="png")


def test_images_exist_decode_and_are_not_blank(reported):
    names = sorted(p.name for p in (reported / "report-images").iterdir())
    assert names == [
        "mistakes.png",
        "pass-rates.png",
        "scores-part1.png",
        "scores-part2.png",
        "scores-total.png",
    ]
    for name in names:
        pixels = decode((reported / "report-images" / name).read_bytes())
        assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
        assert pixels.std() > 0.05, f"{name} is blank"


def test_markdown_shows_the_class(reported):
    text = (reported / "report.md").read_text()
    for name in ("scores-total.png", "pass-rates.png", "mistakes.png"):
        assert f"(report-images/{name})" in text
    rows = re.findall(r"^\| (.*?) \| `([a-z-]+)` \| (\d+) \| (.*) \| (.*) \|$", text, re.M)
    assert rows[0][0] == "the mask is applied after the softmax"  # the catalogue's title
    mistakes = [row[1:] for row in rows]  # beside it, the id
    assert mistakes[0][0] == "mask-after-softmax" and mistakes[0][1] == "3"
    who = ", ".join(f"`{s}`" for s in MISTAKES if MISTAKES[s] == "mask-after-softmax")
    assert mistakes[0][3] == who  # each login a code span: no @mention, no emphasis
    assert "softmax" in mistakes[0][2]  # the catalogue's why
    problems = text.split("## Timed out")[1]
    assert "- `Kim`: crashed" in problems and "- `gus`: crashed" in problems
    assert "- `ada`" not in problems
    rates = re.findall(r"^\| `(part[12]:\w+)` .* \| (\d+)/(\d+) \| (\d+)% \|$", text, re.M)
    assert len(rates) == len(
        json.loads((reported / "ada" / "results.json").read_text())["result"]["tests"]
    )
    percents = [int(r[3]) for r in rates]
    assert percents == sorted(percents)  # worst first
    assert all(int(r[2]) == 12 for r in rates)


def test_html_is_one_offline_file_with_the_same_images(reported):
    page = (reported / "report.html").read_text()
    assert "http://" not in page and "https://" not in page and "<script" not in page
    inlined = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(inlined) == 5
    on_disk = {p.read_bytes() for p in (reported / "report-images").iterdir()}
    assert {base64.b64decode(data) for data in inlined} == on_disk
    assert "mask-after-softmax" in page and "Kim" in page


def test_the_report_follows_the_data(dozen):
    """A class where everyone masks after the softmax: that mistake first, with every name;
    a class where all pass: every bar full, and the histogram moves to the top bin."""
    records = [load_record(dozen[1], s) for s in ["ada", *MISTAKES, *HOSTILE]]
    everyone = copy.deepcopy([r for r in records if r and r.graded])
    for record in everyone:
        record.tests[-1].mistakes = ["mask-after-softmax"]
    stats = stats_of(everyone)
    assert stats.mistakes[0] == (
        "mask-after-softmax",
        sorted((r.student for r in everyone), key=str.casefold),
    )
    perfect = copy.deepcopy([r for r in records if r and r.graded])
    for record in perfect:
        for test in record.tests:
            test.score, test.outcome = test.max_score, "passed"
    stats = stats_of(perfect)
    assert all(rate.rate == 1 for rate in stats.rates) and stats.scores["total"] == [100] * 11


def stats_of(records: list[Record]) -> classreport.ClassStats:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for record in records:
            record.write(out)
        students = [r.student for r in records]
        state = {"assignment": "masks-and-heads", "students": students}
        (out / "batch.json").write_text(json.dumps(state))
        stats = classreport.write(out)
        assert decode((out / "report-images" / "scores-total.png").read_bytes()).std() > 0.05
        return stats


def test_report_of_a_folder_that_is_not_a_batch(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "not a grade-batch output folder" in capsys.readouterr().err
