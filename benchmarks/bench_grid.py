"""lnbench's recurrent models over a grid of sizes, against ``torch.nn.LSTM`` / ``torch.nn.RNN`` (issue 44, B).

The grid: B in {4, 64, 256}, T in {20, 100, 784}, I in {1, 64}, H in {64, 128, 256, 512} (72 points),
and three named extra rows outside it: MNIST read by rows (B 64, T 28, I 28, H 128) and pixel-by-pixel
MNIST at H 100 (T 784, I 1) at B 16 and at the preset's B 64 (configs/compare_mnist_pixels.yaml; its
epoch is printed at the end). Measured: every grid point whose LSTM training step has at most
``MAX_GFLOP`` (8.5) GFLOP of matrix products (41), the named points whatever their size (pixel MNIST,
B 64 T 784 I 1 H 128: 20 GFLOP; B 64 T 100 I 64 H 256: 13 GFLOP) and the three extra rows: 46 points,
about 8 min of CPU time in all (printed at the end: about the wall time on an idle machine). The other
29 grid points are left out (printed at the start): 9-1421 GFLOP per LSTM step, so that
``torch.nn.LSTM``'s step alone takes 0.1-17 s at one core's ~85 GFLOP/s, and each point's ~100
steps' worth of measurements (five models, the 5-seed ensembles, the repeats, the memory runs: ~2 s
per GFLOP) 20 s to 50 min; the grid in full would take hours.

At each point, for the LSTM with norm none, layer (Ba et al.'s LN-LSTM) and batch (Cooijmans et
al.'s BN-LSTM), and the tanh RNN with none and layer (joint placement), each with its fused C++
recurrence (``LNBENCH_KERNELS=0``: the step-by-step Python path instead):

- ``1 seed``: one training step as lnbench trains (forward, cross-entropy on 10 classes,
  backward, Adam step: :func:`lnbench.training.optim.build_optimizer`, the mean loss per member
  of :mod:`lnbench.training.ensemble`; not the per-tensor gradient norms nor the probes of an
  epoch), process CPU time at one torch thread, the median of repeats after one warm-up step,
  over the same step of ``torch.nn.LSTM`` (``torch.nn.RNN``) + ``Linear(H, 10)`` on h_T on the
  same batch;
- ``per seed of 5``: the step of a 5-seed ensemble (``stack``, the member axis lnbench trains
  seeds on) over 5 x the reference's step; where lnbench trains a cell's seeds one after another
  (:func:`lnbench.names.seeds_train_together` at B, T, H: the LSTM once T B H >= 2^17 or H >= 512),
  each seed costs one seed's step and the peak is one seed's, so the one-seed ratios stand there
  (marked ``1 by 1``);
- ``memory``: the peak resident memory of a training step (the process's VmHWM, reset by writing
  5 to /proc/self/clear_refs after a first step and glibc's ``malloc_trim``) above the RSS of the
  same fresh process before the model was built: weights, Adam's state, the batch, the step's
  activations and gradients; each measurement in a fresh process (forked from a forkserver that
  imported torch), for one seed and per seed of the 5-seed ensemble, over the reference's one seed.
  Python's tracemalloc does not see ATen's allocations; RSS does (at page granularity: at the
  smallest points a few pages are a large ratio);
- ``GFLOP/s``: the input and recurrent matrix products' FLOPs, forward 2 B T (I + H) G H (G = 4
  gates for the LSTM, 1 for the RNN), backward twice that, over the step's CPU time, and as a
  percentage of this machine's one-thread peak (a 1024^3 float32 ``torch.mm``).

Each ratio is marked against issue 44's targets: one seed: LSTM none <= 1.0x, LN <= 1.15x, BN <=
1.25x, RNN none and LN <= 1.0x; per seed of 5: LSTM none <= 0.9x, LN <= 1.0x, BN <= 1.1x; peak
memory per seed (one seed and per seed of 5) <= 1.3x the reference's. The last table is the worst
point per target. The ratios are CPU time, but a loaded machine still moves them (shared caches,
SMT siblings): the load average is printed at the start and the end.

Usage::

    python benchmarks/bench_grid.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from torch import nn

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a plain checkout too
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_lstm import TorchLSTMClassifier, TorchRNNClassifier  # noqa: E402

from lnbench.config import ModelConfig, TrainConfig  # noqa: E402
from lnbench.names import seeds_train_together  # noqa: E402
from lnbench.nn.kernels import kernels_enabled  # noqa: E402
from lnbench.nn.models import build_model  # noqa: E402
from lnbench.training.allocator import keep_freed_memory  # noqa: E402
from lnbench.training.ensemble import cross_entropy  # noqa: E402
from lnbench.training.optim import build_optimizer  # noqa: E402

GRID = {"B": (4, 64, 256), "T": (20, 100, 784), "I": (1, 64), "H": (64, 128, 256, 512)}
NAMED = {
    (64, 20, 64, 64): "default",
    (64, 28, 28, 128): "MNIST rows",
    (64, 784, 1, 128): "pixel MNIST",
    (16, 784, 1, 100): "pixel MNIST, H 100",
    (64, 784, 1, 100): "pixel MNIST preset",
    (64, 100, 64, 256): "T 100, H 256",
}
QUICK = ((64, 20, 64, 64), (4, 20, 1, 64), (64, 28, 28, 128))
#: configs/compare_mnist_pixels.yaml: 4000 training images in batches of 64 at this point
MNIST_EPOCH = {"point": (64, 784, 1, 100), "images": 4000}
MAX_GFLOP = 8.5  # grid points whose LSTM step has more matrix-product GFLOP are left out (module docstring)
SEEDS = 5
NUM_CLASSES = 10
MODELS = (("lstm", "none"), ("lstm", "layer"), ("lstm", "batch"), ("rnn", "none"), ("rnn", "layer"))
REFERENCE = {"lstm": "torch.nn.LSTM", "rnn": "torch.nn.RNN"}
GATES = {"lstm": 4, "rnn": 1}
LABEL = {"none": "none", "layer": "LN", "batch": "BN"}
#: issue 44's bounds: (measure, family, norm) -> the largest ratio that meets it
TARGETS = {
    ("step_1", "lstm", "none"): 1.0,
    ("step_1", "lstm", "layer"): 1.15,
    ("step_1", "lstm", "batch"): 1.25,
    ("step_1", "rnn", "none"): 1.0,
    ("step_1", "rnn", "layer"): 1.0,
    ("step_5", "lstm", "none"): 0.9,
    ("step_5", "lstm", "layer"): 1.0,
    ("step_5", "lstm", "batch"): 1.1,
    **{("memory_1", f, n): 1.3 for f, n in MODELS},
    **{("memory_5", f, n): 1.3 for f, n in MODELS},
}
MEASURES = {
    "step_1": "step, 1 seed",
    "step_5": "step, per seed of 5",
    "memory_1": "peak memory, 1 seed",
    "memory_5": "peak memory, per seed of 5",
}
MEMORY_METHOD = (
    "peak RSS (VmHWM after `echo 5 > /proc/self/clear_refs` and malloc_trim, following a first step) "
    "above the RSS before the model was built, in a fresh process per measurement"
)


@dataclass(frozen=True)
class Point:
    """One size: batch B, sequence length T, input features I, hidden size H."""

    B: int
    T: int
    I: int  # noqa: E741 (the field's name for the input size)
    H: int

    @property
    def name(self) -> str:
        return NAMED.get((self.B, self.T, self.I, self.H), "")

    def label(self) -> str:
        return f"B {self.B} T {self.T} I {self.I} H {self.H}" + (f" ({self.name})" if self.name else "")

    def flops(self, family: str) -> float:
        """FLOPs of one training step's input and recurrent matrix products: 3 x 2 B T (I + H) G H."""
        return 3 * 2 * self.B * self.T * (self.I + self.H) * GATES[family] * self.H


