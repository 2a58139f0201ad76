"""The console: progress estimates and the one line of an interrupt."""

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from lnbench.cli import console as cli_console
from lnbench.cli.console import Stop, Work, interrupted_line, progress, work_of
from lnbench.config import RunConfig

SECONDS_PER_STEP = 0.01


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _claims_like(order: str) -> list[tuple[str, int, int]]:
    """(label, epochs, steps per epoch): batch size 1 costs 64x the steps of batch size 64."""
    cheap = [(f"bs64_seed{s}", 20, 16) for s in range(10)]  # n_train 1000, batch 64
    costly = [(f"bs1_seed{s}", 20, 1000) for s in range(5)]  # batch 1
    return {"cheap first": cheap + costly, "costly first": costly + cheap, "mixed": [*sum(zip(cheap, costly), ())]}[
        order
    ] + (cheap[5:] if order == "mixed" else [])


@pytest.mark.parametrize("order", ["cheap first", "costly first", "mixed"])
def test_the_remaining_time_is_within_2x_once_a_tenth_of_the_work_is_done(order):
    runs = _claims_like(order)
    clock = FakeClock()
    work = Work({label: (epochs, steps) for label, epochs, steps in runs}, clock)
    total = sum(e * s for _, e, s in runs)  # steps
    done = 0
    for label, epochs, steps in runs:  # one after another, each step costs the same
        for epoch in range(1, epochs + 1):
            clock.now += steps * SECONDS_PER_STEP
            done += steps
            work.report(label, epoch)
            if 0.1 * total <= done < total:
                truth = (total - done) * SECONDS_PER_STEP
                assert truth / 2 <= work.remaining() <= 2 * truth, (label, epoch, work.remaining(), truth)
    assert work.remaining() == 0 and work.epochs == work.total_epochs


