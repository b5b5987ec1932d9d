"""What each layer of the sandbox does, in the words ``autograder doctor`` prints."""

from __future__ import annotations

LAYERS = {
    "process": "a separate worker process, killed whole on a timeout",
    "rlimits": "memory, CPU, file size, open files and core limits",
    "session": "its own session and process group",
    "scrubbed-env": "no tokens, keys or secrets; one BLAS thread",
    "uid": "a dedicated unprivileged uid (only as root)",
    "cgroup": "a cgroup per worker: every process it starts is counted, limited and killed",
    "tmpfs": "a size-limited tmpfs per job folder: a worker fills only its own disk",
    "landlock": "Landlock: reads only Python, NumPy and the submission; writes only scratch",
    "namespaces": "bubblewrap: no network, private PIDs, only the submission visible",
}
