"""TensorBoard event files for each run (``--tensorboard``), through ``torch.utils.tensorboard``.

Every per-epoch metric of :class:`lnbench.records.schema.Metrics` is a scalar under its
metrics.json key, step = the epoch: ``train_loss``, ``test_loss``, ``test_acc``,
``test_acc_batch_stats``, ``test_acc_running_stats``, ``epoch_seconds`` and the probes ``scale_spearman``, ``saturation``,
``grad_ratio``; the per-epoch vectors one scalar each: ``hidden_norm/t01`` .. (per timestep),
``saturation_by_scale/q1`` .. ``q4``, ``grad_norm/<parameter>``, ``grad_norm_layer/<layer>``. When
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
from lnbench.records.schema import Metrics

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
        scalars: dict[str, Any] = {
            "train_loss": m.train_loss[i],
            "test_loss": m.test_loss[i],
            "test_acc": m.test_acc[i],
            "epoch_seconds": m.epoch_seconds[i] if i < len(m.epoch_seconds) else None,
        }
        for series in ("test_acc_batch_stats", "test_acc_running_stats"):
            values = getattr(m, series)
            if values:
                scalars[series] = values[i]
        for probe in ("scale_spearman", "saturation", "grad_ratio"):
            values = getattr(m, probe)
            scalars[probe] = values[i] if i < len(values) else None
        if i < len(m.hidden_norm):
            scalars |= {f"hidden_norm/t{t + 1:02d}": v for t, v in enumerate(m.hidden_norm[i])}
        if i < len(m.saturation_by_scale) and m.saturation_by_scale[i]:
            scalars |= {f"saturation_by_scale/q{q + 1}": v for q, v in enumerate(m.saturation_by_scale[i] or [])}
        scalars |= {f"grad_norm/{name}": values[i] for name, values in m.grad_norm.items() if i < len(values)}
        scalars |= {f"grad_norm_layer/{name}": v[i] for name, v in m.grad_norm_layer.items() if i < len(v)}
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
