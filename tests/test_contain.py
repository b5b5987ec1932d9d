"""One student cannot hurt the class or the machine (issue 22): the attacks of tests/hostile/
that detach processes, fill the disk, nest folders past the recursion limit or make the
grader's own diagnosis unbounded. Each is held with bubblewrap and without it: nothing is left
alive, no job folder is left, the grader stays under a stated memory bound, and in a batch
the honest students get their grades in about the time they get without the attacker.
"""

from __future__ import annotations

import dataclasses
import errno
import itertools
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hostile import SANDBOXES, SLUG, submission, uid_runtime, uid_sandbox
from test_tree import LEVELS, nested

from autograder.cli import main
from autograder.course.assignment import Assignment
from autograder.engine import diagnosis
from autograder.engine.budget import Budget, OverBudget
from autograder.engine.grading import GradingSession, grade
from autograder.errors import GraderFault
from autograder.sandbox import runtime as runtime_module
from autograder.sandbox import scratch
from autograder.sandbox import worker as worker_module
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.worker import StudentCrashed, StudentTimeout, Worker
from autograder.tree import remove_tree
from autograder.workflows import batch
from autograder.workflows.records import Record, load_record

WITH_AND_WITHOUT_BWRAP = ("full", "landlock")
GRADER_MEMORY = 256 << 20  # bytes the grader may allocate grading one hostile submission
SLOWDOWN = 3.0  # the others' grading with the attacker next to them, against without
OUTER_DISK = 300 << 20  # the batch's scratch file system in the batch test


@pytest.fixture(scope="module")
def assignment() -> Assignment:
    return dataclasses.replace(Assignment.load(SLUG), timeout=2.0)


@pytest.fixture(scope="module", params=WITH_AND_WITHOUT_BWRAP)
def box(request: pytest.FixtureRequest) -> Sandbox:
    return SANDBOXES[request.param]()


@pytest.fixture
def jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Where this test's job folders go; none may be left there afterwards."""
    folder = tmp_path / "jobs"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    assert list(folder.iterdir()) == []


def marked(folder: Path, attack: str) -> tuple[Path, str]:
    """The reference with ``attack`` appended, and the marker its processes carry."""
    marker = f"contain-{uuid.uuid4().hex}"
    return submission(folder, attack, {"marker.txt": marker}), marker


def alive_with(marker: str) -> list[int]:
    """Live processes whose command line carries ``marker`` (zombies have died)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "cmdline").read_bytes():
                continue
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            found.append(int(entry.name))
    return found


def without_cgroups(box: Sandbox) -> Sandbox:
    """The same sandbox where no cgroup can be made: the reaper's sweep alone."""
    return dataclasses.replace(box, cgroups=None, notes=[*box.notes, "no cgroup: test"])


def require_cgroups(box: Sandbox) -> None:
    if box.cgroups is None:
        pytest.skip("no cgroup can be made here: " + "; ".join(box.notes))


# -- processes that detach ----------------------------------------------------------------------


@pytest.mark.parametrize("attack", ["detached_chain", "spinners"])
def test_nothing_a_worker_starts_outlives_it(box, jobs, tmp_path, attack):
    folder, marker = marked(tmp_path / "sub", attack)
    with Worker(folder, "attention", box, timeout=5.0) as w:
        try:
            value, _ = w.call("causal_mask", 4)
            assert value.tolist() == np.tril(np.ones((4, 4), dtype=bool)).tolist()
        except StudentTimeout:  # spinners share their worker's CPU limit: it may starve
            assert attack == "spinners"
        time.sleep(0.3)  # the chain grows, the spinners spin
        if box.cgroups is not None and attack == "detached_chain":
            running = w.running
            assert running is not None and running.group is not None
            assert len(running.group.members()) <= box.limits.processes  # pids.max binds
    assert alive_with(marker) == []


def test_without_a_cgroup_the_sweep_still_kills_a_detached_chain(box, jobs, tmp_path):
    folder, marker = marked(tmp_path / "sub", "detached_chain")
    with Worker(folder, "attention", without_cgroups(box), timeout=5.0) as w:
        w.call("causal_mask", 4)
        time.sleep(0.5)
    assert alive_with(marker) == []


