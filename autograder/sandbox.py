"""How a worker process is confined: which layers this machine offers, and how to launch one.

Layers, weakest first:

- ``process``, ``rlimits``, ``session``, ``scrubbed-env``: a separate process in its own
  session, killed whole; resource limits (address space, CPU, file size, open files,
  processes, no core files); an environment without tokens, keys or secrets, with one BLAS
  thread and a marker that lets ``sweep`` find what the worker left behind. Always on,
  except in mode ``plain`` (a bare subprocess, for benchmarks only).
- ``uid``: when the grader runs as root, the worker runs as a dedicated unprivileged uid, which
  cannot write the grader's files, makes ``RLIMIT_NPROC`` bite, and lets the grader kill every
  process left behind. Needs the Python interpreter to be reachable by other users.
- ``namespaces``: bubblewrap (``bwrap``): no network, a private PID space (nothing survives the
  sandbox), and a file system that shows only the submission copy and read-only Python.

Modes: ``auto`` uses every layer that works here; ``fallback`` leaves out the namespaces (what
a machine without bubblewrap gets); ``plain`` confines nothing. The grader adopts orphaned
worker processes (PR_SET_CHILD_SUBREAPER) so that a sweep can reap them at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import resource
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MODES = ("auto", "fallback", "plain")
PR_SET_CHILD_SUBREAPER = 36
SANDBOX_UID_BASE = 61000
TMPFS_BYTES = 64 << 20  # the worker's /tmp under bwrap lives in memory
MARKER_VARIABLE = "AUTOGRADER_SANDBOX"
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass(frozen=True)
class Limits:
    memory: int = 1 << 30  # address space, bytes
    cpu_seconds: int = 60  # whole worker life; the per-call wall clock is the real guard
    file_size: int = 16 << 20
    open_files: int = 64
    processes: int = 64  # only effective under the dedicated uid


@dataclass
class Sandbox:
    """A launch recipe for workers. Build one with ``Sandbox.detect``."""

    mode: str = "auto"
    uid: int | None = None
    bwrap: str | None = None
    limits: Limits = field(default_factory=Limits)
    notes: list[str] = field(default_factory=list)  # why a layer is missing
    marker: str = field(default_factory=lambda: secrets.token_hex(8))

    @classmethod
    def detect(cls, mode: str = "auto", limits: Limits | None = None) -> Sandbox:
        if mode not in MODES:
            raise ValueError(f"unknown sandbox mode {mode!r}; choose from {', '.join(MODES)}")
        box = cls(mode=mode, limits=limits or Limits())
        _become_subreaper()
        if mode == "plain":
            box.notes.append("sandbox mode 'plain' asked for: a bare subprocess, no confinement")
            return box
        uid_ok, why = _uid_layer_possible()
        if uid_ok:
            box.uid = SANDBOX_UID_BASE + os.getpid() % 1000
        else:
            box.notes.append(f"no dedicated uid: {why}")
        if mode == "fallback":
            box.notes.append("sandbox mode 'fallback' asked for: no namespaces")
            return box
        bwrap, why = _bwrap_usable(box.uid)
        box.bwrap = bwrap
        if not bwrap:
            box.notes.append(f"no namespaces: {why}")
        return box

    @property
    def layers(self) -> list[str]:
        if self.mode == "plain":
            return ["process"]
        found = ["process", "rlimits", "session", "scrubbed-env"]
        if self.uid is not None:
            found.append("uid")
        if self.bwrap:
            found.append("namespaces")
        return found

    @property
    def weak(self) -> bool:
        return "namespaces" not in self.layers

    # -- launching ----------------------------------------------------------------------------

    def command(self, runner: Path, submission: Path, tmp: Path, module: str) -> list[str]:
        """The argv that starts a worker for ``module`` in the ``submission`` copy."""
        python = sys.executable
        if not self.bwrap:
            entry = str(runner / "worker_main.py")
            return [python, "-I", entry, str(submission), module, str(tmp / "output.txt")]
        argv = [self.bwrap, *_bwrap_base_args()]
        argv += ["--ro-bind", str(runner), "/runner", "--bind", str(submission), "/sub"]
        argv += ["--chdir", "/sub", "--", python, "-I", "/runner/worker_main.py"]
        return argv + ["/sub", module, "/tmp/output.txt"]

    def environment(self) -> dict[str, str]:
        """A scrubbed environment: no tokens, keys or secrets, one BLAS thread, a job marker."""
        if self.mode == "plain":
            return dict(os.environ)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}
        env.update(dict.fromkeys(THREAD_VARS, "1"))
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONHASHSEED"] = "0"
        for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # keeps old OpenBLAS correct
            if name in os.environ:
                env[name] = os.environ[name]
        env[MARKER_VARIABLE] = self.marker  # lets sweep() find what a worker left behind
        return env

    def preexec(self) -> Callable[[], None] | None:
        """Runs in the child between fork and exec: limits first, then drop the uid."""
        if self.mode == "plain":
            return None
        limits, uid = self.limits, self.uid
        # RLIMIT_NPROC counts every process of the real uid: a shared uid needs headroom.
        processes = limits.processes + (0 if uid is not None else _own_process_count())

        def confine() -> None:
            soft_cpu = limits.cpu_seconds
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))
            resource.setrlimit(resource.RLIMIT_CPU, (soft_cpu, soft_cpu + 2))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))
            resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)

        return confine

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
        """Kill a worker's whole session, then anything it left running elsewhere."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        self.sweep()

    def sweep(self) -> None:
        """Kill what escaped the session (a ``setsid`` daemon, a fork bomb's children).

        Every process of the sandbox uid, or without a uid, every process carrying this
        sandbox's marker in its environment (best effort: a process could exec itself a new
        environment). Under bwrap the PID namespace dies with the worker too, but the kernel
        does that asynchronously; the sweep waits until it is done. Returns once none is left
        alive, or after about a second."""
        if self.mode == "plain":
            return
        for _ in range(SWEEP_ROUNDS):
            left = self.left_behind()
            if not left:
                return
            if self.uid is not None:
                _kill_all_of(self.uid)
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, os.WNOHANG)  # orphans come to us: see _become_subreaper
            time.sleep(0.005)

    def left_behind(self) -> list[int]:
        """Processes of the sandbox uid, or live processes carrying the sandbox's marker.

        Zombies of the uid count too when they are ours to reap: they hold RLIMIT_NPROC
        slots, and the next worker could not start."""
        needle = f"{MARKER_VARIABLE}={self.marker}".encode()
        me, found = os.getpid(), []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if self.uid is not None:
                    if entry.stat().st_uid != self.uid:
                        continue
                else:
                    with open(f"/proc/{entry.name}/environ", "rb") as f:
                        if needle not in f.read().split(b"\0"):
                            continue
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    state, parent = f.read().rsplit(b")", 1)[1].split()[:2]
            except (OSError, IndexError, ValueError):
                continue
            if state not in (b"Z", b"X") or (self.uid is not None and int(parent) == me):
                found.append(int(entry.name))
        return found


