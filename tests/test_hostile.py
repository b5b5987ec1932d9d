"""Hostile submissions (tests/hostile/, one attack per file) get exactly the score they deserve.

Each attack breaks causal_mask (or one other function), or the whole import; the tests check
that what it breaks scores 0, that everything else is graded normally, and that the grader
neither crashes, hangs, leaks nor loses anything.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import hashlib
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hostile import (
    SANDBOXES,
    SLUG,
    forget_earlier_processes,
    leftovers,
    submission,
    twin_submission,
    uid_sandbox,
)

from autograder import report
from autograder.cli import main
from autograder.course.assignment import Assignment
from autograder.engine.grading import grade
from autograder.platforms.gradescope import gradescope
from autograder.result import Result, write_json
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.runner.wire import Unsupported
from autograder.sandbox.worker import (
    BUDGET_TIMEOUTS,
    OUTPUT_CAP,
    START_FLOOR,
    StudentBadOutput,
    StudentImportFailed,
    StudentRaised,
    StudentTimeout,
    Worker,
)

TIMEOUT = 1.0  # per call, in these tests; grading uses the suite's 5 s
UNTOUCHED = {"masked_attention", "split_heads", "merge_heads"}  # never call causal_mask


@pytest.fixture(autouse=True)
def _only_this_tests_processes() -> None:
    forget_earlier_processes()


@pytest.fixture(scope="module")
def assignment() -> Assignment:
    return dataclasses.replace(Assignment.load(SLUG), timeout=2.0)


@pytest.fixture(scope="module", params=sorted(SANDBOXES))
def box(request: pytest.FixtureRequest) -> Sandbox:
    return SANDBOXES[request.param]()


def worker(folder: Path, box: Sandbox, timeout: float = TIMEOUT) -> Worker:
    return Worker(folder, "attention", box, timeout=timeout)


def by_function(result: Result) -> dict[str, list]:
    tests: dict[str, list] = {}
    for test in result.part("part2"):
        tests.setdefault(test.checks, []).append(test)
    return tests


def assert_only_causal_mask_lost(result: Result, outcome: str) -> None:
    """causal_mask's tests score 0 with ``outcome``; Part 1 and the untouched functions pass."""
    tests = by_function(result)
    assert all(t.score == 0 and t.outcome == outcome for t in tests["causal_mask"]), [
        (t.outcome, t.message) for t in tests["causal_mask"]
    ]
    assert all(t.passed for name in UNTOUCHED for t in tests[name])
    assert all(t.passed for t in result.part("part1"))
    assert sum(t.score for t in result.part("part1")) == 30


# -- exits ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attack, outcome, words",
    [
        ("sys_exit_in_function", "raised", "SystemExit"),
        ("os_exit_in_function", "crashed", "exited with status 0"),
        ("segfault", "crashed", "SIGSEGV"),
        ("recursion_crash", "crashed", "SIGSEGV"),
        ("recursion_error", "raised", "RecursionError"),
    ],
)
def test_an_exit_or_crash_costs_only_the_affected_tests(
    assignment, box, tmp_path, attack, outcome, words
):
    result = grade(assignment, submission(tmp_path, attack), box)
    assert_only_causal_mask_lost(result, outcome)
    assert words in by_function(result)["causal_mask"][0].message


@pytest.mark.parametrize(
    "attack, words", [("exit_at_import", "SystemExit"), ("os_exit_at_import", "exited")]
)
def test_an_exit_at_import_scores_part2_zero_and_part1_normally(
    assignment, box, tmp_path, attack, words
):
    result = grade(assignment, submission(tmp_path, attack), box)
    assert all(t.score == 0 and t.outcome == "import" for t in result.part("part2"))
    assert sum(t.score for t in result.part("part1")) == 30
    assert any(words in n and "attention.py" in n for n in result.notices), result.notices


