"""The trusted side of the worker: start it, send calls, wait with a deadline, replace it.

A call either returns plain data or raises one of the ``StudentProblem`` exceptions below,
each of which carries a message written for the student.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from autograder import wire
from autograder.sandbox import Sandbox

RUNNER_FILES = ("worker_main.py", "wire.py")
COPY_LIMIT = 20 << 20  # bytes of submission copied into the sandbox
START_FLOOR = 2.0  # seconds: the least time given to start Python and import the module
BUDGET_TIMEOUTS = 6  # the whole submission gets this many per-call timeouts of waiting
OUTPUT_CAP = 8192  # characters of printed output kept per call
TEXT_CAP = 2000  # characters of any other text from the worker


def text(value: Any, cap: int = TEXT_CAP) -> str:
    """A reply field as bounded text, whatever the (untrusted) worker put there."""
    return (value if isinstance(value, str) else "" if value is None else repr(value))[:cap]


class StudentProblem(Exception):
    """Something the student's code did; its message is feedback, not a grader error."""

    outcome = "error"

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class StudentRaised(StudentProblem):
    outcome = "raised"

    def __init__(self, function: str, error: dict, output: str = "") -> None:
        self.function = function
        self.type_name = text(error.get("type", "Exception"), 100)
        mro = error.get("mro")
        self.mro = [text(n, 100) for n in mro[:20]] if isinstance(mro, list) else []
        self.detail = text(error.get("message", ""))
        at = location(error.get("where"), " (at {0}, line {1}, in {2})")
        if self.type_name == "NotImplementedError":
            message = f"{function} is not implemented yet: it raises NotImplementedError{at}."
        else:
            detail = f": {self.detail}" if self.detail else ""
            message = f"{function} raised {self.type_name}{detail}{at}."
        super().__init__(message, output)

    def is_a(self, type_name: str) -> bool:
        return type_name in self.mro


class StudentMissing(StudentProblem):
    outcome = "missing"


class StudentImportFailed(StudentProblem):
    outcome = "import"


class StudentTimeout(StudentProblem):
    outcome = "timeout"
    budget = False  # True when the submission's whole time budget ran out


class StudentCrashed(StudentProblem):
    outcome = "crashed"


