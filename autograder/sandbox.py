"""How a worker process is confined: which layers this machine offers, and how to launch one.

Layers, weakest first:

- ``process``: a separate process in its own session, killed whole; resource limits (address
  space, CPU, file size, open files, no core files); a scrubbed environment. Always on.
- ``uid``: when the grader runs as root, the worker runs as a dedicated unprivileged uid, which
  cannot write the grader's files, makes ``RLIMIT_NPROC`` bite, and lets the grader kill every
  process left behind. Needs the Python interpreter to be reachable by other users.
- ``namespaces``: bubblewrap (``bwrap``): no network, a private PID space (nothing survives the
  sandbox), and a file system that shows only the submission copy and read-only Python.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MODES = ("auto", "fallback", "plain")
SANDBOX_UID_BASE = 61000
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

    @classmethod
    def detect(cls, mode: str = "auto", limits: Limits | None = None) -> Sandbox:
        if mode not in MODES:
            raise ValueError(f"unknown sandbox mode {mode!r}; choose from {', '.join(MODES)}")
        box = cls(mode=mode, limits=limits or Limits())
        if mode != "auto":
            box.notes.append(f"sandbox mode {mode!r} asked for: namespaces and uid are off")
            return box
        uid_ok, why = _uid_layer_possible()
        if uid_ok:
            box.uid = SANDBOX_UID_BASE + os.getpid() % 1000
        else:
            box.notes.append(f"no dedicated uid: {why}")
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
        """A scrubbed environment: no tokens, keys or secrets, one BLAS thread."""
        if self.mode == "plain":
            return dict(os.environ)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}
        env.update(dict.fromkeys(THREAD_VARS, "1"))
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONHASHSEED"] = "0"
        for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # keeps old OpenBLAS correct
            if name in os.environ:
                env[name] = os.environ[name]
        return env

    def preexec(self) -> Callable[[], None] | None:
        """Runs in the child between fork and exec: limits first, then drop the uid."""
        if self.mode == "plain":
            return None
        limits, uid = self.limits, self.uid

        def confine() -> None:
            soft_cpu = limits.cpu_seconds
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))
            resource.setrlimit(resource.RLIMIT_CPU, (soft_cpu, soft_cpu + 2))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))
            resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if uid is not None:
                resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
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
        """Kill a worker's whole session, then anything its uid left running."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        self.sweep()

    def sweep(self) -> None:
        """Kill every process of the sandbox uid: a ``setsid`` daemon escapes ``killpg``."""
        if self.uid is None or self.bwrap:  # under bwrap the PID namespace already did it
            return
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only signals and exits
            try:
                os.setgroups([])
                os.setgid(self.uid)
                os.setuid(self.uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


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
    return args + ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


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
