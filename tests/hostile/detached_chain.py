"""On the first call, a child leaves the session, closes its descriptors and execs a fresh
``python -I -S``, which builds a chain of 400 nested processes; each level fallocates a file
of almost 16 MiB (RLIMIT_FSIZE) in scratch, unlinks it and keeps it open. The call itself
returns the right mask. marker.txt in the submission names the chain (for the test to find)."""

import os
import sys

import numpy as np

CHAIN = """
import os, sys, time
for level in range(400):
    try:
        if os.fork():
            break
    except OSError:
        break
for folder in (os.getcwd(), "/tmp"):
    name = os.path.join(folder, "held-%d" % os.getpid())
    try:
        fd = os.open(name, os.O_CREAT | os.O_RDWR, 0o600)
        os.unlink(name)
        os.posix_fallocate(fd, 0, (16 << 20) - 4096)
        break
    except OSError:
        continue
time.sleep(120)
"""

_started = []


def causal_mask(n):
    if not _started:
        _started.append(True)
        try:
            with open("marker.txt") as f:
                marker = f.read().strip()
        except OSError:
            marker = "no-marker"
        if os.fork() == 0:
            try:
                os.setsid()
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.closerange(3, 65536)
                os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", CHAIN, marker])
            finally:
                os._exit(0)
    return np.tril(np.ones((n, n), dtype=bool))
