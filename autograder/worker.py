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
START_TIMEOUT = 10.0  # seconds for the worker to import the student's module


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
        self.type_name = str(error.get("type", "Exception"))
        self.mro = [str(n) for n in error.get("mro", [])]
        self.detail = str(error.get("message", ""))
        where = error.get("where")
        at = f" (at {where[0]}, line {where[1]}, in {where[2]})" if where else ""
        if self.type_name == "NotImplementedError":
            text = f"{function} is not implemented yet: it raises NotImplementedError{at}."
        else:
            detail = f": {self.detail}" if self.detail else ""
            text = f"{function} raised {self.type_name}{detail}{at}."
        super().__init__(text, output)

    def is_a(self, type_name: str) -> bool:
        return type_name in self.mro


class StudentMissing(StudentProblem):
    outcome = "missing"


class StudentImportFailed(StudentProblem):
    outcome = "import"


class StudentTimeout(StudentProblem):
    outcome = "timeout"


class StudentCrashed(StudentProblem):
    outcome = "crashed"


class StudentBadOutput(StudentProblem):
    outcome = "invalid-output"


class Worker:
    """One untrusted Python process at a time, for one submission."""

    def __init__(
        self, submission: Path, module: str, sandbox: Sandbox, timeout: float = 5.0
    ) -> None:
        self.submission = Path(submission)
        self.module = module
        self.filename = f"{module}.py"
        self.sandbox = sandbox
        self.timeout = timeout
        self.process: subprocess.Popen | None = None
        self.job: Path | None = None
        self.import_problem: StudentProblem | None = None  # sticky: importing is deterministic
        self.starts = 0

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
        try:
            header, _ = self._receive(START_TIMEOUT, f"importing {self.filename}")
        except StudentTimeout as problem:
            self.import_problem = StudentImportFailed(
                f"{self.filename} did not finish importing within {START_TIMEOUT:g} s "
                "(is there a long computation or a loop at the top level?)."
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
            self.import_problem.output = str(header.get("output", ""))

    # -- calls ----------------------------------------------------------------------------------

    def call(self, function: str, *args: Any, **kwargs: Any) -> tuple[Any, str]:
        """Run ``function(*args, **kwargs)`` in the worker; return (result, printed output)."""
        if self.import_problem:
            raise self.import_problem
        if self.process is None:
            self._start()
            if self.import_problem:
                raise self.import_problem
        assert self.process is not None and self.process.stdin is not None
        blobs: list[bytes] = []
        request = {
            "call": function,
            "args": wire.encode(tuple(args), blobs),
            "kwargs": wire.encode(sorted(kwargs.items()), blobs),
        }
        self._send(wire.pack(request, blobs), time.monotonic() + self.timeout, function)
        header, reply_blobs = self._receive(self.timeout, function)
        output = str(header.get("output", ""))[: 2 * 4096]
        if header.get("missing"):
            raise StudentMissing(f"{self.filename} has no function named {function}.", output)
        if header.get("error"):
            if header.get("import"):
                raise import_failure(self.filename, header["error"])
            raise StudentRaised(function, header["error"], output)
        try:
            return wire.decode(header.get("result"), reply_blobs), output
        except wire.WireError as error:
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

    def _receive(self, timeout: float, doing: str) -> tuple[dict, list[bytes]]:
        """Read one reply frame before the deadline, within the size limits, or kill."""
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        try:
            (length,) = struct.unpack(">I", self._read(fd, 4, deadline, doing))
            if length > wire.MAX_HEADER:
                raise wire.WireError("reply header too large")
            header, total = wire.unpack_header(self._read(fd, length, deadline, doing))
            body = self._read(fd, total, deadline, doing)
        except wire.WireError as error:
            self._stop()
            raise StudentBadOutput(
                f"while {doing}, the worker sent a bad reply: {error}."
            ) from None
        return header, wire.split_blobs(header, body)

    def _read(self, fd: int, n: int, deadline: float, doing: str) -> bytes:
        chunks, remaining = [], n
        while remaining:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                self._stop()
                raise StudentTimeout(
                    f"{doing} took longer than {self.timeout:g} s and was stopped "
                    "(an endless loop, or far too much work?)."
                )
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                code = self.process.wait() if self.process else None
                self._stop()
                raise StudentCrashed(f"while {doing}, Python {describe_exit(code)}")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)


def import_failure(filename: str, error: dict) -> StudentImportFailed:
    where = error.get("where")
    line = f" at line {where[1]}" if where else ""
    kind = str(error.get("type", "an error"))
    message = str(error.get("message", ""))
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
