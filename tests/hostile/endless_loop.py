"""An endless loop in one function."""


def causal_mask(n):
    while True:
        pass
