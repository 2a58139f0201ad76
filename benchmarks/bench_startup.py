"""How fast the command line answers: ``lnbench --help``, ``--version`` and a config error, against
a bare ``python -c pass`` (the interpreter's own start-up), median of 7 runs each.

Issue 12 asked for under 1 s, the hardening issue for ``--help`` and ``--version`` under 0.3 s on an idle
machine; the ratio to the bare interpreter is what this machine can compare. What they import is
tested without a clock (tests/cli/test_startup.py)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "lnbench --help": [sys.executable, "-m", "lnbench", "--help"],
    "lnbench --version": [sys.executable, "-m", "lnbench", "--version"],
    "lnbench compare (config error)": [sys.executable, "-m", "lnbench", "compare", "--set", "train.epochs=0"],
}


def median_seconds(cmd: list[str], repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


if __name__ == "__main__":
    base = None
    for name, cmd in CASES.items():
        t = median_seconds(cmd)
        base = base or t
        print(f"{name:34s} {t:6.3f} s   {t / base:5.1f}x python -c pass")
