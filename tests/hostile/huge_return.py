"""Return values far too large: a 72 MB array, and a list of a million items."""

import numpy as np


def causal_mask(n):
    return np.zeros((3000, 3000))


def merge_heads(Xh):
    row = [0.0] * 1000
    return [row] * 1000