class StudentBadOutput(StudentProblem):
    outcome = "invalid-output"


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
        self.budget = BUDGET_TIMEOUTS * timeout if budget is None else budget
        self.spent = 0.0  # seconds spent waiting on the worker, starts included
        self.process: subprocess.Popen | None = None
        self.job: Path | None = None
        self.import_problem: StudentProblem | None = None  # sticky: importing is deterministic
        self.starts = 0
        self.sequence = 0  # numbers requests; a reply must carry the number of its request

    # -- life cycle ---------------------------------------------------------------------------

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop()
        self.sandbox.sweep()
        if self.job:
            shutil.rmtree(self.job, ignore_errors=True)
            self.job = None

    def _stop(self) -> None:
        if self.process is not None:
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe:
                    pipe.close()
            self.sandbox.kill(self.process)
            self.process = None

    def _new_job(self) -> tuple[Path, Path, Path]:
        """A fresh private copy of the submission, next to the worker's own code."""
        if self.job:
            shutil.rmtree(self.job, ignore_errors=True)
        self.job = Path(tempfile.mkdtemp(prefix="autograder-job-"))
        os.chmod(self.job, 0o711)
        runner, submission, tmp = self.job / "runner", self.job / "sub", self.job / "tmp"
        runner.mkdir()
        here = Path(__file__).resolve().parent
        for name in RUNNER_FILES:
            shutil.copy(here / name, runner / name)
        copy_submission(self.submission, submission)
        tmp.mkdir()
        self.sandbox.prepare(runner, writable=False)
        self.sandbox.prepare(submission, writable=True)
        self.sandbox.prepare(tmp, writable=True)
        return runner, submission, tmp

    def _start(self) -> None:
        runner, submission, tmp = self._new_job()
        self.sequence = 0  # the ready message
        argv = self.sandbox.command(runner, submission, tmp, self.module)
        self.starts += 1
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(tmp),
            env=self.sandbox.environment(),
            preexec_fn=self.sandbox.preexec(),
            start_new_session=True,
        )
        limit = max(self.timeout, START_FLOOR)
        try:
            header, _ = self._receive(limit, f"importing {self.filename}")
        except StudentTimeout as problem:
            if problem.budget:
                raise
            self.import_problem = StudentImportFailed(
                f"{self.filename} did not finish importing within {limit:g} s "
                "(is there a long computation, a sleep or a loop at the top level?)."
            )
            raise self.import_problem from problem
        except StudentCrashed as problem:
            self.import_problem = StudentImportFailed(
                f"{self.filename} stopped Python while it was being imported ({problem}). "
                "Code at the top level of a module must not exit or crash.",
                problem.output,
            )
            raise self.import_problem from problem
        if header.get("import_error"):
            self.import_problem = import_failure(self.filename, header["import_error"])
            self.import_problem.output = text(header.get("output"), OUTPUT_CAP)

    # -- calls ----------------------------------------------------------------------------------

    def call(self, function: str, *args: Any, **kwargs: Any) -> tuple[Any, str]:
        """Run ``function(*args, **kwargs)`` in the worker; return (result, printed output)."""
        value, output, _ = self.request(function, args, kwargs)
        return value, output

    def measure(self, function: str, *args: Any, **kwargs: Any) -> tuple[Any, str, int]:
        """Like ``call``, and also the peak memory in bytes that the call allocated, as
        tracemalloc saw it in the worker (NumPy arrays and the result count, BLAS workspace
        does not). Reported by the worker, so no more trustworthy than its results."""
        return self.request(function, args, kwargs, measure=True)

    def request(
        self, function: str, args: tuple, kwargs: dict, measure: bool = False
    ) -> tuple[Any, str, int]:
        """(result, printed output, peak bytes or 0 when not measured)."""
        if self.import_problem:  # a fresh traceback each time, or it grows with every raise
            raise self.import_problem.with_traceback(None)
        if self.spent >= self.budget:
            raise self._over_budget(f"{function} was not run")
        began = time.monotonic()
        try:
            return self._call(function, args, kwargs, measure)
        finally:
            self.spent += time.monotonic() - began

    def _call(
        self, function: str, args: tuple, kwargs: dict, measure: bool
    ) -> tuple[Any, str, int]:
        if self.process is None:
            self._start()
            if self.import_problem:
                raise self.import_problem.with_traceback(None)
        assert self.process is not None and self.process.stdin is not None
        blobs: list[bytes] = []
        self.sequence += 1
        request = {
            "seq": self.sequence,
            "call": function,
            "args": wire.encode(tuple(args), blobs),
            "kwargs": wire.encode(sorted(kwargs.items()), blobs),
            "measure": measure,
        }
        deadline, _ = self._deadline(self.timeout)
        self._send(wire.pack(request, blobs), deadline, function)
        header, reply_blobs = self._receive(self.timeout, function)
        output = text(header.get("output"), OUTPUT_CAP)
        if header.get("missing"):
            raise StudentMissing(f"{self.filename} has no function named {function}.", output)
        error = header.get("error")
        if error:
            error = error if isinstance(error, dict) else {"message": error}
            if header.get("import"):
                raise import_failure(self.filename, error)
            raise StudentRaised(function, error, output)
        peak = header.get("peak_bytes", 0) if measure else 0
        try:
            if type(peak) is not int or peak < 0:
                raise wire.WireError("a peak memory that is not a count of bytes")
            return wire.decode(header.get("result"), reply_blobs), output, peak
        except wire.WireError as error:
            self._stop()  # a worker that sends such things is in no state to go on
            raise StudentBadOutput(f"{function} returned something unreadable: {error}.") from None

    def _send(self, data: bytes, deadline: float, doing: str) -> None:
        """Write a request; a worker that stops reading cannot block the grader."""
        assert self.process is not None and self.process.stdin is not None
        fd = self.process.stdin.fileno()
        view = memoryview(data)
        try:
            while view:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [fd], [], left)[1]:
                    self._stop()
                    raise StudentTimeout(
                        f"{doing}: the process running your code stopped "
                        "reading its input and was stopped."
                    )
                view = view[os.write(fd, view[: 1 << 16]) :]
        except OSError:
            self._stop()
            gone = f"the process running your code was gone before {doing}."
            raise StudentCrashed(gone) from None

    def _deadline(self, seconds: float) -> tuple[float, bool]:
        """When waiting must end, and whether the submission's budget (not ``seconds``) says so."""
        left = self.budget - self.spent
        return time.monotonic() + min(seconds, left), left < seconds

    def _over_budget(self, what: str) -> StudentTimeout:
        problem = StudentTimeout(
            f"{what}: your code had used up the {self.budget:g} s that grading may spend on "
            "one submission (see the timeouts above; fix those first)."
        )
        problem.budget = True
        return problem

    def _receive(self, timeout: float, doing: str) -> tuple[dict, list[memoryview]]:
        """Read one reply frame before the deadline, within the size limits, or kill."""
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = self._deadline(timeout)
        try:
            while True:
                (length,) = struct.unpack(">I", self._read(fd, 4, deadline, doing))
                if length > wire.MAX_HEADER:
                    raise wire.WireError("reply header too large")
                raw = bytes(self._read(fd, length, deadline, doing))
                header, total = wire.unpack_header(raw)
                body = self._read(fd, total, deadline, doing)
                seq = header.get("seq", 0)
                if seq == self.sequence:
                    break
                if not isinstance(seq, int) or seq > self.sequence:
                    raise wire.WireError("a reply to a request that was never sent")
                # else: a late reply to an earlier request (after a forged one): skip it
        except wire.WireError as error:
            self._stop()
            raise StudentBadOutput(
                f"while {doing}, the worker sent a bad reply: {error}."
            ) from None
        return header, wire.split_blobs(header, memoryview(body))

    def _read(self, fd: int, n: int, deadline: tuple[float, bool], doing: str) -> bytearray:
        """Exactly n bytes into one preallocated buffer (n is already within the limits)."""
        buffer, got = bytearray(n), 0
        view = memoryview(buffer)
        while got < n:
            left = deadline[0] - time.monotonic()
            ready = select.select([fd], [], [], left)[0] if left > 0 else []
            if not ready:
                self._stop()
                if deadline[1]:
                    raise self._over_budget(f"{doing} was stopped")
                raise StudentTimeout(
                    f"{doing} took longer than {self.timeout:g} s and was stopped "
                    "(an endless loop, or far too much work?)."
                )
            count = os.readv(fd, [view[got : got + (1 << 20)]])
            if not count:
                code = self.process.wait() if self.process else None
                if self.sandbox.bwrap and code is not None and 128 < code < 128 + 65:
                    code = 128 - code  # bwrap exits with 128 + the signal that killed Python
                self._stop()
                raise StudentCrashed(f"while {doing}, Python {describe_exit(code)}")
            got += count
        return buffer


