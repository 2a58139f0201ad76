"""The Transformer's seed ensemble: each member is the plain model (forward, against the plain
model as the oracle), a member's training does not depend on how many others it has (bit for
bit), its weights and checkpoints come out as the plain model's, and which cells use it."""

import pytest
import torch

from lnbench.config import ModelConfig, RunConfig, TrainConfig
from lnbench.experiments.base import ensemble_mechanism
from lnbench.names import NORM_KINDS, TRANSFORMER_ENSEMBLE_MAX_BATCH, norm_has_member_axis
from lnbench.nn.models import TransformerClassifier, build_model
from lnbench.training.checkpoints import member_weights
from lnbench.training.loop import train_members
from lnbench.training.tasks.trend import make_trend_data

FEATURES, T = 6, 5
ENSEMBLE_NORMS = [k for k in NORM_KINDS if norm_has_member_axis(k)]  # the registry's capability


@pytest.fixture(autouse=True)
def one_thread():
    """Runs train with one torch thread (train.num_threads): with more, a batched matmul may split
    its work by the number of members, and the last bits with it. D = 16: at D = 8 a member's
    tensors do not start on a 16-float boundary and some reductions round differently."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _models(norm, n=3, **options):
    cfg = ModelConfig(family="transformer", norm=norm, hidden_size=16, d_ff=32, **options)
    out = []
    for s in range(n):
        torch.manual_seed(s)
        out.append(build_model(cfg, FEATURES, T))
    return out


def test_the_norms_with_a_member_axis_are_all_but_weight_norm():
    assert ENSEMBLE_NORMS == ["none", "batch", "layer", "rms", "group"]


@pytest.mark.parametrize("norm", ENSEMBLE_NORMS)
@pytest.mark.parametrize("options", [{}, {"pos_emb": "learned", "input_norm": False, "num_layers": 2}])
@pytest.mark.parametrize("training", [False, True])
def test_each_member_computes_its_plain_model(norm, options, training):
    """Logits and the residual stream of member s equal models[s] on x[s], in eval and in
    training mode (BatchNorm: each member's own batch statistics over B and T)."""
    models = _models(norm, **options)
    ensemble = TransformerClassifier.stack(models).train(training)
    x = torch.randn(3, 4, T, FEATURES, generator=torch.Generator().manual_seed(0)) * 3
    logits, hidden = ensemble(x, return_hidden=True)
    assert logits.shape == (3, 4, 2) and hidden.shape == (3, 4, T, 16)
    for s, model in enumerate(models):
        ref_logits, ref_hidden = model.train(training)(x[s], return_hidden=True)
        torch.testing.assert_close(logits[s], ref_logits, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(hidden[s], ref_hidden, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "norm,batch_size,options,clip",
    [("layer", 1, {}, None), ("batch", 3, {}, None), ("rms", 7, {"num_layers": 2}, 0.5), ("none", 4, {}, None)],
)
def test_a_members_training_does_not_depend_on_the_others(norm, batch_size, options, clip):
    """Every metric of member s of a 3-member ensemble equals its ensemble of one, bit for bit
    (batch size 3 leaves a remainder in training and in the batch-statistics probes)."""
    datas = [make_trend_data(n_train=20, n_test=10, seq_len=T, features=FEATURES, seed=s) for s in range(3)]
    cfg = TrainConfig(epochs=2, batch_size=batch_size, lr=3e-3, grad_clip=clip)
    together = train_members(TransformerClassifier.stack(_models(norm, **options)), datas, cfg, [0, 1, 2])
    for s, model in enumerate(_models(norm, **options)):
        alone = train_members(TransformerClassifier.stack([model]), [datas[s]], cfg, [s])[0].to_dict()
        member = together[s].to_dict()
        alone.pop("epoch_seconds"), member.pop("epoch_seconds")
        assert member == alone


def test_member_weights_load_into_the_plain_model():
    models = _models("layer")
    ensemble = TransformerClassifier.stack(models)
    for s, weights in enumerate(member_weights(ensemble, models[0])):
        plain = _models("layer", 1)[0]
        plain.load_state_dict(weights)
        assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), models[s].state_dict().values()))


