"""The top-label view of a prediction set (measures/bins.py TopLabel), computed once and read by every
metric: its values against hand-worked ones, what it keeps, what it rejects."""

import numpy as np
import pytest

from trustcal.measures.bins import TopLabel


def test_top_label_is_the_argmax_its_probability_and_whether_it_is_right():
    probs = np.array([[0.2, 0.5, 0.3], [0.4, 0.4, 0.2], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1]])
    top = TopLabel.of(probs, [1, 1, 0, 0])  # a tie takes the lowest index: row 1 predicts 0 (wrong)
    np.testing.assert_array_equal(top.conf, [0.5, 0.4, 0.8, 0.6])
    np.testing.assert_array_equal(top.hit, [1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(top.order, [1, 0, 3, 2])  # increasing confidence
    np.testing.assert_array_equal(top.rank, [1, 0, 3, 2])
    np.testing.assert_array_equal(top.onehot, [[0, 1, 0], [0, 1, 0], [1, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(top.bins(2, "mass"), [0, 0, 1, 1])  # rank·M // N
    np.testing.assert_array_equal(top.bins(5, "width"), [2, 1, 3, 2])  # (0.4, 0.6] holds 0.5 and 0.6
    count, mean_conf, mean_hit = top.binned(2, "mass")
    np.testing.assert_array_equal(count, [2, 2])
    np.testing.assert_allclose(mean_conf, [0.45, 0.7])
    np.testing.assert_array_equal(mean_hit, [0.5, 0.5])


def test_top_label_keeps_what_it_computed_read_only():
    rng = np.random.default_rng(0)
    top = TopLabel.of(rng.dirichlet(np.ones(4), 50), rng.integers(0, 4, 50))
    assert top.order is top.order and top.bins(10, "mass") is top.bins(10, "mass")
    assert top.onevsrest(5)[2] is top.onevsrest(5)[2]
    for array in (top.order, top.rank, top.onehot, top.bins(7), *top.binned(7), *top.onevsrest(5)):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0


def test_top_label_rejects_what_the_metrics_reject():
    with pytest.raises(ValueError, match="labels must lie"):
        TopLabel.of(np.full((2, 2), 0.5), [0, 2])
    top = TopLabel.of(np.full((2, 2), 0.5), [0, 1])
    with pytest.raises(ValueError, match="n_bins must be >= 1"):
        top.bins(0, "mass")
    with pytest.raises(ValueError, match="binning must be one of"):
        top.bins(3, "quantile")
