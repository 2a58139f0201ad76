"""``--tensorboard`` writes each run's curves, probes and config as event files.

Read back with TensorBoard's own EventAccumulator: every scalar at every epoch is metrics.json's
value (as float32, TensorBoard's precision), and the hparams are the run's config.yaml.
"""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import TINY_OVERRIDES, runner, set_args

from lnbench.cli.app import app
from lnbench.records.tidy import flat

pytestmark = pytest.mark.e2e
event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
OVERRIDES = [*TINY_OVERRIDES, "seeds=[0, 1]", "compare.families=[rnn]", "compare.norms=[none, batch]"]


def _scalars(acc, tag):
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def test_event_files_hold_the_metrics_and_the_config(tmp_path):
    args = ["compare", "configs/compare.yaml", "--runs-dir", str(tmp_path), "-j", "1", "--tensorboard"]
    result = runner.invoke(app, [*args, *set_args([*OVERRIDES, "compare.placements=null"])])
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    for child in ("rnn_batch_seed1", "rnn_none_seed0"):
        m = json.loads((folder / child / "metrics.json").read_text())
        acc = event_accumulator.EventAccumulator(str(folder / child))
        acc.Reload()
        tags = set(acc.Tags()["scalars"])
        for key in ("train_loss", "test_loss", "test_acc", "scale_spearman", "saturation", "grad_ratio"):
            assert _scalars(acc, key) == [(e, pytest.approx(v, rel=1e-6)) for e, v in zip(m["epochs"], m[key])], key
        assert ("test_acc_batch_stats" in tags) == (m["norm"] == "batch")
        T = len(m["hidden_norm_init"])
        assert {f"hidden_norm/t{t:02d}" for t in range(1, T + 1)} <= tags
        assert [v for _, v in _scalars(acc, f"hidden_norm/t{T:02d}")] == pytest.approx(
            [h[-1] for h in m["hidden_norm"]], rel=1e-6
        )
        for layer, values in m["grad_norm_layer"].items():
            assert [v for _, v in _scalars(acc, f"grad_norm_layer/{layer}")] == pytest.approx(values, rel=1e-6)
        assert [v for _, v in _scalars(acc, "hparam/final_test_acc")] == pytest.approx([m["test_acc"][-1]])
        plugin = acc.PluginTagToContent("hparams")
        from tensorboard.plugins.hparams import plugin_data_pb2

        data = plugin_data_pb2.HParamsPluginData.FromString(plugin["_hparams_/session_start_info"])
        hparams = {k: v.string_value or v.number_value for k, v in data.session_start_info.hparams.items()}
        config = flat(yaml.safe_load((folder / child / "config.yaml").read_text()))
        assert hparams["model.norm"] == config["model.norm"] == m["norm"]
        assert hparams["train.lr"] == pytest.approx(config["train.lr"]) and hparams["seed"] == m["seed"]


def test_tensorboard_refused_in_one_line_without_the_package(tmp_path, monkeypatch):
    from lnbench.experiments import tensorboard

    monkeypatch.setattr(tensorboard, "available", lambda: False)
    result = runner.invoke(
        app, ["train", "configs/train.yaml", "--runs-dir", str(tmp_path), "--tensorboard", *set_args(TINY_OVERRIDES)]
    )
    assert result.exit_code == 2 and not any(tmp_path.iterdir())
    assert result.output.strip() == (
        "lnbench: error: --tensorboard: the tensorboard package is not installed; pip install 'lnbench[tensorboard]'"
    )


def test_a_train_run_resumed_in_place_shows_each_epoch_once(tmp_path):
    """``lnbench train --resume --tensorboard`` on a run interrupted after epoch 2 of 3: the folder's
    event files hold each epoch's scalars once (steps 1, 2, 3) and one final accuracy, with the
    values of its metrics.json, the oracle (TensorBoard's own EventAccumulator reads every file)."""
    from lnbench.config import load_config
    from lnbench.experiments import train

    cfg = load_config("configs/train.yaml", [*TINY_OVERRIDES, "train.epochs=3"])

    def ctrl_c(label, epoch, epochs, acc):
        if epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path, ctrl_c, tensorboard=True)
    (run,) = tmp_path.iterdir()
    train(cfg, tmp_path, tensorboard=True, resume=run)
    m = json.loads((run / "metrics.json").read_text())
    assert m["epochs"] == [1, 2, 3]
    acc = event_accumulator.EventAccumulator(str(run))
    acc.Reload()
    for key in ("train_loss", "test_acc"):
        assert _scalars(acc, key) == [(e, pytest.approx(v, rel=1e-6)) for e, v in zip(m["epochs"], m[key])], key
    assert [v for _, v in _scalars(acc, "hparam/final_test_acc")] == pytest.approx([m["test_acc"][-1]])
