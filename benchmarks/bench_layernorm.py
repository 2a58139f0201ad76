"""Speed of the NumPy LayerNorm (forward + hand-written backward) against PyTorch's built-in.

Times ``layernorm_forward`` + ``layernorm_backward`` against ``torch.nn.functional.layer_norm``
forward + autograd backward (dx, dgamma, dbeta) on float32 inputs, reports the median of
several repeats and the ratio numpy / torch (lower is better; 1.0 = as fast as PyTorch).
The two are timed alternately, so drift in machine load hits both alike. PyTorch runs with as
many threads as this process may use, and again with one thread: on small virtual machines its
OpenMP pool can stall for a scheduler time slice (~24 ms per call seen on 2 vCPUs), and the
ratio is taken against the faster of the two. NumPy's BLAS uses its own default threads.

Usage::

    python benchmarks/bench_layernorm.py [--repeats 21] [--warmup 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a plain checkout too
from lnbench.nn.numpy_layernorm import layernorm_backward, layernorm_forward  # noqa: E402

SHAPES = [(8192, 1024), (1280, 64)]  # (N, D)
EPS = 1e-5


def available_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def make_inputs(shape: tuple[int, int], seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    N, D = shape
    x = (rng.standard_normal(shape) * 3.0 + 10.0).astype(np.float32)  # (N, D), non-zero mean
    gamma = (1.0 + 0.1 * rng.standard_normal(D)).astype(np.float32)
    beta = (0.1 * rng.standard_normal(D)).astype(np.float32)
    grad_y = rng.standard_normal(shape).astype(np.float32)
    return x, gamma, beta, grad_y


def bench_shape(shape: tuple[int, int], repeats: int, warmup: int, thread_counts: list[int]) -> dict:
    """Median times (ms) of NumPy and of torch at each thread count, and their agreement."""
    x, gamma, beta, grad_y = make_inputs(shape)
    D = shape[1]
    x_t = torch.from_numpy(x).requires_grad_(True)
    gamma_t = torch.from_numpy(gamma).requires_grad_(True)
    beta_t = torch.from_numpy(beta).requires_grad_(True)
    grad_y_t = torch.from_numpy(grad_y)

    def run_numpy() -> tuple[np.ndarray, ...]:
        y, cache = layernorm_forward(x, gamma, beta, EPS)
        return (y, *layernorm_backward(grad_y, cache))

    def run_torch() -> tuple[torch.Tensor, ...]:
        y = F.layer_norm(x_t, (D,), gamma_t, beta_t, EPS)
        return (y, *torch.autograd.grad(y, (x_t, gamma_t, beta_t), grad_y_t))

    def timed(fn) -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    times_numpy: list[float] = []
    torch_ms: dict[int, float] = {}
    for threads in thread_counts:
        torch.set_num_threads(threads)
        for _ in range(warmup):
            run_numpy(), run_torch()
        times_torch = []
        for _ in range(repeats):
            times_numpy.append(timed(run_numpy))
            times_torch.append(timed(run_torch))
        torch_ms[threads] = 1e3 * statistics.median(times_torch)

    # Same numbers, not just the same speed: largest difference over y, dx, dgamma, dbeta.
    max_diff = max(
        float(np.max(np.abs(a - b.detach().numpy()) / (1.0 + np.abs(b.detach().numpy()))))
        for a, b in zip(run_numpy(), run_torch())
    )
    numpy_ms = 1e3 * statistics.median(times_numpy)
    ratio = numpy_ms / min(torch_ms.values())
    return {"numpy_ms": numpy_ms, "torch_ms": torch_ms, "ratio": ratio, "max_diff": max_diff}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21, help="timed repeats per setting (median)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed repeats per shape and thread count")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.warmup < 0:
        parser.error("--repeats must be >= 1 and --warmup >= 0")

    threads = available_threads()
    thread_counts = [threads, 1] if threads > 1 else [1]
    print(
        f"LayerNorm forward+backward, float32, median of {args.repeats} | torch {torch.__version__}, "
        f"numpy {np.__version__}, {platform.machine()}, {threads} cores"
    )
    torch_columns = " ".join(f"{f'torch ms ({t} thr)':>17}" for t in thread_counts)
    header = f"{'shape (N, D)':>14} {'numpy ms':>10} {torch_columns} {'numpy/torch':>12} {'max rel diff':>13}"
    print(header)
    print("-" * len(header))
    for shape in SHAPES:
        r = bench_shape(shape, args.repeats, args.warmup, thread_counts)
        torch_cells = " ".join(f"{r['torch_ms'][t]:>17.3f}" for t in thread_counts)
        ratio, diff = r["ratio"], r["max_diff"]
        print(f"{str(shape):>14} {r['numpy_ms']:>10.3f} {torch_cells} {ratio:>11.2f}x {diff:>13.1e}")
    print("numpy/torch is against the faster torch column (lower is better; 1.00x = as fast as PyTorch).")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 0.5:
        print(f"note: load average {load:.1f} on {threads} cores; other processes make these timings noisy")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
