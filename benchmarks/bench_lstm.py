"""The LSTM family's cost, as ratios measured in one run (issue 22, D).

1. One epoch of the task at the default sizes (T = 20, D = 64, H = 64, B = 64, 1000 training and 200
   test sequences; Adam on cross-entropy; one torch thread), against ``torch.nn.LSTM`` (for the
   LSTM) or ``torch.nn.RNN`` (for the tanh RNN) with a linear head on h_T trained on the same
   batches (their fused CPU kernels; the reference, 1.00x), each lnbench model with its fused
   recurrence (issue 29, ``lnbench/nn/fused.py``) and on its step-by-step Python path:

   - ``steps``: the training steps alone (forward, backward, Adam step) of lnbench's LSTM, written
     from scratch, for each norm; the tanh RNN (LayerNorm, joint) for scale;
   - ``epoch, 1 seed``: lnbench's whole epoch, :func:`lnbench.training.loop.train_members` (the
     steps, the per-tensor gradient norms, the probes on the test set), an epoch as a run has it:
     (3 epochs - 1 epoch) / 2, so that what a run does once (building the models, the probes before
     training) is not counted as part of every epoch;
   - ``epoch, per seed of 5``: the same for a 5-seed ensemble (the member axis), divided by 5.
   - ``run start``: what the difference leaves out, per seed of 5 (building and stacking the
     models, the probes before training): a 1-epoch run costs ``epoch + run start``.

   Every number is time / the torch.nn.LSTM steps' time.
2. ``--compare``: the wall time of the default compare (``lnbench compare configs/compare.yaml
   --jobs 2``, 5 seeds) and of the same with the LSTM added, ``--set
   "compare.families=[rnn,lstm,transformer]"``, and their ratio (minutes each).

Timings of 1 use ``torch.utils.benchmark`` (warm-up, repeats, medians) on the process's CPU time
(``time.process_time``, one thread), so that a busy machine does not skew the ratios; 2 is wall time.

Usage::

    python benchmarks/bench_lstm.py [--quick] [--compare]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils import benchmark

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a plain checkout too
from lnbench.config import ModelConfig, TrainConfig  # noqa: E402
from lnbench.nn.models import build_model  # noqa: E402
from lnbench.training.data import TrendData  # noqa: E402
from lnbench.training.loop import train_members  # noqa: E402
from lnbench.training.tasks.trend import make_trend_data  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NORMS = ("none", "batch", "layer", "rms", "weight")


class TorchLSTMClassifier(nn.Module):
    """``torch.nn.LSTM`` (one layer, batch first) and ``Linear(H, C)`` on h_T: the reference."""

    def __init__(self, input_size: int, hidden_size: int, num_classes: int = 2) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, (h_T, _) = self.lstm(x)  # h_T: (1, B, H)
        return self.head(h_T[0])


class TorchRNNClassifier(nn.Module):
    """``torch.nn.RNN`` (tanh, one layer, batch first) and ``Linear(H, C)`` on h_T: the RNN's reference."""

    def __init__(self, input_size: int, hidden_size: int, num_classes: int = 2) -> None:
        super().__init__()
        self.rnn = nn.RNN(input_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, h_T = self.rnn(x)  # (1, B, H)
        return self.head(h_T[0])


def _lnbench(family: str, norm: str, seed: int = 0, placement: str = "joint", kernel: bool = True) -> nn.Module:
    torch.manual_seed(seed)
    model = build_model(ModelConfig(family=family, norm=norm, norm_placement=placement), 64, 20)
    model.use_kernel = kernel  # type: ignore[assignment]
    return model


def _steps(model: nn.Module, data: TrendData, batch_size: int = 64) -> None:
    """One epoch of training steps, in the data's order (the batch order costs nothing to compare)."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    for i in range(0, data.X_train.shape[0], batch_size):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(data.X_train[i : i + batch_size]), data.y_train[i : i + batch_size]).backward()
        opt.step()


def _time(fn, min_run_time: float) -> float:
    """Median CPU seconds of this process per call (one thread: what other processes do on a
    shared machine does not count, as it would in wall time)."""
    timer = benchmark.Timer("fn()", globals={"fn": fn}, num_threads=1, timer=time.process_time)
    return timer.blocked_autorange(min_run_time=min_run_time).median


MODELS = (
    [("lstm", n, "separate") for n in NORMS] + [("rnn", n, "joint") for n in NORMS] + [("rnn", "layer", "separate")]
)


def epoch_ratios(min_run_time: float) -> tuple[dict[str, float], list[tuple[str, str, list[float]]]]:
    """The torch.nn.LSTM's and torch.nn.RNN's training-step seconds per epoch, and per lnbench model
    (label, reference, [steps, epoch 1 seed, epoch per seed of 5, run start per seed of 5] with the
    fused kernel, then the same four on the step-by-step Python path) as ratios to its reference."""
    datas = [make_trend_data(seed=s) for s in range(5)]
    torch.manual_seed(0)
    references = {
        "torch.nn.LSTM": _time(lambda: _steps(TorchLSTMClassifier(64, 64), datas[0]), min_run_time),
        "torch.nn.RNN": _time(lambda: _steps(TorchRNNClassifier(64, 64), datas[0]), min_run_time),
    }
    out = []
    for family, norm, placement in MODELS:
        reference = "torch.nn.LSTM" if family == "lstm" else "torch.nn.RNN"
        cls = type(_lnbench(family, norm, placement=placement))
        ratios = []
        for kernel in (True, False):
            steps = _time(lambda: _steps(_lnbench(family, norm, 0, placement, kernel), datas[0]), min_run_time)

            def run(members: int, epochs: int) -> None:
                models = [_lnbench(family, norm, s, placement) for s in range(members)]
                model = cls.stack(models)  # type: ignore[attr-defined]
                model.use_kernel = kernel
                train_members(model, datas[:members], TrainConfig(epochs=epochs), list(range(members)))

            def epoch(members: int) -> tuple[float, float]:
                """Seconds per member of one epoch in a run, and of the run's start."""
                short = _time(lambda: run(members, 1), min_run_time)
                long = _time(lambda: run(members, 3), min_run_time)
                per_epoch = (long - short) / 2
                return per_epoch / members, (short - per_epoch) / members

            one, _ = epoch(1)
            five, start = epoch(5)
            ratios += [t / references[reference] for t in (steps, one, five, start)]
        label = f"LSTM {norm}" if family == "lstm" else f"RNN {norm} ({placement})"
        out.append((label, reference, ratios))
    return references, out


def matmul_rates(min_run_time: float) -> tuple[float, float]:
    """GFLOP/s of one thread: ``torch.mm`` at 2048^3 (the peak), and ``torch.bmm`` of the LSTM's
    recurrent product over 5 members, (5, 64, 64) x (5, 64, 256). The ratios above depend on them:
    the references are mostly matrix products, lnbench's epoch partly."""
    a = torch.randn(2048, 2048)
    h, w = torch.randn(5, 64, 64), torch.randn(5, 64, 256)
    peak = 2 * 2048**3 / _time(lambda: a @ a, min_run_time) / 1e9
    small = 2 * 5 * 64 * 64 * 256 / _time(lambda: torch.bmm(h, w), min_run_time) / 1e9
    return peak, small


def compare_walls(seeds: int = 5) -> tuple[float, float]:
    """Wall seconds of ``lnbench compare`` on ``configs/compare.yaml`` with ``--jobs 2`` (as
    ``benchmarks/bench_compare.py`` times it), without and with the LSTM added."""
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        for extra in ([], ["compare.families=[rnn,lstm,transformer]"]):
            cmd = [sys.executable, "-m", "lnbench", "compare", str(REPO / "configs/compare.yaml")]
            cmd += ["--runs-dir", tmp, "--jobs", "2", "--set", f"seeds=[{','.join(map(str, range(seeds)))}]"]
            for o in extra:
                cmd += ["--set", o]
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, cwd=REPO)
            walls.append(time.perf_counter() - t0)
    return walls[0], walls[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter timings (noisier)")
    parser.add_argument(
        "--compare", action="store_true", help="also time the default compare with and without the LSTM"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    peak, small = matmul_rates(0.5 if args.quick else 2.0)
    print(f"0. this machine's matrix products, one thread: torch.mm 2048^3 {peak:.0f} GFLOP/s; the LSTM's")
    print(f"   recurrent product, (64, 64) x (64, 256) batched over 5 members, {small:.0f} GFLOP/s")
    references, rows = epoch_ratios(0.5 if args.quick else 3.0)
    print("1. one epoch, default sizes, one thread, CPU time / the torch reference's training steps")
    print("   (" + ", ".join(f"{k}: {v:.3f} s" for k, v in references.items()) + ")")
    head = f"{'steps':>7} {'epoch 1 seed':>12} {'per seed of 5':>13} {'run start':>9}"
    print(f"   {'':<22} {'':<14} {'fused kernel':^44} | {'Python path (LNBENCH_KERNELS=0)':^44}")
    print(f"   {'model':<22} {'reference':<14} {head} | {head}")
    for label, reference, r in rows:
        cells = " | ".join(f"{r[i]:6.2f}x {r[i + 1]:11.2f}x {r[i + 2]:12.2f}x {r[i + 3]:8.2f}x" for i in (0, 4))
        print(f"   {label:<22} {reference:<14} {cells}")
    if args.compare:
        default, with_lstm = compare_walls()
        print(
            f"2. default compare: {default:.0f} s; with the LSTM added: {with_lstm:.0f} s; "
            f"ratio {with_lstm / default:.2f}"
        )


if __name__ == "__main__":
    main()