def location(where: Any, template: str) -> str:
    """Fill ``template`` from a reply's [file, line, function], or "" if it is malformed."""
    if not isinstance(where, list) or len(where) != 3:
        return ""
    return template.format(text(where[0], 200), text(where[1], 20), text(where[2], 200))


def import_failure(filename: str, error: dict) -> StudentImportFailed:
    line = location(error.get("where"), " at line {1}")
    kind = text(error.get("type", "an error"), 100)
    message = text(error.get("message", ""))
    if kind == "ModuleNotFoundError" and filename[:-3] in message:
        return StudentImportFailed(f"{filename} was not found in the submission.")
    return StudentImportFailed(f"{filename} could not be imported: {kind}{line}: {message}")


def describe_exit(code: int | None) -> str:
    if code is None:
        return "stopped"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = {
            "SIGSEGV": " (a segmentation fault)",
            "SIGKILL": " (killed: too much memory or CPU?)",
            "SIGXCPU": " (the CPU time limit)",
            "SIGXFSZ": " (the file size limit)",
        }.get(name, "")
        return f"was killed by {name}{hint}."
    return f"exited with status {code} (sys.exit or os._exit in your code?)."


def copy_submission(source: Path, target: Path) -> None:
    """Copy regular files only (no links, no .git), up to COPY_LIMIT bytes."""
    target.mkdir()
    budget = COPY_LIMIT
    for root, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        rel = Path(root).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            path = Path(root) / name
            if path.is_symlink() or not path.is_file():
                continue
            size = path.stat().st_size
            if size > budget:
                continue
            budget -= size
            shutil.copyfile(path, target / rel / name)
