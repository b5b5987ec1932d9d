"""A segmentation fault through ctypes."""

import ctypes


def causal_mask(n):
    return ctypes.string_at(0)
