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
