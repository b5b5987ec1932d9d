"""Not an attack: report what the worker can see of its sandbox, as "name=value" lines."""

import os
import resource
import socket
import sys


def processes():
    try:
        return sum(name.isdigit() for name in os.listdir("/proc"))
    except OSError:  # Landlock: /proc is not on the allow-list
        return "denied"


def facts(grader_file):
    limits = {
        name: resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))[0]
        for name in ("AS", "CPU", "FSIZE", "NOFILE", "CORE", "NPROC")
    }
    seen = {
        "uid": os.getuid(),
        "sid_is_own": os.getsid(0) == os.getpid() or os.getsid(0) == os.getppid(),
        "processes": processes(),
        "hostname": socket.gethostname(),
        "grader_visible": os.path.exists(grader_file),
        "python": sys.executable,
        **{f"limit_{k}": v for k, v in limits.items()},
    }
    return [f"{k}={v}" for k, v in seen.items()]
