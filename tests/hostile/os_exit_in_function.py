"""os._exit(0) inside one function: the worker vanishes without a reply."""

import os


def causal_mask(n):
    os._exit(0)
