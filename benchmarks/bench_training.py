"""Training speed as ratios measured in one run: seeds per cell, worker processes, LayerNorm forms.

1. Seeds per cell: one epoch of the default RNN (T = 20, H = 64, B = 64, 1000 sequences) trained
   by :func:`lnbench.training.loop.train_members` as an ensemble of 1, 5 and 10 members, for each norm.
   Reported as time / time of 1 member (5 sequential seeds would be 5.0).
2. Workers: a small ``compare`` (2 families x 3 norms x 2 seeds, 10 epochs) with ``jobs=1`` and
   ``jobs=2``; wall time including the workers' start-up.
3. LayerNorm: one Adam step of the default RNN with lnbench's ``LayerNorm`` (the C++ kernel of
   ``lnbench.nn.kernels``, and the Python autograd Function ``NormalizeAffine``; both the hand-written
   x-hat backward), with ``torch.nn.LayerNorm``, and with the same formula left to autograd
   (unfused, ~8 graph nodes per call). Reported as time / ``torch.nn.LayerNorm``.
4. Transformer seeds per cell: one epoch of the default Transformer (200 training sequences,
   n_test 200) for 5 seeds, trained as one ensemble (``TransformerClassifier.stack``) / one after
   another, at batch sizes 1, 16 and 64, for each norm: the measurement behind
   :data:`lnbench.names.TRANSFORMER_ENSEMBLE_MAX_BATCH` (CPU time of the process).
5. A Linear on a few rows: one training step of Ba et al.'s Figure 6 network (784-1000-1000-10,
   fused Adam, the gradient norms) with its Linears in the C++ kernel of
   :mod:`lnbench.nn.few_row_linear` / in ``F.linear``, at batch sizes 1, 4 and 8 (its ``MAX_ROWS``),
   for each norm; the median of interleaved rounds, CPU time.

Timings of 1 and 3 use ``torch.utils.benchmark`` (warm-up, repeats, one thread).

Usage::

    python benchmarks/bench_training.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils import benchmark

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a plain checkout too
from lnbench import experiments  # noqa: E402
from lnbench.config import ModelConfig, TrainConfig, load_config  # noqa: E402
from lnbench.nn import few_row_linear  # noqa: E402
from lnbench.nn.layernorm import LayerNorm  # noqa: E402
from lnbench.nn.mlp import MLP  # noqa: E402
from lnbench.nn.models import SimpleRNN, TransformerClassifier, build_model  # noqa: E402
from lnbench.training.loop import train_members  # noqa: E402
from lnbench.training.tasks.trend import make_trend_data  # noqa: E402


class UnfusedLayerNorm(nn.Module):
    """The LayerNorm formula as plain tensor ops: autograd differentiates each of them."""

    def __init__(self, features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(features))
        self.beta = nn.Parameter(torch.zeros(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        centered = x - mean
        var = (centered * centered).mean(-1, keepdim=True)
        return centered * torch.rsqrt(var + self.eps) * self.gamma + self.beta


def _rnn(norm: str, seed: int) -> SimpleRNN:
    torch.manual_seed(seed)
    return build_model(ModelConfig(norm=norm), 64, 20)


def seeds_per_cell(min_run_time: float) -> list[tuple[str, float, float]]:
    datas = [make_trend_data(seed=s) for s in range(10)]
    cfg = TrainConfig(epochs=1)
    out = []
    for norm in ("none", "batch", "layer"):
        times = {}
        for members in (1, 5, 10):

            def epoch(members=members):
                model = SimpleRNN.stack([_rnn(norm, s) for s in range(members)])
                train_members(model, datas[:members], cfg, list(range(members)))

            times[members] = (
                benchmark.Timer("epoch()", globals={"epoch": epoch}, num_threads=1)
                .blocked_autorange(min_run_time=min_run_time)
                .median
            )
        out.append((norm, times[5] / times[1], times[10] / times[1]))
    return out


def workers(epochs: int) -> tuple[float, float]:
    cfg = load_config(None, [f"train.epochs={epochs}", "seeds=[0,1]"])
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        for jobs in (1, 2):
            t0 = time.perf_counter()
            experiments.compare(cfg, runs_dir=Path(tmp) / f"jobs{jobs}", jobs=jobs)
            walls.append(time.perf_counter() - t0)
    return walls[0], walls[1]


def layernorm_forms(min_run_time: float) -> dict[str, float]:
    X, y = torch.randn(64, 20, 64), torch.randint(0, 2, (64,))
    times = {}
    python_function = LayerNorm(64)
    python_function.use_kernel = False
    forms = (
        ("torch.nn.LayerNorm", nn.LayerNorm(64)),
        ("lnbench LayerNorm (C++ kernel)", LayerNorm(64)),
        ("lnbench LayerNorm (Python Function)", python_function),
        ("unfused autograd", UnfusedLayerNorm(64)),
    )
    for name, norm in forms:
        model = _rnn("layer", 0)
        model.cell.norm = norm
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step(model=model, opt=opt):
            opt.zero_grad()
            F.cross_entropy(model(X), y).backward()
            opt.step()

        times[name] = (
            benchmark.Timer("step()", globals={"step": step}, num_threads=1)
            .blocked_autorange(min_run_time=min_run_time)
            .median
        )
    return {k: v / times["torch.nn.LayerNorm"] for k, v in times.items()}


def transformer_seeds(repeats: int) -> list[tuple[str, dict[int, float]]]:
    datas = [make_trend_data(n_train=200, n_test=200, seed=s) for s in range(5)]
    d = datas[0]
    out = []
    for norm in ("none", "batch", "layer"):
        cfg = ModelConfig(family="transformer", norm=norm)

        def model(seed: int) -> TransformerClassifier:
            torch.manual_seed(seed)
            return build_model(cfg, d.input_size, d.seq_len)

        ratios = {}
        for bs in (1, 16, 64):
            train = TrainConfig(epochs=1, batch_size=bs)

            def cpu(fn) -> float:  # the best of `repeats` runs: the least disturbed by other work
                best = float("inf")
                for _ in range(repeats):
                    t0 = time.process_time()
                    fn()
                    best = min(best, time.process_time() - t0)
                return best

            ensemble = cpu(
                lambda: train_members(TransformerClassifier.stack([model(s) for s in range(5)]), datas, train, range(5))
            )
            one_by_one = cpu(lambda: [train_members(model(s), datas[s : s + 1], train, [s]) for s in range(5)])
            ratios[bs] = ensemble / one_by_one
        out.append((norm, ratios))
    return out


def few_row_steps(rounds: int) -> list[tuple[str, dict[int, float]]]:
    def step_time(norm: str, batch_size: int, kernel: bool) -> float:
        few_row_linear.MAX_ROWS = 8 if kernel else 0
        torch.manual_seed(0)
        model = MLP(ModelConfig(family="mlp", hidden_size=1000, num_layers=2, norm=norm), 784, 1, 10)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, fused=True)
        x, y = torch.randn(batch_size, 784), torch.randint(0, 10, (batch_size,))
        steps = max(20, 400 // batch_size)
        for i in range(steps + 10):
            if i == 10:  # after a warm-up
                t0 = time.process_time()
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            [p.grad.norm() for p in model.parameters()]  # noqa: B018  the loop's gradient norms
            opt.step()
        return (time.process_time() - t0) / steps

    default = few_row_linear.MAX_ROWS
    out = []
    try:
        for norm in ("none", "layer", "batch"):
            ratios = {}
            for bs in (1, 4, 8):
                times: dict[bool, list[float]] = {True: [], False: []}
                for _ in range(rounds):
                    for kernel in (False, True):
                        times[kernel].append(step_time(norm, bs, kernel))
                ratios[bs] = statistics.median(times[True]) / statistics.median(times[False])
            out.append((norm, ratios))
    finally:
        few_row_linear.MAX_ROWS = default
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter timings (noisier)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    t = 0.5 if args.quick else 2.0
    print("1. seeds per cell (RNN ensemble, one epoch; time / 1 member; 5 sequential seeds = 5.0)")
    print("   norm    5 seeds   10 seeds")
    for norm, r5, r10 in seeds_per_cell(t):
        print(f"   {norm:<6} {r5:7.2f}x {r10:9.2f}x")
    one, two = workers(3 if args.quick else 10)
    print(
        f"2. compare (2 families x 3 norms x 2 seeds): --jobs 1 {one:.1f} s, --jobs 2 {two:.1f} s, ratio {two / one:.2f}"
    )
    print("3. one Adam step of the default LayerNorm RNN (time / torch.nn.LayerNorm)")
    for name, ratio in layernorm_forms(t).items():
        print(f"   {name:<36} {ratio:5.2f}x")
    print("4. Transformer, 5 seeds as one ensemble / one after another (one epoch, CPU time)")
    print("   norm     bs 1   bs 16   bs 64")
    for norm, r in transformer_seeds(1 if args.quick else 3):
        print(f"   {norm:<6} {r[1]:6.2f} {r[16]:7.2f} {r[64]:7.2f}")
    if few_row_linear.uses_kernel(torch.zeros(4, 784), torch.zeros(1000, 784)):
        print("5. Figure 6's MLP step, its Linears in the few-row kernel / in F.linear (CPU time, median)")
        print("   norm     bs 1   bs 4   bs 8")
        for norm, r in few_row_steps(2 if args.quick else 5):
            print(f"   {norm:<6} {r[1]:6.2f} {r[4]:6.2f} {r[8]:6.2f}")
    else:
        print("5. the few-row Linear kernel is not built (LNBENCH_KERNELS=0?): skipped")


if __name__ == "__main__":
    main()
