"""Copy the newest card of each norm under a runs folder into docs/cards/ (``make cards``).

Each card's ``card.md`` is written again from its ``card.json`` by the current lnbench
(:meth:`lnbench.experiments.card.Card.figures`), as ``docs/cards/<norm>.md``, and
``docs/cards/README.md`` lists them with the commit each was measured at (its run.json).

Usage: ``python docs/cards/collect.py RUNS_DIR``
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from lnbench.experiments.card import CARD
from lnbench.names import norm_slug

HERE = Path(__file__).resolve().parent
HEADER = """# Report cards of the built-in norms

`lnbench card NORM` for each built-in norm layer and for the ScaleNorm example package
(`examples/scalenorm`), the reference a new norm's card compares against. Weight normalization has
no card: it reparametrizes the weights, so there is no layer to check or time (its Table 1 row:
`lnbench invariance`). Made by `make cards`
(each card with its defaults: 3 seeds, the science section's 7 claims on 2 cores); the commit is
the one each card was measured at (its run.json's `git_commit`). Numbers of cost are this
machine's; verdicts at 3 seeds are mostly inconclusive, and each card says so.

| norm | card | conformance | science | measured at |
|---|---|---|---|---|
"""


def main(runs: Path) -> None:
    newest: dict[str, Path] = {}
    for folder in sorted(p for p in runs.iterdir() if (p / "card.json").is_file()):
        newest[json.loads((folder / "card.json").read_text())["norm"]] = folder  # sorted by time: the last wins
    rows = []
    for norm, folder in newest.items():
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(folder / "card.json", tmp)
            CARD.figures(Path(tmp))
            name = f"{norm_slug(norm).rpartition('-')[2].lower()}.md"
            shutil.copy(Path(tmp) / "card.md", HERE / name)
        card = json.loads((folder / "card.json").read_text())
        commit = (json.loads((folder / "run.json").read_text()).get("git_commit") or "?")[:7]
        rows.append(
            f"| {card['label']} (`{norm}`) | [{name}]({name}) | {card['conformance']['verdict']} | "
            f"{card['science']['verdict']} | {commit} |"
        )
    (HERE / "README.md").write_text(HEADER + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