def test_the_log_lines_print_the_step_based_estimate(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(cli_console, "console", Console(file=out, width=200))
    monkeypatch.setattr(cli_console.sys.stdout, "isatty", lambda: False)
    clock = FakeClock()
    runs = {"costly": (10, 1000), "cheap": (10, 16)}
    with progress(runs, clock) as on_epoch:
        for epoch in range(1, 11):
            clock.now += 1000 * SECONDS_PER_STEP
            on_epoch("costly", epoch, 10, 0.5)
        on_epoch("kept_from_an_earlier_run", 10, 10, 0.9)  # a resumed experiment's kept run: not work done now
        for epoch in range(1, 11):
            clock.now += 16 * SECONDS_PER_STEP
            on_epoch("cheap", epoch, 10, 0.75)
    lines = out.getvalue().splitlines()
    assert lines == [
        "[10/20 epochs] costly finished, test acc 50.0%; elapsed 1:40, remaining ~0:01",  # 160 steps of 0.01 s left
        "[20/20 epochs] cheap finished, test acc 75.0%; elapsed 1:41, remaining ~0:00",
    ]


def test_start_up_is_not_step_time():
    """60 s of start-up (workers, torch, a kernel build) before the first epoch of a 5-seed ensemble
    (its members report each epoch together), then 1 s an epoch: the estimate is the epochs left."""
    clock = FakeClock()
    members = [f"rnn_layer_seed{s}" for s in range(5)]
    work = Work(dict.fromkeys(members, (10, 100)), clock)
    clock.now += 60.0
    for epoch in range(1, 11):
        clock.now += 1.0
        for label in members:
            work.report(label, epoch)
            clock.now += 0.001  # drained from the workers' queue one after another
        if epoch == 1:
            assert work.remaining() is None  # nothing to go on but the start-up
        else:
            assert work.remaining() == pytest.approx(10 - epoch, rel=0.01), epoch
    assert work.remaining() == 0


def test_a_log_line_leaves_the_start_up_out(monkeypatch):
    """A tiny run after 30 s of start-up: the remaining time is estimated from the steps' own time
    (~0:08 with 8 s to go), not from the elapsed time over steps done (which would say ~1:08); and
    '?' before there is a speed to go on."""
    out = io.StringIO()
    monkeypatch.setattr(cli_console, "console", Console(file=out, width=200))
    monkeypatch.setattr(cli_console.sys.stdout, "isatty", lambda: False)
    clock = FakeClock()
    runs = {"a": (2, 1), "b": (2, 1), "c": (2, 1)}
    with progress(runs, clock) as on_epoch:
        clock.now += 30.0
        for label in runs:
            for epoch in (1, 2):
                clock.now += 2.0  # a step
                on_epoch(label, epoch, 2, 0.5, status="failed" if label == "b" and epoch == 2 else None)
    assert out.getvalue().splitlines() == [
        "[2/6 epochs] a finished, test acc 50.0%; elapsed 0:34, remaining ~0:08",
        "[4/6 epochs] b failed, test acc 50.0%; elapsed 0:38, remaining ~0:04",  # a failed cell's runs: not "finished"
        "[6/6 epochs] c finished, test acc 50.0%; elapsed 0:42, remaining ~0:00",
    ]
    work = Work(runs, clock)
    work.report("a", 1)
    assert cli_console._about(work.remaining()) == "?"


def test_work_of_counts_steps_per_epoch_from_the_batch_size():
    cfgs = [
        RunConfig().with_changes(name="a", train__batch_size=64),
        RunConfig().with_changes(name="b", train__batch_size=1, train__epochs=3),
    ]
    assert work_of(cfgs) == {"a": (50, 16), "b": (3, 1000)}  # ceil(1000 / 64) = 16


def test_work_of_counts_the_training_sequences_only_not_the_validation_split():
    """data.n_val sequences are carved out of n_train and never trained on: an epoch is
    ceil((n_train - n_val) / batch_size) steps, the optimizer steps the training loop takes
    (counted with torch's step hook on a tiny run: 40 - 8 = 32 sequences at batch size 16 are 2
    steps an epoch, not ceil(40 / 16) = 3)."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    from lnbench.nn.models import build_model
    from lnbench.training.loop import train_model
    from lnbench.training.tasks import make_task_data

    cfg = RunConfig().with_changes(
        name="v", data__n_train=40, data__n_val=8, data__n_test=8, data__seq_len=3, data__features=2,
        model__hidden_size=2, train__batch_size=16, train__epochs=2,
    )  # fmt: skip
    steps = []
    handle = register_optimizer_step_post_hook(lambda *_: steps.append(1))
    try:
        data = make_task_data(cfg.data, cfg.seed)
        train_model(build_model(cfg.model, data.input_size, data.seq_len), data, cfg.train, seed=cfg.seed)
    finally:
        handle.remove()
    assert work_of([cfg]) == {"v": (2, 2)} and len(steps) == 2 * 2
    assert work_of([RunConfig().with_changes(name="w", data__n_val=200)]) == {"w": (50, 13)}  # ceil(800 / 64)


def test_work_of_weights_each_runs_steps_by_its_cost():
    cfgs = [RunConfig().with_changes(name="a", train__batch_size=64), RunConfig().with_changes(name="b")]
    assert work_of(cfgs, {"a": 0.5, "b": 2.0}) == {"a": (50, 8.0), "b": (50, 32.0)}


def test_the_remaining_time_counts_a_costlier_familys_steps_as_costlier():
    """An RNN ensemble member's steps cost 0.5, a Transformer run's 2.0 (cells.step_cost): while
    only the RNN has run, the Transformer's steps left are 4x the RNN's time per step each, as
    they will take. Counted as plain steps, the estimate would be 4x too low for them."""
    clock = FakeClock()
    work = Work(work_of([RunConfig().with_changes(name=n) for n in ("rnn", "tr")], {"rnn": 0.5, "tr": 2.0}), clock)
    rnn_step, tr_step = 0.01, 0.04  # seconds: true cost per step, in the weights' ratio
    work.report("rnn", 1)
    clock.now += 16 * 10 * rnn_step  # ten more epochs of 16 steps
    work.report("rnn", 11)
    true_left = 39 * 16 * rnn_step + 50 * 16 * tr_step
    assert work.remaining() == pytest.approx(true_left)


def test_the_cost_of_a_step_follows_the_family_and_the_ensemble():
    from lnbench.experiments.base import Cell
    from lnbench.experiments.cells import step_cost
    from lnbench.names import FAMILY_REGISTRY

    def cell(family: str, batch_size: int = 64) -> Cell:
        cfg = RunConfig().with_changes(model__family=family, train__batch_size=batch_size)
        return Cell([cfg], parent=Path("."), target_acc=0.9)

    assert step_cost(cell("rnn")) == 0.5 * FAMILY_REGISTRY["rnn"].cost  # an ensemble member
    assert step_cost(cell("transformer")) == FAMILY_REGISTRY["transformer"].cost  # alone at batch size 64
    # an ensemble at 16, and a step's fixed cost: (10 + 16) / (10 + 64) of a batch-size-64 step
    assert step_cost(cell("transformer", 16)) == pytest.approx(0.5 * 26 / 74 * FAMILY_REGISTRY["transformer"].cost)
    # batch size 1: ~0.15 of a step at 64 (measured 0.1-0.2 in claims --all), not 1/64: counted as
    # 1/64, claims --all's estimate read 0.24x the time left (its batch-size-1 cells run first)
    assert step_cost(cell("rnn", 1)) / step_cost(cell("rnn")) == pytest.approx(11 / 74)


def test_the_interrupt_line_says_finished_epochs_were_kept_only_when_some_were(tmp_path):
    run = tmp_path / "20260101T000000_000000Z_compare"
    (run / "rnn_layer_seed0").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"status": "interrupted"}))
    exc = KeyboardInterrupt("Ctrl-C")
    exc.add_note("run folder: /somewhere/else/child (status: interrupted)")
    exc.add_note(f"run folder: {run} (status: interrupted)")  # the outermost run's note comes last
    assert (
        interrupted_line(exc, Stop())
        == f"stopped by Ctrl-C; run folder: {run} (status: interrupted); no epoch had finished"
    )
    (run / "rnn_layer_seed0" / "metrics.json").write_text(json.dumps({"epochs": [1, 2]}))
    assert interrupted_line(exc, Stop()).endswith("; finished epochs were kept")
    assert interrupted_line(exc, Stop(epochs=False)) == f"stopped by Ctrl-C; run folder: {run} (status: interrupted)"
    assert interrupted_line(KeyboardInterrupt(), Stop()) == "stopped by Ctrl-C while starting; nothing was written"
    late = interrupted_line(KeyboardInterrupt(), Stop(folder=run))  # after the run, while its tables print
    assert re.fullmatch(rf"stopped by Ctrl-C; run folder: {re.escape(str(run))} \(status: interrupted\); .*", late)
