"""Every per-epoch field of metrics.json reaches ``lnbench.load`` and TensorBoard: the fields are
declared once by shape (``records.schema.EPOCH_*``), and both iterate the declarations."""

import json
from dataclasses import fields

import pytest

from lnbench.records import schema
from lnbench.records.schema import Metrics

#: the Metrics fields that are not one value (or one vector) per epoch
NOT_PER_EPOCH = {
    "family", "norm", "batch_size", "seed", "hidden_size", "n_test", "n_val", "task", "num_classes",
    "batch_norm_stats", "norm_placement", "num_layers", "norm_gain_init", "initial_gain", "status", "epochs",
    "test_correct", "test_correct_batch_stats", "scale_quartile_edges", "diverged_at_epoch", "divergence_reason",
    "warnings", "schema_version",
}  # fmt: skip
DECLARED = (
    schema.EPOCH_SCALARS + schema.EPOCH_BY_LAYER + schema.EPOCH_BY_SCALE + schema.EPOCH_CURVES + schema.EPOCH_BY_NAME
)


def _filled() -> Metrics:
    """Two epochs of a 2-layer model over T = 3 timesteps, every per-epoch value distinct."""
    v = iter(range(1, 10_000))
    E, L, T = 2, 2, 3
    m = Metrics(family="lstm", num_layers=L, epochs=[1, 2])
    for key in schema.EPOCH_SCALARS:
        setattr(m, key, [float(next(v)) for _ in range(E)])
    for key in schema.EPOCH_BY_LAYER:
        setattr(m, key, [[float(next(v)) for _ in range(L)] for _ in range(E)])
    m.saturation_by_scale = [[float(next(v)) for _ in range(4)] for _ in range(E)]
    m.hidden_norm = [[float(next(v)) for _ in range(T)] for _ in range(E)]
    m.hidden_norm_by_scale = [[[float(next(v)) for _ in range(T)] for _ in range(4)] for _ in range(E)]
    m.hidden_norm_by_layer = [[[float(next(v)) for _ in range(T)] for _ in range(L)] for _ in range(E)]
    m.grad_norm = {"cell.weight": [float(next(v)) for _ in range(E)]}
    m.grad_norm_layer = {"layer1": [float(next(v)) for _ in range(E)]}
    for f in fields(Metrics):
        if f.name.endswith("_init") and f.name.removesuffix("_init") in DECLARED:
            value = getattr(m, f.name.removesuffix("_init"))
            setattr(m, f.name, value[0] if isinstance(value, list) else None)
    m.hidden_norm_init = [float(next(v)) for _ in range(T)]
    return m


def _numbers(value) -> list[float]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return [] if value is None else [float(value)]


def test_every_per_epoch_field_is_declared_by_its_shape():
    """Oracle: the Metrics fields, less those that are not per epoch and the probes before training."""
    per_epoch = {f.name for f in fields(Metrics)} - NOT_PER_EPOCH
    per_epoch = {k for k in per_epoch if not k.endswith("_init")}
    assert sorted(DECLARED) == sorted(per_epoch) and len(set(DECLARED)) == len(DECLARED)


def test_every_per_epoch_value_reaches_lnbench_load(tmp_path):
    """Each value of each declared field, every epoch, is somewhere in lnbench.load's epochs,
    hidden_norm, grad_norm or grad_norm_layer table of that run (oracle: the numbers written)."""
    import lnbench

    m = _filled()
    run = tmp_path / "20260101T000000_000000Z_train"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps(m.to_dict()))
    (run / "run.json").write_text(json.dumps({"kind": "train", "status": "completed"}))
    t = lnbench.load(run)
    seen = set()
    for name in ("epochs", "hidden_norm", "grad_norm", "grad_norm_layer"):
        frame = t[name]
        for col in frame.columns:
            seen |= {float(x) for x in frame[col] if isinstance(x, (int, float)) and x == x}
    for key in DECLARED:
        missing = [x for x in _numbers(getattr(m, key)) if x not in seen]
        assert not missing, (key, missing)
    by_layer = t.hidden_norm[t.hidden_norm.layer == 2].sort_values(["epoch", "timestep"])
    assert list(by_layer[by_layer.epoch == 1].hidden_norm) == m.hidden_norm_by_layer[0][1]


def test_every_per_epoch_value_reaches_tensorboard():
    """Each value of each declared field is a TensorBoard scalar at its epoch, under a tag that
    starts with the field's metrics.json key (oracle: the numbers written; a fake writer)."""
    pytest.importorskip("tensorboard")
    from lnbench.experiments.tensorboard import TensorBoard

    written: dict[int, list[tuple[str, float]]] = {}

    class Writer:
        def add_scalar(self, tag, value, step=None):
            written.setdefault(step, []).append((tag, float(value)))

        def flush(self):
            pass

    m = _filled()
    board = TensorBoard.__new__(TensorBoard)
    board.writer = Writer()
    for epoch in m.epochs:
        board.epoch(m, epoch)
    for key in DECLARED:
        for i, epoch in enumerate(m.epochs):
            value = getattr(m, key)
            at = {k: v[i] for k, v in value.items()} if isinstance(value, dict) else value[i]
            tagged = {x for tag, x in written[epoch] if tag == key or tag.startswith(f"{key}/")}
            missing = [x for x in _numbers(at) if x not in tagged]
            assert not missing, (key, epoch, missing)