# -- hangs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("attack", ["endless_loop", "ignores_signals"])
def test_a_hang_costs_one_timeout_and_the_worker_is_killed(box, tmp_path, attack):
    with worker(submission(tmp_path, attack), box) as w:
        w.call("merge_heads", np.zeros((2, 3, 4)))  # started, warm
        process = w.process
        assert process is not None
        began = time.monotonic()
        with pytest.raises(StudentTimeout, match="took longer than 1 s"):
            w.call("causal_mask", 4)
        assert time.monotonic() - began < TIMEOUT + 1.0
        assert process.returncode is not None  # killed and reaped
        assert w.process is None
        value, _ = w.call("merge_heads", np.zeros((2, 3, 4)))  # a fresh worker
        assert value.shape == (3, 8) and w.starts == 2
    assert leftovers(box) == []


@pytest.mark.timeout(60)  # before the fix, the grader hung here for ever
def test_a_worker_that_shrinks_its_pipe_and_stops_reading_cannot_hang_the_grader(box, tmp_path):
    with worker(submission(tmp_path, "shrink_pipe"), box, timeout=8) as w:
        value, _ = w.call("causal_mask", 4)
        assert value.shape == (4, 4)
        began = time.monotonic()
        with pytest.raises(StudentTimeout, match="stopped reading"):
            w.call("merge_heads", np.zeros((2, 30, 40)))  # about 20 KB of request
        assert time.monotonic() - began < 8 + 1.0
        assert w.process is None
    assert leftovers(box) == []


def test_a_sleep_at_import_costs_one_start_timeout_once(box, tmp_path):
    with worker(submission(tmp_path, "sleep_at_import"), box) as w:
        began = time.monotonic()
        with pytest.raises(StudentImportFailed, match="did not finish importing"):
            w.call("causal_mask", 4)
        assert time.monotonic() - began < max(TIMEOUT, START_FLOOR) + 1.0
        began = time.monotonic()
        with pytest.raises(StudentImportFailed):
            w.call("merge_heads", np.zeros((2, 3, 4)))
        assert time.monotonic() - began < 1.0 and w.starts == 1  # no second start, no wait


def test_a_prestarted_worker_is_the_one_the_first_call_uses(box, tmp_path):
    """Grading starts the worker before pytest sets up, so that it imports NumPy meanwhile;
    the first call uses that worker, and a slow import is still timed from the first call."""
    with worker(submission(tmp_path), box) as w:
        w.prestart()
        started = w.process
        assert started is not None and w.starts == 1
        value, _ = w.call("merge_heads", np.zeros((2, 3, 4)))
        assert value.shape == (3, 8) and w.process is started and w.starts == 1
    with worker(submission(tmp_path / "slow", "sleep_at_import"), box) as w:
        w.prestart()
        time.sleep(TIMEOUT)  # the grader's own set-up: not charged to the student's import
        began = time.monotonic()
        with pytest.raises(StudentImportFailed, match="did not finish importing"):
            w.call("causal_mask", 4)
        assert max(TIMEOUT, START_FLOOR) - 0.5 < time.monotonic() - began
        assert w.starts == 1


def test_a_call_that_starts_the_worker_does_not_overshoot_the_budget(box, tmp_path):
    """The start's wait is charged before the call waits, not after the call returns."""
    folder = submission(tmp_path, "slow_import_then_hang")
    with Worker(folder, "attention", box, timeout=12.0, budget=13.0) as w:
        began = time.monotonic()  # before: the 2 s import, plus the full 12 s timeout
        with pytest.raises(StudentTimeout, match="used up the 13 s") as raised:
            w.call("causal_mask", 4)
        assert time.monotonic() - began < 13.0 + 1.0
        assert raised.value.budget


def test_grading_a_submission_where_everything_hangs_is_bounded(assignment, box, tmp_path):
    """The whole suite waits at most BUDGET_TIMEOUTS timeouts; later calls fail at once."""
    quick = dataclasses.replace(assignment, timeout=0.5)
    began = time.monotonic()
    result = grade(quick, submission(tmp_path, "all_hang"), box)
    elapsed = time.monotonic() - began
    # plus start-up, pytest and the diagnosis, which on a busy 2-core machine take seconds
    assert elapsed < BUDGET_TIMEOUTS * quick.timeout + 5.0, elapsed
    part2 = result.part("part2")
    assert all(t.score == 0 and t.outcome == "timeout" for t in part2)
    assert sum("took longer than 0.5 s" in t.message for t in part2) >= BUDGET_TIMEOUTS // 2
    assert any("used up the 3 s" in t.message for t in part2)
    assert sum(t.score for t in result.part("part1")) == 30