def points(quick: bool) -> tuple[list[Point], list[Point]]:
    """(the points measured, cheapest first; the grid points left out)."""
    if quick:
        return [Point(*p) for p in QUICK], []
    grid = [Point(b, t, i, h) for b in GRID["B"] for t in GRID["T"] for i in GRID["I"] for h in GRID["H"]]
    named = [Point(*p) for p in NAMED]
    kept = [p for p in grid if p.flops("lstm") <= MAX_GFLOP * 1e9 or p in named]
    kept += [p for p in named if p not in kept]
    left_out = [p for p in grid if p not in kept]
    return sorted(kept, key=lambda p: p.flops("lstm")), sorted(left_out, key=lambda p: p.flops("lstm"))


def build(family: str, norm: str | None, p: Point, members: int | None = None) -> nn.Module:
    """lnbench's model (``norm`` given; a ``members``-seed ensemble, seeds 0..S-1) or the reference
    (``norm`` None), seed 0, 10 classes."""
    if norm is None:
        torch.manual_seed(0)
        cls = TorchLSTMClassifier if family == "lstm" else TorchRNNClassifier
        return cls(p.I, p.H, NUM_CLASSES)

    def one(seed: int) -> nn.Module:
        torch.manual_seed(seed)
        return build_model(ModelConfig(family=family, norm=norm, hidden_size=p.H), p.I, p.T, NUM_CLASSES)

    if members is None:
        return one(0)
    models = [one(s) for s in range(members)]
    return type(models[0]).stack(models)  # type: ignore[attr-defined]


