"""The trusted side of the worker: start it, send calls, wait with a deadline, replace it.

A call either returns plain data or raises one of the ``StudentProblem`` exceptions (see
``autograder.sandbox.problems``), each of which carries a message written for the student.
The parts:
``Budget`` (how long one submission may keep the grader waiting), ``WorkerProcess`` (one
started worker: its job folder, process and channel) and ``Worker`` (the suite's API).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from autograder import PACKAGE_DIR
from autograder.errors import GraderFault
from autograder.sandbox import scratch
from autograder.sandbox.cgroups import WorkerGroup
from autograder.sandbox.channel import Channel, ChannelClosed, ChannelTimeout, Deadline
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.problems import (
    StudentBadOutput,
    StudentCrashed,
    StudentImportFailed,
    StudentMissing,
    StudentProblem,
    StudentRaised,
    StudentTimeout,
    crashed_at_import,
    describe_exit,
    import_failure,
    over_budget,
    slow_import,
    stopped_reading,
    text,
    too_slow,
)
from autograder.sandbox.runner import wire
from autograder.tree import TreeTooBig, walk_files

__all__ = [  # the problem classes are imported from here by the suite's plugin and tests
    "StudentBadOutput",
    "StudentCrashed",
    "StudentImportFailed",
    "StudentMissing",
    "StudentProblem",
    "StudentRaised",
    "StudentTimeout",
    "SandboxFailed",
    "Worker",
]

RUNNER = PACKAGE_DIR / "sandbox" / "runner"  # copied whole into each job
RUNNER_FILES = ("worker_main.py", "wire.py", "landlock.py", "calls.py")
COPY_LIMIT = 20 << 20  # bytes of submission copied into the sandbox
START_FLOOR = 5.0  # seconds: the least time given to start Python and import the module
BUDGET_TIMEOUTS = 6  # the whole submission gets this many per-call timeouts of waiting
OUTPUT_CAP = 8192  # characters of printed output kept per call


class SandboxFailed(GraderFault):
    """The worker could not confine itself as the sandbox promised: a grader-side error."""


class Budget:
    """Seconds of waiting on the worker that one submission may spend, charged as they pass:
    a deadline set while a call is running (after it started a worker) sees what is left."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.spent = 0.0
        self._since: float | None = None

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        self._since = time.monotonic()
        try:
            yield
        finally:
            self.spent += time.monotonic() - self._since
            self._since = None

    def left(self) -> float:
        running = time.monotonic() - self._since if self._since is not None else 0.0
        return self.seconds - self.spent - running

    def deadline(self, seconds: float) -> Deadline:
        left = self.left()
        return Deadline(time.monotonic() + min(seconds, left), by_budget=left < seconds)