def test_the_time_budget_is_stated_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["grade", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"{BUDGET_TIMEOUTS} timeouts" in out and "30 s" in out


# -- resources --------------------------------------------------------------------------------


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_memory_bomb_hits_the_memory_limit_not_the_grader(box, tmp_path):
    before = peak_rss_mb()
    with (
        worker(submission(tmp_path, "memory_bomb"), box, timeout=10) as w,
        pytest.raises(StudentRaised) as raised,
    ):
        w.call("causal_mask", 4)
    assert raised.value.is_a("MemoryError")
    assert peak_rss_mb() - before < 50


def test_a_fork_bomb_is_limited_and_nothing_survives(box, tmp_path):
    with worker(submission(tmp_path, "fork_bomb"), box, timeout=START_FLOOR) as w:
        with pytest.raises(StudentTimeout):
            w.call("causal_mask", 4)
        assert leftovers(box) == []  # the sweep after the timeout got every child
        value, _ = w.call("merge_heads", np.zeros((2, 3, 4)))  # a fresh worker can start
        assert value.shape == (3, 8) and w.starts == 2
    assert leftovers(box) == []


def run_daemon(box: Sandbox, tmp_path: Path, attack: str, strikes_after: float) -> None:
    """Grade a daemon attack, write results afterwards, and give the daemon time to strike."""
    results = tmp_path / "out" / "results.json"
    folder = submission(tmp_path / "sub", attack, {"targets.txt": str(results)})
    result = grade(Assignment.load(SLUG), folder, box)
    assert result.score == 100  # the daemon's function itself returns the right value
    write_json(results, gradescope(result))
    written = results.read_bytes()
    assert leftovers(box) == []
    time.sleep(strikes_after)
    assert results.read_bytes() == written


def test_a_setsid_daemon_does_not_survive_grading(box, tmp_path):
    run_daemon(box, tmp_path, "setsid_daemon", 0.5)


def test_a_daemon_that_execs_with_an_empty_environment_is_found_by_parentage(box, tmp_path):
    """Before: the sweep looked for a marker in the environment, which execve dropped, and
    two seconds later the results said {"score": 1000} (fallback mode, no uid)."""
    run_daemon(box, tmp_path, "exec_daemon", 2.5)


KILLED_GRADER = """
import sys, time
import numpy as np
from pathlib import Path
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.worker import Worker
w = Worker(Path(sys.argv[1]), "attention", Sandbox.detect(sys.argv[2]), timeout=60)
w.call("merge_heads", np.zeros((2, 3, 4)))
print(w.process.pid, w.running.job, flush=True)
time.sleep(120)
"""


def test_when_the_grader_is_killed_its_worker_dies_and_the_job_folder_goes(box, tmp_path):
    grader = subprocess.Popen(
        [sys.executable, "-c", KILLED_GRADER, str(submission(tmp_path)), box.mode],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert grader.stdout is not None
    pid, job = grader.stdout.readline().split()
    assert Path(job).is_dir()
    grader.kill()
    grader.wait()
    for _ in range(500):
        gone = not Path(job).exists() and not alive(int(pid))
        if gone:
            break
        time.sleep(0.01)
    assert not alive(int(pid)), "the worker outlived its grader"
    assert not Path(job).exists(), "the job folder outlived its grader"


def alive(pid: int) -> bool:
    """Running (a zombie has died); zombies reparented to this subreaper are reaped here."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    if state == b"Z":
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return False
    return True


def test_huge_return_values_are_capped(box, tmp_path):
    with worker(submission(tmp_path, "huge_return"), box) as w:
        value, _ = w.call("causal_mask", 4)
        assert isinstance(value, Unsupported) and "too large" in value.type_name
        value, _ = w.call("merge_heads", np.zeros((2, 3, 4)))
        assert isinstance(value, list) and len(value) == 1000
        assert isinstance(value[-1], Unsupported) and isinstance(value[0], list)


def test_a_forged_huge_reply_is_refused_before_it_is_read(box, tmp_path):
    before = peak_rss_mb()
    with (
        worker(submission(tmp_path, "forged_reply"), box) as w,
        pytest.raises(StudentBadOutput, match="over the .* byte limit"),
    ):
        w.call("multi_head_attention", *np.zeros((5, 4, 4)), 2)
    assert peak_rss_mb() - before < 50


def test_a_stdout_flood_is_capped_and_the_value_still_counts(box, tmp_path):
    with worker(submission(tmp_path, "stdout_flood"), box, timeout=10) as w:
        value, printed = w.call("causal_mask", 4)
    assert np.array_equal(value, np.tril(np.ones((4, 4), dtype=bool)))
    assert len(printed) < OUTPUT_CAP + 200
    assert printed.startswith("flood") and "were cut" in printed


# -- forgery ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attack, lost",
    [
        ("patch_numpy", {"causal_mask"}),
        ("lying_eq", {"causal_mask", "merge_heads"}),
        ("ndarray_subclass", {"causal_mask"}),
        ("forged_reply", {"causal_mask", "split_heads"}),  # a stale reply has no effect
    ],
)
def test_forgery_has_no_effect_on_the_score(assignment, box, tmp_path, attack, lost):
    """The forged functions fail their value tests; every other function keeps full marks."""
    result = grade(assignment, submission(tmp_path, attack), box)
    tests = {t.id: t for t in result.part("part2")}
    for name in lost:
        assert tests[f"test_{name}_values"].score == 0, name
    for name in UNTOUCHED - lost:
        assert all(t.passed for t in by_function(result)[name]), name
    assert not hasattr(builtins, "PWNED_BY_STUDENT")


def test_a_forged_pickle_is_refused_unread(box, tmp_path):
    with (
        worker(submission(tmp_path, "forged_reply"), box) as w,
        pytest.raises(StudentBadOutput, match="refused dtype object"),
    ):
        w.call("causal_mask", 4)
    assert not hasattr(builtins, "PWNED_BY_STUDENT")


def test_a_forged_negative_shape_stops_the_worker(box, tmp_path):
    with worker(submission(tmp_path, "forged_reply"), box) as w:
        with pytest.raises(StudentBadOutput, match="bad .npy shape"):
            w.call("split_heads", np.zeros((3, 8)), 2)
        assert w.process is None  # stopped: it was in no state to go on
        value, _ = w.call("merge_heads", np.zeros((2, 3, 4)))  # a fresh one
        assert value.shape == (3, 8) and w.starts == 2


def test_a_reply_to_an_earlier_request_is_skipped(box, tmp_path):
    with worker(submission(tmp_path, "forged_reply"), box) as w:
        for _ in range(2):
            value, _ = w.call("merge_heads", np.zeros((2, 3, 4)))
            assert value.shape == (3, 8)


def test_printed_score_lines_and_workflow_commands_never_reach_stdout_raw(tmp_path, capsys):
    folder = submission(tmp_path, "fake_output")
    assert main(["grade", SLUG, str(folder), "--sandbox", "fallback"]) == 0
    out = capsys.readouterr().out
    assert "Points 100/100" in out  # shown to the student, but defused
    for line in out.splitlines():
        assert not line.lstrip().startswith(("::", "##[")), line
        assert not line.startswith(("Total: 100/100", "Points")), line
    assert "::" not in out and "\r" not in out
    assert [line for line in out.splitlines() if line.startswith("Total:")] != ["Total: 100/100"]


@pytest.mark.parametrize("text", [":::notice::x", "##[error]x", "a\r::error::b", "x\x1b[2K::y"])
def test_neutralise_leaves_no_command(text):
    clean = report.neutralise(text)
    assert "::" not in clean and "##[" not in clean and "\r" not in clean and "\x1b" not in clean


# -- snooping and tampering -------------------------------------------------------------------

SECRETS = {
    "GITHUB_TOKEN": "ghp_secret_github_value",
    "MY_API_KEY": "key_secret_value_42",
    "DB_SECRET": "db_secret_value_43",
    "AWS_SESSION_TOKEN": "aws_secret_value_44",
}


def test_the_worker_sees_a_scrubbed_environment(box, tmp_path, monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    with worker(submission(tmp_path, "snoop"), box) as w:
        seen, _ = w.call("merge_heads", np.zeros((2, 3, 4)))
    names = {line.split("=", 1)[0] for line in seen.splitlines()}
    assert not any(word in n for n in names for word in ("TOKEN", "KEY", "SECRET")), names
    assert not any(value in seen for value in SECRETS.values())
    assert "OPENBLAS_NUM_THREADS=1" in seen and "OMP_NUM_THREADS=1" in seen


@pytest.mark.parametrize("mode", ["auto", "fallback", "plain"])
def test_a_secret_never_shows_up_in_feedback(tmp_path, mode):
    """In a real grader process started with secrets, even the plain worker leaks nothing."""
    folder = submission(tmp_path / "sub", "snoop")
    out = tmp_path / "results.json"
    env = dict(os.environ, **SECRETS)
    done = subprocess.run(
        ["autograder", "grade", SLUG, str(folder), "--sandbox", mode, "--json", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    # RuntimeError with what it found; PermissionError where Landlock hides /proc altogether
    assert "causal_mask raised " in done.stdout
    shown = done.stdout + out.read_text()
    assert not any(value in shown for value in SECRETS.values())
    # the worker reaches the grader's secrets only when unconfined, or in the weak fallback
    # without its own uid (the same uid may read the grader's /proc/<pid>/environ)
    reachable = mode == "plain" or (mode == "fallback" and "uid" not in Sandbox.detect(mode).layers)
    assert ("[redacted]" in shown) == reachable


@pytest.fixture
def results() -> Iterator[Path]:
    """A results file the grader wrote: its own, mode 0644, in a folder anyone may enter."""
    folder = Path(tempfile.mkdtemp(prefix="autograder-target-"))
    os.chmod(folder, 0o755)
    (folder / "results.json").write_text('{"score": 10}')
    os.chmod(folder / "results.json", 0o644)
    yield folder / "results.json"
    shutil.rmtree(folder)


@pytest.mark.parametrize("layer", ["uid", "landlock", "namespaces"])
def test_the_worker_cannot_write_grader_files(tmp_path, results, layer):
    box = {"uid": uid_sandbox, "landlock": SANDBOXES["landlock"], "namespaces": SANDBOXES["full"]}
    box = box[layer]()
    suite_file = Path(__file__).resolve().parents[1] / "autograder" / "suites" / SLUG
    suite_file = suite_file / "test_hidden.py"
    before = suite_file.read_bytes()
    files = {"targets.txt": f"{results} {suite_file}"}
    with worker(submission(tmp_path, "tamper", files), box) as w:
        seen, _ = w.call("causal_mask", 4)
    assert "wrote" not in seen, seen
    assert results.read_text() == '{"score": 10}' and suite_file.read_bytes() == before
    if layer == "namespaces":  # not even visible
        assert seen.count("FileNotFoundError") == 4, seen
    elif layer == "landlock":  # visible to stat, but neither readable nor writable
        assert seen.count("PermissionError") == 4, seen
    else:
        assert f"read {results}" in seen and "PermissionError" in seen


def test_under_namespaces_the_network_is_unreachable(tmp_path):
    box = SANDBOXES["full"]()
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.2)
        port = server.getsockname()[1]
        with (
            worker(submission(tmp_path, "network", {"port.txt": str(port)}), box) as w,
            pytest.raises(StudentRaised) as raised,
        ):
            w.call("causal_mask", 4)
        assert raised.value.is_a("OSError")
        with pytest.raises(TimeoutError):
            server.accept()


def test_without_namespaces_the_same_probe_does_connect(tmp_path):
    """The check above can fail: the plain worker reaches the listener."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        files = {"port.txt": str(port)}
        with worker(submission(tmp_path, "network", files), Sandbox.detect("plain")) as w:
            value, _ = w.call("causal_mask", 4)
        assert value == "connected"


# -- integrity --------------------------------------------------------------------------------


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_the_submission_folder_is_byte_identical_after_grading(assignment, box, tmp_path):
    files = {"targets.txt": "attention.py answers.yaml targets.txt"}
    folder = submission(tmp_path, "tamper", files)
    before = digest(folder)
    grade(assignment, folder, box)
    assert digest(folder) == before


def test_grading_twice_gives_identical_results(assignment, box, tmp_path):
    folder = submission(tmp_path, "recursion_error")
    first, second = (grade(assignment, folder, box).to_dict() for _ in range(2))
    first.pop("seconds"), second.pop("seconds")
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


# -- escapes: each gets nothing beyond its honest twin in a strong sandbox ------------------------

REPO = Path(__file__).resolve().parents[1]
GRADER_PACKAGE = REPO / "autograder"
WEAK = "fallback"  # the mode that is weak by design: there, the same attacks do escape


def escape(box: Sandbox, tmp_path: Path, name: str | None, **params: object) -> np.ndarray:
    """causal_mask(4) of the twin with attack ``name``; no job folder may be left behind."""
    with worker(twin_submission(tmp_path / "sub", name, params), box, timeout=10) as w:
        value, _ = w.call("causal_mask", 4)
        assert w.running is not None
        job = w.running.job
    assert not job.exists()
    assert leftovers(box) == []
    return value


def escaped(value: np.ndarray) -> bool:
    assert value.shape == (4, 4) and value.dtype == bool  # the twin's shapes, either way
    return bool(value.any())  # the honest twin returns all zeros


def test_the_honest_twin_returns_zeros(box, tmp_path):
    assert not escaped(escape(box, tmp_path, None))


def test_the_reference_and_hidden_suite_cannot_be_found_and_read(box, tmp_path):
    known = [
        str(REPO / "reference" / SLUG / "attention.py"),
        str(GRADER_PACKAGE / "suites" / SLUG / "test_hidden.py"),
    ]
    value = escape(box, tmp_path, "find_reference", known=known)
    assert escaped(value) == (box.mode == WEAK)


def test_nothing_can_be_written_into_the_grader_package_or_the_results_folder(
    box, tmp_path, results
):
    folders = [str(GRADER_PACKAGE), str(results.parent)]
    planted = [Path(f) / "planted_by_student.py" for f in folders]
    try:
        value = escape(box, tmp_path, "write_grader", folders=folders)
        writable = box.mode == WEAK and box.uid is None  # the sandbox uid owns neither
        assert escaped(value) == writable
        assert any(p.exists() for p in planted) == writable
        assert results.read_text() == '{"score": 10}'
    finally:
        for path in planted:
            path.unlink(missing_ok=True)


def test_the_grader_cannot_be_signalled(box, tmp_path):
    value = escape(box, tmp_path, "signal_grader", grader=os.getpid())
    assert escaped(value) == (box.mode == WEAK and box.uid is None)


def test_tcp_connections_are_refused(box, tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        value = escape(box, tmp_path, "network_out", protocol="tcp", port=port)
    assert escaped(value) == (box.mode == WEAK)


def test_udp_gets_out_only_without_namespaces(box, tmp_path):
    """No Landlock ABI covers UDP yet: where Landlock is the only layer, a datagram can leave
    (the README says so). It brings nothing back: the score is the twin's either way."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        escape(box, tmp_path, "network_out", protocol="udp", port=server.getsockname()[1])
        # arrived or not: a sendto in bubblewrap's own network namespace succeeds on its own
        # loopback, so only the listener can tell
        server.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            assert server.recv(64) == b"stolen" and not box.bwrap
            return
    assert box.bwrap, "the datagram should have arrived: only namespaces stop UDP"


@pytest.fixture
def canary() -> Iterator[Path]:
    """A file in the grading user's home folder, which no worker may read."""
    path = Path.home() / f".autograder-canary-{os.getpid()}"
    path.write_text("private")
    yield path
    path.unlink()


def test_other_users_home_folders_cannot_be_read(box, tmp_path, canary):
    value = escape(box, tmp_path, "read_home", canary=str(canary))
    # under the sandbox uid, a world-readable file is safe only in a home others cannot enter
    enterable = bool(canary.parent.stat().st_mode & 0o001)
    assert escaped(value) == (box.mode == WEAK and (box.uid is None or enterable))
