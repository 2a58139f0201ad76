"""Group Normalization (Wu & He 2018, "Group Normalization", eq. 1-3) over the features, from scratch.

GroupNorm splits each sample's ``features`` D (the last axis) into G groups of D/G consecutive
features and normalizes each group on its own, with a gain and a bias per feature::

    x: (*, D) -> (*, G, D/G)       mean_g, var_g over the D/G features of group g (biased)
    y = gamma * (x - mean_g) / sqrt(var_g + eps) + beta        gamma, beta: (D,)

G = 1 is LayerNorm (Ba et al. 2016, eq. 4). G = D normalizes every feature alone (the
instance-norm end of Wu & He's figure 2), which is degenerate on a feature vector: a group of one
value has x_hat = 0, so the output is beta whatever the input (a :class:`SingleValueWarning`).

The arithmetic is :class:`lnbench.nn.layernorm.NormalizeAffine` (its hand-written x-hat backward
and double backward) on the ``(*, G, D/G)`` view, with gamma and beta viewed as ``(G, D/G)``: the
statistics over the last axis are the group's. Oracle: ``torch.nn.GroupNorm(G, D)``, which
normalizes the channels C of ``(N, C, *)``: our D is its C (``tests/nn/test_groupnorm.py``).

The config's ``model.norm_groups`` is G (:meth:`GroupNorm.from_config`); it must divide
``model.hidden_size`` (:func:`lnbench.config.checks.check_norm_options`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

import torch

from lnbench.nn.base import Norm
from lnbench.nn.layernorm import NormalizeAffine

if TYPE_CHECKING:
    from lnbench.config import ModelConfig


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


class GroupNorm(Norm):
    r"""Group Normalization over the last axis, in G groups of D/G features (Wu & He 2018, eq. 1-3).

    .. math:: y = \gamma \odot \frac{x - \mu_g}{\sqrt{\sigma_g^2 + \epsilon}} + \beta

    with :math:`\mu_g` and the biased :math:`\sigma_g^2` taken over the D/G features of each
    feature's group in each sample. Mirrors ``torch.nn.GroupNorm(groups, features, eps=eps)`` with
    the features as its channel axis.

    Args:
        features: D, the size of the normalized (last) axis.
        eps: added to each group's variance inside the square root. Default: 1e-5.
        members: S for an ensemble of S models (input ``(S, N, D)``, gamma ``(S, 1, D)``). Default: None.
        groups: G, which must divide D (keyword only). Default: 1 (LayerNorm's statistics).

    Attributes:
        gamma: learnable gain ``(D,)`` (or ``(S, 1, D)``), initialised to ones, one per feature.
        beta: learnable bias of the same shape, initialised to zeros.
        groups: G.

    Shape:
        Input: ``(*, D)``, e.g. ``(B, H)`` or ``(B, T, H)``, any floating dtype. Output: same shape and dtype.

    Warns:
        SingleValueWarning: once, for ``groups == features`` (one value per group: the output is beta).

    Raises:
        ValueError: if ``features < 1``, ``groups < 1``, G does not divide D (naming the allowed
            values), or the input's last axis is not D.

    Examples:
        >>> gn = GroupNorm(4, groups=2)
        >>> gn(torch.tensor([[1.0, 3.0, 10.0, 30.0]]))  # each pair alone: (-1, 1)
        tensor([[-1.0000,  1.0000, -1.0000,  1.0000]], grad_fn=<ViewBackward0>)
    """

    beta: torch.nn.Parameter

    def __init__(self, features: int, eps: float = 1e-5, members: int | None = None, *, groups: int = 1) -> None:
        if features >= 1 and (groups < 1 or features % groups):
            raise ValueError(
                f"GroupNorm: norm_groups {groups} does not divide the features {features}; allowed: {_divisors(features)}"
            )
        super().__init__(features, eps, members)
        self.groups = groups

    @classmethod
    def from_config(
        cls, features: int, model_cfg: ModelConfig, members: int | None = None, seq_len: int | None = None
    ) -> Self:
        """The layer with ``groups = model.norm_groups`` (the same G for every norm position: the
        LSTM's 4H gate terms and its H cell state both split into G groups)."""
        return cls(features, members=members, groups=model_cfg.norm_option("norm_groups"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        G = self.groups
        if G == self.features:
            self._warn_single_value(
                "GroupNorm with one feature per group: x_hat = 0, so the output is beta whatever the input"
            )
        split = (G, self.features // G)
        xg = x.unflatten(-1, split)  # (*, G, D/G)
        gamma, beta = self.gamma.unflatten(-1, split), self.beta.unflatten(-1, split)  # (G, D/G) or (S, 1, G, D/G)
        return NormalizeAffine.apply(xg, gamma, beta, self.eps, (-1,))[0].flatten(-2)  # (*, D)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", groups={self.groups}"