class WorkerProcess:
    """One started worker: a fresh job folder (its runner, a private copy of the submission
    and a scratch folder), the process, and the channel to it. ``stop`` removes all three."""

    def __init__(self, submission: Path, module: str, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.process: subprocess.Popen | None = None
        self.group: WorkerGroup | None = None
        self.mounted = False
        try:
            self.job = Path(tempfile.mkdtemp(prefix="autograder-job-"))
        except OSError as error:
            raise SandboxFailed(f"no job folder could be made: {error.strerror}") from None
        try:
            self._start(submission, module)
        except OSError as error:  # a full disk, most likely: the machine's fault, not the suite's
            self.stop()
            raise SandboxFailed(f"the worker's job could not be prepared: {error}") from None
        except BaseException:
            self.stop()
            raise

    def _start(self, submission: Path, module: str) -> None:
        os.chmod(self.job, 0o711)
        limits = self.sandbox.limits
        if self.sandbox.tmpfs:
            scratch.mount_tmpfs(self.job, limits.scratch, limits.scratch_files)
            self.mounted = True
        runner, copy, scratch_folder = self.job / "runner", self.job / "sub", self.job / "tmp"
        runner.mkdir()
        for name in RUNNER_FILES:
            shutil.copy(RUNNER / name, runner / name)
        rules = self.sandbox.landlock_rules(runner, copy, scratch_folder)
        if rules:
            (runner / "landlock.json").write_text(json.dumps(rules))
        rlimits = self.sandbox.worker_limits()
        if rlimits:
            (runner / "limits.json").write_text(json.dumps(rlimits))
        copy_submission(submission, copy)
        scratch_folder.mkdir()
        self.sandbox.prepare(runner, writable=False)
        self.sandbox.prepare(copy, writable=True)
        self.sandbox.prepare(scratch_folder, writable=True)
        self.group = self.sandbox.new_group()
        argv, options = self.sandbox.launch(
            self.sandbox.command(runner, copy, scratch_folder, module), self.group
        )
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(scratch_folder),
            env=self.sandbox.environment(),
            start_new_session=True,
            **options,
        )
        held = self.group.folders if self.group else []
        self.sandbox.reaper.started(self.process, self.job, held)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.channel = Channel(self.process.stdin.fileno(), self.process.stdout.fileno())

    def exit_code(self) -> int | None:
        """How the worker ended (after its pipe closed), as Python's, not bwrap's."""
        if self.process is None:
            return None
        code = self.process.wait()
        if self.sandbox.bwrap and 128 < code < 128 + 65:
            code = 128 - code  # bwrap exits with 128 + the signal that killed Python
        return code

    def stop(self) -> None:
        """Kill the worker's whole cgroup (however its processes detached), then its session
        and leftovers; unmount its tmpfs, whose last users are dead; remove the job folder."""
        if self.process is not None:
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe:
                    with contextlib.suppress(OSError):
                        pipe.close()
        if self.group is not None:
            self.group.kill()
        if self.process is not None:
            self.sandbox.kill(self.process)
            self.process = None
        if self.group is not None:
            self.group.remove()
            self.sandbox.reaper.released(self.group.folders)
            self.group = None
        if self.mounted:
            scratch.unmount(self.job)
            self.mounted = False
        self.sandbox.reaper.forget(self.job)


