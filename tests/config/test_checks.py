"""lnbench.config.checks, the checks of a whole experiment before anything is written: --resume
against the folder's config, the sweep's batch sizes and the memory the seeds need."""

import pytest

from lnbench.config import ConfigError, RunConfig, load_config
from lnbench.config.checks import check_sweep


def test_resume_with_the_same_regimes_in_another_order_says_so(tmp_path):
    """A claims folder of --tasks trend,adding resumed with --tasks adding,trend: its config.yaml
    lists the same regimes in another order, and the refusal says so ("the same settings in another
    order", no empty "()"); a changed value is named with both values."""
    import json

    from lnbench.config.checks import check_resume

    (tmp_path / "run.json").write_text(json.dumps({"kind": "claims"}))
    (tmp_path / "config.yaml").write_text("default:\n  seed: 0\ndefault@adding:\n  seed: 0\n")
    with pytest.raises(ConfigError) as err:
        check_resume(tmp_path, "default@adding:\n  seed: 0\ndefault:\n  seed: 0\n", "claims")
    assert "the same settings in another order" in str(err.value) and "()" not in str(err.value)
    with pytest.raises(ConfigError, match=r"default.seed: 0 in the folder, 1 now"):
        check_resume(tmp_path, "default:\n  seed: 1\ndefault@adding:\n  seed: 0\n", "claims")


@pytest.mark.parametrize(
    ("overrides", "data"),
    [
        (
            ["data.n_train=5000", "data.n_val=4999"],
            "data.n_train - data.n_val (5000 - 4999 = 1, the training sequences)",
        ),
        (["data.n_train=100"], "data.n_train (100)"),
    ],
)
def test_the_sweep_batch_sizes_message_spells_out_the_training_sequences(overrides, data):
    """sweep.batch_sizes past the training sequences: the message gives the keys, their values and
    the difference in one phrase, the one train.batch_size's message uses. Oracle: the arithmetic
    5000 - 4999 = 1 by hand."""
    cfg = load_config(None, [*overrides, "train.batch_size=1", "sweep.batch_sizes=[1,128]"])
    with pytest.raises(ConfigError) as err:
        check_sweep(cfg)
    assert (
        str(err.value) == f"sweep.batch_sizes: [128] exceed {data}; every batch size must be <= the training sequences"
    )
    with pytest.raises(ConfigError) as err:
        load_config(None, [*overrides, "train.batch_size=128"])
    assert f"train.batch_size (128) must be <= {data}" in str(err.value)


def test_a_config_whose_seeds_do_not_fit_in_memory_names_the_seeds_that_would(monkeypatch):
    """The memory refusal of a compare that fits with fewer of its seeds names ``seeds`` and the most
    that fit (oracle: memory_needed for 2 and 3 seeds against a memory set between them); a config
    too big for one seed gives no seeds advice."""
    from lnbench.config import checks

    cfg = RunConfig().with_changes(seed=3)  # 5 seeds: 3 .. 7
    have = (checks.memory_needed(cfg, 2) + checks.memory_needed(cfg, 3)) // 2
    monkeypatch.setattr(checks, "available_memory", lambda: have)
    with pytest.raises(ConfigError) as err:
        checks.check_memory_of_families(cfg, ["rnn"])
    assert "5 seeds at once" in str(err.value)
    assert "; set seeds to at most 2 seeds (e.g. seeds: [3, 4]), or lower data.n_train," in str(err.value)
    monkeypatch.setattr(checks, "available_memory", lambda: checks.memory_needed(cfg, 1) - 1)
    with pytest.raises(ConfigError) as err:
        checks.check_memory_of_families(cfg, ["rnn"])
    assert "more than the" in str(err.value) and "seeds:" not in str(err.value)


def test_a_family_whose_members_train_one_after_another_needs_one_seeds_memory(monkeypatch):
    """At pixel MNIST's sizes (T 784, B 64, H 100) the LSTM trains its seeds one after another
    (lnbench.names.seeds_train_together) and the RNN as one ensemble: with memory for one seed
    and not for five (oracle: memory_needed of one LSTM seed and of five RNN seeds), five LSTM seeds pass the memory
    check and five RNN seeds are refused with "5 seeds at once"."""
    from lnbench.config import checks

    cfg = load_config(None, ["data.task=mnist", "data.mnist_order=pixels", "model.hidden_size=100"])
    lstm, rnn = cfg.with_changes(model__family="lstm"), cfg.with_changes(model__family="rnn")
    have = (checks.memory_needed(lstm, 1) + checks.memory_needed(rnn, 5)) // 2  # 2.4 and 3.0 GiB
    assert checks.memory_needed(lstm, 5) > have
    monkeypatch.setattr(checks, "available_memory", lambda: have)
    checks.check_memory_of_families(cfg, ["lstm"])
    with pytest.raises(ConfigError, match="5 seeds at once"):
        checks.check_memory_of_families(cfg, ["rnn"])


def test_the_pixel_by_pixel_mnist_preset_trains_one_seed():
    """configs/compare_mnist_pixels.yaml sets seeds: [0], and its one LSTM seed fits in 24 GiB
    (memory_needed: ~12 GiB per seed at T = 784, trained one seed at a time)."""
    from lnbench.config import checks

    cfg = load_config("configs/compare_mnist_pixels.yaml")
    assert cfg.seed_list == [0]
    assert 8 * 2**30 < checks.memory_needed(cfg.with_changes(model__family="lstm"), 1) < 24 * 2**30


def test_a_set_learning_rate_that_no_run_trains_at_is_refused():
    """``--set train.lr`` where train.lr_by_batch_size covers every batch size of the plan is used by
    no run: refused in one line naming it and each batch size's rate; a plan with one batch size the
    table leaves out uses it, and a config file's lr (not --set) is let through."""
    from lnbench.config.checks import check_lr_used

    table = "train.lr_by_batch_size={4: 1e-4, 128: 1e-3}"
    cfg = load_config(None, [table, "train.lr=0.02", "train.batch_size=4"])
    covered = [cfg, cfg.with_changes(train__batch_size=128)]
    with pytest.raises(ConfigError) as err:
        check_lr_used(covered, [table, " train.lr = 0.02"])
    assert str(err.value) == (
        "--set train.lr = 0.02: no run of this plan trains at it: train.lr_by_batch_size gives each of its batch "
        "sizes its own rate (4: 0.0001, 128: 0.001); set the rates there, or remove --set train.lr"
    )
    check_lr_used([*covered, cfg.with_changes(train__batch_size=16)], ["train.lr=0.02"])  # 16 trains at 0.02
    check_lr_used(covered, [table])  # no --set train.lr
