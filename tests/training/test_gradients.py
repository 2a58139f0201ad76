"""lnbench.training.gradients: each optimizer's words for a large gradient (the norms and clipping
beyond float32 sums: test_blank_timesteps.py)."""


def test_every_optimizer_has_its_large_gradient_words():
    """Oracle: the schema's optimizers (train.optimizer's allowed values)."""
    from lnbench.config.optimizers import OPTIMIZERS
    from lnbench.training.gradients import LARGE_STEP

    assert set(LARGE_STEP) == set(OPTIMIZERS)


def test_each_members_gradient_norm_is_bit_for_bit_its_tensor_alone_and_the_float64_norm_to_rounding():
    """A member's norm in an ensemble of 5 equals, bit for bit, the norm the same tensor gets in a
    model of its own (S = 1), and that is ``torch._foreach_norm``'s (the per-tensor norms of
    ``torch.nn.utils.clip_grad_norm_``): clipping and the recorded norms do not depend on the seeds
    trained beside it. The value: the float64 norm to float32 rounding (a float32 sum of 1e6 squares
    is ~1e-5 off). Shapes from 1 entry to a 1000 x 1000 weight (the MLP's), some of them not a
    multiple of a vector's width."""
    import torch
    from torch import nn

    from lnbench.training.gradients import grad_norms

    shapes = [(1,), (2,), (7,), (17, 3), (64, 64), (10, 1000), (1000, 1000), (3, 5, 13)]
    S = 5
    gen = torch.Generator().manual_seed(0)

    class Ensemble(nn.Module):
        members = S

    def model_of(tensors, ensemble):
        model = Ensemble() if ensemble else nn.Module()
        params = []
        for k, t in enumerate(tensors):
            p = nn.Parameter(torch.zeros_like(t))
            p.grad = t
            params.append((f"p{k}", p))
        return model, params

    scales = [10.0 ** torch.randint(-3, 4, (S, *[1] * len(shape)), generator=gen) for shape in shapes]
    stacked = [torch.randn(S, *shape, generator=gen) * scale for shape, scale in zip(shapes, scales)]
    model, params = model_of(stacked, ensemble=True)
    norms = grad_norms(model, params, S)  # (P, S)
    for s in range(S):
        alone_model, alone = model_of([t[s] for t in stacked], ensemble=False)
        assert torch.equal(norms[:, s], grad_norms(alone_model, alone, 1)[:, 0]), s
        assert torch.equal(norms[:, s], torch.stack(torch._foreach_norm([t[s] for t in stacked]))), s
    exact = torch.stack([t.double().reshape(S, -1).norm(dim=1) for t in stacked])
    torch.testing.assert_close(norms.double(), exact, rtol=2e-5, atol=0.0)


def test_a_run_notes_its_large_gradient_once_however_many_steps_have_one(monkeypatch):
    """Every step's largest gradient norm above 1e6 (the recorded norms scaled by 1e8, training
    itself untouched, no clipping): the run's warnings hold one note, the first step's (oracle: the
    steps counted by the spy)."""
    import torch

    from lnbench.config import load_config
    from lnbench.nn.models import build_model
    from lnbench.training import gradients
    from lnbench.training.loop import train_model
    from lnbench.training.tasks import make_task_data

    overrides = ["data.n_train=96", "data.n_test=32", "model.hidden_size=8", "train.epochs=2", "train.batch_size=32"]
    cfg = load_config("configs/train.yaml", overrides)
    data = make_task_data(cfg.data, cfg.seed)
    real, steps = gradients.grad_norms, []

    def large(model, params, S):
        steps.append(S)
        return real(model, params, S) * 1e8

    monkeypatch.setattr(gradients, "grad_norms", large)
    shape = (data.X_train.shape[-1], data.X_train.shape[1], data.num_classes)
    torch.manual_seed(0)
    metrics = train_model(build_model(cfg.model, *shape), data, cfg.train, seed=0)
    assert metrics.status == "completed" and len(steps) == 6  # 3 steps x 2 epochs, each above 1e6
    notes = [w for w in metrics.warnings if w.startswith("the gradient of")]
    assert len(notes) == 1 and " in epoch 1, step 1 " in notes[0], notes