class Worker:
    """One untrusted Python process at a time, for one submission.

    Time is bounded twice: each call (and the start) by ``timeout``, and the whole submission
    by ``budget`` seconds of waiting on the worker, ``BUDGET_TIMEOUTS`` timeouts by default.
    Once the budget is spent, every further call fails at once without running, so grading
    a submission whose every function hangs takes about ``budget`` seconds plus overhead.
    """

    def __init__(
        self,
        submission: Path,
        module: str,
        sandbox: Sandbox,
        timeout: float = 5.0,
        budget: float | None = None,
    ) -> None:
        self.submission = Path(submission)
        self.module = module
        self.filename = f"{module}.py"
        self.sandbox = sandbox
        self.timeout = timeout
        self.budget = Budget(BUDGET_TIMEOUTS * timeout if budget is None else budget)
        self.running: WorkerProcess | None = None
        self.import_problem: StudentProblem | None = None  # sticky: importing is deterministic
        self.starts = 0
        self.sequence = 0  # numbers requests; a reply must carry the number of its request
        self.landlock: dict | None = None  # what the last worker applied, as it reported
        # serves the callbacks of a student's test that uses objects of ours (student_tests.Lender)
        self.lender: Callable[[dict, list], tuple[dict, list[bytes]]] | None = None
        self.peak = 0  # bytes the last measured call allocated (see request)
        self.called: list[str] = []  # the student's functions the last call ran (see request)
        self.unready = False  # started by prestart, its ready message not read yet

    @property
    def process(self) -> subprocess.Popen | None:
        return self.running.process if self.running else None

    # -- life cycle ---------------------------------------------------------------------------

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop()
        self.sandbox.sweep()

    def _stop(self) -> None:
        if self.running is not None:
            self.running.stop()
            self.running = None

    def prestart(self) -> None:
        """Start the worker now, so that it imports NumPy while the grader sets up its own
        run; the first call waits for it to be ready, and the start is timed from there."""
        if self.running is None and not self.import_problem:
            self._spawn()

    def _spawn(self) -> None:
        self.sequence = 0  # the ready message
        self.starts += 1
        try:
            self.running = WorkerProcess(self.submission, self.module, self.sandbox)
        except TreeTooBig as problem:  # deterministic, like a failed import: sticky
            self.import_problem = StudentImportFailed(
                f"the submission could not be copied for grading: {problem}."
            )
            return
        self.unready = True

    def _await_ready(self) -> None:
        """Start the worker if prestart did not, then wait for its ready message."""
        if self.running is None:
            self._spawn()
        if self.running is None:
            return  # import_problem says why
        self.unready = False
        limit = max(self.timeout, START_FLOOR)
        try:
            header, _ = self._receive(self.budget.deadline(limit), f"importing {self.filename}")
        except StudentTimeout as problem:
            if problem.budget:
                raise
            self.import_problem = slow_import(self.filename, limit)
            raise self.import_problem from problem
        except StudentCrashed as problem:
            self.import_problem = crashed_at_import(self.filename, problem)
            raise self.import_problem from problem
        landlock = header.get("landlock")
        if isinstance(landlock, dict) and "error" in landlock:
            self._stop()
            raise SandboxFailed(f"the worker could not apply Landlock: {text(landlock['error'])}")
        self.landlock = landlock if isinstance(landlock, dict) else None
        if header.get("import_error"):
            self.import_problem = import_failure(self.filename, header["import_error"])
            self.import_problem.output = text(header.get("output"), OUTPUT_CAP)

    # -- calls ----------------------------------------------------------------------------------

    def call(self, function: str, *args: Any, **kwargs: Any) -> tuple[Any, str]:
        """Run ``function(*args, **kwargs)`` in the worker; return (result, printed output)."""
        return self.request(function, args, kwargs)

    def measure(self, function: str, *args: Any, **kwargs: Any) -> tuple[Any, str, int]:
        """Like ``call``, and also the peak memory in bytes that the call allocated."""
        value, output = self.request(function, args, kwargs, measure=True)
        return value, output, self.peak

    def request(
        self,
        name: str,
        args: tuple = (),
        kwargs: dict | None = None,
        target: wire.Handle | None = None,
        op: str = "call",
        measure: bool = False,
    ) -> tuple[Any, str]:
        """Call function ``name`` of the student's module or, on the object ``target`` (a
        handle it returned earlier), call method ``name`` (op "call"), read attribute
        ``name`` (op "get": a method comes back as ``CALLABLE``) or set it to ``args[0]``
        (op "set"). Op "tests" lists the module's ``test_*`` functions. Returns (result,
        printed output). With ``measure``, ``self.peak`` is then the peak memory in bytes
        the call allocated, as tracemalloc saw it in the worker (NumPy arrays and the result
        count, BLAS workspace does not): reported by the worker, so no more trustworthy than
        its results."""
        label = name if target is None else f"{target.type_name}.{name}"
        if self.import_problem:  # a fresh traceback each time, or it grows with every raise
            raise self.import_problem.with_traceback(None)
        if self.budget.left() <= 0:
            raise over_budget(f"{label} was not run", self.budget.seconds)
        lost = [h for h in handles((target, args, kwargs)) if h.generation != self.generation]
        if lost:
            raise StudentCrashed(
                f"{label} was not run: your {lost[0].type_name} object was lost when the "
                "process running your code stopped (see the problem above)."
            )
        self.peak, self.called = 0, []
        with self.budget.running():
            return self._call(name, label, args, kwargs or {}, target, op, measure)

    @property
    def generation(self) -> int | None:
        """Which worker process is running: handles are valid only in the one that made them."""
        return self.starts if self.running is not None else None

    def _call(
        self,
        function: str,
        label: str,
        args: tuple,
        kwargs: dict,
        target: wire.Handle | None,
        op: str,
        measure: bool = False,
    ) -> tuple[Any, str]:
        if self.running is None or self.unready:
            self._await_ready()
            if self.import_problem:
                raise self.import_problem.with_traceback(None)
        blobs: list[bytes] = []
        self.sequence += 1
        request = {
            "seq": self.sequence,
            "call": function,
            "target": None if target is None else target.number,
            "op": op,
            "measure": measure,
            "args": wire.encode(tuple(args), blobs),
            "kwargs": wire.encode(sorted(kwargs.items()), blobs),
        }
        deadline = self.budget.deadline(self.timeout)
        self._send(wire.pack(request, blobs), deadline, label)
        header, reply_blobs = self._receive(deadline, label)
        self._check_disk(label)
        output = text(header.get("output"), OUTPUT_CAP)
        self.called = called_names(header.get("called"))
        if header.get("missing"):
            where = self.filename if target is None else f"your {target.type_name}"
            kind = "function" if target is None else "method"
            raise StudentMissing(f"{where} has no {kind} named {function}.", output)
        error = header.get("error")
        if error:
            error = error if isinstance(error, dict) else {"message": error}
            if header.get("import"):
                raise import_failure(self.filename, error)
            raise StudentRaised(label, error, output)
        if header.get("callable") is True and op == "get":
            return CALLABLE, output
        try:
            value = wire.decode(header.get("result"), reply_blobs)
        except wire.WireError as error:
            self._stop()  # a worker that sends such things is in no state to go on
            raise StudentBadOutput(f"{label} returned something unreadable: {error}.") from None
        for handle in handles(value):
            handle.generation = self.generation
        peak = header.get("peak_bytes", 0)
        self.peak = peak if type(peak) is int and peak >= 0 else 0
        return value, output

    def _check_disk(self, doing: str) -> None:
        """Without a tmpfs per job, the job folder is measured after each call instead."""
        if self.sandbox.tmpfs or self.sandbox.mode == "plain" or self.running is None:
            return
        limits = self.sandbox.limits
        size, files = scratch.measure(self.running.job, limits.scratch_files)
        if size > limits.scratch or files > limits.scratch_files:
            self._stop()
            raise StudentCrashed(
                f"while {doing}, your code wrote more than {limits.scratch >> 20} MiB or "
                f"{limits.scratch_files} files to disk, and was stopped."
            )

    def _send(self, data: bytes, deadline: Deadline, doing: str) -> None:
        assert self.running is not None
        try:
            self.running.channel.send(data, deadline)
        except ChannelTimeout:
            self._stop()
            raise stopped_reading(doing) from None
        except ChannelClosed:
            self._stop()
            gone = f"the process running your code was gone before {doing}."
            raise StudentCrashed(gone) from None

    def _serve(self, header: dict, blobs: list) -> bytes:
        """Answer a callback with ``self.lender``; without one, it breaks the protocol."""
        if self.lender is None:
            raise wire.WireError("a callback, but nothing was lent")
        reply, reply_blobs = self.lender(header, blobs)
        return wire.pack(reply, reply_blobs)

    def _receive(self, deadline: Deadline, doing: str) -> tuple[dict, list[memoryview]]:
        """Read the reply to the current request before the deadline, or stop the worker."""
        assert self.running is not None
        try:
            return self.running.channel.receive(deadline, self.sequence, self._serve)
        except ChannelTimeout:
            self._stop()
            if deadline.by_budget:
                raise over_budget(f"{doing} was stopped", self.budget.seconds) from None
            raise too_slow(doing, self.timeout) from None
        except ChannelClosed:
            code = self.running.exit_code()
            self._stop()
            raise StudentCrashed(f"while {doing}, Python {describe_exit(code)}") from None
        except wire.WireError as error:
            self._stop()
            raise StudentBadOutput(
                f"while {doing}, the worker sent a bad reply: {error}."
            ) from None


CALLABLE = object()  # what reading a method (not data) of a student's object gives


def called_names(reported: Any) -> list[str]:
    """The function names a reply says ran, as bounded text (the worker is untrusted)."""
    if not isinstance(reported, list):
        return []
    return [text(name, 100) for name in reported[:100] if isinstance(name, str)]


def handles(value: Any) -> list[wire.Handle]:
    """The object handles inside a value (arguments or a decoded reply)."""
    if isinstance(value, wire.Handle):
        return [value]
    if isinstance(value, tuple | list):
        return [h for item in value for h in handles(item)]
    if isinstance(value, dict):
        return handles(list(value.values()))
    return []


def copy_submission(source: Path, target: Path) -> None:
    """Copy regular files only (no links, no hidden folder such as .git), up to COPY_LIMIT
    bytes; raises TreeTooBig past the walk's depth or file-count limit."""
    target.mkdir()
    budget = COPY_LIMIT
    for rel, path in walk_files(source):
        size = path.stat(follow_symlinks=False).st_size
        if size > budget:
            continue
        budget -= size
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / rel, follow_symlinks=False)