def test_the_sweep_spares_the_graders_own_children(box, jobs, tmp_path):
    """A process the grader starts after a worker (a pool of job processes, the public
    tests' pytest) is in the grader's session, where no worker's leftover can be: it lives on,
    while one in a session of its own, as a detached leftover is, dies."""
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    with Worker(submission(tmp_path / "sub"), "attention", without_cgroups(box), timeout=5) as w:
        w.call("causal_mask", 4)
        own = subprocess.Popen(sleeper)
        detached = subprocess.Popen(sleeper, start_new_session=True)
    try:
        box.sweep()
        assert own.poll() is None, "the grader's own child was killed as a leftover"
        assert not Path(f"/proc/{detached.pid}").exists(), "the detached one lives on"
    finally:
        own.kill()
        own.wait()


def test_a_worker_group_has_the_limits_and_is_removed(box, jobs, tmp_path):
    require_cgroups(box)
    with Worker(submission(tmp_path / "sub"), "attention", box, timeout=5.0) as w:
        w.call("merge_heads", np.zeros((2, 3, 4)))
        assert w.running is not None and w.running.group is not None
        folders = w.running.group.folders
        limits = {f.name: f.read_text().split() for d in folders for f in d.glob("*.max")}
        limits |= {f.name: f.read_text().split() for d in folders for f in d.glob("*limit_in*")}
        assert limits["pids.max"] == [str(box.limits.processes)]
        memory = limits.get("memory.max") or limits["memory.limit_in_bytes"]
        assert int(memory[0]) == box.limits.memory + box.limits.scratch
    assert not any(folder.exists() for folder in folders)


# -- the disk -----------------------------------------------------------------------------------


def test_a_worker_that_fills_its_disk_fills_only_its_own(box, jobs, tmp_path):
    if not box.tmpfs:
        pytest.skip("no tmpfs per job here: " + "; ".join(box.notes))
    before = shutil.disk_usage(jobs).used
    with Worker(submission(tmp_path / "sub", "disk_filler"), "attention", box, timeout=5) as w:
        value, _ = w.call("causal_mask", 4)
        assert value.shape == (4, 4)
        assert shutil.disk_usage(jobs).used - before < 16 << 20  # the fill went to its tmpfs
    assert jobs.is_dir()  # and the jobs fixture checks that nothing is left in it


def test_without_a_tmpfs_the_job_folder_is_measured(jobs, tmp_path):
    box = dataclasses.replace(Sandbox.detect("fallback"), tmpfs=False)
    with Worker(submission(tmp_path / "sub", "disk_filler"), "attention", box, timeout=5) as w:
        with pytest.raises(StudentCrashed, match="wrote more than 96 MiB"):
            w.call("causal_mask", 4)
        value, _ = w.call("merge_heads", np.zeros((2, 3, 4)))  # a fresh worker
        assert value.shape == (3, 8)


def test_the_scratch_measure_counts_bytes_and_files(tmp_path):
    (tmp_path / "a").write_bytes(b"x" * 10000)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b").write_bytes(b"y" * 5000)
    size, files = scratch.measure(tmp_path, 100)
    assert size >= 15000 and files == 3


# -- a folder past the recursion limit ----------------------------------------------------------


@pytest.fixture(scope="module")
def deep_submission(tmp_path_factory) -> Iterator[Path]:
    folder = submission(tmp_path_factory.mktemp("deep") / "sub")
    nested(folder / "data", LEVELS)
    yield folder
    assert remove_tree(folder)  # pytest's own clean-up recurses


def test_grading_a_folder_nested_too_deep_alone_writes_a_result(deep_submission, jobs, tmp_path):
    out = tmp_path / "results.json"
    code = main(["grade", SLUG, str(deep_submission), "--json", str(out), "--sandbox", "landlock"])
    assert code == 0
    data = json.loads(out.read_text())
    part2 = [t for t in data["tests"] if "part2" in t["tags"]]
    assert part2 and all(t["score"] == 0 for t in part2)
    assert "nested deeper than 32 levels" in part2[0]["output"]
    assert sum(t["score"] for t in data["tests"] if "part1" in t["tags"]) == 30


# -- the grader's own work ----------------------------------------------------------------------


def test_the_grader_never_replays_the_reference_on_an_oversized_value(assignment, box, tmp_path):
    """Before: replaying masked_attention on a (3, 12000, 43) split took 11 s and 3.5 GB."""
    folder = submission(tmp_path / "sub", "huge_heads")
    tracemalloc.start()
    began = time.monotonic()
    try:
        result = grade(assignment, folder, box)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < GRADER_MEMORY, f"the grader allocated {peak >> 20} MiB"
    assert time.monotonic() - began < 60
    tests = {t.id: t for t in result.part("part2")}
    assert all(t.score == 0 for t in tests.values() if t.checks == "split_heads")
    assert all(t.passed for t in tests.values() if t.checks in ("causal_mask", "merge_heads"))


