"""Every printed table stays readable at 80 and 120 columns.

Each table the command line prints is built here from realistic data (long labels, every column
it can have) and rendered through :func:`lnbench.report.table_fit.fit` at 80 and 120 columns: no line
is wider than the console, no header loses text to rich markup, and every word of the title, of
every header, of every cell (the verdicts, p-values, keys) and of the caption appears whole (rich
alone would cut them: "Transform…", or drop the claims table's effect, p and verdict columns).
By default the aggregate over seeds stands in for every run's rows and the paired comparisons (:func:`brief`).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import replace

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lnbench.analysis import claim_catalogue, grid
from lnbench.analysis import claims as claim_rules
from lnbench.analysis.aggregate import aggregate_over_seeds
from lnbench.analysis.comparisons import compare_comparisons
from lnbench.cli.bodies import claims_list_table
from lnbench.cli.plan import plan_table
from lnbench.config import RunConfig
from lnbench.names import TASK_NAMES
from lnbench.records.schema import SummaryRow
from lnbench.report import check_tables, claim_tables, confirm_tables, table_fit, tables
from lnbench.report.tables import AggregateTable, ComparisonsTable, RunsTable, brief

WIDTHS = (80, 120)
BOX = "│┃┆┊╎║─━┄┈═┏┓┗┛┡┩┣┫┳┻╇╋┌┐└┘├┤┬┴┼╭╮╯╰╷╵╶╴"


def _row(family, norm, seed, acc, loss, status="completed", placement=None, batch_size=64):
    ok = status != "diverged"
    correct = [int(k < acc * 200) for k in range(200)] if ok else None
    return SummaryRow(
        family=family,
        norm=norm,
        batch_size=batch_size,
        seed=seed,
        status=status,
        epochs_completed=50 if ok else 3,
        final_test_acc=acc if ok else None,
        final_test_acc_batch_stats=(acc - 0.2 if norm == "batch" else None) if ok else None,
        final_train_loss=loss if ok else None,
        final_test_loss=loss + 0.1 if ok else None,
        mean_train_loss=loss * 2 if ok else None,
        first_epoch_at_target=17 if ok and acc > 0.9 else None,
        n_test=200,
        batch_norm_stats="per_timestep" if norm == "batch" and family == "rnn" else None,
        norm_placement=placement if family == "rnn" else None,
        wall_seconds=123.4,
        run_dir=f"{family}_{norm}_seed{seed}",
        test_correct=correct,
    )


ROWS = [
    _row(fam, norm, seed, 0.6 + 0.1 * k + 0.01 * seed, 0.7 - 0.1 * k, placement="separate")
    for fam in ("rnn", "transformer")
    for k, norm in enumerate(("none", "batch", "layer"))
    for seed in (0, 1, 2)
] + [_row("transformer", "layer", 3, 0.0, 0.0, status="diverged")]


def _baselines():
    from lnbench.training.baselines import baselines_for
    from lnbench.training.tasks import make_task_data

    cfgs = [
        RunConfig().with_changes(seed=s, data__n_train=40, data__n_test=20, data__features=4, train__batch_size=8)
        for s in (0, 1)
    ]
    return baselines_for(cfgs, lambda c: make_task_data(c.data, c.seed))


def _by_task(claims):
    """Every claim on every task: trend's verdicts, on adding the next claim's, on digits n/a."""
    from lnbench.analysis import claim_tasks

    results = [claim_rules.ClaimResult(**c) for c in claims]
    moved = [
        claim_rules.ClaimResult(
            **{**c, "regime": claim_tasks.regime_on(c["regime"], "adding"), "verdict": d["verdict"]}
        )
        for c, d in zip(claims, [*claims[1:], claims[0]])
    ]
    skipped = [
        {
            "id": c["id"],
            "claim": c["claim"],
            "family": c["family"],
            "metric": c["metric"],
            "task": "digits",
            "reason": "x",
        }
        for c in claims
    ]
    return claim_tasks.by_task([*results, *moved], skipped, list(TASK_NAMES))


def _claims():
    out = []
    for k, c in enumerate(claim_catalogue.select_claims(None)):
        verdict = ("held", "not held", "inconclusive")[k % 3]
        out.append(
            claim_rules.ClaimResult(
                id=c.id,
                claim=c.text,
                regime=c.regime,
                family=c.family,
                metric=c.metric,
                a=c.a.label(),
                b=c.b.label(),
                direction=c.direction,
                margin=c.margin,
                effect=0.0123 * (k - 3),
                ci95=[-0.05, 0.0321],
                p_value=0.0123,
                p_adjusted=0.0456,
                test="paired t-test over 5 seeds",
                n_seeds=5,
                mean_a=0.8,
                mean_b=0.75,
                verdict=verdict,
                reason="because",
                why=c.why,
            ).to_dict()
        )
    return out


def _grid_entries():
    settings = [{"model__norm": n, "data__seq_len": t} for n in ("none", "layer") for t in (10, 40)]
    rows = [[_row("rnn", s["model__norm"], seed, 0.7 + 0.01 * seed, 0.5) for seed in (0, 1)] for s in settings]
    return grid.aggregate(settings, rows)


def _gradcheck():
    from lnbench.nn.gradient_checks import run_checks

    checks = run_checks(dtype="float64", shape=(3, 4), seed=0)
    return {"dtype": "float64", "shape": [3, 4], "seed": 0, "checks": [c.to_dict() for c in checks]}


def _invariance():
    from lnbench.nn import invariance

    return [c.to_dict() for c in invariance.measure(seed=0, draws=1)]


def _confirm_plan(claims: list[dict]):
    from lnbench.analysis.confirm import Plan
    from lnbench.experiments.claims import ConfirmPlan

    results = [claim_rules.ClaimResult(**c) for c in claims[:3]]
    plans = [
        Plan("keep", why="decided in the pilot (held, the same at level 0.01)"),
        Plan("confirm", 12, 0.02, "80% power at level 0.02 (Holm over 2)"),
        Plan("undecidable", 140, None, "not decidable within 20 seeds: about 140 seeds would be needed"),
    ]
    chosen = [c for c in claim_catalogue.CLAIMS if c.id in {r.id for r in results}]
    return ConfirmPlan(chosen, results, [], plans, {results[1].regime: list(range(5, 17))})


def _compare_plan():
    from lnbench.analysis.confirm import Plan
    from lnbench.experiments.compare import ComparePlan

    comparisons = compare_comparisons(ROWS)[:3]
    plans = [
        Plan("keep", why="decided in the pilot (Holm p 0.001 < 0.01)"),
        Plan("confirm", 9, 0.02, "80% power at level 0.02 (Holm over 2)"),
        Plan("undecidable", 140, None, "not decidable within 20 seeds: about 140 seeds would be needed"),
    ][: len(comparisons)]
    group = comparisons[0].holm_family.rpartition("/")[0]
    return ComparePlan(comparisons, plans, {group: {"layer": list(range(5, 14)), "none": list(range(5, 14))}})


def _staged(claims: list[dict]) -> list[dict]:
    """The claims of a confirmed run: one decided in the pilot, one in the confirm stage, one not decidable."""
    stages = ["pilot", "confirm", "not decidable"]
    return [c | {"stage": stages[k % 3], "seeds": list(range(5, 17)), "alpha": 0.04} for k, c in enumerate(claims)]


def _condition_cells() -> list[dict]:
    """An ablation's conditions as summary.json's ``cells`` holds them: one that diverged in every seed."""
    cell = {"regime": "lstm_recipe_rows", "family": "lstm", "n_seeds": 6}
    return [
        cell | {"condition": "LayerNorm (gains 0.1)", "n_diverged": 0, "mean_final_test_acc": 0.912, "mean_final_test_acc_at_chance": 0.912},
        cell | {"condition": "LayerNorm (gains 0.1, no initial-state noise)", "n_diverged": 6, "mean_final_test_acc": None, "mean_final_test_acc_at_chance": 0.1},
    ]  # fmt: skip


def every_table() -> dict[str, Table]:
    """Every table the command line prints, by the name of the function that builds it."""
    aggregate = aggregate_over_seeds(ROWS)
    comparisons = compare_comparisons(ROWS)
    baselines = _baselines()
    claims = _claims()
    planned = [
        RunConfig().with_changes(name=f"small_batches_transformer_layer_bs1_seed{s}", model__family="transformer")
        for s in range(3)
    ]
    return {
        "runs_table": tables.runs_table("lnbench compare: a run with a long name (50 epochs)", ROWS, 0.9),
        "runs_table(sweep)": tables.runs_table("lnbench batchsize-sweep: rnn", ROWS, 0.9, sweep=True),
        "aggregate_table": tables.aggregate_table(aggregate, 0.9),
        "aggregate_table(sweep)": tables.aggregate_table(aggregate, 0.9, sweep=True),
        "comparisons_table": tables.comparisons_table(comparisons),
        "baselines_table": tables.baselines_table(baselines),
        "regime_baselines_table": claim_tables.regime_baselines_table(
            {"default": baselines, "small_batches": baselines}
        ),
        "claims_table": claim_tables.claims_table(claims, "lnbench claims (13 claims, 6 regimes)"),
        "claims_table(confirmed)": claim_tables.claims_table(_staged(claims), "lnbench claims (13 claims, 6 regimes)"),
        "confirm_plan_table": confirm_tables.confirm_plan_table(_confirm_plan(claims), 20),
        "compare_plan_table": confirm_tables.compare_plan_table(_compare_plan(), 20),
        "comparisons_table(confirmed)": tables.comparisons_table(
            [replace(c, stage=s) for c, s in zip(comparisons, ["pilot", "confirm", "not decidable"] * 9)]
        ),
        "claims_by_task_table": claim_tables.claims_by_task_table(_by_task(claims), list(TASK_NAMES)),
        "condition_cells_table": claim_tables.condition_cells_table(_condition_cells()),
        "grid_table": tables.grid_table(_grid_entries(), "lnbench sweep: sweep, 4 cells x 2 seeds"),
        "gradcheck_table": check_tables.gradcheck_table(_gradcheck()),
        "invariance_table": check_tables.invariance_table(_invariance(), 1),
        "claims_list_table": claims_list_table(claim_catalogue.select_claims(None)),
        "plan_table": plan_table(planned, "would start 3 runs (dry run: nothing is run or written)"),
    }


@pytest.fixture(scope="module")
def printed():
    return every_table()


def test_every_table_function_is_rendered_here(printed):
    built = {name.split("(")[0] for name in printed}
    modules = (tables, claim_tables, confirm_tables, check_tables)
    defined = {n for m in modules for n, f in inspect.getmembers(m, inspect.isfunction) if n.endswith("_table")}
    assert defined <= built, defined - built  # a new table must be added to every_table()


def _render(table: Table, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(table_fit.fit(table, width))
    return console.export_text()


def _words(text: str) -> set[str]:
    tokens = re.split(rf"[\s{BOX}]+", text)
    return {t for t in tokens if t} | {t.rstrip(":") for t in tokens if t}


def _plain(x) -> str:
    return Text.from_markup(x).plain if isinstance(x, str) else str(x)


@pytest.mark.parametrize("width", WIDTHS)
def test_every_printed_table_keeps_every_column_readable(printed, width):
    for name, table in printed.items():
        out = _render(table, width)
        assert max(len(line) for line in out.splitlines()) <= width, name
        words = _words(out)
        expected = [_plain(table.title or ""), _plain(table.caption or "")]
        for column in table.columns:
            assert _plain(column.header) == str(column.header).replace("\\[", "["), (name, column.header)
            expected += [_plain(column.header), *(_plain(cell) for cell in column.cells)]
        missing = sorted({w for text in expected for w in text.split()} - words)
        assert not missing, (name, width, missing)


def test_the_verdicts_and_keys_of_each_row_appear_at_80_columns(printed):
    out = _render(printed["claims_table"], 80)
    for verdict in ("held", "not held", "inconclusive"):
        assert verdict in out
    assert "Holm p" in out and "a - b [95% CI]" in out and "0.046" in out
    out = _render(printed["comparisons_table"], 80)
    assert "a - b [unadjusted 95% CI]" in out and "differs" in out or "n.s." in out
    out = _render(printed["runs_table"], 80)
    assert "Transformer (pre-norm)" in out and "Transform…" not in out


def test_a_table_that_fits_is_printed_as_a_table():
    table = Table(title="small")
    table.add_column("a")
    table.add_column("b")
    table.add_row("1", "2")
    assert table_fit.fit(table, 80) is table
    assert "┃ a ┃ b ┃" in _render(table, 80)


def test_the_ensemble_footnote_only_under_seeds_that_trained_together():
    """The runs table's "trains as one ensemble" footnote appears under an RNN cell of several
    seeds and a Transformer at batch size <= 16 (which train as one ensemble), never under a
    Transformer-only table at the default batch size, one train run, or weight norm (no ensemble
    form)."""
    caption = lambda rows: tables.runs_table("t", rows, 0.9).caption  # noqa: E731
    transformers = [r for r in ROWS if r.family == "transformer"]
    rnn = [r for r in ROWS if r.family == "rnn"]
    assert "ensemble" not in caption(transformers) and "ensemble" not in caption(rnn[:1])  # one train run
    assert "cell that trains as one ensemble" in caption(rnn)
    small = [_row("transformer", "layer", seed, 0.9, 0.1, batch_size=16) for seed in (0, 1)]
    assert "cell that trains as one ensemble" in caption(small)  # a Transformer at batch size <= 16 does
    weight = [_row("transformer", "weight", seed, 0.9, 0.1, batch_size=16) for seed in (0, 1)]
    assert "ensemble" not in caption(weight)  # weight norm has no ensemble form


def test_brief_leaves_out_every_runs_rows_where_there_is_an_aggregate_and_always_the_comparisons():
    """[runs, baselines, aggregate, comparisons] -> shown [baselines, aggregate]; without an
    aggregate (one seed, or train) the runs table is the result and stays."""
    runs, base, agg, comp = RunsTable(), Table(), AggregateTable(), ComparisonsTable()
    assert brief([runs, base, agg, comp]) == ([base, agg], [runs, comp])
    assert brief([runs, base, comp]) == ([runs, base], [comp])
