"""The tables of the checking commands: ``lnbench invariance``'s (the paper's Table 1, measured)
and ``lnbench gradcheck``'s (each check's errors against its tolerance), from their JSON reports."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from lnbench.names import norm_label


def invariance_table(cells: Sequence[dict], draws: int) -> Table:
    """``invariance.json``'s cells as the paper's Table 1: measured verdict and largest change."""
    from lnbench.nn import invariance as inv

    table = Table(
        title=f"lnbench invariance: Ba et al. 2016, Table 1, measured (float64, eps {inv.EPS:g}, {draws} draws per cell)",
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("method")
    for _, label in inv.TRANSFORMATIONS:
        table.add_column(label, justify="center")
    users = [m for m in dict.fromkeys(c["method"] for c in cells) if m not in inv.METHODS]  # --norm's
    for method in [*inv.METHODS, *users]:
        if method in inv.METHODS:
            source = inv.ROW_SOURCES.get(method)
            label = inv.METHODS[method][0] + (f" ({source})" if source else "")
        else:
            label = f"{norm_label(method)} (yours: measured)"
        row = [label]
        for c in [c for c in cells if c["method"] == method]:
            mark = "" if c["agrees"] else f" [bold red]expected {c['expected']}[/]"
            color = "green" if c["agrees"] else "red"
            color = color if method in inv.EXPECTED else "default"
            row.append(f"[{color}]{c['measured']}[/] {c['max_change']:.0e}{mark}")
        table.add_row(*row)
    table.caption = (
        "each cell: measured verdict (I invariant, N not, ? unclear) and the largest change of the normalized summed inputs; "
        "green: as Ba et al.'s Table 1 (RMSNorm: as Zhang & Sennrich's Table 1; GroupNorm: as derived; both derived in "
        "lnbench/nn/invariance.py)"
    )
    return table


def gradcheck_table(report: dict) -> Table:
    """``gradcheck.json`` as a table: each check's errors against its tolerance, PASS or FAIL."""
    import math

    shape = ",".join(str(n) for n in report.get("shape", []))
    table = Table(
        title=f"lnbench gradcheck: dtype {report.get('dtype')}, shape {shape}, seed {report.get('seed')}",
        title_justify="left",
        caption="rel error = max|a - b| / max(max(|a| + |b|), tiny)",
    )
    for col, justify in [
        ("group", "left"),
        ("check", "left"),
        ("max abs error", "right"),
        ("rel error", "right"),
        ("tolerance", "right"),
        ("result", "left"),
    ]:
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for c in report.get("checks", []):
        result = "[green]PASS[/]" if c["passed"] else "[bold red]FAIL[/]"
        errors = [
            f"{e:.2e}" if e is not None and math.isfinite(e) else "-" for e in (c["max_abs_error"], c["rel_error"])
        ]
        table.add_row(c["group"], c["name"], *errors, f"{c['tolerance']:.0e}", result)
    return table
