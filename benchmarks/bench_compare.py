"""The cost of the default compare (issue 18, F): today's default against the one before it,
measured back to back on this machine, as a ratio of wall times.

- before: 1000 training sequences x 50 epochs, n_test 200, the RNN in its joint placement and
  the Transformer (the default until issue 18);
- now: ``configs/compare.yaml`` (5000 x 10 epochs, n_test 1000, the RNN in both placements and
  the Transformer).

Both with 5 seeds and ``--jobs 2`` (this machine's cores); the bound is now <= 1.3 x before, in wall
time on an idle machine. The CPU time of each command and its workers is printed next to it.
Each run is a whole ``lnbench compare`` (workers, baselines, figures, report included).

Usage::

    python benchmarks/bench_compare.py [--seeds N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from timing import timed

REPO = Path(__file__).resolve().parents[1]
BEFORE = ["data.n_train=1000", "data.n_test=200", "train.epochs=50", "compare.placements=null"]


def wall(overrides: list[str], seeds: int, runs: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its workers; :func:`timing.timed`)."""
    cmd = [sys.executable, "-m", "lnbench", "compare", str(REPO / "configs/compare.yaml"), "--runs-dir", str(runs)]
    cmd += ["--jobs", "2", "--set", f"seeds=[{','.join(map(str, range(seeds)))}]"]
    for o in overrides:
        cmd += ["--set", o]
    return timed(cmd, REPO)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before = wall(BEFORE, args.seeds, Path(tmp))
        now = wall([], args.seeds, Path(tmp))
    print(f"{'':<80} {'wall':>8} {'CPU':>8}")
    print(f"{'default compare before issue 18 (1000 x 50, n_test 200, RNN joint + Transformer)':<80}", end="")
    print(f" {before[0]:7.1f}s {before[1]:7.1f}s")
    print(f"{'default compare now (5000 x 10, n_test 1000, RNN joint + separate + Transformer)':<80}", end="")
    print(f" {now[0]:7.1f}s {now[1]:7.1f}s")
    print(f"ratio now / before: wall {now[0] / before[0]:.2f} (bound: 1.30), CPU {now[1] / before[1]:.2f}")
    print("(the CPU ratio is the check on a loaded machine: other work stretches wall times, not CPU times)")