# -- a batch: the others get their grades, in their usual time ----------------------------------


def small_disk(folder: Path) -> bool:
    """A tmpfs of OUTER_DISK bytes on ``folder`` (as root), standing in for a small scratch
    file system; False where none can be mounted."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        scratch.mount_tmpfs(folder, OUTER_DISK, 100_000)
    except OSError:
        return False
    return True


HONEST = ("hana", "ivan", "jo")


def class_folder(root: Path, attackers: bool) -> tuple[Path, list[str]]:
    """Three honest students and, with ``attackers``, one per attack; the markers."""
    folder = root / ("with" if attackers else "without")
    for login in HONEST:
        submission(folder / login)
    markers = []
    if attackers:
        for login, attack in (("a-chain", "detached_chain"), ("a-spin", "spinners")):
            markers.append(marked(folder / login, attack)[1])
        submission(folder / "a-fill", "disk_filler")  # huge_heads has its own test: it is slow
        nested(submission(folder / "a-deep") / "data", LEVELS)
    return folder, markers


def run_batch(folder: Path, out: Path, mode: str) -> dict[str, Record]:
    assignment = Assignment.load(SLUG)
    batch.grade_batch(assignment, folder, out, jobs=2, sandbox_mode=mode, say=lambda _: None)
    found = {p.name: load_record(out, p.name) for p in out.iterdir() if p.is_dir()}
    return {login: record for login, record in found.items() if record is not None}


@pytest.fixture(scope="module", params=WITH_AND_WITHOUT_BWRAP)
def batches(request, tmp_path_factory) -> Iterator[dict]:
    SANDBOXES[request.param]()  # skips where this sandbox is not available
    mode = "auto" if request.param == "full" else "landlock"
    root = tmp_path_factory.mktemp(f"batch-{request.param}")
    disk = root / "disk"
    mounted = small_disk(disk)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(disk))
        patch.setattr(tempfile, "tempdir", None)
        try:
            without, _ = class_folder(disk, attackers=False)
            quiet = run_batch(without, disk / "out-without", mode)
            hostile, markers = class_folder(disk, attackers=True)
            records = run_batch(hostile, disk / "out-with", mode)
            yield {
                "quiet": quiet,
                "records": records,
                "markers": markers,
                "mounted": mounted,
                "used": shutil.disk_usage(disk).used,
                "left": [p.name for p in disk.iterdir() if p.name.startswith("autograder-job-")],
            }
        finally:
            remove_tree(disk / "with" / "a-deep")
            if mounted:
                subprocess.run(["umount", "-l", str(disk)], check=False)


def test_in_a_batch_the_honest_students_get_their_grades(batches):
    for login in HONEST:
        assert batches["records"][login].status == "graded"
        assert batches["records"][login].score == batches["quiet"][login].score == 100


def test_in_a_batch_each_attack_is_recorded_in_its_own_row(batches):
    records = batches["records"]
    statuses = {login: r.status for login, r in records.items()}
    assert statuses == dict.fromkeys(statuses, "graded"), (
        statuses
    )  # no suite-error, no grader-error
    deep = records["a-deep"]
    assert "nested deeper than 32 levels" in json.dumps(deep.to_dict())
    assert records["a-chain"].score == 100  # a-spin may starve itself: its CPU is capped


def test_after_a_batch_nothing_is_alive_and_no_job_folder_is_left(batches):
    assert batches["left"] == []
    for marker in batches["markers"]:
        assert alive_with(marker) == []
    if batches["mounted"]:  # the disk is as free as the results leave it
        assert batches["used"] < 32 << 20


def test_the_others_are_graded_in_about_their_usual_time(batches):
    """Before: 80 spinners made every other student's grading take 6-13 s instead of 0.2 s."""

    def seconds(records: dict[str, Record]) -> float:
        return sum(records[login].result.seconds for login in HONEST) / len(HONEST)

    alone, together = seconds(batches["quiet"]), seconds(batches["records"])
    assert together < SLOWDOWN * alone, f"{together:.2f} s against {alone:.2f} s"


