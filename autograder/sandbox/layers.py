"""How a worker process is confined: which layers this machine offers, and how to launch one.

Layers, weakest first:

- ``process``, ``rlimits``, ``session``, ``scrubbed-env``: a separate process in its own
  session, killed whole, and killed too if the grader dies (PR_SET_PDEATHSIG); resource limits
  (address space, CPU, file size, open files, processes, no core files); an environment
  without tokens, keys or secrets, with one BLAS thread. Always on, except in mode ``plain``
  (a bare subprocess, for benchmarks only).
- ``uid``: when the grader runs as root, the worker runs as a dedicated unprivileged uid, which
  cannot write the grader's files and makes ``RLIMIT_NPROC`` bite. Each grader holds a lock on
  its uid (see ``_allocate_uid``), so concurrent graders never share one. Needs the Python
  interpreter to be reachable by other users: the grader's own, or a copy made with
  ``autograder sandbox runtime`` (``autograder/sandbox/runtime.py``); ``doctor`` says which.
- ``landlock``: the worker restricts itself, before importing the student's module, to reading
  the interpreter, NumPy and its own runner, reading its copy of the submission and writing
  only its scratch folder; TCP, signals out of the sandbox and abstract sockets are denied as
  far as the kernel's ABI allows (see ``autograder/sandbox/runner/landlock.py``).
- ``namespaces``: bubblewrap (``bwrap``): no network, a private PID space (nothing survives the
  sandbox), and a file system that shows only the submission copy and read-only Python.
- ``cgroup``: as root, a cgroup per worker (v1 or v2, see ``autograder/sandbox/cgroups.py``):
  every process it starts, however it detaches, is counted (64 tasks, for root too), limited
  (memory, one CPU) and killed with the group when the worker ends.
- ``tmpfs``: as root, each job folder is its own size-limited tmpfs
  (``autograder/sandbox/scratch.py``); elsewhere it is measured after every call.

A sandbox is **strong** when the worker can neither read the grader's files nor write outside
its scratch folder: namespaces, or Landlock's file-system rules. Anything less is **weak**.
``STRONG_MEANS`` and ``WEAK_MEANS`` say so in the one wording every help text and doctor use.

Modes: ``auto`` uses every layer that works here; ``landlock`` hides bubblewrap (what a GitHub
``ubuntu-24.04`` runner gets); ``fallback`` leaves out bubblewrap and Landlock (an old kernel);
``plain`` confines nothing. Each mode but ``plain`` uses the cgroup and tmpfs layers where they
work. ``Reaper`` finds what a worker left behind by parentage, where no cgroup holds it.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import os
import pwd
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder import PACKAGE_DIR, tree
from autograder.errors import UsageError
from autograder.sandbox import cgroups as cgroup_layer
from autograder.sandbox import runtime as runtime_module
from autograder.sandbox import scratch
from autograder.sandbox.cgroups import Cgroups, GroupLimits, WorkerGroup
from autograder.sandbox.runner import landlock
from autograder.sandbox.runtime import Runtime, grader_runtime
from autograder.tree import remove_tree

MODES = ("auto", "landlock", "fallback", "plain")
# The one wording of the sandbox's strength, for every help text, doctor and the README.
STRONG_MEANS = (
    "strong: bubblewrap's namespaces or Landlock's file-system rules (either one is enough) "
    "keep the worker from reading the grader's files and from writing outside its scratch folder"
)
WEAK_MEANS = (
    "weak: neither bubblewrap's namespaces nor Landlock's file-system rules, "
    "so the worker could read the grader's files"
)
PR_SET_CHILD_SUBREAPER = 36
# Outside every range systemd reserves (users up to 60513, homed, DynamicUser 61184-65519,
# nobody 65534, containers from 524288) and below the usual /etc/subuid start (100000).
SANDBOX_UIDS = range(70000, 71000)
UID_LOCKS = Path("/run/autograder-uids")  # root-owned: one flock per uid in use
TMPFS_BYTES = 64 << 20  # the worker's /tmp under bwrap lives in memory
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
GRADER = PACKAGE_DIR  # hidden from every worker: it holds the suites


@dataclass(frozen=True)
class Limits:
    memory: int = 1 << 30  # address space, bytes
    cpu_seconds: int = 60  # whole worker life; the per-call wall clock is the real guard
    file_size: int = 16 << 20
    open_files: int = 64
    processes: int = 64  # RLIMIT_NPROC only binds under the dedicated uid; a cgroup's always
    scratch: int = 96 << 20  # bytes of a job folder (runner, submission copy, scratch)
    scratch_files: int = 4096  # files and folders of a job folder
    cpus: float = 1.0  # CPU seconds per second, under a cgroup


@dataclass(frozen=True)
class WorkerPaths:
    """A job's folders as the worker sees them (inside bwrap they are mounted elsewhere)."""

    runner: str
    submission: str
    scratch: str