def test_batchnorm_running_statistics_are_each_members_own():
    """After a training step on different data per member, each member's running mean and
    variance are its plain model's: eval mode then matches per member, and member_weights hands
    the plain model those buffers."""
    models = _models("batch")
    ensemble = TransformerClassifier.stack(models).train()
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(3, 4, T, FEATURES, generator=gen) * torch.tensor([0.5, 2.0, 5.0]).view(3, 1, 1, 1)
    ensemble(x)
    for s, model in enumerate(models):
        model.train()(x[s])
    x_eval = torch.randn(3, 2, T, FEATURES, generator=gen)
    logits = ensemble.eval()(x_eval)
    for s, (model, weights) in enumerate(zip(models, member_weights(ensemble, models[0]))):
        torch.testing.assert_close(logits[s], model.eval()(x_eval[s]), atol=1e-5, rtol=1e-5)
        for name, value in model.state_dict().items():
            torch.testing.assert_close(weights[name], value, atol=1e-6, rtol=1e-6, msg=name)


def test_weight_norm_has_no_ensemble():
    with pytest.raises(ValueError, match="needs a norm with a member axis \\(has_member_axis\\); got 'weight'"):
        TransformerClassifier(ModelConfig(family="transformer", norm="weight"), FEATURES, T, members=2)


@pytest.mark.parametrize(
    "family,norm,batch_size,mechanism",
    [
        ("transformer", "layer", 1, "native"),
        ("transformer", "batch", TRANSFORMER_ENSEMBLE_MAX_BATCH, "native"),
        ("transformer", "layer", TRANSFORMER_ENSEMBLE_MAX_BATCH + 1, "sequential"),
        ("transformer", "none", 64, "sequential"),
        ("transformer", "weight", 1, "sequential"),
        ("transformer", "group", TRANSFORMER_ENSEMBLE_MAX_BATCH, "native"),  # asked, not listed
        ("transformer", "toy_norms:ScaleNorm", 1, "native"),  # a user's norm: Norm's has_member_axis
        ("transformer", "toy_norms:SoloNorm", 1, "sequential"),  # ... or its own class's False
        ("rnn", "layer", 64, "native"),
    ],
)
def test_which_cells_train_as_an_ensemble(family, norm, batch_size, mechanism):
    cfg = RunConfig.model_validate(
        {"model": {"family": family, "norm": norm}, "train": {"batch_size": batch_size}, "data": {"n_train": 64}}
    )
    assert ensemble_mechanism([cfg]) == mechanism


@pytest.mark.parametrize("batch_size", [1, 3])
def test_batch_statistics_probes_of_a_batchnorm_ensemble_are_per_mini_batch(batch_size):
    """The accuracy with batch statistics and the initial hidden norms (batch mode) of member s:
    models[s] on consecutive mini-batches of batch_size, one at a time (N = 10: a remainder at 3)."""
    from lnbench.nn.batchnorm import batch_statistics
    from lnbench.training.loop import correct_with_batch_stats
    from lnbench.training.probes import probe_members

    models = _models("batch", 2)
    ensemble = TransformerClassifier.stack(models).eval()
    gen = torch.Generator().manual_seed(3)
    X, y, scale = (
        torch.randn(2, 10, T, FEATURES, generator=gen) * 2,
        torch.randint(0, 2, (2, 10), generator=gen),
        torch.rand(2, 10),
    )
    correct = correct_with_batch_stats(ensemble, X, y, batch_size)
    probes = probe_members(ensemble, X, y, scale, batch_size=batch_size)
    for s, model in enumerate(models):
        model.eval()
        with torch.no_grad(), batch_statistics(model):
            outs = [model(X[s, i : i + batch_size], return_hidden=True) for i in range(0, 10, batch_size)]
        logits, hidden = torch.cat([o[0] for o in outs]), torch.cat([o[1] for o in outs])
        assert correct[s] == (logits.argmax(-1) == y[s]).long().tolist()
        torch.testing.assert_close(torch.tensor(probes[s].hidden_norm), hidden.norm(dim=-1).mean(0))
