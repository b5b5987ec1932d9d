"""A time and memory budget for the grader's own work on values a student's code returned.

The diagnosis replays the reference in the grader with a student's functions swapped in
(``diagnosis.at_fault``), so the reference's code runs on arrays the student returned. Their
shapes are checked against the reference's first (``diagnosis.bounded``), but a shape check
can only compare what it foresees: an array of legal size can still broadcast into a much
larger one. The budget is the second line, and it bounds what really happens:

- memory: the soft ``RLIMIT_AS`` of the grader is lowered to its current address space plus
  ``memory`` for the replay and put back afterwards, so an allocation past it fails at once
  (NumPy raises MemoryError) instead of swapping the machine;
- time: a CPU-time timer (``ITIMER_VIRTUAL``, whose ``SIGVTALRM`` nothing else here uses:
  pytest-timeout and alarms use ``SIGALRM``) raises ``OverBudget`` in the main thread.

Both are paused while the replay waits on the worker (``paused``): that time and the replies'
memory are the worker's, bounded by its own timeouts and the wire's frame limit, and the
channel must never be interrupted in the middle of a reply. Lighter than a forked child with
limits (no copy of the grader, no second channel to the worker, arrays need not travel back)
and, unlike an estimate from shapes, exact: 0.15 ms per replay (measured: four setrlimit and
setitimer calls and a read of /proc/self/statm, with one pause for the worker), against
several milliseconds for a fork of the grader, and a grading makes at most a few replays per
failed test. A C-level NumPy call is not interrupted by the timer,
but with its memory bounded its time is bounded too.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import threading
from collections.abc import Iterator
from types import FrameType

REPLAY_MEMORY = 128 << 20  # bytes of address space one replay may add to the grader's
REPLAY_SECONDS = 10.0  # CPU seconds of the grader's own work in one replay
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class OverBudget(Exception):
    """A replay on a student's values needed more time or memory than its budget."""


class Budget:
    """Bounds the grader's work inside ``running``, except inside ``paused``."""

    def __init__(self, memory: int = REPLAY_MEMORY, seconds: float = REPLAY_SECONDS) -> None:
        self.memory, self.seconds = memory, seconds
        self.left = seconds
        self._saved_limit: tuple[int, int] | None = None
        self._saved_handler: object = None
        self._timed = False

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        self.left = self.seconds
        self._timed = threading.current_thread() is threading.main_thread()
        if self._timed:
            self._saved_handler = signal.signal(signal.SIGVTALRM, self._expired)
        self._arm()
        try:
            yield
        except MemoryError as error:  # the address-space limit, or the machine's own
            raise OverBudget(f"more than {self.memory >> 20} MiB") from error
        finally:
            self._disarm()
            if self._timed:
                signal.signal(signal.SIGVTALRM, self._saved_handler)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Lift the budget while the grader waits on the worker; the CPU time left carries on."""
        self._disarm()
        try:
            yield
        finally:
            self._arm()

    def _arm(self) -> None:
        used = address_space()
        with contextlib.suppress(OSError, ValueError):
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            limit = used + self.memory if used else resource.RLIM_INFINITY
            if hard != resource.RLIM_INFINITY:
                limit = min(limit, hard)
            if limit != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or limit < soft):
                resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
                self._saved_limit = (soft, hard)
        if self._timed:
            signal.setitimer(signal.ITIMER_VIRTUAL, max(self.left, 1e-3))

    def _disarm(self) -> None:
        if self._timed:  # the timer first: it must never fire once the handler is gone
            self.left = signal.setitimer(signal.ITIMER_VIRTUAL, 0)[0] or self.left
        if self._saved_limit is not None:
            with contextlib.suppress(OSError, ValueError):
                resource.setrlimit(resource.RLIMIT_AS, self._saved_limit)
            self._saved_limit = None

    def _expired(self, signum: int, frame: FrameType | None) -> None:
        self.left = 0.0
        raise OverBudget(f"more than {self.seconds:g} s of the grader's CPU time")


def address_space() -> int:
    """The grader's address space in bytes now (what RLIMIT_AS limits), or 0 if unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0