@dataclass
class Sandbox:
    """A launch recipe for workers, as detected here. Build one with ``Sandbox.detect``."""

    mode: str = "auto"
    uid: int | None = None
    bwrap: str | None = None
    landlock_abi: int = 0  # 0: the Landlock layer is not used
    limits: Limits = field(default_factory=Limits)
    notes: list[str] = field(default_factory=list)  # why a layer is missing
    cgroups: Cgroups | None = None  # a cgroup per worker, when one can be made here
    tmpfs: bool = False  # each job folder is its own size-limited tmpfs
    reaper: Reaper = field(default_factory=lambda: Reaper())
    runtime: Runtime = field(default_factory=grader_runtime)  # the worker's Python and NumPy

    @classmethod
    def detect(
        cls, mode: str = "auto", limits: Limits | None = None, runtime: Path | None = None
    ) -> Sandbox:
        """The sandbox this machine offers in ``mode``; the worker runs the runtime copied
        into ``runtime`` (default: $AUTOGRADER_RUNTIME or /var/lib/autograder/runtime) when
        it is there and matches the grader's Python and NumPy."""
        if mode not in MODES:
            raise ValueError(f"unknown sandbox mode {mode!r}; choose from {', '.join(MODES)}")
        box = cls(mode=mode, limits=limits or Limits())
        _become_subreaper()
        if mode == "plain":
            box.notes.append("sandbox mode 'plain' asked for: a bare subprocess, no confinement")
            return box
        box.runtime, why = runtime_module.find(runtime)
        if why:
            box.notes.append(why)
        why = _uid_layer_blocked(box.runtime)
        if not why:
            uid, lock = _allocate_uid()
            if uid is None:
                why = str(lock)
            else:
                box.uid, box.reaper = uid, Reaper(uid, int(lock))
        if why:
            box.notes.append(f"no dedicated uid: {why}")
        box._detect_containment()
        if mode == "fallback":
            box.notes.append("sandbox mode 'fallback' asked for: no Landlock, no namespaces")
            return box
        box.landlock_abi = landlock.abi()
        if not box.landlock_abi:
            box.notes.append("no Landlock: this kernel does not offer it (Linux 5.13+ needed)")
        if mode == "landlock":
            box.notes.append("sandbox mode 'landlock' asked for: bubblewrap hidden")
            return box
        bwrap, why = _bwrap_usable(box.uid, box.runtime)
        box.bwrap = bwrap
        if not bwrap:
            box.notes.append(f"no namespaces: {why}")
        return box

    def _detect_containment(self) -> None:
        """The kernel-tracked layers: a cgroup per worker, and a tmpfs per job folder."""
        self.cgroups, why = _cgroups_here()
        if self.cgroups and self.uid is not None and not shutil.which("setpriv"):
            self.cgroups, why = None, "setpriv (util-linux) is needed to enter it as the uid"
        if why:
            self.notes.append(f"no cgroup: {why}")
        why = scratch.tmpfs_usable()
        self.tmpfs = not why
        if why:
            self.notes.append(f"no tmpfs per job: {why}; the job folder's size is measured")

    @property
    def layers(self) -> list[str]:
        if self.mode == "plain":
            return ["process"]
        found = ["process", "rlimits", "session", "scrubbed-env"]
        if self.uid is not None:
            found.append("uid")
        if self.cgroups:
            found.append("cgroup")
        if self.tmpfs:
            found.append("tmpfs")
        if self.landlock_abi:
            found.append("landlock")
        if self.bwrap:
            found.append("namespaces")
        return found

    @property
    def strong(self) -> bool:
        """The worker can neither read the grader's files nor write outside its scratch."""
        return bool(self.bwrap or self.landlock_abi)

    @property
    def weak(self) -> bool:
        return not self.strong

    @property
    def strength(self) -> str:
        """One line: strong or weak, and why."""
        because = []
        if self.bwrap:
            because.append("namespaces from bubblewrap hide the grader's files")
        if self.landlock_abi:
            because.append(f"Landlock {self.landlock_summary()}")
        if because:
            return "strong sandbox: " + "; ".join(because)
        missing = "; ".join(n for n in self.notes if not n.startswith("no dedicated uid"))
        return "weak sandbox: the worker could read the grader's files (" + missing + ")"

    def landlock_summary(self) -> str:
        """Which Landlock rights the running ABI lets the worker apply."""
        if not self.landlock_abi:
            return "not used"
        handled = landlock.rights(self.landlock_abi)
        covers = ["file-system allow-list"]
        if handled["net"]:
            covers.append("TCP bind and connect denied")
        if handled["scope"]:
            covers.append("signals and abstract unix sockets scoped")
        return f"ABI {self.landlock_abi}: " + ", ".join(covers)

    @classmethod
    def for_record(cls, mode: str = "auto", allow_weak: bool = False) -> Sandbox:
        """The sandbox that grading for record runs in: refused when weak, unless the
        instructor passes --allow-weak-sandbox."""
        box = cls.detect(mode)
        box.require_strong(allow_weak)
        return box

    def require_strong(self, allow_weak: bool) -> None:
        """Grading for record refuses a weak sandbox unless the instructor accepts it."""
        if self.weak and not allow_weak:
            raise UsageError(
                f"refusing to grade for record in a {self.strength}; "
                "install bubblewrap or use a kernel with Landlock, or pass --allow-weak-sandbox"
            )

    # -- launching ----------------------------------------------------------------------------

    def paths(self, runner: Path, submission: Path, scratch: Path) -> WorkerPaths:
        if self.bwrap:
            return WorkerPaths("/runner", "/sub", "/tmp")
        return WorkerPaths(str(runner), str(submission), str(scratch))

    def command(self, runner: Path, submission: Path, tmp: Path, module: str) -> list[str]:
        """The argv that starts a worker for ``module`` in the ``submission`` copy."""
        seen = self.paths(runner, submission, tmp)
        python = [self.runtime.python, "-I", "-S", f"{seen.runner}/worker_main.py"]
        args = [seen.submission, module, f"{seen.scratch}/output.txt", self.runtime.numpy_site]
        if not self.bwrap:
            return python + args
        argv = [self.bwrap, *_bwrap_base_args(self.runtime)]
        argv += ["--ro-bind", str(runner), "/runner", "--bind", str(submission), "/sub"]
        argv += ["--chdir", "/sub", "--"]  # scratch: bwrap's own /tmp, in memory
        return argv + python + args

    def landlock_rules(self, runner: Path, submission: Path, tmp: Path) -> dict | None:
        """The allow-list the worker applies to itself, in the paths it sees."""
        if not self.landlock_abi or self.mode == "plain":
            return None
        seen = self.paths(runner, submission, tmp)
        read_exec: list[str] = []
        for root in _system_paths() + list(self.runtime.landlock_folders):
            read_exec += _beneath_except(Path(root), [GRADER])
        return {
            "read_exec": [seen.runner, *read_exec],
            "read": [seen.submission, "/dev/urandom", "/dev/zero", "/etc/localtime"],
            "read_write": [seen.scratch, "/dev/null"],
        }

    def environment(self) -> dict[str, str]:
        """A scrubbed environment: no tokens, keys or secrets, one BLAS thread."""
        if self.mode == "plain":
            return dict(os.environ)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}
        env.update(dict.fromkeys(THREAD_VARS, "1"))
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONHASHSEED"] = "0"
        if self.runtime.library_path:  # a copied shared libpython, ahead of its RUNPATH
            env["LD_LIBRARY_PATH"] = self.runtime.library_path
        for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # keeps old OpenBLAS correct
            if name in os.environ:
                env[name] = os.environ[name]
        return env

    def worker_limits(self) -> dict[str, Any] | None:
        """What the worker applies to itself first thing, before NumPy or any student code:
        resource limits, then death with the grader. Applied there rather than between fork
        and exec, so that starting a worker runs no Python in a copy of the grader."""
        if self.mode == "plain":
            return None
        limits = self.limits
        # RLIMIT_NPROC counts every process of the real uid: a shared uid needs headroom.
        processes = limits.processes + (0 if self.uid is not None else _own_process_count())
        cpu = limits.cpu_seconds
        return {
            "rlimits": {
                "RLIMIT_AS": [limits.memory, limits.memory],
                "RLIMIT_CPU": [cpu, cpu + 2],
                "RLIMIT_FSIZE": [limits.file_size, limits.file_size],
                "RLIMIT_NOFILE": [limits.open_files, limits.open_files],
                "RLIMIT_CORE": [0, 0],
                "RLIMIT_NPROC": [processes, processes],
            },
            # the worker's parent, whose death it must not outlive; under bwrap that parent is
            # bwrap, which dies with the grader (--die-with-parent), so there is none to check
            "grader": None if self.bwrap else os.getpid(),
        }

    def new_group(self) -> WorkerGroup | None:
        """A fresh cgroup for one worker, with this sandbox's limits, or None without one."""
        if self.cgroups is None or self.mode == "plain":
            return None
        limits = self.limits
        memory = limits.memory + limits.scratch  # tmpfs pages are charged to the writer
        return self.cgroups.create(GroupLimits(limits.processes, memory, limits.cpus))

    def launch(
        self, argv: list[str], group: WorkerGroup | None
    ) -> tuple[list[str], dict[str, Any]]:
        """argv and Popen's options for a worker that is in ``group`` before it runs."""
        if group is None:
            return argv, self.spawn_options()
        return group.enter(argv, self.uid), {}  # the uid is dropped after joining

    def spawn_options(self) -> dict[str, Any]:
        """subprocess.Popen's part: the dedicated uid, with no supplementary groups."""
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.uid, "extra_groups": []}

    def prepare(self, path: Path, writable: bool) -> None:
        """Give the sandbox uid the access it needs to a job folder."""
        if self.uid is None:
            return
        for root, dirs, files in os.walk(path):
            for name in [root, *(os.path.join(root, f) for f in files + dirs)]:
                if writable:
                    os.lchown(name, self.uid, self.uid)
                else:
                    mode = os.lstat(name).st_mode
                    os.chmod(name, mode | (0o755 if stat.S_ISDIR(mode) else 0o644))

    def kill(self, process: subprocess.Popen) -> None:
        self.reaper.kill(process, plain=self.mode == "plain")

    def sweep(self) -> None:
        if self.mode != "plain":
            self.reaper.sweep()


