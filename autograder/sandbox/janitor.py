"""The janitor's own program: it outlives a grader that dies however it dies, and then cleans
up what that grader's workers held. Run as a file (``python -I -S janitor.py TREE_PY``): it
imports only the standard library, and autograder/tree.py by path.

It reads "+path" and "-path" lines: a cgroup folder or a job folder in use, or no longer. At
end of input (the grader is gone) it kills every process left in each cgroup and removes the
group, then unmounts each job folder's tmpfs and removes the folder.
"""

import contextlib
import ctypes
import os
import runpy
import signal
import sys
import time

CGROUPS = "/sys/fs/cgroup/"
MNT_DETACH = 2


def empty_group(folder):
    for _ in range(200):
        try:
            with open(os.path.join(folder, "cgroup.procs")) as f:
                members = [int(pid) for pid in f.read().split()]
        except OSError:
            break
        if not members:
            break
        for pid in members:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    for _ in range(300):  # busy while the killed members are torn down
        try:
            os.rmdir(folder)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def main(tree_file):
    remove_tree = runpy.run_path(tree_file)["remove_tree"]
    held = set()
    for line in sys.stdin:
        (held.add if line[0] == "+" else held.discard)(line[1:-1])
    for path in sorted(p for p in held if p.startswith(CGROUPS)):  # first: they hold the rest
        empty_group(path)
    libc = ctypes.CDLL(None)
    for path in sorted(p for p in held if not p.startswith(CGROUPS)):
        libc.umount2(path.encode(), MNT_DETACH)  # a job's tmpfs, if it has one
        remove_tree(path)


if __name__ == "__main__":
    main(sys.argv[1])
