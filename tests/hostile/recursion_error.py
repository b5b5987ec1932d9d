"""Endless recursion: Python raises RecursionError."""


def causal_mask(n):
    return causal_mask(n + 1)