# -- the reaper ---------------------------------------------------------------------------------

SWEEP_ROUNDS = 100


class Reaper:
    """Kills a worker whole, and whatever it left behind, found by parentage.

    The grader is a subreaper, so every orphan of a worker (a double-forked daemon, however
    it changed its session or environment) becomes the grader's own child. A leftover is a
    child of the grader, started after this reaper's first worker, that is not a running
    worker nor the janitor. Under the dedicated uid, every process of that uid is ours too:
    the uid's lock says no other grader uses it.

    The running workers are this reaper's own (``live``): a process grades with one sandbox
    at a time (a batch job, a check, ``nbgrader autograde`` each detect theirs), so no other
    reaper's worker runs beside them."""

    def __init__(self, uid: int | None = None, lock: int | None = None) -> None:
        self.uid = uid
        self.since: int | None = None  # start time (clock ticks) of the first worker
        self.live: set[int] = set()  # pids of this reaper's running workers
        if lock is not None:
            weakref.finalize(self, os.close, lock)  # the uid is free again when we are gone

    def started(self, process: subprocess.Popen, job: Path, held: list[Path]) -> None:
        """A worker started in ``job``, holding ``held`` (its cgroup folders)."""
        self.live.add(process.pid)
        if self.since is None:
            self.since = _start_time(process.pid)
        for path in [job, *held]:
            _janitor().remember(path)

    def released(self, held: list[Path]) -> None:
        for path in held:
            _janitor().forget(path)

    def forget(self, job: Path) -> None:
        if remove_tree(job):  # else the janitor keeps it, and tries again at the end
            _janitor().forget(job)

    def kill(self, process: subprocess.Popen, plain: bool = False) -> None:
        """Kill a worker's whole session, then anything it left running elsewhere."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        self.live.discard(process.pid)
        if not plain:
            self.sweep()

    def sweep(self) -> None:
        """Kill and reap leftovers until none is left, or for about a second. Under bwrap the
        PID namespace dies with the worker, asynchronously: this waits until it has."""
        for _ in range(SWEEP_ROUNDS):
            left = self.left_behind()
            if not left:
                return
            if self.uid is not None:
                _kill_all_of(self.uid)
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.waitpid(pid, os.WNOHANG)
            time.sleep(0.005)

    def left_behind(self) -> list[int]:
        """Our leftover children (zombies too: they hold RLIMIT_NPROC slots), and live
        processes of the sandbox uid."""
        me, session, found = os.getpid(), os.getsid(0), []
        keep = self.live | helper_pids()
        children: dict[int, list[int]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) in keep:
                continue
            try:
                owner = entry.stat().st_uid
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            state, parent, started = fields[0], int(fields[1]), int(fields[19])
            children.setdefault(parent, []).append(int(entry.name))
            ours = (
                parent == me
                and int(fields[3]) != session
                and self.since is not None
                and started >= self.since
            )
            if ours or (self.uid is not None and owner == self.uid and state not in (b"Z", b"X")):
                found.append(int(entry.name))
        return found + _descendants_of(found, children)


def _descendants_of(roots: list[int], children: dict[int, list[int]]) -> list[int]:
    """Every process below ``roots``: a chain of nested children dies in one round, not one
    level per round as each becomes an orphan."""
    found, todo = [], [child for pid in roots for child in children.get(pid, [])]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _start_time(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[19])


class Janitor:
    """A small process that cleans up after the grader when it dies, however it dies: it
    kills what is left in each worker's cgroup, then removes the job folders (see
    autograder/sandbox/janitor.py)."""

    def __init__(self) -> None:
        program = Path(__file__).with_name("janitor.py")
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(program), tree.__file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C to the grader must not stop it first
        )
        self.pid = self.process.pid

    def _say(self, line: str) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            self.process.stdin.write(line.encode() + b"\n")
            self.process.stdin.flush()

    def remember(self, path: Path) -> None:
        self._say(f"+{path}")

    def forget(self, path: Path) -> None:
        self._say(f"-{path}")


@functools.cache  # one per grader process, by design: it cleans up when that process dies
def _janitor_of(pid: int) -> Janitor:
    return Janitor()


def _janitor() -> Janitor:
    return _janitor_of(os.getpid())  # a forked grader needs its own


def helper_pids() -> set[int]:
    """Processes the grader keeps on purpose (the janitor): not leftovers."""
    return {_janitor().pid}


def _kill_all_of(uid: int) -> None:
    """Send SIGKILL to every process of ``uid``, from a child that takes that uid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child only signals and exits
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(10):  # a fork bomb may fork while it is being killed
                os.kill(-1, signal.SIGKILL)  # every process of this uid but the caller
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


