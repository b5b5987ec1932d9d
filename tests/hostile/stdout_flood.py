"""Print tens of megabytes, then return the right value."""

import sys

import numpy as np


def causal_mask(n):
    line = "flood " * 20
    for _ in range(200_000):
        print(line)
    sys.stderr.write(line * 1000)
    return np.tril(np.ones((n, n), dtype=bool))
