"""An endless loop that ignores SIGTERM, SIGINT and SIGXCPU (and catches everything)."""

import signal

for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGXCPU, signal.SIGALRM):
    signal.signal(_sig, signal.SIG_IGN)


def causal_mask(n):
    while True:
        try:
            while True:
                pass
        except BaseException:
            continue