@functools.cache  # a property of this process, set once: every sandbox in it relies on it
def _become_subreaper() -> bool:
    """Have the grader adopt its workers' orphans (Linux), so that the reaper finds them."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _own_process_count() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        with contextlib.suppress(OSError):
            count += entry.name.isdigit() and entry.stat().st_uid == uid
    return count


def secret_values() -> list[str]:
    """Values of the grader's secret-looking variables, to redact from any feedback."""
    return sorted(
        (v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= 6),
        key=len,
        reverse=True,
    )


# -- the dedicated uid --------------------------------------------------------------------------


def _uids_in_use() -> set[int]:
    found = set()
    for entry in os.scandir("/proc"):
        with contextlib.suppress(OSError):
            if entry.name.isdigit():
                found.add(entry.stat().st_uid)
    return found


def _allocate_uid() -> tuple[int | None, int | str]:
    """A uid of SANDBOX_UIDS that no account, no process and no other grader uses, and the
    file descriptor of its lock (held while this grader lives), or None and why not."""
    try:
        UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(UID_LOCKS)
    except OSError as error:
        return None, f"cannot create the uid lock folder {UID_LOCKS}: {error.strerror}"
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        return None, f"{UID_LOCKS} is not a folder only root can write"
    start = random.randrange(len(SANDBOX_UIDS))  # spread concurrent graders out
    for i in range(len(SANDBOX_UIDS)):
        uid = SANDBOX_UIDS[(start + i) % len(SANDBOX_UIDS)]
        with contextlib.suppress(KeyError):
            pwd.getpwuid(uid)
            continue  # an account has it
        path = UID_LOCKS / f"{uid}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if uid in _uids_in_use():  # e.g. left by a grader killed outright: not ours to kill
            os.close(fd)
            continue
        return uid, fd
    return None, f"all {len(SANDBOX_UIDS)} sandbox uids are in use"


