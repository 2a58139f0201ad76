"""What the recurrent families share: a stack of cells unrolled over T steps, a linear head on
h_T, the seed ensemble's member axis, and the choice between the C++ kernel and the step-by-step
Python recurrence (:class:`RecurrentClassifier`). Shapes: B batch, T seq_len, H hidden_size, C
num_classes, S members."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, Self, runtime_checkable

import torch
from torch import nn

from lnbench.config import ModelConfig
from lnbench.nn.base import Norm, copy_members
from lnbench.nn.ensemble_linear import EnsembleLinear
from lnbench.nn.fused import FusedSpec, LayerStates, Unrolled, kernel_covers, unroll_fused

SATURATION = 0.99  # |u| above this: a saturated unit (lnbench.training.probes)


@runtime_checkable
class FusedCell(Protocol):
    """A recurrent cell the C++ kernel can run: it says what to run (:class:`FusedSpec`)."""

    def fused_spec(self) -> FusedSpec: ...


@runtime_checkable
class NormedCell(Protocol):
    """A recurrent cell that lists its norm layers (each told when a sequence ends)."""

    @property
    def norms(self) -> list[nn.Module]: ...


class RecurrentClassifier(nn.Module):
    """What the recurrent families share (:class:`SimpleRNN`, :class:`lnbench.nn.lstm.LSTM`): a stack
    of ``model.num_layers`` cells, each unrolled over T steps from a zero state (layer l > 1 reads
    layer l - 1's h_1 .. h_T as its input sequence, as ``torch.nn.RNN(num_layers=L)``), ``Linear(H, C)``
    on the top layer's h_T, and the seed ensemble's member axis (:meth:`stack`). A subclass builds
    its cells with :meth:`make_cell` (its :attr:`cell_type`) and defines :meth:`layer_states`; its cells say what the
    C++ kernel runs (``fused_spec()``: :class:`lnbench.nn.fused.FusedSpec`).

    Every layer is a cell of its own, with its own norms and gains (each normalized as its paper
    describes): layer 1 is ``cell`` (so a one-layer model's parameter names, and the metrics that
    name them, are those of before stacking), layer l is ``cell_<l>``, input size H.

    Args:
        cfg: the model's :class:`lnbench.config.ModelConfig` (``num_layers``: L).
        input_size: features per timestep of the input.
        num_classes: C. Default: 2.
        seq_len: T, for per-timestep statistics. Default: None.
        members: S for a seed ensemble of S independent models trained at once (build it with
            :meth:`stack`); every tensor then has a leading member axis. Default: None.

    Attributes:
        use_kernel: run each layer's recurrence as one autograd node in C++ (:mod:`lnbench.nn.fused`)
            where the kernel covers it; False: always the step-by-step Python code. Default: True.

    Shape:
        Input: ``(B, T, input_size)`` (ensemble: ``(S, B, T, input_size)``), the model's dtype.
        Output: logits ``(B, C)`` (``(S, B, C)``); with ``return_hidden=True`` also the top
        layer's hidden states ``(B, T, H)`` (``(S, B, T, H)``).
    """

    use_kernel: bool
    cell: nn.Module  # layer 1
    #: one layer's cell class, called as ``cell_type(cfg, input_size, seq_len, members)``
    cell_type: Callable[[ModelConfig, int, int | None, int | None], nn.Module]
    head: nn.Module

    def __init__(
        self,
        cfg: ModelConfig,
        input_size: int,
        num_classes: int = 2,
        seq_len: int | None = None,
        members: int | None = None,
    ) -> None:
        super().__init__()
        self.cfg, self.input_size, self.num_classes, self.seq_len = cfg, input_size, num_classes, seq_len
        self.members = members
        self.num_layers = cfg.num_layers
        self.use_kernel = True
        self._build_layers()

    def make_cell(self, input_size: int) -> nn.Module:
        """One layer's cell reading ``input_size`` features per timestep: the subclass's
        :attr:`cell_type`."""
        return self.cell_type(self.cfg, input_size, self.seq_len, self.members)

    def _build_layers(self) -> None:
        """Build the L cells (:meth:`make_cell`, bottom first: layer 1 reads the input, the others
        H features) and then the head, in this order (so a one-layer model draws its initial
        weights as before stacking)."""
        H, S = self.cfg.hidden_size, self.members
        self.cell = self.make_cell(self.input_size)
        for layer in range(2, self.num_layers + 1):
            self.add_module(f"cell_{layer}", self.make_cell(H))
        self.head = nn.Linear(H, self.num_classes) if S is None else EnsembleLinear(S, H, self.num_classes)

    @property
    def cells(self) -> list[nn.Module]:
        """The L cells, layer 1 first: ``[cell, cell_2, ..., cell_L]``."""
        return [self.cell, *(self.get_submodule(f"cell_{layer}") for layer in range(2, self.num_layers + 1))]

    @classmethod
    @torch.no_grad()
    def stack(cls, models: list[Self]) -> Self:
        """One ensemble whose member s starts as ``models[s]`` (parameters and buffers copied):
        trained by :func:`lnbench.training.loop.train_members`, member s follows the arithmetic of
        ``models[s]`` trained alone. Each tensor is stacked along the member axis its module
        names (:meth:`lnbench.nn.base.Norm.member_axis`; 0 for the others).

        Raises:
            IndexError: for an empty list.
        """
        first = models[0]
        ensemble = cls(first.cfg, first.input_size, first.num_classes, first.seq_len, members=len(models))
        copy_members(ensemble, models)
        return ensemble

    def layer_states(self, cell: nn.Module, x: torch.Tensor, units: list[torch.Tensor] | None) -> list[torch.Tensor]:
        """The step-by-step Python recurrence of one layer on its input sequence ``x``
        ``(B, T, I)`` (``(S, B, T, I)``): the list of the T hidden states h_1 .. h_T as graph
        nodes of the recurrence (so ``torch.autograd.grad(loss, states[0])`` is the total dL/dh_1);
        ``units``, if given, receives each step's saturable units (the LSTM's)."""
        raise NotImplementedError

    def _unroll_fused(self, cell: nn.Module, x: torch.Tensor, probe: bool) -> LayerStates | None:
        """One layer's recurrence in the C++ kernel (:func:`lnbench.nn.fused.unroll_fused`, with the
        cell's ``fused_spec()``), or None where the kernel does not cover it."""
        assert isinstance(cell, FusedCell)
        return unroll_fused(cell, x, cell.fused_spec(), members=self.members, probe=probe)

    def _unroll_python(self, cell: nn.Module, x: torch.Tensor, probe: bool) -> LayerStates:
        """One layer by :meth:`layer_states`, with its probes; then each norm's
        :meth:`lnbench.nn.base.Norm.end_sequence` (recurrent BatchNorm: one running-statistics
        update per training step)."""
        units: list[torch.Tensor] | None = [] if probe else None
        states = self.layer_states(cell, x, units)
        assert isinstance(cell, NormedCell)
        for norm in cell.norms:
            if isinstance(norm, Norm):
                norm.end_sequence()
        H = self.cfg.hidden_size
        hidden = (
            torch.stack(states, dim=-2) if states else x.new_zeros(*x.shape[:-2], 0, H)
        )  # (B, T, H) or (S, B, T, H)
        last = states[-1] if states else x.new_zeros(*x.shape[:-2], H)  # h_T, or h_0 without timesteps
        if not probe:
            return LayerStates(hidden, last)
        saturable = torch.stack(units, dim=-2) if units else hidden  # the LSTM's units (5H per step), or the RNN's h_t
        saturated = (saturable.abs() > SATURATION).to(hidden.dtype).mean(dim=(-2, -1))  # (B,) or (S, B)

        def pick(grads: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
            first, last = grads
            return first, last

        return LayerStates(hidden, last, saturated, [states[0], states[-1]], pick)

    def unroll(self, x: torch.Tensor, probe: bool = False) -> Unrolled:
        """Logits and, per layer, its hidden states and (``probe``) the fraction of saturated units
        and the total gradients of h_1 and h_T (:class:`lnbench.nn.fused.Unrolled`): each layer in
        the C++ kernel where it covers the model (:func:`lnbench.nn.fused.kernel_covers`), else by
        :meth:`layer_states`; layer l > 1 reads layer l - 1's h_1 .. h_T."""
        fused = kernel_covers(self, x)
        layers: list[LayerStates] = []
        inputs = x
        for cell in self.cells:
            layer = self._unroll_fused(cell, inputs, probe) if fused else None
            layers.append(layer if layer is not None else self._unroll_python(cell, inputs, probe))
            inputs = layers[-1].hidden
        return Unrolled(self.head(layers[-1].last), layers)  # (B, C) or (S, B, C)

    def forward(self, x: torch.Tensor, return_hidden: bool = False):
        out = self.unroll(x)
        return (out.logits, out.hidden) if return_hidden else out.logits
