"""Chunked attention against dense attention: time and peak memory, in one run.

    python benchmarks/bench_flash.py PLOT.png [--max-t 8192] [--block-size 128]

Three implementations on the same float64 inputs (one head, d = 64, T = S):

- chunked: the flash-attention reference, `chunked_attention` with an online softmax;
- dense:   NumPy, softmax(Q Kᵀ / sqrt(d)) V with the whole (T, T) score matrix;
- sdpa:    PyTorch's CPU `scaled_dot_product_attention`, given 4-D inputs so that it takes
           its fused (flash) kernel.

Everything runs on one thread. Time is the best of a few runs. Peak memory is the rise of the
process's resident set (VmHWM, reset through /proc/self/clear_refs) over what it held before
the call, so BLAS and PyTorch allocations count too; large allocations are forced onto mmap,
so that freed memory leaves the resident set at once. The table prints every value as a ratio
to dense; the plot shows where the dense memory crosses the chunked one and the graded bound.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # before NumPy or PyTorch start their thread pools

import argparse  # noqa: E402
import ctypes  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from autograder.course.assignment import Assignment  # noqa: E402
from autograder.engine.mistakes import module_from_source  # noqa: E402

D = 64
MIB = 1 << 20
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


def dense(Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> np.ndarray:
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return weights @ V / weights.sum(axis=1, keepdims=True)


def status(field: str) -> int:
    """A /proc/self/status field in bytes."""
    text = Path("/proc/self/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0


def peak_rise(run: Callable[[], object]) -> int:
    """How far the resident set rose above its level before ``run()``, at its highest."""
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = status("VmRSS")
    run()
    return max(status("VmHWM") - before, 0)


def best_time(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return min(times)


def measure(max_t: int, block_size: int) -> list[dict[str, float]]:
    import torch

    torch.set_num_threads(1)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    flash = module_from_source(
        Assignment.load("flash-attention").reference_source, "flash reference"
    )
    ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, 1 << 16)
    rows = []
    for T in (256 << k for k in range(12) if 256 << k <= max_t):
        rng = np.random.default_rng(T)
        Q, K, V = (rng.normal(size=(T, D)) for _ in range(3))
        tq, tk, tv = (torch.from_numpy(a) for a in (Q, K, V))
        runs = {
            "chunked": lambda Q=Q, K=K, V=V: flash.chunked_attention(Q, K, V, block_size)[0],
            "dense": lambda Q=Q, K=K, V=V: dense(Q, K, V),
            # (batch, heads, T, d): 3-D inputs take PyTorch's unfused path instead
            "sdpa": lambda tq=tq, tk=tk, tv=tv: sdpa(
                tq[None, None], tk[None, None], tv[None, None]
            )[0, 0],
        }
        outputs = {name: np.asarray(run()) for name, run in runs.items()}  # also warms up
        for name in ("chunked", "sdpa"):
            assert np.allclose(outputs[name], outputs["dense"], rtol=1e-9, atol=1e-12), name
        repeats = 3 if T <= 2048 else 1
        row: dict[str, float] = {"T": T}
        for name, run in runs.items():
            row[f"{name} s"] = best_time(run, repeats)
            row[f"{name} MiB"] = peak_rise(run) / MIB
        rows.append(row)
        print(table([row])[-1], flush=True)  # as it comes: a long run can be cut short
    return rows


def table(rows: list[dict[str, float]]) -> list[str]:
    head = (
        "|     T | dense s | chunked / dense | sdpa / dense | dense MiB | chunked / dense "
        "| sdpa / dense |"
    )
    lines = [head, "|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|"]
    for r in rows:
        lines.append(
            f"| {r['T']:>5.0f} | {r['dense s']:>7.3f} | {r['chunked s'] / r['dense s']:>15.2f} "
            f"| {r['sdpa s'] / r['dense s']:>12.2f} | {r['dense MiB']:>9.1f} "
            f"| {ratio(r['chunked MiB'], r['dense MiB']):>15} "
            f"| {ratio(r['sdpa MiB'], r['dense MiB']):>12} |"
        )
    return lines


def ratio(part: float, whole: float) -> str:
    return f"{part / whole:.3f}" if whole > 0 else "-"


def crossing(rows: list[dict[str, float]]) -> float | None:
    """The T where dense memory first exceeds chunked memory (log-log interpolation)."""
    points = [(r["T"], r["dense MiB"] - r["chunked MiB"]) for r in rows]
    for (t0, g0), (t1, g1) in zip(points, points[1:], strict=False):
        if g0 <= 0 < g1:
            return float(np.exp(np.log(t0) + (np.log(t1) - np.log(t0)) * -g0 / (g1 - g0)))
    return None if points and points[0][1] <= 0 else (points[0][0] if points else None)


def plot(rows: list[dict[str, float]], path: Path, block_size: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    T = [r["T"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, style in (("dense", "o-"), ("chunked", "s-"), ("sdpa", "^-")):
        ax.plot(T, [max(r[f"{name} MiB"], 0.01) for r in rows], style, label=name)
    bound = [t * t * 8 / 8 / MIB for t in T]  # 1/8 of the dense float64 scores
    ax.plot(T, bound, "k:", label="1/8 of the dense float64 scores (the graded bound)")
    where = crossing(rows)
    if where:
        ax.axvline(where, color="grey", lw=0.8)
        ax.annotate(f"dense > chunked from T ≈ {where:.0f}", (where, ax.get_ylim()[1]), va="top")
    ax.set(xscale="log", yscale="log", xlabel="T = S", ylabel="peak memory rise (MiB)")
    ax.set_title(f"Attention memory, d = {D}, float64, block_size = {block_size}")
    ax.set_xticks(T, [str(t) for t in T])
    ax.minorticks_off()  # the log axis's own labels would print over the T labels
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("plot", type=Path, help="where to write the memory plot (PNG)")
    parser.add_argument("--max-t", type=int, default=8192, help="largest T (default 8192)")
    parser.add_argument("--block-size", type=int, default=128, help="chunked block size")
    args = parser.parse_args()
    print("\n".join(table([])))
    rows = measure(args.max_t, args.block_size)
    where = crossing(rows)
    print(f"dense memory exceeds chunked from T ≈ {where:.0f}" if where else "no crossing seen")
    plot(rows, args.plot, args.block_size)
    print(f"plot written to {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