# -- detection ----------------------------------------------------------------------------------


@functools.cache  # which cgroups this machine lets us make is a fact about it, probed once
def _cgroups_here() -> tuple[Cgroups | None, str]:
    return cgroup_layer.detect()


def _system_paths() -> list[str]:
    found = ["/usr", "/etc/alternatives", "/etc/ld.so.cache"]
    return found + [f"/{name}" for name in ("lib", "lib64", "lib32", "bin", "sbin")]


def _beneath_except(root: Path, hidden: list[Path]) -> list[str]:
    """Folders and files that cover ``root`` but nothing in ``hidden`` (Landlock can only
    allow, so a hidden folder inside an allowed one means allowing its siblings instead)."""
    inside = [h for h in hidden if h.is_relative_to(root)]
    if not inside:
        return [str(root)]
    if root in inside or root.is_symlink() or not root.is_dir():
        return []
    found = []
    for child in sorted(root.iterdir()):
        found += _beneath_except(child, inside)
    return found


def _reachable_by_others(path: str) -> tuple[bool, str]:
    current = Path(path).resolve()
    for folder in [*reversed(current.parents), current]:
        mode = os.stat(folder).st_mode
        if not mode & stat.S_IXOTH:
            return False, f"{folder} (mode {stat.S_IMODE(mode):04o})"
    return True, ""


