"""Fills its scratch folder with files of 15 MiB until the disk refuses, and keeps them:
the job folder's budget must stop it. The call itself returns the right mask."""

import os

import numpy as np


def fill(folder):
    written = 0
    for i in range(64):
        try:
            with open(os.path.join(folder, f"fill-{i}"), "wb") as f:
                f.write(b"\0" * (15 << 20))
            written += 1
        except OSError:
            break
    return written


def causal_mask(n):
    for folder in (os.getcwd(), "/tmp"):  # the first that the sandbox lets it write
        if fill(folder):
            break
    return np.tril(np.ones((n, n), dtype=bool))
