"""lnbench.analysis.metrics: an amount of each metric in its units."""

import pytest

from lnbench.analysis.metrics import format_amount


@pytest.mark.parametrize(
    "metric,x,signed,text",
    [
        ("final_test_acc", 0.015, True, "+1.5 points"),
        ("final_test_acc", -0.02, True, "-2.0 points"),
        ("final_test_acc", 0.02, False, "2.0 points"),
        ("mean_train_loss", 0.02, False, "0.020 nats"),
        ("mean_train_loss", -0.0834, True, "-0.083 nats"),
        ("abs_scale_spearman", 0.1, False, "0.10"),
        ("abs_scale_spearman", 0.123, True, "+0.12"),
    ],
)
def test_format_amount(metric, x, signed, text):
    assert format_amount(metric, x, signed) == text