def _uid_layer_blocked(runtime: Runtime) -> str:
    """Why the dedicated uid cannot be used here, or "" if it can."""
    if os.geteuid() != 0:
        return "the grader is not running as root"
    for path in runtime.folders:
        ok, folder = _reachable_by_others(path)
        if not ok:
            return (
                f"Python lives in {path}, and {folder} cannot be entered by other users, so a "
                f"sandbox uid could not start it; run `{runtime_module.COMMAND}` to copy Python "
                f"and NumPy into {runtime_module.RUNTIME_DIR}, where it can "
                "(autograder never changes permissions outside the project)"
            )
    return ""


def _bwrap_base_args(runtime: Runtime) -> list[str]:
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args += ["--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
    # /tmp first: the binds below may live under it (a virtual environment in /tmp) and
    # must be mounted on top of the empty tmpfs, not hidden by it
    args += ["--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
    for name in ("lib", "lib64", "bin", "sbin"):
        if os.path.islink(f"/{name}"):
            args += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            args += ["--ro-bind", f"/{name}", f"/{name}"]
    for path in ("/etc/alternatives", "/etc/ld.so.cache"):
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    for path in runtime.folders:
        args += ["--ro-bind", path, path]
    if any(GRADER.is_relative_to(p) for p in runtime.folders):
        args += ["--tmpfs", str(GRADER)]  # an installed grader would show its suites
    return args + ["--proc", "/proc", "--dev", "/dev"]


# Whether bwrap runs here, as root and as a sandbox uid (any of SANDBOX_UIDS answers alike),
# with each Python runtime: a fact about the machine, probed once per process, not state of a
# sandbox.
_BWRAP_PROBED: dict[tuple[bool, str], tuple[str | None, str]] = {}


def _bwrap_usable(uid: int | None, runtime: Runtime) -> tuple[str | None, str]:
    """Whether bwrap runs NumPy here (as the sandbox uid, if there is one); probed once."""
    key = (uid is None, runtime.python)
    if key in _BWRAP_PROBED:
        return _BWRAP_PROBED[key]
    path = shutil.which("bwrap")
    if not path:
        found: tuple[str | None, str] = (
            None,
            "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)",
        )
    else:
        found = _probe_bwrap(path, Sandbox(mode="auto", uid=uid, runtime=runtime))
    _BWRAP_PROBED[key] = found
    return found


def _probe_bwrap(path: str, box: Sandbox) -> tuple[str | None, str]:
    runtime = box.runtime
    load = f"import sys; sys.path.append({runtime.numpy_site!r}); import numpy"
    probe = [path, *_bwrap_base_args(runtime), "--", runtime.python, "-I", "-S", "-c", load]
    try:
        done = subprocess.run(
            probe,
            capture_output=True,
            timeout=30,
            env=box.environment(),
            **box.spawn_options(),
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"bwrap could not start: {error}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        return None, f"bwrap failed here: {reason[-1] if reason else done.returncode}"
    return path, ""
