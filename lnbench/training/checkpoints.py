"""Saved weights and per-epoch checkpoints: what lets a trained model be probed later and an
interrupted cell go on from its last finished epoch.

Two files per run folder, both written with ``torch.save`` and read only with
``torch.load(weights_only=True)`` (no pickled code runs, so a folder from someone else is safe to
load), each holding tensors, numbers, strings, lists and dicts only:

- ``weights.pt``: the final ``state_dict`` of the run's model as :func:`lnbench.nn.models.build_model`
  builds it alone (a member of a seed ensemble is cut out of it), for completed runs.
  :func:`load_model` rebuilds the model from the folder's config.yaml and loads it.
- ``checkpoint.pt``: the state after the last finished epoch: the model, the optimizer's state (per
  parameter, by name), the learning-rate schedule's (``scheduler``, None for constant), the member's batch-order generator and the global torch RNG, and the
  metrics so far (:class:`lnbench.records.schema.Metrics`); BatchNorm's running statistics are
  buffers of the model. One per run (each epoch replaces it), removed when the run completes.

An ensemble's tensors have a leading member axis (or the one a norm names,
:meth:`lnbench.nn.base.Norm.member_axis`); a member's checkpoint holds its own slice, exactly
what its model trained alone would hold, so that restoring and stacking again reproduces the
ensemble bit for bit (:func:`member_states`, :func:`restore`).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim.lr_scheduler import LRScheduler

from lnbench.nn.base import Norm
from lnbench.records.io import atomic_write
from lnbench.records.schema import Metrics
from lnbench.training.optim import state_names

CHECKPOINT = "checkpoint.pt"
WEIGHTS = "weights.pt"
FORMAT = 1  # the checkpoint layout below; a file of another format is not resumed from


def _member_axis(model: nn.Module, name: str) -> int:
    owner, _, attr = name.rpartition(".")
    module = model.get_submodule(owner)
    return module.member_axis(attr) if isinstance(module, Norm) else 0


def _member_slice(model: nn.Module, name: str, t: torch.Tensor, solo: torch.Size, s: int) -> torch.Tensor:
    """Member ``s``'s tensor of shape ``solo`` out of the ensemble's tensor ``t`` (the inverse of
    :meth:`lnbench.nn.rnn.RecurrentClassifier.stack`); a plain model's tensor as it is."""
    if getattr(model, "members", None) is None:
        return t.detach().clone()
    axis = _member_axis(model, name)
    stacked = (*solo[:axis], model.members, *solo[axis:])
    return t.detach().reshape(stacked).select(axis, s).clone()


def _stack(model: nn.Module, name: str, tensors: list[torch.Tensor], like: torch.Tensor) -> torch.Tensor:
    if getattr(model, "members", None) is None:
        return tensors[0]
    return torch.stack(tensors, dim=_member_axis(model, name)).reshape(like.shape)


def member_states(
    model: nn.Module,
    solo: nn.Module,
    opt: torch.optim.Optimizer,
    generators: Sequence[torch.Generator],
    hists: Sequence[Metrics],
    epoch: int,
    scheduler: LRScheduler | None = None,
) -> list[dict[str, Any]]:
    """Each member's checkpoint after ``epoch`` (see the module docstring).

    Args:
        model: the trained model, an ensemble of S members or a plain model (S = 1).
        solo: a plain model of the same config (its shapes are a member's shapes).
        opt: the model's optimizer (:func:`lnbench.training.optim.build_optimizer`).
        generators: each member's batch-order generator.
        hists: each member's metrics so far.
        epoch: the last finished epoch.
        scheduler: the optimizer's schedule (one for all members), or None.
    """
    shapes = {n: t.shape for n, t in solo.state_dict().items()}
    names = state_names(model, opt)  # the order of the optimizer state's keys: its groups, one after the other
    state = opt.state_dict()
    rng = torch.get_rng_state()
    out = []
    for s, (gen, hist) in enumerate(zip(generators, hists)):
        optimizer_state = {}
        for k, name in enumerate(names):
            optimizer_state[name] = {
                key: (v.detach().clone() if key == "step" else _member_slice(model, name, v, shapes[name], s))
                for key, v in state["state"].get(k, {}).items()
            }
        out.append(
            {
                "format": FORMAT,
                "epoch": epoch,
                "model": {n: _member_slice(model, n, t, shapes[n], s) for n, t in model.state_dict().items()},
                "optimizer": {"param_groups": state["param_groups"], "state": optimizer_state},
                "scheduler": None if scheduler is None else scheduler.state_dict(),
                "generator": gen.get_state(),
                "rng": rng,
                "metrics": hist.to_dict(),
            }
        )
    return out


def member_weights(model: nn.Module, solo: nn.Module) -> list[dict[str, torch.Tensor]]:
    """Each member's ``state_dict`` as its model alone has it (``weights.pt``); ``solo``: a plain
    model of the same config."""
    shapes = {n: t.shape for n, t in solo.state_dict().items()}
    members = getattr(model, "members", None) or 1
    state = model.state_dict()
    return [{n: _member_slice(model, n, t, shapes[n], s) for n, t in state.items()} for s in range(members)]


