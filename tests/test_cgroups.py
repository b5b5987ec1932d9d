"""The cgroup layer: v1 and v2 limits as written, detection and its reasons, and a real
group's kill of a process that left its session (where this machine can make a group)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from autograder.sandbox import cgroups
from autograder.sandbox.cgroups import GroupLimits, WorkerGroup
from autograder.sandbox.layers import Sandbox

LIMITS = GroupLimits(processes=64, memory=1 << 30, cpus=1.0)


def fake_group(folder: Path, files: list[str]) -> WorkerGroup:
    folder.mkdir()
    for name in files:
        (folder / name).write_text("")
    return WorkerGroup("v2" if "memory.max" in files else "v1", [folder])


def test_v2_limits_are_written(tmp_path):
    files = ["pids.max", "memory.max", "memory.swap.max", "cpu.max", "cpu.weight", "cgroup.procs"]
    group = fake_group(tmp_path / "g", files)
    group.limit(LIMITS)
    read = {name: (tmp_path / "g" / name).read_text() for name in files}
    assert read["pids.max"] == "64" and read["memory.max"] == str(1 << 30)
    assert read["memory.swap.max"] == "0" and read["cpu.max"] == "100000 100000"


def test_v1_limits_are_written_and_memsw_is_optional(tmp_path):
    files = ["pids.max", "memory.limit_in_bytes", "cpu.cfs_period_us", "cpu.cfs_quota_us"]
    group = fake_group(tmp_path / "g", files)
    group.limit(GroupLimits(processes=8, memory=1 << 20, cpus=0.5))
    assert (tmp_path / "g" / "cpu.cfs_quota_us").read_text() == "50000"
    assert (tmp_path / "g" / "memory.limit_in_bytes").read_text() == str(1 << 20)
    assert not (tmp_path / "g" / "memory.memsw.limit_in_bytes").exists()


def test_a_missing_limit_file_is_an_error(tmp_path):
    group = fake_group(tmp_path / "g", ["memory.limit_in_bytes"])
    with pytest.raises(OSError, match="pids.max"):
        group.limit(LIMITS)


def test_v2_is_used_where_the_unified_hierarchy_is_mounted(monkeypatch):
    monkeypatch.setattr(cgroups.os, "geteuid", lambda: 0)
    monkeypatch.setattr(cgroups, "_mounts", lambda: {"cgroup2": "/sys/fs/cgroup"})
    monkeypatch.setattr(cgroups, "_detect_v2", lambda mount: (None, f"v2 at {mount}"))
    assert cgroups.detect() == (None, "v2 at /sys/fs/cgroup")


def test_v2_says_which_controllers_are_not_delegated(tmp_path):
    (tmp_path / "cgroup.subtree_control").write_text("memory\n")
    assert cgroups._detect_v2(tmp_path) == (None, "cgroup v2 does not delegate pids, cpu here")


def test_without_root_no_cgroup_and_why(monkeypatch):
    monkeypatch.setattr(cgroups.os, "geteuid", lambda: 1000)
    found, why = cgroups.detect()
    assert found is None and "not running as root" in why


def test_a_real_group_kills_what_left_the_session():
    box = Sandbox.detect("fallback")
    if box.cgroups is None:
        pytest.skip("no cgroup can be made here: " + "; ".join(box.notes))
    group = box.new_group()
    assert group is not None
    started = subprocess.Popen(group.enter(["/bin/sh", "-c", "setsid sleep 60 & wait"]))
    try:
        for _ in range(200):
            if len(group.members()) >= 2:  # the shell and its detached sleep
                break
            time.sleep(0.01)
        assert len(group.members()) >= 2
        assert group.kill()
        assert group.members() == []
    finally:
        started.kill()
        started.wait()
        group.remove()
    assert not any(folder.exists() for folder in group.folders)
