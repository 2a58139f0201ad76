"""What every norm layer shares: the :class:`Norm` base (PyTorch's ``_NormBase`` idea).

A norm layer maps summed inputs ``a`` of ``features`` D (the last axis) to::

    y = gamma * x_hat + beta        x_hat: a normalized by statistics of a (which statistics is the subclass's)

The base holds the hyper-parameters (``features``, ``eps``, ``members``), creates and resets
``gamma`` (ones) and ``beta`` (zeros; absent for a norm without one), checks the input's shape,
issues the one-value :class:`SingleValueWarning` and shows the hyper-parameters in ``repr``. A
subclass says what it can do with class attributes (``has_beta``, ``uses_batch_statistics``,
``takes_timestep``, ``grouped_as_layer``, ``has_member_axis``), which the models and the training loop ask instead of
testing which norm they hold. The registry of norm kinds is :mod:`lnbench.nn.registry`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Self

import torch
from torch import nn

if TYPE_CHECKING:
    from lnbench.config import ModelConfig

#: dtypes normalized in float32 (as PyTorch's CPU kernels accumulate them: 600^2 overflows float16)
LOW_PRECISION = frozenset((torch.float16, torch.bfloat16))


class SingleValueWarning(UserWarning):
    """A norm's statistics are over one value: x_hat is 0 and the output is beta, whatever the input."""


def broadcast_axes(x_shape: torch.Size, param_shape: torch.Size) -> tuple[int, ...]:
    """The axes of ``x`` a parameter of ``param_shape`` is broadcast over (summed in its gradient).

    ``(S, B, D)`` and ``(S, 1, D)`` -> ``(1,)``; ``(B, T, D)`` and ``(D,)`` -> ``(0, 1)``.
    """
    lead = len(x_shape) - len(param_shape)
    return tuple(range(lead)) + tuple(lead + i for i, n in enumerate(param_shape) if n == 1 and x_shape[lead + i] != 1)


def grouped_as_layer(module: nn.Module) -> bool:
    """Whether ``module``'s parameters count as one layer in the per-layer gradient norms
    (``grad_norm_layer``): a norm, or a linear map (``nn.Linear`` or a module that says
    ``grouped_as_layer = True``, as :class:`lnbench.nn.weightnorm.WeightNormLinear` does)."""
    return isinstance(module, nn.Linear) or bool(getattr(type(module), "grouped_as_layer", False))


