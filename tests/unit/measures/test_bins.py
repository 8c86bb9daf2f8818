"""The bins' shared helpers (measures/bins.py): the Clopper–Pearson interval of a bin's accuracy, drawn on
the reliability diagrams, against scipy's Beta quantiles (the textbook form of the exact binomial interval)."""

import numpy as np
import pytest

from trustcal.measures.bins import clopper_pearson

scipy_stats = pytest.importorskip("scipy.stats")


def textbook(k, n, level=0.95):
    a = 1 - level
    lo = np.where(k > 0, scipy_stats.beta.ppf(a / 2, k, n - k + 1), 0.0)
    hi = np.where(k < n, scipy_stats.beta.ppf(1 - a / 2, k + 1, n - k), 1.0)
    return lo, hi


@pytest.mark.parametrize("level", [0.95, 0.9, 0.99])
def test_clopper_pearson_is_the_beta_quantiles(level):
    rng = np.random.default_rng(0)
    n = np.concatenate([rng.integers(1, 10_000, 200), [1, 2, 3, 10_000, 10_000, 10_000]])
    k = rng.binomial(n, np.concatenate([rng.uniform(0, 1, 200), [0.5, 0.5, 0.5, 0.5, 0.999, 0.001]]))
    k[:3] = 0
    k[3:6] = n[3:6]  # the edges: none and all correct
    lo, hi = clopper_pearson(k, n, level)
    want_lo, want_hi = textbook(k, n, level)
    np.testing.assert_allclose(lo, want_lo, atol=1e-10)
    np.testing.assert_allclose(hi, want_hi, atol=1e-10)
    assert np.all(lo <= k / n) and np.all(k / n <= hi)


def test_clopper_pearson_of_an_empty_bin_is_undefined_and_counts_are_checked():
    lo, hi = clopper_pearson([0, 3], [0, 4])
    assert np.isnan(lo[0]) and np.isnan(hi[0]) and 0 < lo[1] < 0.75 < hi[1] < 1
    with pytest.raises(ValueError, match="whole counts"):
        clopper_pearson([5], [4])
    with pytest.raises(ValueError, match="whole counts"):
        clopper_pearson([1.5], [4])
