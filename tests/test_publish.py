"""autograder publish --dry-run: the exact requests, checked against GitHub's OpenAPI operation."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
from dozen import graded
from hostile import SLUG

from autograder.cli import main
from autograder.course.assignment import Assignment
from autograder.workflows import records

OPERATION = json.loads(
    (Path(__file__).parent / "openapi" / "create-commit-comment.json").read_text()
)
pytestmark = pytest.mark.timeout(900)  # shares the dozen's grading with test_batch


@pytest.fixture(scope="session")
def dozen(tmp_path_factory) -> tuple[Path, Path]:
    return graded(tmp_path_factory)


@pytest.fixture
def posted(dozen, tmp_path) -> tuple[Path, list[dict]]:
    """The dozen's results as if collected from GitHub (each with a SHA), published dry."""
    out = tmp_path / "out"
    shutil.copytree(dozen[1], out)
    for i, path in enumerate(sorted(out.glob("*/results.json"))):
        data = json.loads(path.read_text())
        data["batch"]["sha"] = f"{i:x}" * 40
        path.write_text(json.dumps(data))
    requests = tmp_path / "requests.jsonl"
    assert main(["publish", str(out), "--org", "course-org", "--dry-run", str(requests)]) == 0
    return out, [json.loads(line) for line in requests.read_text().splitlines()]


def path_pattern() -> re.Pattern:
    """The operation's path template, each {parameter} one path segment."""
    template = re.escape(OPERATION["path"])
    for parameter in OPERATION["parameters"]:
        assert parameter["in"] == "path" and parameter["required"]
        template = template.replace(re.escape("{" + parameter["name"] + "}"), r"[^/]+")
    return re.compile(template + "$")


def test_requests_match_the_create_commit_comment_operation(posted):
    out, requests = posted
    assert len(requests) == 12
    schema = OPERATION["requestBody"]["content"]["application/json"]["schema"]
    pattern = path_pattern()
    for request in requests:
        assert set(request) == {"method", "path", "body"}
        assert request["method"].lower() == OPERATION["method"]
        assert pattern.match(request["path"]), request["path"]
        jsonschema.validate(request["body"], schema)
    owners = {r["path"].split("/")[2] for r in requests}
    assert owners == {"course-org"}
    ada = next(r for r in requests if "/masks-and-heads-ada/" in r["path"])
    sha = json.loads((out / "ada" / "results.json").read_text())["batch"]["sha"]
    assert ada["path"] == f"/repos/course-org/masks-and-heads-ada/commits/{sha}/comments"
    assert "100/100 points" in ada["body"]["body"]


def test_a_wrong_schema_body_would_be_caught():
    schema = OPERATION["requestBody"]["content"]["application/json"]["schema"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"comment": "no body"}, schema)
    assert not path_pattern().match("/repos/o/r/commits/abc/extra/comments")


def test_nothing_secret_is_posted(posted):
    out, requests = posted
    bodies = "\n".join(r["body"]["body"] for r in requests)
    hidden = (Assignment.load(SLUG).suite / "test_hidden.py").read_text().splitlines()
    for line in hidden:  # no line of the hidden tests' code
        if len(line.strip()) > 25 and not line.strip().startswith(('"""', "#")):
            assert line.strip() not in bodies, line
    leaked = 0
    for path in out.glob("*/results.json"):
        for test in (json.loads(path.read_text())["result"] or {"tests": []})["tests"]:
            for line in test["message"].splitlines():  # no failure message quoting values
                if re.search(r"expected|got", line, re.I) and len(line.strip()) > 12:
                    leaked += line.strip() in bodies
    assert leaked == 0
    cy = next(r for r in requests if "-cy/" in r["path"])["body"]["body"]
    assert "`mask-after-softmax`" in cy and "wrong result" in cy


def test_students_without_a_commit_are_not_posted_to(dozen, tmp_path, capsys):
    requests = tmp_path / "requests.jsonl"
    assert main(["publish", str(dozen[1]), "--org", "o", "--dry-run", str(requests)]) == 0
    assert requests.read_text() == ""  # a folder of folders has no SHAs
    assert records.read_state(dozen[1]) is not None