class Norm(nn.Module):
    r"""Base class of the norm layers: ``y = gamma * x_hat + beta`` over the last axis D.

    Mirrors ``torch.nn.modules.batchnorm._NormBase``: it owns the parameters and the checks, a
    subclass defines ``forward`` (the statistics) and overrides what differs.

    Args:
        features: D, the size of the normalized (last) axis.
        eps: added to the variance (or mean square) inside the square root. Default: 1e-5.
        members: S for a seed ensemble of S models: every parameter gets a leading member axis,
            ``(S, 1, D)``, and the input one more leading axis, ``(S, *, D)``. Default: None.

    Attributes:
        gamma: learnable gain ``(D,)`` (ensemble: ``(S, 1, D)``), initialised to ones.
        beta: learnable bias of the same shape, initialised to zeros; None when ``has_beta`` is False.
        has_beta: class attribute: the norm has a learned bias (so the layer before it needs none).
        uses_batch_statistics: class attribute: statistics over the batch, so training and eval
            differ and :func:`lnbench.nn.batchnorm.batch_statistics` applies.
        takes_timestep: class attribute: inside a recurrence it is called as ``norm(a, t)`` at
            each timestep t and :meth:`end_sequence` once after the sequence.
        grouped_as_layer: class attribute: its parameters are one layer in ``grad_norm_layer``.
        use_batch_stats_in_eval: a norm that ``uses_batch_statistics`` normalizes with batch
            statistics in eval mode too while this is True (set by
            :func:`lnbench.nn.batchnorm.batch_statistics`).
        input_ranks: class attribute: the ranks the input may have (without the member axis);
            None: any ``(*, D)``.
        has_member_axis: class attribute: ``members=S`` gives S independent layers in every model
            family (a Transformer seed ensemble needs it; ``lnbench.testing.check_norm`` checks it).

    Shape:
        Input: ``(*, D)`` (ensemble: ``(S, *, D)``), floating. Output: same shape and dtype.

    Raises:
        ValueError: if ``features < 1``; in :meth:`check_input`, if the input's last axis is not
            D or its rank is not one of ``input_ranks``.
    """

    has_beta: ClassVar[bool] = True
    uses_batch_statistics: ClassVar[bool] = False
    takes_timestep: ClassVar[bool] = False
    grouped_as_layer: ClassVar[bool] = True
    input_ranks: ClassVar[tuple[int, ...] | None] = None
    has_member_axis: ClassVar[bool] = True

    gamma: nn.Parameter
    beta: nn.Parameter | None
    use_batch_stats_in_eval: bool
    _warned_single_value: bool

    def __init__(self, features: int, eps: float = 1e-5, members: int | None = None) -> None:
        super().__init__()
        if features < 1:
            raise ValueError(f"{type(self).__name__}: features must be >= 1, got {features}")
        self.features, self.eps, self.members = features, eps, members
        self.gamma = nn.Parameter(torch.ones(self.param_shape))
        if self.has_beta:
            self.beta = nn.Parameter(torch.zeros(self.param_shape))
        else:
            self.register_parameter("beta", None)
        self._warned_single_value = False

    @classmethod
    def from_config(
        cls, features: int, model_cfg: ModelConfig, members: int | None = None, seq_len: int | None = None
    ) -> Self:
        """Build the layer a model asks for (:meth:`lnbench.nn.registry.NormKind.build`). A norm
        takes ``features`` and ``members``; one with options of its own reads its keys from
        ``model_cfg`` (:class:`lnbench.nn.groupnorm.GroupNorm`: ``norm_groups``) and overrides this.

        Args:
            features: D. model_cfg: the model's :class:`lnbench.config.ModelConfig`.
            members: S for a seed ensemble. Default: None.
            seq_len: T of the data, for a layer with state per timestep. Default: None.
        """
        return cls(features, members=members)

    @property
    def param_shape(self) -> tuple[int, ...]:
        """``(D,)``, or ``(S, 1, D)`` for an ensemble of S (the member axis first, the batch axis 1)."""
        return (self.features,) if self.members is None else (self.members, 1, self.features)

    @property
    def batch_axis(self) -> int:
        """The input's first axis after the member axis: 0, or 1 for an ensemble."""
        return 0 if self.members is None else 1

    def reset_parameters(self) -> None:
        """gamma back to ones, beta to zeros, their initial values (``torch.nn.LayerNorm.reset_parameters``)."""
        with torch.no_grad():
            self.gamma.fill_(1.0)
            if self.beta is not None:
                self.beta.zero_()

    def check_input(self, x: torch.Tensor) -> None:
        """Raise ValueError, naming the expected shape, unless ``x`` fits this layer."""
        if self.input_ranks is None:
            if x.shape[-1] != self.features:
                raise ValueError(
                    f"{type(self).__name__}: expected last axis {self.features}, got shape {tuple(x.shape)}"
                )
        elif x.dim() - self.batch_axis not in self.input_ranks or x.shape[-1] != self.features:
            lead = [] if self.members is None else [str(self.members)]
            forms = " or ".join(
                "(" + ", ".join([*lead, *("B", "T")[: rank - 1], str(self.features)]) + ")" for rank in self.input_ranks
            )
            raise ValueError(f"{type(self).__name__}: expected {forms}, got {tuple(x.shape)}")

    def member_axis(self, name: str) -> int:
        """The axis of a parameter or buffer ``name`` that indexes the members of an ensemble
        (:meth:`lnbench.nn.rnn.SimpleRNN.stack` stacks solo models' tensors along it): 0."""
        return 0

    def end_sequence(self) -> None:
        """Called by a recurrence once after each sequence; nothing to do unless ``takes_timestep``."""

    def _warn_single_value(self, message: str, category: type[SingleValueWarning] = SingleValueWarning) -> None:
        """Issue ``message`` as a :class:`SingleValueWarning` once per module."""
        if not self._warned_single_value:
            self._warned_single_value = True
            warnings.warn(message, category, stacklevel=4)

    def extra_repr(self) -> str:
        members = "" if self.members is None else f", members={self.members}"
        return f"{self.features}, eps={self.eps}{members}"


@torch.no_grad()
def copy_members(ensemble: nn.Module, models: Sequence[nn.Module]) -> None:
    """Copy ``models[s]``'s parameters and buffers into member s of ``ensemble`` (same names,
    one more axis): each tensor is stacked along the member axis its module names
    (:meth:`Norm.member_axis` for a norm, 0 for the others), then viewed as the ensemble's shape,
    e.g. (S, 1, H) from S tensors of shape (H,).

    Raises:
        KeyError: a model lacks one of the ensemble's tensors; RuntimeError: shapes disagree.
    """
    solo = [dict(m.named_parameters()) | dict(m.named_buffers()) for m in models]
    for name, t in list(ensemble.named_parameters()) + list(ensemble.named_buffers()):
        owner, _, attr = name.rpartition(".")
        module = ensemble.get_submodule(owner)
        axis = module.member_axis(attr) if isinstance(module, Norm) else 0
        t.copy_(torch.stack([s[name] for s in solo], dim=axis).view(t.shape))


@torch.no_grad()
def stack_models(models: Sequence[nn.Module]) -> Any:
    """One seed ensemble whose member s starts as ``models[s]``: a model of their class built from the
    first one's ``cfg``, ``input_size``, ``seq_len`` and ``num_classes`` with ``members=len(models)``,
    then :func:`copy_members`. The feed-forward families' ``stack`` (the Transformer's, the MLP's).

    Raises:
        IndexError: for an empty list; ValueError: from the class (a norm without a member axis).
    """
    first = models[0]
    ensemble = type(first)(first.cfg, first.input_size, first.seq_len, first.num_classes, members=len(models))
    copy_members(ensemble, models)
    return ensemble
