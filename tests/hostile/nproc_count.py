"""Start detached, sleeping processes (a new session each, then a second fork, so none is
the worker's child) until a fork fails, and say how many started and why it stopped."""

import errno
import os
import time


def causal_mask(n):
    started = 0
    for _ in range(300):  # bounded, in case nothing limits it
        try:
            pid = os.fork()
        except OSError as error:
            return [started, errno.errorcode.get(error.errno, str(error.errno))]
        if pid == 0:
            os.setsid()
            code = 0
            try:
                if os.fork() == 0:
                    time.sleep(3600)
            except OSError as error:
                code = error.errno  # the middle process says why its fork failed
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WEXITSTATUS(status):
            return [started, errno.errorcode.get(os.WEXITSTATUS(status), "?")]
        started += 1
    return [started, "no limit"]
