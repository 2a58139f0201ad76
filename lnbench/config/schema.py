"""The config schema: a whole config file (:class:`RunConfig`) and the sections of the
multi-run experiments.

A config file has the sections ``data``, ``model``, ``train`` (one run: :mod:`lnbench.config.data`,
:mod:`lnbench.config.model`, :mod:`lnbench.config.train`), and optionally ``compare`` and
``sweep`` (what the multi-run experiments vary) and ``launcher``. Every key has a default, so an
empty file is a valid config; an unknown key, a wrong type or an impossible value is a
validation error, which :func:`lnbench.config.load.load_config` turns into a
:class:`ConfigError` whose message is one line naming the file and the key.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, model_validator

from lnbench.config.data import DataConfig
from lnbench.config.identity import effective_yaml, identity_yaml
from lnbench.config.model import ModelConfig
from lnbench.config.ownership import PLAN_KEYS, owners
from lnbench.config.sections import Family, Norm, Section, Seed, unique
from lnbench.config.train import TrainConfig
from lnbench.config.words import joined
from lnbench.names import EXPERIMENT_KINDS, FAMILY_NAMES, FAMILY_REGISTRY, NORM_KINDS, TASKS

DEFAULT_NUM_SEEDS = 5  # seeds of compare and sweeps when ``seeds`` is not set: seed, seed + 1, ...
GRID_SECTIONS = ("data", "model", "train")  # the sections whose keys sweep.grid varies

#: the built-in families compare trains by default (sequences), and those that read one vector (the MLP)
_SEQUENCE_FAMILIES = [name for name in FAMILY_NAMES if not FAMILY_REGISTRY[name].reads_vectors]
_VECTOR_FAMILIES = [name for name in FAMILY_NAMES if FAMILY_REGISTRY[name].reads_vectors]


def is_grid_key(key: str) -> bool:
    """Whether ``key`` is ``section.key`` of a section in :data:`GRID_SECTIONS` (a key sweep.grid may vary)."""
    section, _, leaf = key.partition(".")
    return section in GRID_SECTIONS and bool(leaf) and "." not in leaf


class CompareConfig(Section):
    """What ``lnbench compare`` varies: every family x norm x seed."""

    families: list[Family] = Field(
        default_factory=lambda: list(_SEQUENCE_FAMILIES),
        min_length=1,
        description="compare: the model families trained, each with every norm and seed "
        f"({', '.join(_SEQUENCE_FAMILIES)}; no repeats). Without the LSTM: --set "
        f'"compare.families=[rnn,transformer]". {joined(_VECTOR_FAMILIES, "and")} '
        f"read{'s' if len(_VECTOR_FAMILIES) == 1 else ''} flat MNIST only (data.task mnist, data.mnist_order flat), "
        "so a compare of it is of it alone.",
    )
    norms: list[Norm] = Field(
        default_factory=lambda: ["none", "batch", "layer"],
        min_length=1,
        description=f"compare: the norms trained and compared pairwise within each family ({', '.join(NORM_KINDS)}, "
        "or a user's norm class 'package.module:ClassName' or entry point; no repeats).",
    )
    placements: list[Literal["joint", "separate"]] | None = Field(
        None,
        min_length=1,
        description="compare: the RNN's norm placements trained, each its own group with its own Holm family "
        "(joint = norm(W_hh h + W_xh x), Ba et al. eq. 4; separate = norm(W_hh h) + norm(W_xh x), the form of "
        "the paper's LN-LSTM); null: model.norm_placement only. The Transformer has no placement.",
    )
    norm_gain_inits: list[Annotated[float, Field(gt=0)] | None] | None = Field(
        None,
        min_length=1,
        description="compare: the initial gains trained (model.norm_gain_init for each; null in the list: each "
        "model's paper, 1 and the BN-LSTM's 0.1), each value its own group with its own Holm family, so norms are "
        "compared at equal initial gains; null: model.norm_gain_init only. E.g. [0.1, 1].",
    )
    target_acc: float = Field(
        0.9,
        gt=0,
        le=1,
        description="Target test accuracy, a fraction in (0, 1]: the 'first epoch reaching' column, the "
        f"verdicts and the accuracy plot's dotted line, in every command ({', '.join(EXPERIMENT_KINDS)}).",
    )

    @model_validator(mode="after")
    def _no_duplicates(self) -> "CompareConfig":
        unique(self.families, "families"), unique(self.norms, "norms")
        if self.placements is not None:
            unique(self.placements, "placements")
        if self.norm_gain_inits is not None:
            unique(self.norm_gain_inits, "norm_gain_inits")
        return self


class SweepConfig(Section):
    """What ``lnbench batchsize-sweep`` varies: every norm x batch size, one family."""

    family: Family = Field("rnn", description="batchsize-sweep: the one model family trained.")
    norms: list[Norm] = Field(
        default_factory=lambda: ["none", "batch", "layer"],
        min_length=1,
        description="batchsize-sweep: the norms trained at every batch size (no repeats).",
    )
    batch_sizes: list[int] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128],
        min_length=1,
        description="batchsize-sweep: the batch sizes B trained (each >= 1 and <= data.n_train; no repeats). "
        "Every cell has the same epochs, so a smaller batch takes more steps.",
    )
    reference_batch_size: int | None = Field(
        None,
        ge=1,
        description="batchsize-sweep: each batch size is compared with the same norm at this one (one of "
        "batch_sizes); null: train.batch_size if it is swept, else the largest swept batch size.",
    )
    grid: dict[str, list[Any]] | None = Field(
        None,
        description="sweep: config keys (section.key, e.g. model.norm, data.seq_len, train.lr) -> lists of "
        "values; the cells are their product, each trained with every seed. On the command line one value: "
        '--set "sweep.grid={model.norm: [none, layer], train.lr: [1e-3, 1e-2]}".',
    )

    @model_validator(mode="after")
    def _positive(self) -> "SweepConfig":
        if any(b < 1 for b in self.batch_sizes):
            raise ValueError(f"batch_sizes must all be >= 1, got {self.batch_sizes}")
        unique(self.batch_sizes, "batch_sizes"), unique(self.norms, "norms")
        if self.reference_batch_size is not None and self.reference_batch_size not in self.batch_sizes:
            raise ValueError(
                f"reference_batch_size {self.reference_batch_size} is not one of batch_sizes {self.batch_sizes}"
            )
        return self


class LauncherConfig(Section):
    """Where ``--launcher submitit`` runs the cells (``submitit.AutoExecutor(cluster=...)``)."""

    cluster: Literal["slurm", "local"] = Field(
        "slurm",
        description="--launcher submitit: slurm (a Slurm job array) or local (submitit's local executor, no "
        "cluster: the same code path as local processes).",
    )
    partition: str | None = Field(None, description="Slurm partition (slurm_partition); null: the cluster's default.")
    timeout_min: int = Field(60, ge=1, description="Time limit per job in minutes; a job is one cell (all its seeds).")
    cpus_per_task: int = Field(1, ge=1, description="CPUs per job (Slurm cpus_per_task).")
    mem_gb: float = Field(4.0, gt=0, description="Memory per job in GB (Slurm mem).")
    array_parallelism: int = Field(64, ge=1, description="Jobs of the array running at once (slurm_array_parallelism).")
    slurm_additional_parameters: dict[str, Any] = Field(
        default_factory=dict,
        description="Further sbatch parameters passed through as given, e.g. {account: myproject}.",
    )


class RunConfig(Section):
    """A whole config file. ``name`` becomes the run folder's suffix."""

    name: str = Field(
        "run",
        pattern=r"^[A-Za-z0-9_.-]+$",
        max_length=80,
        description="Suffix of the run folder's name (letters, digits, _ . -).",
    )
    seed: Seed = Field(
        0,
        description="Seed of one run: its data, initial weights and batch order (NumPy default_rng and "
        "torch.manual_seed). --seed N replaces it (and shifts a seeds list to N, N + 1, ...).",
    )
    seeds: list[Seed] | None = Field(
        None,
        min_length=1,
        description=f"The seeds of {joined([k for k, info in EXPERIMENT_KINDS.items() if info.seeded], 'and')}, each "
        "its own data, initial weights and batch order (no repeats); null: the 5 seeds seed .. seed + 4. One seed "
        "covers the test-set noise only.",
    )
    data: DataConfig = Field(default_factory=DataConfig, description="The task and its data (lnbench.training.tasks).")
    model: ModelConfig = Field(default_factory=ModelConfig, description="The model to build (lnbench.nn.models).")
    train: TrainConfig = Field(
        default_factory=TrainConfig, description="Optimisation: the optimizer and learning-rate schedule."
    )
    compare: CompareConfig = Field(default_factory=CompareConfig, description="What lnbench compare varies.")
    sweep: SweepConfig = Field(
        default_factory=SweepConfig, description="What lnbench batchsize-sweep and lnbench sweep vary."
    )
    launcher: LauncherConfig = Field(
        default_factory=LauncherConfig, description="Where --launcher submitit runs the cells."
    )

    @model_validator(mode="after")
    def _batches_fit_the_data(self) -> "RunConfig":
        if self.train.batch_size > self.data.n_train - self.data.n_val:
            raise ValueError(f"train.batch_size ({self.train.batch_size}) must be <= {self.data.training_sequences}")
        unique(self.seeds or [], "seeds")
        return self

    @property
    def seed_list(self) -> list[int]:
        """``seeds``, or the :data:`DEFAULT_NUM_SEEDS` seeds from ``seed`` when it is not set."""
        return self.seeds or [self.seed + k for k in range(DEFAULT_NUM_SEEDS)]

    @property
    def reference_batch_size(self) -> int:
        """The sweep's reference batch size (see :class:`SweepConfig`)."""
        if self.sweep.reference_batch_size is not None:
            return self.sweep.reference_batch_size
        return self.train.batch_size if self.train.batch_size in self.sweep.batch_sizes else max(self.sweep.batch_sizes)

    def with_changes(self, **changes: Any) -> "RunConfig":
        """A re-validated deep copy with dotted-path changes given as ``section__key=value``
        (``model__norm="batch"``).

        A change of ``data__task`` leaves out the data keys of other tasks that this config sets
        (``offset_std`` of trend, for a cell of adding), back at their defaults unless ``changes``
        sets them too: a task's own key applies to the cells of its task only (``sweep.grid`` over
        ``data.task``)."""
        raw = self.model_dump(mode="python")
        task = changes.get("data__task", self.data.task)
        if task != self.data.task and task in TASKS:
            for key, tasks in owners("data.task").items():
                leaf = key.partition(".")[2]
                if task not in tasks and f"data__{leaf}" not in changes:
                    raw["data"][leaf] = DataConfig.model_fields[leaf].default
        for key, value in changes.items():
            node = raw
            *parents, leaf = key.split("__")
            for p in parents:
                node = node[p]
            node[leaf] = value
        return RunConfig.model_validate(raw)

    def to_yaml(self, model_family_only: bool = False) -> str:
        """The resolved config as YAML; with ``model_family_only``, without the model keys that
        do not apply to ``model.family`` or to ``model.norm`` (a run's config.yaml records what it
        used: :func:`lnbench.config.ownership.owners`)."""
        return yaml.safe_dump(self._dump(model_family_only, "python"), sort_keys=False)

    def identity_yaml(self) -> str:
        """What makes a child run the same run (``config_hash``): :func:`lnbench.config.identity.identity_yaml`
        of its config.yaml (:meth:`to_yaml` of its family's and norm's keys)."""
        return identity_yaml(self._dump(True))

    def effective_yaml(self) -> str:
        """What a run trains, as YAML: :func:`lnbench.config.identity.effective_yaml` of its
        config.yaml (:meth:`to_yaml` of its family's and norm's keys). Runs of one experiment with
        equal effective YAML give the same numbers: one is trained, the others copy it."""
        return effective_yaml(self._dump(True))

    def _dump(self, model_family_only: bool, mode: Literal["json", "python"] = "json") -> dict:
        """The config as nested dicts, as YAML writes it (``mode`` python: ``lr_by_batch_size``'s keys
        integers, as the loader reads them back) or as its identity hashes it (json: those keys strings,
        as every ``config_hash`` was computed)."""
        raw = self.model_dump(mode=mode)
        if model_family_only:
            for by in PLAN_KEYS:  # model.family, model.norm
                value = raw["model"][by.partition(".")[2]]
                for key, values in owners(by).items():
                    if value not in values:
                        raw["model"].pop(key.partition(".")[2], None)
        return raw
