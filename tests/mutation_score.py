"""The mutation score of ``make mutation``, per module, from mutmut's results in ./mutants.

    python tests/mutation_score.py analysis.stats analysis.claims ...   (default: every module mutated)

A mutant counts as killed when a test failed (or timed out) with it. Survivors listed in
tests/mutation_equivalent.txt (``<mutant name>  <why it cannot change any output>``) are
equivalent and leave the denominator; every other mutant, those no test reaches included, can
change an output and counts. Prints one line per module, the total, and the survivors that are not
listed (the tests' to-do list), and warns about listed names that no longer survive (renumbered
after an edit of their function, or killed now).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT = ROOT / "tests" / "mutation_equivalent.txt"
KILLED = {"killed", "timeout", "caught by type check"}


def results() -> dict[str, str]:
    """mutant name -> status, as ``mutmut results --all true`` prints them."""
    out = subprocess.run(
        [str(Path(sys.executable).parent / "mutmut"), "results", "--all", "true"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(m.groups() for m in re.finditer(r"^\s+(\S+): (.+)$", out, re.MULTILINE))


def equivalent() -> dict[str, str]:
    """The listed equivalent survivors: name -> reason."""
    listed = {}
    for line in EQUIVALENT.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.partition(" ")
            listed[name] = reason.strip()
    return listed


def module_of(mutant: str) -> str:
    """``lnbench.analysis.stats.x_holm__mutmut_3`` -> ``analysis.stats`` (methods: ``xǁRunǁ...``)."""
    return re.split(r"\.x[_ǁ]", mutant, maxsplit=1)[0].removeprefix("lnbench.")


def main(modules: list[str]) -> int:
    status, listed = results(), equivalent()
    if not status:
        print("no mutmut results in ./mutants: run make mutation", file=sys.stderr)
        return 1
    by_module: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, s in status.items():
        kind = "killed" if s in KILLED else "equivalent" if s == "survived" and name in listed else s
        by_module[module_of(name)][kind].append(name)
    modules = modules or sorted(by_module)
    rows, left, total = [], [], defaultdict(int)
    for module in modules:
        counts = by_module.get(module, {})
        n = sum(len(v) for v in counts.values())
        killed, eq = len(counts.get("killed", [])), len(counts.get("equivalent", []))
        alive = [m for kind, ms in counts.items() if kind not in ("killed", "equivalent") for m in ms]
        left += [f"{m}: {status[m]}" for m in sorted(alive)]
        for key, value in (("n", n), ("killed", killed), ("eq", eq), ("alive", len(alive))):
            total[key] += value
        rows.append((module, n, killed, eq, len(alive)))
    rows.append(("total", total["n"], total["killed"], total["eq"], total["alive"]))
    print(f"{'module':<22} {'mutants':>8} {'killed':>7} {'equiv.':>7} {'left':>5} {'score':>7}")
    for module, n, killed, eq, alive in rows:
        score = f"{100 * killed / (n - eq):.1f}%" if n > eq else "-"
        print(f"{module:<22} {n:>8} {killed:>7} {eq:>7} {alive:>5} {score:>7}")
    print("score: killed / (mutants - equivalent survivors listed in tests/mutation_equivalent.txt)")
    if left:
        print(f"\nsurvivors not listed as equivalent ({len(left)}):")
        print("\n".join(f"  {line}" for line in left))
    stale = sorted(n for n in listed if status.get(n, "survived") != "survived" and module_of(n) in modules)
    if stale:
        print(f"\nlisted as equivalent but not a survivor now ({len(stale)}): {', '.join(stale)}")
    return 0


if __name__ == "__main__":
    sys.exit(main([m.removeprefix("lnbench.") for m in sys.argv[1:]]))
