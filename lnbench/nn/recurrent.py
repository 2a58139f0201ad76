"""What the recurrent families share: a stack of cells unrolled over T steps, a linear head on
h_T, the seed ensemble's member axis, and the choice between the C++ kernel and the step-by-step
Python recurrence (:class:`RecurrentClassifier`). Shapes: B batch, T seq_len, H hidden_size, C
num_classes, S members."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol, Self, runtime_checkable

import torch
from torch import nn

from lnbench.config import ModelConfig
from lnbench.nn.base import Norm, copy_members
from lnbench.nn.ensemble_linear import EnsembleLinear
from lnbench.nn.fused import FusedSpec, LayerStates, Unrolled, kernel_covers, unroll_fused

SATURATION = 0.99  # |u| above this: a saturated unit (lnbench.training.probes)
#: seeds the one generator of the evaluation's initial-state noise (:func:`eval_state_noise`)
EVAL_STATE_NOISE_SEED = 20160209  # any fixed value: it only has to be the same in every run


def state_noise(
    n: int, layers: int, hidden_size: int, std: float, generator: torch.Generator | None = None, dtype=None
) -> torch.Tensor:
    """Initial states h_0 ~ N(0, std^2) for ``n`` examples, one per layer: ``(n, layers, H)``, drawn in
    float32 from ``generator`` (None: torch's global one), then as ``dtype`` (so a float64 model sees
    the float32 model's draw). Cooijmans et al. 2016 prime h_0 with white noise of std 0.1 on
    sequential MNIST (their code's ``--noise``): blank first pixels otherwise keep h at exactly 0,
    where every norm of it has zero variance."""
    return (std * torch.randn(n, layers, hidden_size, generator=generator, dtype=torch.float32)).to(dtype)


def eval_state_noise(n: int, layers: int, hidden_size: int, std: float, dtype=None) -> torch.Tensor:
    """The evaluation's initial states of ``n`` examples, ``(n, layers, H)``: :func:`state_noise`
    from one generator seeded with :data:`EVAL_STATE_NOISE_SEED`, so example i of a split gets the
    same h_0 in every run, norm and seed (the paired tests compare like with like)."""
    generator = torch.Generator().manual_seed(EVAL_STATE_NOISE_SEED)
    return state_noise(n, layers, hidden_size, std, generator, dtype)


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
    of ``model.num_layers`` cells, each unrolled over T steps from h_0 (zero, or with
    ``model.state_noise_std`` drawn per example: :meth:`initial_states`; layer l > 1 reads
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
        self.state_noise_std = cfg.state_noise_std
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

    def layer_states(
        self, cell: nn.Module, x: torch.Tensor, units: list[torch.Tensor] | None, h0: torch.Tensor | None = None
    ) -> list[torch.Tensor]:
        """The step-by-step Python recurrence of one layer on its input sequence ``x``
        ``(B, T, I)`` (``(S, B, T, I)``) from ``h0`` ``(B, H)`` (``(S, B, H)``; None: zeros): the
        list of the T hidden states h_1 .. h_T as graph nodes of the recurrence (so
        ``torch.autograd.grad(loss, states[0])`` is the total dL/dh_1); ``units``, if given,
        receives each step's saturable units (the LSTM's)."""
        raise NotImplementedError

    def initial_states(self, x: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor | None:
        """Every layer's h_0 for the batch ``x`` ``(B, T, I)`` (``(S, B, T, I)``): ``h0`` as given,
        ``(B, L, H)`` (``(S, B, L, H)``); else with ``model.state_noise_std`` > 0 a draw of
        :func:`state_noise` from torch's global generator in training mode and
        :func:`eval_state_noise` (rows 0 .. B-1, the same for every member) in eval mode (the
        training loop gives its own: the seed's generator, and each example's row of the split's
        evaluation noise); None (zeros) at std 0.

        Raises:
            ValueError: an ``h0`` whose shape is not the batch's.
        """
        lead = x.shape[:-2]  # (B,) or (S, B)
        shape = (*lead, self.num_layers, self.cfg.hidden_size)
        if h0 is not None:
            if tuple(h0.shape) != shape:
                raise ValueError(f"{type(self).__name__}: h0 must be {shape}, got {tuple(h0.shape)}")
            return h0.to(x.dtype)
        if self.state_noise_std == 0:
            return None
        B, L, H = lead[-1], self.num_layers, self.cfg.hidden_size
        if self.training:
            return state_noise(math.prod(lead), L, H, self.state_noise_std, dtype=x.dtype).view(shape)
        return eval_state_noise(B, L, H, self.state_noise_std, dtype=x.dtype).expand(shape)

    def _unroll_fused(
        self, cell: nn.Module, x: torch.Tensor, probe: bool, h0: torch.Tensor | None = None
    ) -> LayerStates | None:
        """One layer's recurrence in the C++ kernel (:func:`lnbench.nn.fused.unroll_fused`, with the
        cell's ``fused_spec()``), or None where the kernel does not cover it."""
        assert isinstance(cell, FusedCell)
        return unroll_fused(cell, x, cell.fused_spec(), members=self.members, probe=probe, h0=h0)

    def _unroll_python(
        self, cell: nn.Module, x: torch.Tensor, probe: bool, h0: torch.Tensor | None = None
    ) -> LayerStates:
        """One layer by :meth:`layer_states` from ``h0`` (None: zeros), with its probes; then each norm's
        :meth:`lnbench.nn.base.Norm.end_sequence` (recurrent BatchNorm: one running-statistics
        update per training step)."""
        units: list[torch.Tensor] | None = [] if probe else None
        states = self.layer_states(cell, x, units, h0)
        assert isinstance(cell, NormedCell)
        for norm in cell.norms:
            if isinstance(norm, Norm):
                norm.end_sequence()
        H = self.cfg.hidden_size
        hidden = (
            torch.stack(states, dim=-2) if states else x.new_zeros(*x.shape[:-2], 0, H)
        )  # (B, T, H) or (S, B, T, H)
        zeros = x.new_zeros(*x.shape[:-2], H)
        last = states[-1] if states else zeros if h0 is None else h0  # h_T, or h_0 without timesteps
        if not probe:
            return LayerStates(hidden, last)
        saturable = torch.stack(units, dim=-2) if units else hidden  # the LSTM's units (5H per step), or the RNN's h_t
        saturated = (saturable.abs() > SATURATION).to(hidden.dtype).mean(dim=(-2, -1))  # (B,) or (S, B)

        def pick(grads: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
            first, last = grads
            return first, last

        return LayerStates(hidden, last, saturated, [states[0], states[-1]], pick)

    def unroll(self, x: torch.Tensor, probe: bool = False, h0: torch.Tensor | None = None) -> Unrolled:
        """Logits and, per layer, its hidden states and (``probe``) the fraction of saturated units
        and the total gradients of h_1 and h_T (:class:`lnbench.nn.fused.Unrolled`): each layer in
        the C++ kernel where it covers the model (:func:`lnbench.nn.fused.kernel_covers`), else by
        :meth:`layer_states`; layer l > 1 reads layer l - 1's h_1 .. h_T. ``h0``: every layer's
        initial state, ``(B, L, H)`` (``(S, B, L, H)``), or None (:meth:`initial_states`)."""
        fused = kernel_covers(self, x)
        states = self.initial_states(x, h0)  # (B, L, H) or (S, B, L, H); None: zeros
        layers: list[LayerStates] = []
        inputs = x
        for index, cell in enumerate(self.cells):
            start = None if states is None else states[..., index, :]  # (B, H) or (S, B, H)
            layer = self._unroll_fused(cell, inputs, probe, start) if fused else None
            layers.append(layer if layer is not None else self._unroll_python(cell, inputs, probe, start))
            inputs = layers[-1].hidden
        return Unrolled(self.head(layers[-1].last), layers)  # (B, C) or (S, B, C)

    def forward(self, x: torch.Tensor, return_hidden: bool = False, h0: torch.Tensor | None = None):
        out = self.unroll(x, h0=h0)
        return (out.logits, out.hidden) if return_hidden else out.logits
