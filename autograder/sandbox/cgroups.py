"""A cgroup per worker: the kernel's own record of every process a submission starts, however
it detaches (a new session, a double fork, an exec of a fresh Python), with limits on
processes, memory and CPU, and one kill for the whole group when the worker ends.

Both cgroup versions are supported, found from /proc/self/mounts and /proc/self/cgroup:

- **v2** (GitHub's ubuntu-24.04 runners, Debian 12+): one hierarchy. Groups live under
  ``<mount>/autograder/``, a folder with no process of its own whose controllers we enable
  (the "no internal processes" rule forbids enabling them in the grader's own group).
  ``cgroup.kill`` kills the group at once.
- **v1** (older systems, some containers): one hierarchy per controller; the worker's group is
  made in each of pids, memory, cpu and freezer, under the grader's own group there. The kill
  freezes the group, kills every member, then thaws it, so a fork bomb cannot outrun it.

The worker enters its group before anything of its own runs: it is started through
``/bin/sh``, which writes its pid into the group and then execs the real command (and drops
to the sandbox uid with ``setpriv`` when there is one). No Python runs in a forked grader.
No library does this: the cgroup files are the whole interface, written here directly.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

V1_CONTROLLERS = ("pids", "memory", "cpu", "freezer")
V2_CONTROLLERS = ("pids", "memory", "cpu")
CPU_PERIOD = 100_000  # microseconds
CPU_SHARE = 1024  # v1 cpu.shares: a whole group weighs as much as one process
CPU_WEIGHT = 100  # v2 cpu.weight: the default, one sibling
KILL_SECONDS = 5.0
ENTER = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


@dataclass(frozen=True)
class GroupLimits:
    processes: int  # tasks (threads count), for root too, unlike RLIMIT_NPROC
    memory: int  # bytes, page cache and tmpfs pages included
    cpus: float  # CPU time per wall-clock second


@dataclass(frozen=True)
class Cgroups:
    """Where this grader can make worker groups: version and parent folders."""

    version: str  # "v1" or "v2"
    parents: tuple[Path, ...]  # v1: one per controller of V1_CONTROLLERS; v2: one

    @property
    def summary(self) -> str:
        controllers = V1_CONTROLLERS if self.version == "v1" else V2_CONTROLLERS
        return f"cgroup {self.version} ({', '.join(controllers)}) under {self.parents[0]}"

    def create(self, limits: GroupLimits) -> WorkerGroup:
        # unique without a counter to keep: 64 random bits never repeat among one grader's groups
        name = f"autograder-{os.getpid()}-{secrets.token_hex(8)}"
        folders = [parent / name for parent in self.parents]
        group = WorkerGroup(self.version, folders)
        try:
            for folder in folders:
                folder.mkdir(mode=0o755)
            group.limit(limits)
        except OSError:
            group.remove()
            raise
        return group


class WorkerGroup:
    """One worker's group: its folders (one per v1 hierarchy, one in v2)."""

    def __init__(self, version: str, folders: list[Path]) -> None:
        self.version = version
        self.folders = folders

    def _write(self, name: str, value: str, required: bool = True) -> None:
        for folder in self.folders:
            path = folder / name
            if path.exists():
                path.write_text(value)
                return
        if required:
            raise OSError(f"no {name} in the worker's cgroup")

    def limit(self, limits: GroupLimits) -> None:
        quota = str(max(1000, int(limits.cpus * CPU_PERIOD)))
        self._write("pids.max", str(limits.processes))
        if self.version == "v2":
            self._write("memory.max", str(limits.memory))
            self._write("memory.swap.max", "0", required=False)
            self._write("cpu.max", f"{quota} {CPU_PERIOD}")
            self._write("cpu.weight", str(CPU_WEIGHT), required=False)
            return
        self._write("memory.limit_in_bytes", str(limits.memory))
        self._write("memory.memsw.limit_in_bytes", str(limits.memory), required=False)
        self._write("cpu.cfs_period_us", str(CPU_PERIOD))
        self._write("cpu.cfs_quota_us", quota)
        self._write("cpu.shares", str(CPU_SHARE), required=False)

    def enter(self, argv: list[str], uid: int | None = None) -> list[str]:
        """``argv`` started so that it is in this group before it runs (as ``uid``, if any)."""
        drop = []
        if uid is not None:
            setpriv = shutil.which("setpriv") or "setpriv"
            drop = [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
        procs = [str(folder / "cgroup.procs") for folder in self.folders]
        return ["/bin/sh", "-c", ENTER, "sh", *procs, "--", *drop, *argv]

    def members(self) -> list[int]:
        try:
            text = (self.folders[0] / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(line) for line in text.split()]

    def kill(self) -> bool:
        """Kill every member at once; True when the group is empty within KILL_SECONDS."""
        if self.version == "v2" and (self.folders[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.folders[0] / "cgroup.kill").write_text("1")
        else:
            self._kill_frozen()
        return self._wait_empty()

    def _kill_frozen(self) -> None:
        frozen = self._freeze("FROZEN")
        for pid in self.members():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if frozen:
            self._freeze("THAWED")  # a frozen process cannot die

    def _freeze(self, state: str) -> bool:
        path = next(
            (f / "freezer.state" for f in self.folders if (f / "freezer.state").exists()), None
        )
        if path is None:
            return False
        with contextlib.suppress(OSError):
            path.write_text(state)
            for _ in range(200):
                if path.read_text().strip() == state:
                    return True
                time.sleep(0.005)
        return False

    def _wait_empty(self) -> bool:
        until = time.monotonic() + KILL_SECONDS
        while time.monotonic() < until:
            left = self.members()
            if not left:
                return True
            for pid in left:  # in v1, or a v2 kernel without cgroup.kill: again
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)
        return not self.members()

    def remove(self) -> None:
        for folder in self.folders:
            for _ in range(100):  # busy while the last members are being torn down
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


# -- detection ----------------------------------------------------------------------------------


def detect() -> tuple[Cgroups | None, str]:
    """The cgroups this grader can make worker groups in, or None and why not."""
    if os.geteuid() != 0:
        return None, "the grader is not running as root, so it cannot make a cgroup per worker"
    mounts = _mounts()
    own = _own_groups()
    if mounts.get("cgroup2") == "/sys/fs/cgroup":
        return _detect_v2(Path("/sys/fs/cgroup"))
    parents = []
    for controller in V1_CONTROLLERS:
        mount = mounts.get(controller)
        if mount is None or controller not in own:
            return None, f"no cgroup v1 {controller} controller is mounted"
        parents.append(Path(mount) / own[controller].lstrip("/"))
    found = Cgroups("v1", tuple(parents))
    return _probe(found)


def _detect_v2(mount: Path) -> tuple[Cgroups | None, str]:
    try:
        enabled = (mount / "cgroup.subtree_control").read_text().split()
    except OSError as error:
        return None, f"cgroup v2 is unreadable: {error.strerror}"
    missing = [c for c in V2_CONTROLLERS if c not in enabled]
    if missing:
        return None, f"cgroup v2 does not delegate {', '.join(missing)} here"
    parent = mount / "autograder"
    try:
        parent.mkdir(mode=0o755, exist_ok=True)
        wanted = " ".join(f"+{c}" for c in V2_CONTROLLERS)
        (parent / "cgroup.subtree_control").write_text(wanted)
    except OSError as error:
        return None, f"cannot make {parent} with controllers: {error.strerror or error}"
    return _probe(Cgroups("v2", (parent,)))


def _probe(cgroups: Cgroups) -> tuple[Cgroups | None, str]:
    """Make and remove one group: what is mounted is not always writable (a container)."""
    try:
        cgroups.create(GroupLimits(processes=8, memory=64 << 20, cpus=1.0)).remove()
    except OSError as error:
        return None, f"cannot make a cgroup under {cgroups.parents[0]}: {error.strerror or error}"
    return cgroups, ""


def _mounts() -> dict[str, str]:
    """Where each cgroup v1 controller, and cgroup2 itself, is mounted."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 4:
                continue
            if fields[2] == "cgroup2":
                found.setdefault("cgroup2", fields[1])
            elif fields[2] == "cgroup":
                for option in fields[3].split(","):
                    found.setdefault(option, fields[1])
    return found


def _own_groups() -> dict[str, str]:
    """This process's group in each v1 controller (from /proc/self/cgroup)."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(","):
                found[controller] = path
    return found
