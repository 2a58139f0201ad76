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
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEFORE = ["data.n_train=1000", "data.n_test=200", "train.epochs=50", "compare.placements=null"]


TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of a live process, from /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def _tree_cpu(root: int, seen: dict[int, float]) -> None:
    """Record the CPU seconds of ``root`` and every live descendant in ``seen`` (pid -> last value)."""
    stats = {int(d): _stat(int(d)) for d in os.listdir("/proc") if d.isdigit()}
    children: dict[int, list[int]] = {}
    for pid, st in stats.items():
        if st is not None:
            children.setdefault(st[0], []).append(pid)
    todo = [root]
    while todo:
        pid = todo.pop()
        st = stats.get(pid)
        if st is not None:
            seen[pid] = max(seen.get(pid, 0.0), st[1])
        todo += children.get(pid, [])


def wall(overrides: list[str], seeds: int, runs: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its workers: /proc polled every 0.2 s, so a
    process that lives shorter than that is missed; the workers live for the whole run)."""
    cmd = [sys.executable, "-m", "lnbench", "compare", str(REPO / "configs/compare.yaml"), "--runs-dir", str(runs)]
    cmd += ["--jobs", "2", "--set", f"seeds=[{','.join(map(str, range(seeds)))}]"]
    for o in overrides:
        cmd += ["--set", o]
    seen: dict[int, float] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)
        while proc.poll() is None:
            _tree_cpu(proc.pid, seen)
            time.sleep(0.2)
        elapsed = time.perf_counter() - t0
        if proc.returncode:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed:\n{err.read().decode()}")
    return elapsed, sum(seen.values())


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