def training_step(model: nn.Module, p: Point, members: int) -> Callable[[], None]:
    """One training step as lnbench's loop takes it (:func:`lnbench.training.loop.train_members`),
    on a fixed random batch: X ``(S, B, T, I)``, y ``(S, B)`` (the reference and one seed: S = 1)."""
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(members, p.B, p.T, p.I, generator=gen)  # (S, B, T, I)
    y = torch.randint(0, NUM_CLASSES, (members, p.B), generator=gen)  # (S, B)
    opt = build_optimizer(model, TrainConfig())
    model.train()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        logits = model(X) if members > 1 else model(X[0]).unsqueeze(0)  # (S, B, C)
        cross_entropy(logits, y).sum().backward()  # the members' mean losses summed: each gradient its own
        opt.step()

    return step


def cpu_seconds(fn: Callable[[], None], budget: float) -> list[float]:
    """Process CPU seconds of each call of ``fn`` after one warm-up call: at least 2 calls, more
    while they take less than ``budget`` in all (at most 25)."""
    fn()
    times: list[float] = []
    while len(times) < 2 or (sum(times) < budget and len(times) < 25):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return times


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _malloc_trim() -> None:
    """Give the heap's free pages back (glibc), so that reusing them shows in the RSS again."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def peak_memory(family: str, norm: str | None, p: Point, members: int) -> dict[str, float]:
    """In a fresh process: bytes above the RSS before the model was built, after its first step
    (``persistent``: weights, Adam's state, the batch) and at the peak of its second training step
    (``peak``); and the process's CPU seconds (``cpu_seconds``)."""
    torch.set_num_threads(1)
    keep_freed_memory()  # as lnbench's training loop
    tiny = Point(2, 2, 1, 4)  # warm torch (and load the kernel) outside the measurement
    training_step(build(family, norm, tiny, None if members == 1 else 2), tiny, 1 if members == 1 else 2)()
    _malloc_trim()
    before = _status_kb("VmRSS")
    step = training_step(build(family, norm, p, None if members == 1 else members), p, members)
    step()
    _malloc_trim()
    persistent = _status_kb("VmRSS") - before
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    step()
    peak = _status_kb("VmHWM") - before
    return {"persistent": 1024 * persistent, "peak": 1024 * peak, "cpu_seconds": time.process_time()}  # since the fork


def matmul_peak(budget: float) -> float:
    """One thread's float32 GFLOP/s on a 1024^3 ``torch.mm`` (median)."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    return 2 * 1024**3 / statistics.median(cpu_seconds(lambda: torch.mm(a, b), budget)) / 1e9


def machine() -> dict[str, object]:
    """CPU model, cores, torch's build."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "kernels": kernels_enabled(),
    }


