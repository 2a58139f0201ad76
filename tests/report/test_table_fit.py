"""Printed tables at a terminal's width: every row of a wide table within two lines, no word cut."""

import io

from rich.console import Console
from rich.table import Table

from lnbench.report.table_fit import fit

# an aggregate row as compare prints it (11 columns, the widest cells it has)
HEADERS = [
    "model",
    "norm",
    "initial gain",
    "test acc mean ± sd",
    "95% CI of mean",
    "range",
    "BN batch stats",
    "mean train loss",
    "reached 90% (test)",
    "diverged",
    "vs memoryless baseline",
]
ROW = [
    "Transformer (pre-norm)",
    "batch (pooled)",
    "0.1",
    "46.2% ± 13.0%",
    "30.2% - 62.3%",
    "31.2% - 62.5%",
    "41.2%",
    "0.783",
    "0/5",
    "0",
    "-12.5 [-36.4, +11.4] not shown",
]


def _render(table, width: int) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, emoji=False).print(fit(table, width))
    return out.getvalue().splitlines()


def test_every_row_of_a_wide_table_takes_at_most_two_lines_at_100_columns():
    """12 identical rows below the header rule: the oracle is the line count, at most 2 per row,
    each line within the width, and every word of the cells whole on some line."""
    table = Table()
    for h in HEADERS:
        table.add_column(h)
    for _ in range(12):
        table.add_row(*ROW)
    for width in (100, 120):
        lines = _render(table, width)
        rule = next(k for k, line in enumerate(lines) if set(line.strip()) <= set("─━┡╇┩"))
        body = [line for line in lines[rule + 1 :] if line.strip() and not set(line.strip()) <= set("─└┴┘")]
        assert len(body) <= 2 * 12, (width, len(body))
        assert max(len(line) for line in lines) <= width
        text = " ".join(lines)
        for word in " ".join(ROW).split():
            assert word in text
