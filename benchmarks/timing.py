"""Wall and CPU time of a command and every process it starts (its worker processes included).

    python benchmarks/timing.py lnbench claims --jobs 2

The CPU time is the sum over the command's process tree, read from /proc every 0.2 s (Linux); a
process that lives shorter than that is missed (lnbench's workers live for the whole run). Other
work on the machine stretches the wall time, not the CPU time: on a busy machine the CPU time
says what the command costs, the wall time what it took then.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def timed(cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """Run ``cmd``; return (wall seconds, CPU seconds of its process tree). Raises SystemExit
    with the command's stderr when it fails."""
    seen: dict[int, float] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=cwd)
        while proc.poll() is None:
            _tree_cpu(proc.pid, seen)
            time.sleep(0.2)
        elapsed = time.perf_counter() - t0
        if proc.returncode:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed:\n{err.read().decode()}")
    return elapsed, sum(seen.values())


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    wall, cpu = timed(sys.argv[1:])
    load = os.getloadavg()[0]
    print(f"wall {wall:.1f} s, CPU {cpu:.1f} s (the process tree), load average at the end {load:.2f}")
