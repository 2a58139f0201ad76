"""TensorBoard event files for each run (``--tensorboard``), through ``torch.utils.tensorboard``.

Every per-epoch metric of :class:`lnbench.records.schema.Metrics` (its ``EPOCH_*`` declarations)
is a scalar under its metrics.json key, step = the epoch: the one-value ones (``train_loss``,
``test_acc``, ``val_acc``, ``lr``, the probes ``scale_spearman``, ``saturation``, ``grad_ratio``, ...)
as they are; the per-epoch vectors one scalar each: ``hidden_norm/t01`` .. (per timestep),
``hidden_norm_by_scale/q1_t01`` .., ``saturation_by_scale/q1`` .. ``q4``, a stacked model's
``<probe>_by_layer/l1`` .. and ``hidden_norm_by_layer/l1_t01`` .., ``grad_norm/<parameter>``,
``grad_norm_layer/<layer>``. When
the run ends its resolved config is written as hparams (dotted keys, ``model.norm``) with
``hparam/final_test_acc`` and ``hparam/final_test_loss``. The event files go into the run's own
folder, so ``tensorboard --logdir RUN_DIR`` shows each child run of an experiment as a run.

TensorBoard is an optional extra (``pip install 'lnbench[tensorboard]'``): :func:`available`
says whether it is installed, and the CLI refuses ``--tensorboard`` without it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from lnbench.config import RunConfig
from lnbench.records.schema import (
    EPOCH_BY_LAYER,
    EPOCH_BY_NAME,
    EPOCH_BY_SCALE,
    EPOCH_CURVES,
    EPOCH_SCALARS,
    Metrics,
    at_epoch,
)

INSTALL = "pip install 'lnbench[tensorboard]'"


def available() -> bool:
    """Whether the ``tensorboard`` package (which ``torch.utils.tensorboard`` needs) is installed."""
    return importlib.util.find_spec("tensorboard") is not None


class TensorBoard:
    """The event files of one run folder.

    Opening it removes the folder's earlier event files (``events.out.tfevents.*``): a run resumed
    in place (``lnbench train --resume``) writes every epoch it keeps again, and one that starts
    over writes its own, so TensorBoard shows each step once, with the values of metrics.json.

    Args:
        path: the run folder (the event files go into it).
        cfg: the run's resolved config (written as hparams by :meth:`close`).

    Raises:
        ModuleNotFoundError: tensorboard is not installed.
    """

    def __init__(self, path: Path, cfg: RunConfig) -> None:
        from torch.utils.tensorboard import SummaryWriter

        for old in path.glob("events.out.tfevents.*"):
            old.unlink()
        self.writer = SummaryWriter(str(path))
        self.cfg = cfg
        self.closed = False

    def epoch(self, m: Metrics, epoch: int) -> None:
        """Write the metrics of ``epoch`` (1-based, one of ``m.epochs``)."""
        i = m.epochs.index(epoch)
        scalars: dict[str, Any] = {}
        for key in EPOCH_SCALARS:
            values = getattr(m, key)
            scalars[key] = values[i] if values and i < len(values) else None
        for key in EPOCH_BY_LAYER + EPOCH_BY_SCALE:  # <key>/l1 .. lL, saturation_by_scale/q1 .. q4
            scalars |= {f"{key}/{_mark(key)}{j + 1}": v for j, v in enumerate(at_epoch(getattr(m, key), i) or [])}
        for key in EPOCH_CURVES:  # hidden_norm/t01 .., hidden_norm_by_scale/q1_t01 .., hidden_norm_by_layer/l1_t01 ..
            at = at_epoch(getattr(m, key), i) or []
            curves = {"": at} if key == "hidden_norm" else {f"{_mark(key)}{j + 1}_": c for j, c in enumerate(at)}
            for name, curve in curves.items():
                scalars |= {f"{key}/{name}t{t + 1:02d}": v for t, v in enumerate(curve or [])}
        for key in EPOCH_BY_NAME:  # grad_norm/<parameter>, grad_norm_layer/<layer>
            scalars |= {f"{key}/{name}": v[i] for name, v in getattr(m, key).items() if i < len(v)}
        for tag, value in scalars.items():
            if value is not None:
                self.writer.add_scalar(tag, value, epoch)
        self.writer.flush()  # live: tensorboard --logdir shows the epoch now

    def close(self, m: Metrics) -> None:
        """Write the config as hparams with the final results, and close the files (idempotent)."""
        if self.closed:
            return
        from torch.utils.tensorboard.summary import hparams

        from lnbench.records.tidy import flat

        self.closed = True
        params = {
            k: v if isinstance(v, (int, float, str, bool)) else str(v)
            for k, v in flat(self.cfg.model_dump(mode="json")).items()
        }
        final = {"hparam/final_test_acc": m.test_acc[-1] if m.test_acc else None}
        final["hparam/final_test_loss"] = m.test_loss[-1] if m.test_loss else None
        results = {k: v for k, v in final.items() if v is not None and m.status != "diverged"}
        writer = self.writer._get_file_writer()  # SummaryWriter.add_hparams, into this run's own files
        for summary in hparams(params, results):
            writer.add_summary(summary)
        for tag, value in results.items():
            self.writer.add_scalar(tag, value)
        self.writer.close()


def _mark(key: str) -> str:
    """The tag letter of a field's inner axis: ``q`` for the input-scale quartiles, ``l`` for layers."""
    return "q" if key.endswith("_by_scale") else "l"
