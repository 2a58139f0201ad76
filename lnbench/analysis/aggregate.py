"""The aggregate over seeds: the one place rows are summarised per condition."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import mean, stdev

from lnbench.analysis import stats
from lnbench.names import FAMILY_REGISTRY, norm_uses_batch_statistics
from lnbench.records.schema import SummaryRow


def condition_label(family: str, norm: str, batch_norm_stats: str | None) -> str:
    """The norm as a table shows it: ``batch`` or ``batch (per_timestep)`` for the RNN's BN."""
    info = FAMILY_REGISTRY.get(family)
    stats = (
        norm_uses_batch_statistics(norm) and batch_norm_stats and info is not None and "batch_norm_stats" in info.keys
    )
    return f"{norm} ({batch_norm_stats})" if stats else norm


def selected_on(rows: Sequence[SummaryRow]) -> str:
    """The split the rows' selections read (:func:`lnbench.records.schema.selection_split`):
    ``val``, ``test``, or ``mixed`` when they differ; ``test`` for no rows."""
    splits = {r.selected_on for r in rows}
    return splits.pop() if len(splits) == 1 else ("mixed" if splits else "test")


def aggregate_over_seeds(rows: Sequence[SummaryRow]) -> list[dict]:
    """One entry per (family, norm placement, initial gain, norm, batch size) over its seeds.

    Keys: ``family``, ``norm_placement`` (RNN; else None), ``norm_gain_init`` (as set; None: each
    paper's), ``initial_gain`` (the value the gains started at), ``norm``, ``batch_norm_stats``, ``batch_size``, ``n_seeds``,
    ``n_diverged``; over the seeds that did not diverge: ``mean_final_test_acc``,
    ``std_final_test_acc`` (None for one seed), ``ci95_final_test_acc`` (t interval of the mean
    over >= 2 seeds, its sd floored at the resolution 1 / n_test, clipped to [0, 1]; Wilson interval on the test set for one seed), ``min_``/``max_final_test_acc``,
    ``mean_final_test_acc_batch_stats``, ``mean_mean_train_loss``, ``mean_final_val_acc`` (None without a
    validation split); ``selected_on``: the split the first epochs read (``val`` or ``test``, or
    ``mixed``); and the first epoch at the target over all seeds: ``n_reached_target``, ``median_first_epoch_at_target``,
    ``min_``/``max_first_epoch_at_target`` (a seed that never reached it is not averaged in: it
    is counted in ``n_reached_target`` of ``n_seeds``).
    """
    groups: dict[tuple, list[SummaryRow]] = {}
    for r in rows:
        groups.setdefault((r.family, r.norm_placement, r.norm_gain_init, r.norm, r.batch_size), []).append(r)
    out = []
    for (family, placement, gain, norm, batch_size), rs in groups.items():
        ok = [r for r in rs if r.ok]
        accs = [r.final_test_acc for r in ok if r.final_test_acc is not None]  # ok implies a value: accs[i] is ok[i]'s
        if len(accs) > 1:
            ci = stats.accuracy_mean_interval(accs, min(r.n_test for r in ok))
        elif accs:
            ci = stats.accuracy_interval(accs[0], ok[0].n_test)
        else:
            ci = None
        bs_accs = [r.final_test_acc_batch_stats for r in ok if r.final_test_acc_batch_stats is not None]
        losses = [r.mean_train_loss for r in ok if r.mean_train_loss is not None]
        val_accs = [r.final_val_acc for r in ok if r.final_val_acc is not None]
        reach = stats.summarize_first_epochs([r.first_epoch_at_target for r in rs])
        out.append(
            {
                "family": family,
                "norm_placement": placement,
                "norm_gain_init": gain,
                "initial_gain": rs[0].initial_gain,
                "norm": norm,
                "batch_norm_stats": rs[0].batch_norm_stats,
                "batch_size": batch_size,
                "n_seeds": len(rs),
                "n_diverged": sum(r.status == "diverged" for r in rs),
                "mean_final_test_acc": mean(accs) if accs else None,
                "std_final_test_acc": stdev(accs) if len(accs) > 1 else None,
                "ci95_final_test_acc": None if ci is None else list(ci),
                "min_final_test_acc": min(accs, default=None),
                "max_final_test_acc": max(accs, default=None),
                "mean_final_test_acc_batch_stats": mean(bs_accs) if bs_accs else None,
                "mean_mean_train_loss": mean(losses) if losses else None,
                "mean_final_val_acc": mean(val_accs) if val_accs else None,
                "selected_on": selected_on(rs),
                "n_reached_target": reach["n_reached"],
                "median_first_epoch_at_target": reach["median"],
                "min_first_epoch_at_target": reach["min"],
                "max_first_epoch_at_target": reach["max"],
            }
        )
    return out
