"""Fork as many sleeping children as the system allows (bounded, in case of no limit)."""

import os
import time


def causal_mask(n):
    for _ in range(300):
        try:
            if os.fork() == 0:
                time.sleep(3600)
                os._exit(0)
        except OSError:
            break
    time.sleep(3600)
