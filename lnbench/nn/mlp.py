"""The feed-forward family: Ba et al. 2016's permutation-invariant MNIST network (section 6.7,
Figure 6: 784-1000-1000-10), with a pluggable norm on every hidden layer::

    h_0 = x (the flattened input)
    h_l = relu(norm_l(W_l h_{l-1}) + b_l)        l = 1 .. L (model.num_layers), width H (model.hidden_size)
    logits = W_out h_L + b_out                   (no norm on the logits: "excludes the last softmax layer")

The norm normalizes the summed inputs ``W_l h_{l-1}`` before the non-linearity, as the paper's
eq. 3-4; a norm with a learned bias (LayerNorm, BatchNorm) provides ``b_l`` (its beta), otherwise
(RMSNorm, a user's norm without beta) ``b_l`` is added after it, and without a norm layer (none,
weight) it is the Linear's own bias. The paper does not name the non-linearity of section 6.7;
ReLU is the usual one for this network. Weight norm makes every Linear weight-normalized.

Shapes: B batch, T x I the input's (T = 1 for ``data.mnist_order: flat``; any ``(T, I)`` is read
as one vector of T * I features), H hidden, C classes, S members of a seed ensemble.
"""

from __future__ import annotations

from typing import Self

import torch
from torch import nn

from lnbench.config import ModelConfig
from lnbench.nn import few_row_linear
from lnbench.nn.base import stack_models
from lnbench.nn.registry import norm_kind
from lnbench.nn.transformer import model_linear


class MLP(nn.Module):
    """A feed-forward classifier with a norm on each hidden layer (the module docstring).

    Args:
        cfg: the model's :class:`lnbench.config.ModelConfig`: ``hidden_size`` H, ``num_layers``
            L (hidden layers), ``norm`` (every hidden layer's; the logits have none).
        input_size: I, features per timestep of the input.
        seq_len: T; the first layer reads ``T * I`` features.
        num_classes: C. Default: 2.
        members: S for a seed ensemble (build it with :meth:`stack`): every Linear an
            :class:`lnbench.nn.rnn.EnsembleLinear`, every norm with ``(S, 1, H)`` parameters, and a
            leading member axis on every tensor. Default: None.

    Shape:
        Input: ``(B, T, I)`` (ensemble: ``(S, B, T, I)``), float32, or already one vector per example,
        ``(B, T * I)`` (ensemble: ``(S, B, T * I)``): a flat MNIST image is ``(B, 784)`` or ``(B, 1, 784)``.
        Output: logits ``(B, C)`` (``(S, B, C)``); with ``return_hidden=True`` also the last hidden
        layer as one timestep, ``(B, 1, H)`` (``(S, B, 1, H)``), for the probes.

    Raises:
        ValueError: an unknown ``norm``; an ensemble with a norm without a member axis (weight norm);
            in forward, an input whose features are not ``T * I``.
    """

    def __init__(
        self, cfg: ModelConfig, input_size: int, seq_len: int, num_classes: int = 2, members: int | None = None
    ) -> None:
        super().__init__()
        spec = norm_kind(cfg.norm)
        H, lead = cfg.hidden_size, () if members is None else (members, 1)
        self.cfg, self.input_size, self.seq_len, self.num_classes = cfg, input_size, seq_len, num_classes
        self.members, self.num_layers = members, cfg.num_layers
        widths = [seq_len * input_size] + [H] * cfg.num_layers
        # the Linear's own bias where no norm layer sits; a norm's beta where it has one
        self.linears = nn.ModuleList(
            model_linear(n_in, H, cfg, members, bias=not spec.normalizes_activations) for n_in in widths[:-1]
        )
        self.norms = nn.ModuleList(spec.build(H, cfg, members) for _ in range(cfg.num_layers))
        after = spec.normalizes_activations and not spec.has_beta  # RMSNorm: b after the norm
        self.biases = nn.ParameterList(
            nn.Parameter(torch.zeros(*lead, H)) for _ in range(cfg.num_layers if after else 0)
        )
        self.head = model_linear(H, num_classes, cfg, members)

    @classmethod
    @torch.no_grad()
    def stack(cls, models: list[Self]) -> Self:
        """One ensemble whose member s starts as ``models[s]`` (parameters and buffers copied);
        trained by :func:`lnbench.training.loop.train_members`, member s follows the arithmetic of
        ``models[s]`` in an ensemble of one.

        Raises:
            IndexError: for an empty list; ValueError: for weight norm (no ensemble form).
        """
        return stack_models(models)

    def forward(self, x: torch.Tensor, return_hidden: bool = False):
        vector = x.dim() == (2 if self.members is None else 3)  # ([S,] B, T * I): one vector per example
        h = x if vector else x.flatten(-2)  # ([S,] B, T * I)
        if h.shape[-1] != self.seq_len * self.input_size:
            raise ValueError(
                f"MLP: expected {self.seq_len * self.input_size} features per example ((B, {self.seq_len}, "
                f"{self.input_size}) or (B, {self.seq_len * self.input_size})), got an input of shape {tuple(x.shape)}"
            )
        for k, (linear, norm) in enumerate(zip(self.linears, self.norms, strict=True)):
            a = norm(few_row_linear.linear(linear, h))  # ([S,] B, H)
            h = torch.relu(a + self.biases[k] if len(self.biases) else a)
        logits = few_row_linear.linear(self.head, h)  # ([S,] B, C)
        return (logits, h.unsqueeze(-2)) if return_hidden else logits
