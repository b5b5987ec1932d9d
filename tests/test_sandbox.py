"""The sandbox layers: detection, what a worker actually gets, and how results record it."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import HERE, SANDBOXES, SLUG, submission, uid_sandbox

import autograder
from autograder.cli import main
from autograder.course.assignment import Assignment
from autograder.engine.grading import grade
from autograder.errors import UsageError
from autograder.report import summary
from autograder.sandbox import layers as sandbox_module
from autograder.sandbox import runtime
from autograder.sandbox.layers import SECRET_NAME, THREAD_VARS, Limits, Sandbox
from autograder.sandbox.worker import Worker

GRADER_FILE = str(Path(autograder.__file__).resolve())


def facts(box: Sandbox, tmp_path: Path) -> dict[str, str]:
    shutil.copy(HERE / "probe.py", tmp_path / "probe.py")
    with Worker(tmp_path, "probe", box, timeout=5) as w:
        lines, _ = w.call("facts", GRADER_FILE)
    return dict(line.split("=", 1) for line in lines)


@pytest.mark.parametrize("name", sorted(SANDBOXES))
def test_every_confined_worker_gets_the_limits(tmp_path, name):
    box = SANDBOXES[name]()
    seen = facts(box, tmp_path)
    limits = Limits()
    assert int(seen["limit_AS"]) == limits.memory
    assert int(seen["limit_CPU"]) == limits.cpu_seconds
    assert int(seen["limit_FSIZE"]) == limits.file_size
    assert int(seen["limit_NOFILE"]) == limits.open_files
    assert int(seen["limit_CORE"]) == 0
    assert seen["sid_is_own"] == "True"


def test_the_plain_worker_is_not_confined(tmp_path):
    seen = facts(Sandbox.detect("plain"), tmp_path)
    assert int(seen["limit_AS"]) != Limits().memory
    assert Sandbox.detect("plain").layers == ["process"]


def test_as_root_the_worker_runs_as_a_dedicated_uid(tmp_path):
    box = uid_sandbox()
    seen = facts(box, tmp_path)
    assert int(seen["uid"]) == box.uid != 0
    assert int(seen["limit_NPROC"]) == box.limits.processes
    assert "uid" in box.layers


def test_namespaces_hide_processes_and_grader_files(tmp_path):
    box = SANDBOXES["full"]()
    seen = facts(box, tmp_path)
    assert seen["hostname"] == "sandbox"
    assert seen["processes"] == "denied" or int(seen["processes"]) <= 3  # bwrap's init, worker
    assert seen["grader_visible"] == "False"
    assert "namespaces" in box.layers and not box.weak


def test_without_namespaces_the_same_probe_sees_the_machine(tmp_path):
    seen = facts(Sandbox.detect("fallback"), tmp_path)
    assert seen["grader_visible"] == "True" and int(seen["processes"]) > 3


def test_under_landlock_the_probe_sees_no_processes(tmp_path):
    seen = facts(SANDBOXES["landlock"](), tmp_path)
    assert seen["processes"] == "denied"


def test_the_environment_is_scrubbed(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_value")
    monkeypatch.setenv("SOME_API_KEY", "value")
    env = Sandbox.detect("fallback").environment()
    assert not any(SECRET_NAME.search(name) for name in env)
    assert all(env[name] == "1" for name in THREAD_VARS)
    assert "GITHUB_TOKEN" in Sandbox.detect("plain").environment()


@pytest.mark.parametrize("name", sorted(SANDBOXES))
def test_every_result_records_its_layers_and_a_weak_one_says_so(tmp_path, name):
    box = SANDBOXES[name]()
    result = grade(Assignment.load(SLUG), submission(tmp_path), box)
    assert result.score == 100 and result.sandbox == box.layers
    text = summary(result)
    assert ", ".join(box.layers) in text
    assert ("WARNING: weak sandbox" in text) == (name == "fallback")


def landlock_abi_here() -> int:
    """Asked of the kernel directly, not through autograder.sandbox.runner.landlock."""
    libc = ctypes.CDLL(None, use_errno=True)
    return max(int(libc.syscall(444, None, ctypes.c_size_t(0), 1)), 0)


def bwrap_runs_here() -> bool:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False
    argv = [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--", "/bin/true"]
    return subprocess.run(argv, capture_output=True, timeout=60).returncode == 0


def another_uid_can_start_python() -> bool:
    """The grader's Python, or the copy made by `autograder sandbox runtime`, if there is one."""
    if os.geteuid() != 0:
        return False
    copy = runtime.default_folder()
    starts = [[sys.executable, "-c", "pass"]]
    starts += [[str(python), "-I", "-S", "-c", ""] for python in copy.glob("bin/python3*")]
    for argv in starts:
        env = {"LD_LIBRARY_PATH": str(copy / "lib")}
        try:
            done = subprocess.run(argv, user=65534, capture_output=True, env=env)
        except PermissionError:  # the interpreter cannot even be reached
            continue
        if done.returncode == 0:
            return True
    return False