def restore(
    states: Sequence[dict[str, Any]],
    model: nn.Module,
    opt: torch.optim.Optimizer,
    generators: Sequence[torch.Generator],
    hists: Sequence[Metrics],
    scheduler: LRScheduler | None = None,
) -> int:
    """Put the members' checkpoints ``states`` back into the model, its optimizer and schedule, the
    generators and the metrics (in place); returns the epoch to go on from.

    Raises:
        ValueError: the checkpoints are not all of one epoch.
    """
    epochs = {st["epoch"] for st in states}
    if len(epochs) != 1:
        raise ValueError(f"the members' checkpoints are of different epochs: {sorted(epochs)}")
    with torch.no_grad():
        for name, t in model.state_dict().items():
            t.copy_(_stack(model, name, [st["model"][name] for st in states], t))
    names = state_names(model, opt)  # the order of the optimizer state's keys: its groups, one after the other
    params = dict(model.named_parameters())
    adam: dict[int, dict[str, torch.Tensor]] = {}
    for k, name in enumerate(names):
        keys = states[0]["optimizer"]["state"].get(name, {})
        adam[k] = {
            key: states[0]["optimizer"]["state"][name][key]
            if key == "step"
            else _stack(model, name, [st["optimizer"]["state"][name][key] for st in states], params[name])
            for key in keys
        }
    opt.load_state_dict(
        {"state": {k: v for k, v in adam.items() if v}, "param_groups": states[0]["optimizer"]["param_groups"]}
    )
    if scheduler is not None and states[0].get("scheduler") is not None:
        scheduler.load_state_dict(states[0]["scheduler"])
    for gen, st in zip(generators, states):
        gen.set_state(st["generator"])
    torch.set_rng_state(states[0]["rng"])
    for hist, st in zip(hists, states):
        hist.__dict__.update(Metrics.from_dict(st["metrics"]).__dict__)
    return epochs.pop() + 1


def save(path: str | Path, obj: Any) -> Path:
    """``torch.save`` ``obj`` to ``path`` atomically (:func:`lnbench.records.io.atomic_write`).

    The bytes are made in memory first, then written: torch's zip writer turns the file's OSError
    (a full disk) into ``RuntimeError: unexpected pos ...``; written by us, it stays an OSError.

    Raises:
        lnbench.records.io.WriteError: the file could not be written (ENOSPC, EROFS, ...).
    """
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return atomic_write(path, lambda f: f.write(buffer.getbuffer()))


def load(path: str | Path) -> Any:
    """``torch.load(path, weights_only=True)``: tensors and plain data only, no pickled code."""
    return torch.load(path, map_location="cpu", weights_only=True)


def resumable(folders: Sequence[Path | None], hashes: Sequence[str], epochs: int) -> list[dict[str, Any]] | None:
    """The checkpoints of a cell's earlier attempt, one per member, if the cell can go on from
    them: every member has one, of this format, of the same config (``hashes``: each member's
    ``config_hash``, as its run.json records it), all after the same epoch, before the last
    (``epochs``). Else None: the cell trains from the start."""
    states = []
    for folder, digest in zip(folders, hashes):
        if folder is None or not (folder / CHECKPOINT).is_file():
            return None
        try:
            st = load(folder / CHECKPOINT)
        except Exception:  # noqa: BLE001 - a half-written or foreign file: train from the start
            return None
        if not isinstance(st, dict) or st.get("format") != FORMAT or st.get("config_hash") != digest:
            return None
        states.append(st)
    if len(states) != len(hashes) or len({st["epoch"] for st in states}) != 1 or states[0]["epoch"] >= epochs:
        return None
    return states


def load_model(run_dir: str | Path) -> nn.Module:
    """The trained model of a run folder, in eval mode: rebuilt from its ``config.yaml``
    (:func:`lnbench.nn.models.build_model`) with its ``weights.pt`` loaded.

    Example::

        model = lnbench.load_model("runs/<compare>/rnn_layer_seed0")  # (B, T, D) -> logits (B, C)

    Shape:
        Input: ``(B, T, D)`` as ``data.shape()`` gives T and D; a family that reads vectors (the MLP,
        ``reads_vectors`` in :data:`lnbench.names.FAMILY_REGISTRY`) also takes ``(B, T * D)``, e.g.
        flat MNIST as ``(B, 784)``. Output: logits ``(B, C)``.

    Raises:
        FileNotFoundError: no weights.pt (the run did not complete, or predates saved weights).
        lnbench.config.ConfigError: the config.yaml cannot be read.
    """
    from lnbench.config import load_config
    from lnbench.nn.models import build_model

    run_dir = Path(run_dir)
    if not (run_dir / WEIGHTS).is_file():
        raise FileNotFoundError(f"{run_dir}: no {WEIGHTS} (only a completed run saves its weights)")
    cfg = load_config(run_dir / "config.yaml")
    T, D, C = cfg.data.shape()
    model = build_model(cfg.model, D, T, C)
    model.load_state_dict(load(run_dir / WEIGHTS))
    return model.eval()
