"""A slow (but not too slow) import, then a function that hangs: the call that starts the
worker must charge both waits to the submission's budget."""

import time

time.sleep(2)


def causal_mask(n):
    while True:
        pass
