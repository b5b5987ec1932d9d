"""What the sandbox of this machine is, in the words ``autograder doctor`` prints: each layer
and whether it works here, the limits, and whether the whole is strong or weak."""

from __future__ import annotations

from autograder.sandbox.layers import STRONG_MEANS, WEAK_MEANS, Sandbox

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


def report(box: Sandbox) -> list[str]:
    """The doctor's lines for ``box``."""
    lines = ["Sandbox layers on this machine:"]
    for layer, what in LAYERS.items():
        lines.append(f"  [{'ok' if layer in box.layers else '--'}] {layer:<13} {what}")
    lines += [f"  missing: {note}" for note in box.notes]
    limits = box.limits
    lines += [
        f"limits: {limits.memory >> 20} MiB memory, {limits.cpu_seconds} s CPU, "
        f"{limits.file_size >> 20} MiB files, {limits.open_files} open files, "
        f"{limits.processes} processes",
        f"runtime: {box.runtime.summary}",
        f"landlock: {box.landlock_summary()}",
        f"cgroup: {box.cgroups.summary if box.cgroups else 'none'}",
        f"job folder: {limits.scratch >> 20} MiB, {limits.scratch_files} files, "
        + ("a tmpfs" if box.tmpfs else "measured after each call"),
    ]
    return lines + strength(box)


def strength(box: Sandbox) -> list[str]:
    if box.weak:
        said = [f"WEAK SANDBOX: {box.strength}"]
        said.append("Grading for record refuses it unless you pass --allow-weak-sandbox.")
    else:
        said = [box.strength]
    return [*said, f"A sandbox is {STRONG_MEANS}; it is {WEAK_MEANS}."]