def test_doctor_reports_the_cgroup_and_the_job_folder(capsys):
    assert main(["doctor"]) == 0
    printed = capsys.readouterr().out
    assert "cgroup" in printed and "tmpfs" in printed
    assert "job folder:" in printed
    box = Sandbox.detect("auto")
    if box.cgroups is not None:
        assert "[ok] cgroup" in printed and f"cgroup: cgroup {box.cgroups.version}" in printed
    else:
        assert "[--] cgroup" in printed and "missing: no cgroup:" in printed


# -- a full disk is the grader's fault, never the suite's ---------------------------------------


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Preparing any job runs out of space, as the next student's did under the attacker."""

    def no_space(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(worker_module, "copy_submission", no_space)


def test_a_full_disk_is_a_grader_fault_not_a_broken_suite(assignment, full_disk, jobs, tmp_path):
    with pytest.raises(GraderFault, match="No space left on device"):
        grade(assignment, submission(tmp_path / "sub"), Sandbox.detect("landlock"))


def test_a_full_disk_in_a_batch_is_a_grader_error(full_disk, jobs, tmp_path):
    assignment = Assignment.load(SLUG)
    job = batch.JobState(assignment, Sandbox.detect("landlock"), GradingSession(assignment))
    status, data = batch._grade(job, "hana", str(submission(tmp_path / "sub")))
    assert status == "grader-error" and "No space left on device" in str(data)


def test_alone_a_full_disk_still_writes_a_result(full_disk, jobs, tmp_path, capsys):
    out = tmp_path / "results.json"
    code = main(["grade", SLUG, str(submission(tmp_path / "sub")), "--json", str(out)])
    assert code == 4
    assert "No space left on device" in json.loads(out.read_text())["output"]
    assert "the grader failed on this machine" in capsys.readouterr().err


def test_an_exception_preparing_one_student_costs_only_that_row(tmp_path, monkeypatch):
    folder = tmp_path / "class"
    for login in ("hana", "ivan"):
        submission(folder / login)
    hash_of = batch.content_hash

    def fails_for_ivan(path: Path) -> str:
        if path.name == "ivan":
            raise RuntimeError("something no one foresaw")
        return hash_of(path)

    monkeypatch.setattr(batch, "content_hash", fails_for_ivan)
    records = run_batch(folder, tmp_path / "out", "landlock")
    assert records["hana"].status == "graded"
    assert records["hana"].score == 100
    assert records["ivan"].status == "grader-error"
    assert "something no one foresaw" in records["ivan"].failure


KILLED_GRADER = """
import sys, time
from pathlib import Path
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.worker import Worker
w = Worker(Path(sys.argv[1]), "attention", Sandbox.detect(sys.argv[2]), timeout=60)
w.call("causal_mask", 4)
print(w.running.job, flush=True)
time.sleep(120)
"""


def test_when_the_grader_is_killed_the_janitor_empties_the_workers_cgroup(box, tmp_path):
    require_cgroups(box)
    folder, marker = marked(tmp_path / "sub", "detached_chain")
    grader = subprocess.Popen(
        [sys.executable, "-c", KILLED_GRADER, str(folder), box.mode],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert grader.stdout is not None
    job = Path(grader.stdout.readline().strip())
    time.sleep(0.3)  # the chain grows
    assert alive_with(marker)
    grader.kill()
    grader.wait()
    for _ in range(500):
        if not alive_with(marker) and not job.exists():
            break
        time.sleep(0.01)
    assert alive_with(marker) == [], "the chain outlived its grader"
    assert not job.exists(), "the job folder outlived its grader"
    assert box.cgroups is not None
    for _ in range(300):  # the janitor removes the groups after it has emptied them
        groups = [g for p in box.cgroups.parents for g in p.glob(f"autograder-{grader.pid}-*")]
        if not groups:
            break
        time.sleep(0.01)
    assert groups == [], "the worker's cgroup outlived its grader"


# -- the dedicated uid, running a copied runtime ------------------------------------------------


@pytest.fixture
def uid_jobs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Job folders the sandbox uid can enter (not under pytest's 0700 folders, where the
    module's batches put TMPDIR); none may be left there afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="autograder-uid-jobs-", dir="/var/tmp"))
    os.chmod(folder, 0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    left = list(folder.iterdir())
    remove_tree(folder)
    assert left == []


def processes_of(uid: int) -> list[int]:
    """Live processes of ``uid``, read from /proc (not through the reaper)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
                if state not in (b"Z", b"X"):
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_without_a_cgroup_rlimit_nproc_binds_and_the_uid_is_emptied(tmp_path, uid_jobs):
    box = without_cgroups(uid_sandbox())
    assert box.uid is not None and box.runtime.copy == uid_runtime()
    with Worker(submission(tmp_path / "sub", "nproc_count"), "attention", box, timeout=10) as w:
        (started, why), _ = w.call("causal_mask", 4)
        assert why == "EAGAIN" and 0 < started < box.limits.processes
        assert len(processes_of(box.uid)) > started // 2  # the sleepers are still there
    assert processes_of(box.uid) == []


def test_without_a_cgroup_the_uid_ends_a_detached_chain(tmp_path, uid_jobs):
    """The detached chain (setsid, closed descriptors, a fresh python, 400 nested children)
    under the dedicated uid and no cgroup: killing every process of the uid ends it."""
    box = without_cgroups(uid_sandbox())
    assert box.uid is not None
    folder, marker = marked(tmp_path / "sub", "detached_chain")
    with Worker(folder, "attention", box, timeout=5.0) as w:
        w.call("causal_mask", 4)
        time.sleep(0.5)
    assert alive_with(marker) == [] and processes_of(box.uid) == []


def test_the_whole_sandbox_runs_the_copied_runtime_as_the_uid(assignment, tmp_path, uid_jobs):
    box = uid_sandbox("auto")
    result = grade(assignment, submission(tmp_path / "sub"), box)
    assert result.score == 100 and "uid" in result.sandbox
    assert box.runtime.copy == uid_runtime()
    assert box.runtime.python.startswith(str(box.runtime.copy))
    assert ("namespaces" in box.layers) == bool(box.bwrap) and "landlock" in box.layers


FAKE_PYTHON = """#!/bin/sh
echo '{"python": %s, "prefix": "%s", "numpy": "%s", "numpy_file": "%s/site/numpy/x.py"}'
"""


@pytest.fixture
def fake_runtime() -> Iterator[Path]:
    """A runtime folder others may enter, whose interpreter is a script that says what it is."""
    top = Path(tempfile.mkdtemp(prefix="autograder-fake-runtime-", dir="/var/tmp"))
    os.chmod(top, 0o755)
    yield top / "runtime"
    shutil.rmtree(top)


def fake(folder: Path, python: list[int], numpy: str, prefix: Path | None = None) -> Path:
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    script = folder / "bin" / Path(os.path.realpath(sys.executable)).name
    script.write_text(FAKE_PYTHON % (python, prefix or folder, numpy, folder))
    script.chmod(0o755)
    manifest = folder / "runtime.json"
    manifest.write_text(json.dumps({"python": python}))
    stamp = time.time_ns() + next(STAMPS)  # each fake is a new manifest: checked afresh
    os.utime(manifest, ns=(stamp, stamp))
    for path in (folder, folder / "bin"):
        path.chmod(0o755)
    return folder


STAMPS = itertools.count(1)


def test_a_runtime_that_is_not_the_graders_is_not_used(fake_runtime):
    mine = list(sys.version_info[:3])
    newer = [*mine[:2], mine[2] + 1]
    cases = [
        ((newer, np.__version__), "it has Python"),
        ((mine, "1.0.0"), "it has NumPy 1.0.0"),
        ((mine, np.__version__, Path("/opt/elsewhere")), "not from the copy"),
    ]
    for made, why in cases:
        found, note = runtime_module.find(fake(fake_runtime, *made))
        assert found.copy is None and why in note and "autograder sandbox runtime" in note
    folder = fake(fake_runtime, mine, np.__version__)
    assert runtime_module.find(folder)[0].copy == folder  # the same versions: used
    box = Sandbox.detect("fallback", runtime=fake(fake_runtime, newer, np.__version__))
    assert box.runtime.copy is None and any("is not used: it has Python" in n for n in box.notes)


def test_a_runtime_others_may_write_is_never_run(fake_runtime):
    folder = fake(fake_runtime, list(sys.version_info[:3]), np.__version__)
    folder.chmod(0o777)
    found, note = runtime_module.find(folder)
    assert found.copy is None and "may be written by other users" in note


def test_the_runtime_command_copies_and_checks_it(fake_runtime, capsys):
    assert main(["sandbox", "runtime", "--to", str(fake_runtime)]) == 0
    printed = capsys.readouterr().out
    assert f"into {fake_runtime}" in printed and f"AUTOGRADER_RUNTIME={fake_runtime}" in printed
    assert f"NumPy {np.__version__}" in printed
    stdlib = next((fake_runtime / "lib").glob("python3*"))
    assert (stdlib / "os.py").is_file() and (stdlib / "json").is_dir()
    assert not any((stdlib / name).exists() for name in ("test", "idlelib", "tkinter"))
    assert not (stdlib / "site-packages").exists()
    assert (fake_runtime / "site" / "numpy" / "__init__.py").is_file()
    assert stat.S_IMODE(fake_runtime.stat().st_mode) == 0o755
    assert runtime_module.find(fake_runtime)[0].copy == fake_runtime


def test_the_runtime_command_refuses_a_folder_others_cannot_enter(tmp_path, capsys):
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    assert main(["sandbox", "runtime", "--to", str(closed / "runtime")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot be entered by others" in err
    assert not (closed / "runtime").exists()


def test_doctor_reports_the_runtime_and_names_the_command_that_fixes_the_uid(
    capsys, monkeypatch, tmp_path
):
    monkeypatch.setenv("AUTOGRADER_RUNTIME", str(tmp_path / "none"))
    assert main(["doctor", "--sandbox", "fallback"]) == 0
    printed = capsys.readouterr().out
    assert "runtime: the grader's own: Python" in printed
    if "[--] uid" in printed and "cannot be entered by other users" in printed:
        assert "run `autograder sandbox runtime`" in printed
    if os.geteuid() != 0:
        return
    monkeypatch.setenv("AUTOGRADER_RUNTIME", str(uid_runtime()))
    assert main(["doctor", "--sandbox", "fallback"]) == 0
    printed = capsys.readouterr().out
    assert "[ok] uid" in printed and f"runtime: a copy in {uid_runtime()}" in printed


# -- the budget of a replay on a student's values -----------------------------------------------


def test_a_replay_budget_stops_memory_and_time_and_not_the_worker_s_wait():
    with pytest.raises(OverBudget, match="more than 64 MiB"), Budget(memory=64 << 20).running():
        np.ones((12000, 12000))  # 1.1 GB
    began = time.monotonic()
    with pytest.raises(OverBudget, match="CPU time"), Budget(seconds=0.2).running():
        while time.monotonic() - began < 30:
            pass
    assert time.monotonic() - began < 5
    budget = Budget(memory=64 << 20, seconds=0.2)
    with budget.running(), budget.paused():  # the worker's part: neither time nor memory counts
        np.ones((12000, 1000)).sum()
        spin = time.process_time()
        while time.process_time() - spin < 0.4:
            pass
    assert np.ones((4000, 4000)).nbytes == 4000 * 4000 * 8  # the grader's own limits are back


# The budget lets each stretch of a replay between two calls into the worker add 128 MiB of
# address space; measured under pytest, grading huge_heads with the shape check off grows the
# grader by about 270 MiB (100 MiB outside pytest), against 3.4 GB and 114 s without a budget.
REPLAY_BOUND = 512 << 20


def resident(field: str = "VmRSS") -> int:
    """This process's resident memory now (VmRSS, which also restarts the peak) or its peak
    since (VmHWM), in bytes, from /proc."""
    if field == "VmRSS":
        try:
            Path("/proc/self/clear_refs").write_text("5")  # VmHWM starts again from here
        except OSError:
            pytest.skip("the peak resident memory cannot be reset here")
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) << 10
    pytest.skip(f"no {field} in /proc/self/status")


def test_a_replay_over_budget_names_no_cause_and_the_grading_goes_on(
    assignment, jobs, tmp_path, monkeypatch, caplog
):
    """As if the shape check let a (3, 12000, 43) split through: the replay would build
    12000 x 12000 scores per head (3.4 GB, 114 s); the budget stops it at once."""
    monkeypatch.setattr(diagnosis, "_within", lambda got, want: True)
    box = Sandbox.detect("landlock")
    grade(assignment, submission(tmp_path / "honest"), box)  # the first grading's imports
    folder = submission(tmp_path / "sub", "huge_heads")
    before = resident()  # not tracemalloc: NumPy traces an allocation even when it fails
    began = time.monotonic()
    result = grade(assignment, folder, box)
    peak = resident("VmHWM") - before
    assert peak < REPLAY_BOUND, f"the grader's resident memory grew by {peak >> 20} MiB"
    assert time.monotonic() - began < 60
    assert "went over its budget" in caplog.text
    tests = {t.id: t for t in result.part("part2")}
    assert all(t.score == 0 for t in tests.values() if t.checks == "split_heads")
    assert all(t.passed for t in tests.values() if t.checks in ("causal_mask", "merge_heads"))
