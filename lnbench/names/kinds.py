"""The experiment kinds' commands (:data:`EXPERIMENT_KINDS`, one :class:`KindInfo` each): what
``lnbench KIND`` says and takes (its help, its default config, the shared options of
:data:`EXPERIMENT_OPTIONS`), for the command line to build it without importing the experiment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The options every experiment command may take (:class:`lnbench.cli.options.ExperimentArgs`
#: declares each, once), in the order ``--help`` lists them.
EXPERIMENT_OPTIONS = (
    "--set",
    "--runs-dir",
    "--seed",
    "--jobs",
    "--print-config",
    "--dry-run",
    "--resume",
    "--launcher",
    "--tensorboard",
    "--no-check",
)


@dataclass(frozen=True)
class KindInfo:
    """One experiment kind's command, ``lnbench KIND``: what it says and takes, for the command
    line to build it without importing the experiment (no pydantic: ``lnbench --help`` answers at
    once). :data:`lnbench.experiments.registry.EXPERIMENTS` holds its :class:`Experiment` and
    checks at import that the two agree.

    Attributes:
        help: the command's help; its first line is its line in ``lnbench --help``.
        config: the YAML config CONFIG defaults to (None: the command has no CONFIG).
        config_required: CONFIG has no default (``config`` is then its example): give it, or --resume.
        config_holds: what the config must hold, in CONFIG's help (sweep: "with a sweep.grid section").
        seeded: as :attr:`lnbench.experiments.base.Experiment.seeded`: --seed is the first of the
            seeds; False: the seed of the one model (a ``seeds`` list is dropped).
        options: the shared options it takes, of :data:`EXPERIMENT_OPTIONS`.
        option_help: option -> its help where its meaning is the kind's own (train's --seed).
    """

    help: str
    config: str | None = None
    config_required: bool = False
    config_holds: str = ""
    seeded: bool = True
    options: tuple[str, ...] = EXPERIMENT_OPTIONS
    option_help: dict[str, str] = field(default_factory=dict)


_OWN_CONFIG = "with its own config.yaml (or CONFIG, if given, which must equal it)"
IN_PROCESS = tuple(o for o in EXPERIMENT_OPTIONS if o not in ("--jobs", "--launcher"))

#: The experiment kinds that train, in ``lnbench --help``'s order: name (a CLI command, a run.json
#: ``kind``) -> its command. invariance and gradcheck train nothing: their commands are their own.
EXPERIMENT_KINDS: dict[str, KindInfo] = {
    "train": KindInfo(
        "Train one model; write config.yaml, run.json, metrics.json and the plots to a run folder.",
        config="configs/train.yaml",
        config_required=True,
        seeded=False,
        options=IN_PROCESS,
        option_help={
            "--seed": "The seed of the one model: replaces the config's seed (a seeds list, which train does not "
            "use, is dropped).",
            "--resume": f"Continue this interrupted or failed train run folder in place, {_OWN_CONFIG}, from its "
            "last finished epoch (its checkpoint.pt): the metrics of a run in one go. A finished run is kept.",
        },
    ),
    "compare": KindInfo(
        "Train every model family x norm x seed on identical data; plot, tabulate and test them.",
        config="configs/compare.yaml",
    ),
    "batchsize-sweep": KindInfo(
        "Train each norm at each batch size x seed (same data, weights and epochs per seed); plot, tabulate, test.",
        config="configs/batchsize_sweep.yaml",
    ),
    "sweep": KindInfo(
        "Train every cell of sweep.grid (the product of its values) x seed; tabulate, test each norm vs NoNorm, plot.",
        config="configs/sweep.yaml",
        config_holds="with a sweep.grid section",
    ),
    "claims": KindInfo(
        """Test each claim about LayerNorm in a regime where it can show; verdicts from paired runs.

        Each claim (e.g. "LayerNorm converges faster than NoNorm") is evaluated in a regime preset
        from --presets (default 5 seeds): held, not held or inconclusive, computed from the paired
        differences over seeds (Holm-corrected over the directional claims). --set and --seed apply
        to every preset, but for the keys a claim sets itself (model.norm, model.family, and
        train.batch_size where a claim trains at batch sizes of its own), which are refused. The
        LSTM's claims, those with SGD and Figure 6's run only with --all or
        --only (see --list). With --task or --tasks each claim also runs on those tasks, with a
        claim x task table of verdicts.
        """,
        options=tuple(o for o in EXPERIMENT_OPTIONS if o != "--no-check"),  # its norms are the built-in ones
        option_help={
            "--resume": "Continue this earlier claims folder with its own config.yaml (every regime's resolved "
            "config): keep the cells whose runs finished, run the rest."
        },
    ),
}


def register_kind(name: str, info: KindInfo) -> None:
    """Add an experiment kind's command (a test's, a user's own; its :class:`Experiment` goes
    into :data:`lnbench.experiments.registry.EXPERIMENTS`); :func:`lnbench.cli.app.experiment_command`
    builds it."""
    EXPERIMENT_KINDS[name] = info


#: Every kind of run folder (a run.json ``kind``): the experiment kinds, the two checks and a norm's
#: card, which train nothing (:data:`lnbench.experiments.registry.EXPERIMENTS` holds their classes, in this order).
RUN_KINDS = (*EXPERIMENT_KINDS, "invariance", "gradcheck", "card")
