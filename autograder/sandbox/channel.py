"""Framed, non-blocking I/O with a worker, bounded by a deadline.

Every read and write is non-blocking and waits with ``select`` only until the deadline, so a
worker that stops reading, stops writing or shrinks its pipes cannot hold the grader. What
went wrong is raised as plain facts (``ChannelTimeout``, ``ChannelClosed``, ``WireError``);
the words a student reads are chosen by the worker module.
"""

from __future__ import annotations

import os
import select
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

from autograder.sandbox.runner import wire

CHUNK = 1 << 16


@dataclass(frozen=True)
class Deadline:
    at: float  # time.monotonic() by which waiting must end
    by_budget: bool = False  # the submission's budget, not the call's timeout, set it

    def left(self) -> float:
        return self.at - time.monotonic()


class ChannelTimeout(Exception):
    def __init__(self, deadline: Deadline, writing: bool) -> None:
        super().__init__("deadline passed while " + ("writing" if writing else "reading"))
        self.deadline, self.writing = deadline, writing


class ChannelClosed(Exception):
    """The worker's end of a pipe is gone: it exited or was killed."""


class Channel:
    """Requests down one pipe, replies up another, each a ``wire`` frame."""

    def __init__(self, requests: int, replies: int) -> None:
        self.requests, self.replies = requests, replies
        os.set_blocking(requests, False)
        os.set_blocking(replies, False)

    def send(self, data: bytes, deadline: Deadline) -> None:
        view = memoryview(data)
        while view:
            self._wait(self.requests, deadline, writing=True)
            try:
                view = view[os.write(self.requests, view[:CHUNK]) :]
            except BlockingIOError:  # less room than select promised (a shrunk pipe)
                continue
            except OSError:
                raise ChannelClosed from None

    def receive(
        self, deadline: Deadline, sequence: int, serve: Callable[[dict, list], bytes] | None = None
    ) -> tuple[dict, list[memoryview]]:
        """The reply to request ``sequence``; late replies to earlier requests are skipped.
        A callback (a student's test using an object the grader lent it) is answered with
        ``serve`` on the way, within the same deadline."""
        while True:
            (length,) = struct.unpack(">I", self._read(4, deadline))
            if length > wire.MAX_HEADER:
                raise wire.WireError("reply header too large")
            header, total = wire.unpack_header(bytes(self._read(length, deadline)))
            body = self._read(total, deadline)
            if "callback" in header:
                if serve is None:
                    raise wire.WireError("a callback that nothing serves")
                self.send(serve(header, wire.split_blobs(header, memoryview(body))), deadline)
                continue
            seq = header.get("seq", 0)
            if seq == sequence:
                return header, wire.split_blobs(header, memoryview(body))
            if not isinstance(seq, int) or seq > sequence:
                raise wire.WireError("a reply to a request that was never sent")

    def _read(self, n: int, deadline: Deadline) -> bytearray:
        """Exactly n bytes into one preallocated buffer (n is already within the limits)."""
        buffer, got = bytearray(n), 0
        view = memoryview(buffer)
        while got < n:
            self._wait(self.replies, deadline, writing=False)
            try:
                count = os.readv(self.replies, [view[got : got + (CHUNK << 4)]])
            except BlockingIOError:
                continue
            if not count:
                raise ChannelClosed
            got += count
        return buffer

    @staticmethod
    def _wait(fd: int, deadline: Deadline, writing: bool) -> None:
        left = deadline.left()
        if left <= 0:  # select refuses a negative timeout
            raise ChannelTimeout(deadline, writing)
        ready = (
            select.select([], [fd], [], left)[1]
            if writing
            else select.select([fd], [], [], left)[0]
        )
        if left <= 0 or not ready:
            raise ChannelTimeout(deadline, writing)
