"""Recursion past a raised limit in C code (json.dumps of a deeply nested list): the C stack
overflows and Python crashes."""

import json
import sys


def causal_mask(n):
    sys.setrecursionlimit(10**9)
    nested = []
    for _ in range(200_000):
        nested = [nested]
    return json.dumps(nested)
