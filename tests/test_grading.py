"""End to end: the `autograder` command on the reference, the starter and broken submissions."""

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from autograder.cli import main
from autograder.course.assignment import Assignment
from autograder.engine.grading import grade
from autograder.engine.mistakes import Variant
from autograder.errors import ExitCode
from autograder.sandbox.layers import Sandbox

SCHEMA = Path(__file__).parents[1] / "autograder" / "schemas" / "gradescope-results.json"
SLUG = "masks-and-heads"


@pytest.fixture(scope="module")
def assignment():
    return Assignment.load(SLUG)


@pytest.fixture(scope="module")
def reference_json(tmp_path_factory, assignment):
    """The real console script, once: `autograder grade SLUG reference/SLUG --json PATH`."""
    out = tmp_path_factory.mktemp("ref") / "results.json"
    done = subprocess.run(
        ["autograder", "grade", SLUG, str(assignment.reference), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, json.loads(out.read_text())


def test_reference_gets_full_marks(reference_json):
    done, results = reference_json
    assert done.returncode == 0, done.stderr
    assert "Total: 100/100" in done.stdout
    assert results["score"] == 100
    assert all(t["status"] == "passed" for t in results["tests"])


def test_results_json_follows_the_gradescope_schema(reference_json):
    _, results = reference_json
    jsonschema.validate(results, json.loads(SCHEMA.read_text()))
    parts = {tag for t in results["tests"] for tag in t["tags"] if tag.startswith("part")}
    assert parts == {"part1", "part2"}
    assert all(("part1" in t["tags"]) != ("part2" in t["tags"]) for t in results["tests"])


def test_schema_rejects_a_malformed_result(reference_json):
    _, results = reference_json
    broken = dict(results, tests=[dict(results["tests"][0], status="ok")])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, json.loads(SCHEMA.read_text()))


def test_starter_scores_zero_with_helpful_messages(assignment, capsys):
    assert main(["grade", SLUG, "--sandbox", "fallback"]) == 0
    out = capsys.readouterr().out
    assert "Total: 0/100" in out
    assert "not answered" in out
    assert "causal_mask is not implemented yet: it raises NotImplementedError" in out
    assert "attention.py, line" in out


def wrong_submission(assignment, tmp_path, function, body, base=None):
    """The reference (or ``base``) with one function replaced by ``body``."""
    spec_file = tmp_path.parent / f"{tmp_path.name}_{function}.py"
    spec_file.write_text(body)
    spec = importlib.util.spec_from_file_location(spec_file.stem, spec_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    variant = Variant(name="test", replaces=function, function=getattr(module, function))
    shutil.copy(assignment.reference / "answers.yaml", tmp_path / "answers.yaml")
    source = variant.source(base.read_text() if base else assignment.reference_source)
    (tmp_path / assignment.module_file).write_text(source)
    return tmp_path


@pytest.fixture(scope="module")
def reference_result(assignment):
    return grade(assignment, assignment.reference, Sandbox.detect("fallback"))


@pytest.mark.parametrize(
    "function, body",
    [
        (
            "multi_head_attention",
            "def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):\n"
            "    q, k, v = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))\n"
            "    mask = causal_mask(X.shape[0]) if causal else None\n"
            "    heads = [masked_attention(q[i], k[i], v[i], mask)[1] for i in range(h)]\n"
            "    return merge_heads(np.stack(heads))\n",
        ),
        (
            "merge_heads",
            "def merge_heads(Xh):\n    return Xh.reshape(Xh.shape[1], -1)\n",
        ),
    ],
    ids=["mha-forgets-Wo", "merge-without-transpose"],
)
def test_one_wrong_function_loses_only_what_depends_on_it(
    assignment, reference_result, tmp_path, function, body
):
    folder = wrong_submission(assignment, tmp_path, function, body)
    result = grade(assignment, folder, Sandbox.detect("fallback"))
    lost = {t.checks for t in result.tests if not t.passed}
    assert function in lost
    if function == "multi_head_attention":  # nothing else depends on it
        assert lost == {function}
    # merge_heads is used by multi_head_attention, so a wrong merge may cost that too
    assert lost <= {function, "multi_head_attention"}
    kept = [t for t in result.tests if t.checks not in lost]
    assert kept and all(t.score == t.max_score for t in kept)
    assert result.score < reference_result.score


def test_wrong_function_alone_costs_exactly_its_points(assignment, tmp_path):
    """A strict triangle in causal_mask, with a multi_head_attention that does not use it."""
    wrong_mask = "def causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool), -1)\n"
    folder = wrong_submission(assignment, tmp_path, "causal_mask", wrong_mask)
    own_mha = (
        "def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):\n"
        "    n = X.shape[0]\n"
        "    q, k, v = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))\n"
        "    mask = np.tril(np.ones((n, n), dtype=bool)) if causal else None\n"
        "    heads = [masked_attention(q[i], k[i], v[i], mask)[1] for i in range(h)]\n"
        "    return merge_heads(np.stack(heads)) @ Wo\n"
    )
    wrong_submission(assignment, tmp_path, "multi_head_attention", own_mha, folder / "attention.py")
    result = grade(assignment, folder, Sandbox.detect("fallback"))
    failed = [t for t in result.tests if not t.passed]
    assert {t.checks for t in failed} == {"causal_mask"}
    assert result.score == result.max_score - sum(t.max_score for t in failed)


def test_grading_never_writes_into_the_submission(assignment, tmp_path):
    folder = tmp_path / "sub"
    shutil.copytree(assignment.reference, folder)
    before = {p: p.read_bytes() for p in folder.rglob("*")}
    grade(assignment, folder, Sandbox.detect("fallback"))
    assert {p: p.read_bytes() for p in folder.rglob("*")} == before


def test_grading_a_plain_folder_never_goes_through_the_notebook_route():
    """Only a submission in nbgrader's layout reads notebook code (platforms/nbgrader)."""
    script = (
        "import sys; from autograder.cli import main; "
        f"main(['grade', {SLUG!r}, {str(Assignment.load(SLUG).reference)!r}, '--sandbox', "
        "'fallback']); print([m for m in sys.modules if 'nbgrader' in m])"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "[]", done.stderr[-2000:]


def test_the_exit_codes_are_the_readmes():
    """The README tells what each status means; the IntEnum is the one place it is decided."""
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    said = "exits 0 whenever grading completed, whatever the score; 2 with a one-line message"
    assert (
        said in readme and "; 3 when the hidden suite itself is broken, 4 when the grader" in readme
    )
    assert [int(c) for c in (ExitCode.OK, ExitCode.USAGE, ExitCode.SUITE, ExitCode.GRADER)] == [
        0, 2, 3, 4,
    ]  # fmt: skip


@pytest.mark.parametrize(
    "argv, words",
    [
        (["grade", "no-such-assignment"], "unknown assignment 'no-such-assignment'"),
        (["grade", SLUG, "/no/such/folder"], "no such submission folder"),
        (["check", "no-such-assignment"], "unknown assignment"),
    ],
)
def test_usage_errors_exit_non_zero_with_one_line(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "command", [[], ["grade"], ["check"], ["generate"], ["doctor"], ["sandbox", "runtime"]]
)
def test_every_command_has_help(command):
    done = subprocess.run(
        [sys.executable, "-m", "autograder", *command, "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "usage: autograder" in done.stdout


def test_a_broken_suite_still_writes_results_json_and_exits_3(tmp_path, monkeypatch, capsys):
    from autograder.engine import grading

    def broken(*args):
        raise grading.SuiteError("masks-and-heads: the hidden suite did not run: ImportError")

    monkeypatch.setattr(grading, "run_suite", broken)
    out = tmp_path / "results.json"
    assert main(["grade", SLUG, "--json", str(out)]) == 3
    assert "the hidden suite is broken" in capsys.readouterr().err
    results = json.loads(out.read_text())
    jsonschema.validate(results, json.loads(SCHEMA.read_text()))
    assert results["score"] == 0 and "not a problem with your work" in results["output"]