SWEEP_ROUNDS = 100


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


@functools.cache
def _become_subreaper() -> bool:
    """Have the grader adopt its workers' orphans (Linux), so that sweep() can reap them
    at once instead of waiting for init, which may take a second."""
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


# -- detection ----------------------------------------------------------------------------------


def _python_paths() -> list[str]:
    """Folders the worker's Python needs to see: its prefixes and NumPy's site folder."""
    numpy_site = str(Path(np.__file__).resolve().parent.parent)
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, numpy_site}
    paths.add(str(Path(sys.executable).resolve().parent.parent))
    return sorted(p for p in paths if not p.startswith("/usr/") and os.path.isdir(p))


def _reachable_by_others(path: str) -> bool:
    current = Path(path).resolve()
    return all(os.stat(folder).st_mode & stat.S_IXOTH for folder in [current, *current.parents])


def _uid_layer_possible() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "the grader is not running as root"
    blocked = [p for p in _python_paths() if not _reachable_by_others(p)]
    if blocked:
        return False, (
            f"{blocked[0]} cannot be reached by other users "
            "(make its parent folders world-executable, e.g. chmod o+x /root)"
        )
    return True, ""


def _bwrap_base_args() -> list[str]:
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
    for path in _python_paths():
        args += ["--ro-bind", path, path]
    grader = Path(__file__).resolve().parent
    if any(grader.is_relative_to(p) for p in _python_paths()):
        args += ["--tmpfs", str(grader)]  # an installed grader would show its suites
    return args + ["--proc", "/proc", "--dev", "/dev"]


@functools.cache
def _bwrap_usable(uid: int | None) -> tuple[str | None, str]:
    path = shutil.which("bwrap")
    if not path:
        return None, "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    box = Sandbox(mode="auto", uid=uid)
    probe = [path, *_bwrap_base_args(), "--", sys.executable, "-I", "-c", "import numpy"]
    try:
        done = subprocess.run(
            probe,
            capture_output=True,
            timeout=30,
            preexec_fn=box.preexec(),
            env=box.environment(),
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"bwrap could not start: {error}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        return None, f"bwrap failed here: {reason[-1] if reason else done.returncode}"
    return path, ""