def measure_point(p: Point, budget: float, pool: Callable[..., dict[str, float]], advance: Callable[[str], None]):
    """Every model's raw numbers at ``p``: step seconds (lists), peak memory (bytes)."""
    out: dict[str, dict] = {}
    for family in ("lstm", "rnn"):
        ref = build(family, None, p)
        out[REFERENCE[family]] = {
            "step_s": cpu_seconds(training_step(ref, p, 1), budget),
            "memory": pool(family, None, p, 1),
        }
        advance(REFERENCE[family])
    for family, norm in MODELS:
        name = f"{family} {norm}"
        one = build(family, norm, p)
        out[name] = {"step_1_s": cpu_seconds(training_step(one, p, 1), budget), "memory_1": pool(family, norm, p, 1)}
        del one
        if seeds_train_together(family, norm, p.B, p.T, p.H):
            ensemble = build(family, norm, p, SEEDS)
            out[name]["step_5_s"] = cpu_seconds(training_step(ensemble, p, SEEDS), budget)
            out[name]["memory_5"] = pool(family, norm, p, SEEDS)
            del ensemble
        else:  # lnbench trains this cell's seeds one after another: per seed, one seed's step and peak
            out[name]["mechanism"] = "sequential"
        advance(name)
    return out


def ratios(raw: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Per lnbench model: the four ratios of :data:`MEASURES` against its reference."""
    out = {}
    for family, norm in MODELS:
        r, m = raw[REFERENCE[family]], raw[f"{family} {norm}"]
        ref_step, ref_peak = statistics.median(r["step_s"]), r["memory"]["peak"]
        q = {"step_1": statistics.median(m["step_1_s"]) / ref_step, "memory_1": m["memory_1"]["peak"] / ref_peak}
        if "step_5_s" in m:
            q["step_5"] = statistics.median(m["step_5_s"]) / (SEEDS * ref_step)
            q["memory_5"] = m["memory_5"]["peak"] / (SEEDS * ref_peak)
        else:  # seeds one after another: each costs one seed's step, and the peak is one seed's
            q["step_5"], q["memory_5"] = q["step_1"], q["memory_1"]
        out[f"{family} {norm}"] = q
    return out


def mark(value: float, family: str, norm: str, measure: str) -> str:
    bound = TARGETS.get((measure, family, norm))
    if bound is None:
        return f"{value:.2f}x"
    return f"{value:.2f}x " + ("[green]✓[/]" if value <= bound else "[red]✗[/]")


def results_table(rows: list[dict], peak: float) -> Table:
    table = Table(title=f"CPU time and peak memory / the torch reference's (GFLOP/s: % of the {peak:.0f} GFLOP/s peak)")
    for col in ("point", "model", "ref step", "1 seed", "per seed of 5", "ref memory", "memory 1 seed"):
        table.add_column(col, justify="left" if col in ("point", "model") else "right")
    table.add_column("memory per seed of 5", justify="right")
    table.add_column("GFLOP/s ref | 1 | per seed of 5", justify="right")
    for row in rows:
        p: Point = row["point"]
        for i, (family, norm) in enumerate(MODELS):
            r, m = row["raw"][REFERENCE[family]], row["raw"][f"{family} {norm}"]
            q = row["ratios"][f"{family} {norm}"]
            ref_step = statistics.median(r["step_s"])
            flops = p.flops(family)
            rates = [flops / ref_step, flops / statistics.median(m["step_1_s"])]
            rates.append(SEEDS * flops / statistics.median(m["step_5_s"]) if "step_5_s" in m else rates[-1])
            seq = " (1 by 1)" if "step_5_s" not in m else ""
            table.add_row(
                p.label() if i == 0 else "",
                f"{family.upper()} {LABEL[norm]}",
                f"{1e3 * ref_step:.1f} ms",
                mark(q["step_1"], family, norm, "step_1"),
                mark(q["step_5"], family, norm, "step_5") + seq,
                f"{r['memory']['peak'] / 2**20:.1f} MB",
                mark(q["memory_1"], family, norm, "memory_1"),
                mark(q["memory_5"], family, norm, "memory_5") + seq,
                " | ".join(f"{g / 1e9:.0f} ({100 * g / (peak * 1e9):.0f}%)" for g in rates),
                end_section=i == len(MODELS) - 1,
            )
    return table


def worst(rows: list[dict]) -> list[dict]:
    """Per target: the bound, how many points meet it, the worst point and its ratio."""
    out = []
    for (measure, family, norm), bound in TARGETS.items():
        values = [(row["ratios"][f"{family} {norm}"][measure], row["point"]) for row in rows]
        value, p = max(values, key=lambda v: v[0])
        met = sum(v <= bound for v, _ in values)
        out.append(
            {
                "measure": measure,
                "model": f"{family} {norm}",
                "bound": bound,
                "met": met,
                "points": len(values),
                "worst_point": asdict(p),
                "worst_ratio": value,
            }
        )
    return out


def worst_table(summary: list[dict]) -> Table:
    table = Table(title="The worst point per target")
    for col in ("target", "model", "bound", "met", "worst point", "ratio"):
        table.add_column(col, justify="right" if col in ("bound", "met", "ratio") else "left")
    for w in summary:
        family, norm = w["model"].split()
        ok = w["worst_ratio"] <= w["bound"]
        table.add_row(
            MEASURES[w["measure"]],
            f"{family.upper()} {LABEL[norm]}",
            f"<= {w['bound']:.2f}x",
            f"{w['met']}/{w['points']}",
            Point(**w["worst_point"]).label(),
            f"{w['worst_ratio']:.2f}x " + ("[green]✓[/]" if ok else "[red]✗[/]"),
        )
    return table


def epoch_line(rows: list[dict]) -> str:
    """The training steps of one epoch of pixel MNIST (:data:`MNIST_EPOCH`) per seed of 5, from the
    measured steps: images / batch steps of the median step (the test split's evaluation and the
    probes not included)."""
    row = next(
        (r for r in rows if (r["point"].B, r["point"].T, r["point"].I, r["point"].H) == MNIST_EPOCH["point"]), None
    )
    if row is None:
        return ""
    p: Point = row["point"]
    steps = MNIST_EPOCH["images"] / p.B
    parts = []
    for name in ("torch.nn.LSTM", "lstm none", "lstm layer", "lstm batch"):
        m = row["raw"][name]
        if name.startswith("torch"):
            parts.append(f"{name} {steps * statistics.median(m['step_s']):.0f} s")
            continue
        per_seed = statistics.median(m["step_5_s"]) / SEEDS if "step_5_s" in m else statistics.median(m["step_1_s"])
        how = "as one ensemble" if "step_5_s" in m else "one after another"
        parts.append(f"LSTM {LABEL[name.split()[1]]} {steps * per_seed:.0f} s ({how})")
    return (
        f"pixel MNIST, an epoch's training steps per seed of 5 ({MNIST_EPOCH['images']} images, batch {p.B}, "
        f"T {p.T}, H {p.H}: {steps:g} steps x the median step; CPU time, one thread; without the test split's "
        "evaluation and the probes): " + ", ".join(parts)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"{len(QUICK)} small points, shorter timings (a smoke test)"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="save the raw numbers here")
    args = parser.parse_args()
    out = Console(width=None if sys.stdout.isatty() else 190)
    err = Console(stderr=True)
    torch.set_num_threads(1)
    keep_freed_memory()  # as lnbench's training loop
    load_start, wall0, cpu0 = os.getloadavg(), time.perf_counter(), time.process_time()
    info = machine()
    kept, left_out = points(args.quick)
    budget = 0.1 if args.quick else 0.3
    out.print(
        f"machine: {info['cpu']}, {info['cores']} cores ({info['cores_usable']} usable), {info['cpu_capability']}, "
        f"torch {info['torch']}, one torch thread; lnbench kernels {'on' if info['kernels'] else 'OFF'}"
    )
    out.print("load average at the start (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in load_start))
    peak = matmul_peak(0.5 if args.quick else 2.0)
    out.print(f"one-thread peak: torch.mm 1024^3 float32, {peak:.0f} GFLOP/s")
    out.print(f"timing: process CPU time, median of >= 2 steps after a warm-up; memory: {MEMORY_METHOD}")
    out.print(f"points measured ({len(kept)}): " + "; ".join(p.label() for p in kept), highlight=False)
    if left_out:
        out.print(
            f"left out ({len(left_out)} grid points, > {MAX_GFLOP:g} GFLOP of matrix products per LSTM step: "
            f"{min(p.flops('lstm') for p in left_out) / 1e9:.1f}-{max(p.flops('lstm') for p in left_out) / 1e9:.0f} "
            f"GFLOP, the reference's step alone {min(p.flops('lstm') for p in left_out) / peak / 1e9:.2f}-"
            f"{max(p.flops('lstm') for p in left_out) / peak / 1e9:.0f} s at the peak): "
            + ", ".join(f"{p.B}x{p.T}x{p.I}x{p.H}" for p in left_out)
            + " (B x T x I x H)",
            highlight=False,
        )
    context = multiprocessing.get_context("forkserver")
    # torch, lnbench and torch._dynamo (Adam's first step imports it: 1 s) imported once in the forkserver,
    # not in every measurement's process; Python 3.11's forkserver ignores the parent's sys.path
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "benchmarks"), os.environ.get("PYTHONPATH", "")])
    context.set_forkserver_preload(["bench_grid", "torch._dynamo"])
    rows = []
    units = len(kept) * (2 + len(MODELS))
    with (
        ProcessPoolExecutor(1, mp_context=context, max_tasks_per_child=1) as executor,
        Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
        ) as progress,
    ):
        task = progress.add_task("", total=units)

        def pool(*a) -> dict[str, float]:
            return executor.submit(peak_memory, *a).result()

        for p in kept:
            progress.update(task, description=p.label())
            raw = measure_point(p, budget, pool, lambda name: progress.advance(task))
            rows.append({"point": p, "raw": raw, "ratios": ratios(raw)})
    out.print(results_table(rows, peak))
    summary = worst(rows)
    out.print(worst_table(summary))
    if line := epoch_line(rows):
        out.print(line, highlight=False)
    load_end = os.getloadavg()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    memory_runs = [v for row in rows for m in row["raw"].values() for k, v in m.items() if k.startswith("memory")]
    cpu_memory = sum(v["cpu_seconds"] for v in memory_runs)
    out.print(
        "load average at the end (1, 5, 15 min): "
        + ", ".join(f"{x:.2f}" for x in load_end)
        + f"; {wall:.0f} s wall, {cpu + cpu_memory:.0f} s CPU ({cpu:.0f} s in this process, {cpu_memory:.0f} s in "
        f"the {len(memory_runs)} memory runs' processes: about the wall time on an idle machine)"
    )
    if args.json:
        data = {
            "machine": info,
            "load_start": load_start,
            "load_end": load_end,
            "wall_seconds": wall,
            "cpu_seconds": cpu,
            "cpu_seconds_memory_runs": cpu_memory,
            "peak_gflops": peak,
            "timing": "process CPU seconds per step, one torch thread, after one warm-up step",
            "memory": MEMORY_METHOD,
            "seeds": SEEDS,
            "num_classes": NUM_CLASSES,
            "max_gflop": MAX_GFLOP,
            "left_out": [asdict(p) for p in left_out],
            "points": [
                {**asdict(row["point"]), "name": row["point"].name, "raw": row["raw"], "ratios": row["ratios"]}
                for row in rows
            ],
            "flops": {f: {"per_step": "6 B T (I + H) G H", "G": g} for f, g in GATES.items()},
            "targets": summary,
        }
        args.json.write_text(json.dumps(data, indent=1))
        out.print(f"raw numbers: {args.json}")


if __name__ == "__main__":
    main()
