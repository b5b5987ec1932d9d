"""A disk budget per worker: each job folder (runner, submission copy, scratch) is its own
size- and inode-limited tmpfs where the grader is root and may mount one, so a worker that
fills its disk fills only its own, and the pages go when the job's tmpfs is unmounted (after
every process of the worker is dead, nothing can hold a file open on it).

Where no tmpfs can be mounted, ``measure`` gives the bytes and files a job folder holds, so
the worker can be failed once it is over budget (see WorkerProcess.over_budget). The mount
is two system calls through libc: no library wraps mount(2) and umount2(2).
"""

from __future__ import annotations

import ctypes
import functools
import os
import tempfile
from pathlib import Path

MS_NOSUID, MS_NODEV = 2, 4
MNT_DETACH = 2


@functools.cache  # the C library this process has loaded: one handle serves every call
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def mount_tmpfs(folder: Path, size: int, inodes: int) -> None:
    """Mount a tmpfs of ``size`` bytes and ``inodes`` files on ``folder``; OSError if not."""
    options = f"size={size},nr_inodes={inodes},mode=0711".encode()
    done = _libc().mount(b"tmpfs", os.fsencode(folder), b"tmpfs", MS_NOSUID | MS_NODEV, options)
    if done != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error), str(folder))


def unmount(folder: Path) -> None:
    """Detach the tmpfs on ``folder`` (lazily: its memory goes with its last user)."""
    _libc().umount2(os.fsencode(folder), MNT_DETACH)


@functools.cache  # whether this machine lets us mount a tmpfs is a fact about it
def tmpfs_usable() -> str:
    """ "" when a job folder can be a tmpfs here, or why not (probed once)."""
    if os.geteuid() != 0:
        return "the grader is not running as root, so it cannot mount a tmpfs per job"
    probe = Path(tempfile.mkdtemp(prefix="autograder-probe-"))
    try:
        mount_tmpfs(probe, 1 << 20, 64)
        unmount(probe)
    except OSError as error:
        return f"mounting a tmpfs failed here: {error.strerror}"
    finally:
        probe.rmdir()
    return ""


def measure(folder: Path, limit_files: int) -> tuple[int, int]:
    """(bytes, files) under ``folder``, without following links, stopping past
    ``limit_files`` entries: enough to tell a worker over its budget."""
    total = files = 0
    stack = [os.fspath(folder)]
    while stack and files <= limit_files:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            files += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
            except OSError:
                continue
    return total, files