def test_a_layers_gradient_norm_beyond_float32_squares_is_summed_in_float64():
    """Per layer, sqrt(sum of its tensors' squared norms): at norms of 1e20 (squares beyond
    float32's 3.4e38) still finite, 1e20 * sqrt(2) for two such tensors (by hand), and at ordinary
    norms the float32 sum as it is (3-4-5)."""
    import math

    import torch

    from lnbench.training.gradients import layer_grad_norms

    norms = torch.tensor([[3.0, 1e20], [4.0, 1e20], [2.0, 5.0]])  # (P=3, S=2); tensors 0, 1 in layer 0
    got = layer_grad_norms(norms, torch.tensor([0, 0, 1]), 2)
    assert got.dtype == torch.float32 and bool(got.isfinite().all())
    assert got[0, 0].item() == 5.0 and got[1].tolist() == [2.0, 5.0]
    assert got[0, 1].item() == torch.tensor(1e20 * math.sqrt(2), dtype=torch.float32).item()


def test_a_non_finite_gradient_names_the_first_such_tensor_and_counts_the_rest():
    """The divergence reason names the first tensor (in the model's order) whose gradient norm is
    not finite, NaN or inf, and how many more there are (oracle: the names given)."""
    import torch
    from torch import nn

    from lnbench.training.gradients import nonfinite_reason

    names = ["cell.weight_ih", "cell.bias", "norm.gamma", "head.weight"]
    norms = torch.tensor([1.0, float("nan"), float("inf"), 2.0])
    reason = nonfinite_reason(nn.Linear(2, 2), names, norms, step=7)
    assert reason == "the gradient of cell.bias became NaN in step 7 of the epoch (and 1 more of 4 tensors)"
    norms = torch.tensor([1.0, 2.0, float("inf"), 3.0])
    assert nonfinite_reason(nn.Linear(2, 2), names, norms, step=1).startswith(
        "the gradient of norm.gamma became inf (a norm beyond float32's 3.4e38) in step 1 of the epoch"
    )


def _ensemble_params(grads, members):
    import torch
    from torch import nn

    class Ensemble(nn.Module):
        pass

    model = Ensemble()
    model.members = members
    params = []
    for k, g in enumerate(grads):
        p = nn.Parameter(torch.zeros_like(g) if g is not None else torch.zeros(members, 2))
        p.grad = g
        params.append((f"p{k}", p))
    return model, params


def test_zeroing_a_member_zeroes_its_gradient_alone_and_skips_a_tensor_without_one():
    """Member 1 of 3: its rows of every gradient become 0, members 0 and 2 keep theirs bit for bit,
    and a parameter without a gradient stays without one (oracle: the tensors before)."""
    import torch

    from lnbench.training.gradients import zero_member_grads

    g = [torch.arange(1.0, 7.0).reshape(3, 2), torch.arange(1.0, 13.0).reshape(3, 2, 2), None]
    before = [t.clone() if t is not None else None for t in g]
    model, params = _ensemble_params(g, 3)
    zero_member_grads(model, params, 1)
    for (_, p), old in zip(params[:2], before[:2], strict=True):
        assert torch.equal(p.grad[1], torch.zeros_like(old[1]))
        assert torch.equal(p.grad[0], old[0]) and torch.equal(p.grad[2], old[2])
    assert params[2][1].grad is None


def test_clipping_scales_each_live_member_as_torchs_clip_grad_norm_and_leaves_a_dead_one():
    """Each live member's gradient after clipping at 1 equals torch.nn.utils.clip_grad_norm_ of
    that member's tensors alone (coefficient clip / (total + 1e-6), at most 1), for a total of 0.05
    (unscaled), 3 and 400; a dead member's gradient is left as it was."""
    import torch

    from lnbench.training.gradients import clip_grad_norms, grad_norms

    gen = torch.Generator().manual_seed(0)
    scales = [0.05, 3.0, 400.0, 400.0]
    rows = [torch.randn(4, 3, generator=gen), torch.randn(4, 5, generator=gen)]
    totals = torch.cat(rows, dim=1).norm(dim=1, keepdim=True)  # each member's total: then scaled to scales
    model, params = _ensemble_params([r / totals * torch.tensor(scales).view(4, 1) for r in rows], 4)
    alive = [True, True, True, False]
    expected = []
    for s in range(4):
        alone = [torch.nn.Parameter(p.grad[s].clone()) for _, p in params]
        for a, (_, p) in zip(alone, params, strict=True):
            a.grad = p.grad[s].clone()
        if alive[s]:
            torch.nn.utils.clip_grad_norm_(alone, 1.0)
        expected.append([a.grad for a in alone])
    clip_grad_norms(model, params, grad_norms(model, params, 4), 1.0, alive)
    for s in range(4):
        for (_, p), want in zip(params, expected[s], strict=True):
            torch.testing.assert_close(p.grad[s], want, rtol=1e-6, atol=1e-9)