def test_doctor_agrees_with_facts_established_independently(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    facts = {
        "landlock": landlock_abi_here() > 0,
        "namespaces": bwrap_runs_here(),
        "uid": another_uid_can_start_python(),
    }
    for layer, present in facts.items():
        assert f"[{'ok' if present else '--'}] {layer}" in out, (layer, out)
    strong = facts["landlock"] or facts["namespaces"]
    assert ("WEAK SANDBOX" in out) == (not strong)
    assert ("strong sandbox:" in out) == strong
    if facts["landlock"]:
        assert f"ABI {landlock_abi_here()}" in out
    if not facts["uid"] and os.geteuid() == 0:  # says exactly which folder blocks it
        assert "cannot be entered by other users" in out


def test_doctor_says_a_fallback_sandbox_is_weak_and_how_to_accept_it(capsys):
    assert main(["doctor", "--sandbox", "fallback"]) == 0
    out = capsys.readouterr().out
    assert "WEAK SANDBOX" in out and "--allow-weak-sandbox" in out


def test_grading_for_record_refuses_a_weak_sandbox_unless_allowed():
    weak = Sandbox.detect("fallback")
    with pytest.raises(UsageError, match="--allow-weak-sandbox"):
        weak.require_strong(allow_weak=False)
    weak.require_strong(allow_weak=True)
    if landlock_abi_here():
        Sandbox.detect("landlock").require_strong(allow_weak=False)  # strong: no error


def test_uids_never_collide_and_stay_out_of_systemds_ranges(monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("the dedicated uid is for a grader running as root")
    first, lock = sandbox_module._allocate_uid()
    second, other = sandbox_module._allocate_uid()
    assert first is not None and second is not None and first != second
    for uid in (first, second):
        assert not 60001 <= uid <= 65535 and uid < 100000 and uid > 60000  # homed, DynamicUser
    os.close(int(lock))  # released: the uid may be handed out again
    monkeypatch.setattr(sandbox_module, "SANDBOX_UIDS", range(first, first + 1))
    again, lock = sandbox_module._allocate_uid()
    assert again == first
    third, why = sandbox_module._allocate_uid()  # the only uid is held
    assert third is None and "in use" in str(why)
    os.close(int(lock)), os.close(int(other))


def test_a_uid_with_a_process_that_is_not_ours_is_never_taken(monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("the dedicated uid is for a grader running as root")
    uid = sandbox_module.SANDBOX_UIDS[0]
    stranger = subprocess.Popen(["sleep", "30"], user=uid)  # e.g. a service, or a dead grader's
    try:
        monkeypatch.setattr(sandbox_module, "SANDBOX_UIDS", range(uid, uid + 2))
        taken, lock = sandbox_module._allocate_uid()
        assert taken == uid + 1
        os.close(int(lock))
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_unknown_modes_are_refused():
    with pytest.raises(ValueError, match="unknown sandbox mode"):
        Sandbox.detect("docker")


@pytest.mark.timeout(300)  # four modes, two rounds each
def test_the_benchmark_runs_and_the_full_sandbox_is_not_slow(capsys):
    """A smoke run of benchmarks/bench_sandbox.py (one round; the target is checked loosely
    here, as a shared CI machine is noisy: run the benchmark itself for the real figure)."""
    if not Sandbox.detect("auto").bwrap:
        pytest.skip("no full sandbox here: nothing to compare")
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sandbox.py"
    spec = importlib.util.spec_from_file_location("bench_sandbox", path)
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    median = bench.measure(1)
    assert {"full", "fallback", "plain"} <= set(median)
    assert median["full"] <= 2 * bench.TARGET * median["plain"]
    assert "plain" in capsys.readouterr().out


@pytest.mark.skipif(not shutil.which("bwrap"), reason="needs bubblewrap")
def test_namespaces_work_for_a_virtual_environment_under_tmp(tmp_path):
    """The sandbox's /tmp must not hide a Python that lives under /tmp (a venv in a CI job)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    probe = "from autograder.sandbox.layers import Sandbox; print(Sandbox.detect().layers)"
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert "'namespaces'" in done.stdout, done.stdout + done.stderr
