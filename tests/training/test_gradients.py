"""lnbench.training.gradients: each optimizer's words for a large gradient (the norms and clipping
beyond float32 sums: test_blank_timesteps.py)."""


def test_every_optimizer_has_its_large_gradient_words():
    """Oracle: the schema's optimizers (train.optimizer's allowed values)."""
    from lnbench.config.optimizers import OPTIMIZERS
    from lnbench.training.gradients import LARGE_STEP

    assert set(LARGE_STEP) == set(OPTIMIZERS)
