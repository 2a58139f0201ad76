"""Seed ensembles: every member of a stacked RNN trains exactly as its solo run."""

import pytest
import torch

from lnbench.config import ModelConfig, TrainConfig
from lnbench.nn.models import SimpleRNN, build_model
from lnbench.training.loop import train_members, train_model
from lnbench.training.tasks.trend import make_trend_data

SEEDS = [0, 1, 2]
CFG = TrainConfig(epochs=3, batch_size=16, lr=3e-3, grad_clip=0.5)


def _data(seed):
    return make_trend_data(n_train=48, n_test=24, seq_len=6, features=8, seed=seed)


def _model(norm, seed, stats="pooled", placement="joint", num_layers=1):
    torch.manual_seed(seed)
    cfg = ModelConfig(
        norm=norm,
        hidden_size=8,
        batch_norm_stats=stats,
        norm_placement=placement,
        recurrent_init="orthogonal",
        recurrent_gain=1.5,
        num_layers=num_layers,
    )
    return build_model(cfg, 8, 6)


@pytest.mark.parametrize(
    "norm,stats,placement,num_layers",
    [
        ("none", "pooled", "joint", 1),
        ("layer", "pooled", "joint", 1),
        ("batch", "pooled", "joint", 1),
        ("batch", "per_timestep", "joint", 1),
        ("layer", "pooled", "separate", 1),
        ("batch", "per_timestep", "separate", 1),
        ("layer", "pooled", "joint", 2),  # stacked layers
        ("batch", "per_timestep", "separate", 2),
    ],
)
def test_each_member_matches_its_solo_run(norm, stats, placement, num_layers):
    solo_models = [_model(norm, s, stats, placement, num_layers) for s in SEEDS]
    ensemble = SimpleRNN.stack([_model(norm, s, stats, placement, num_layers) for s in SEEDS])
    members = train_members(ensemble, [_data(s) for s in SEEDS], CFG, SEEDS)
    for k, s in enumerate(SEEDS):
        solo = train_model(solo_models[k], _data(s), CFG, seed=s)
        assert members[k].grad_ratio_init == pytest.approx(solo.grad_ratio_init, rel=1e-4)
        for key in (
            "train_loss",
            "test_loss",
            "test_acc",
            "test_acc_batch_stats",
            "hidden_norm_init",
            "grad_ratio",
            "saturation",
            "scale_spearman",
            "hidden_norm_by_scale",
            "hidden_norm_by_layer",
            "saturation_by_layer",
            "grad_ratio_by_layer",
        ):
            torch.testing.assert_close(
                torch.tensor(getattr(members[k], key) or []),
                torch.tensor(getattr(solo, key) or []),
                atol=1e-5,
                rtol=1e-5,
                msg=key,
            )
        assert members[k].test_correct == solo.test_correct and members[k].status == "completed"
        for name, values in solo.grad_norm.items():
            torch.testing.assert_close(
                torch.tensor(members[k].grad_norm[name]), torch.tensor(values), atol=1e-5, rtol=1e-4, msg=name
            )
        buffers = dict(ensemble.named_buffers())
        for name, b in solo_models[k].named_buffers():  # BatchNorm running statistics
            member = buffers[name][:, k] if stats == "per_timestep" else buffers[name][k]
            torch.testing.assert_close(member.reshape(b.shape), b, atol=1e-5, rtol=1e-5, msg=name)


def test_a_diverging_member_does_not_stop_the_others():
    datas = [_data(s) for s in SEEDS]
    datas[1].X_train[3, 2, 1] = float("nan")  # member 1's loss turns NaN in its first epoch
    members = train_members(SimpleRNN.stack([_model("layer", s) for s in SEEDS]), datas, CFG, SEEDS)
    assert [m.status for m in members] == ["completed", "diverged", "completed"]
    assert members[1].epochs == [] and members[0].epochs == [1, 2, 3]
    solo = train_model(_model("layer", 2), _data(2), CFG, seed=2)
    torch.testing.assert_close(torch.tensor(members[2].train_loss), torch.tensor(solo.train_loss), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("num_layers", [1, 2])
def test_a_member_is_bit_for_bit_its_one_member_ensemble_with_clipping(num_layers):
    """``lnbench train`` re-runs one seed of a cell as a one-member ensemble: same arithmetic."""
    cfg = TrainConfig(epochs=2, batch_size=16, lr=3e-3, grad_clip=0.05)
    stacked = [_model("layer", s, num_layers=num_layers) for s in SEEDS]
    three = train_members(SimpleRNN.stack(stacked), [_data(s) for s in SEEDS], cfg, SEEDS)
    one = train_members(SimpleRNN.stack([_model("layer", 2, num_layers=num_layers)]), [_data(2)], cfg, [2])[0]
    assert one.train_loss == three[2].train_loss and one.grad_norm == three[2].grad_norm
    assert one.hidden_norm_by_layer == three[2].hidden_norm_by_layer
    assert (one.hidden_norm_by_layer is None) == (num_layers == 1)
