"""Bootstrap of the trust opinion: each resample equals Algorithm 1 run on the resampled rows."""

import numpy as np
import pytest

from trustcal.measures.bootstrap import BootstrapParams, bootstrap_opinions, percentile_interval, resample_counts
from trustcal.measures.trust import TrustParams, trust_opinions


def predictions(n=500, k=4, seed=1):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 3
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    probs[0] = np.eye(k)[0]  # p = 1.0 belongs to the last cluster
    return probs, rng.integers(0, k, n)


@pytest.mark.parametrize("representative", ["midpoint", "mean"])
def test_each_resample_equals_algorithm_1_on_the_drawn_rows(representative):
    probs, labels = predictions()
    params = TrustParams(clusters=7, alpha=0.5, beta=2.0, representative=representative)
    counts = resample_counts(len(labels), BootstrapParams(resamples=5, seed=3))
    got = bootstrap_opinions(probs, labels, counts, params)
    for b in range(5):
        rows = np.repeat(np.arange(len(labels)), counts[b].astype(int))  # the drawn rows, with repeats
        want = trust_opinions(probs[rows], labels[rows], params)
        for name in ("belief", "disbelief", "uncertainty"):
            # the same sums in another order: float64 rounding of ~N terms
            np.testing.assert_allclose(got[name][b], want[name], rtol=0, atol=len(labels) * np.finfo(float).eps)


def test_counts_of_one_give_the_point_estimate():
    probs, labels = predictions()
    got = bootstrap_opinions(probs, labels, np.ones((1, len(labels)), np.float32))
    want = trust_opinions(probs, labels)
    np.testing.assert_allclose(got["belief"][0], want["belief"], atol=1e-12)


def test_resamples_are_multinomial_and_reproducible():
    a = resample_counts(100, BootstrapParams(resamples=50, seed=7))
    assert a.shape == (50, 100) and (a.sum(1) == 100).all() and (a >= 0).all()
    np.testing.assert_array_equal(a, resample_counts(100, BootstrapParams(resamples=50, seed=7)))
    assert not np.array_equal(a, resample_counts(100, BootstrapParams(resamples=50, seed=8)))


def test_percentile_interval_of_a_known_sample():
    lo, hi = percentile_interval(np.arange(101.0), level=0.9)
    assert (lo, hi) == pytest.approx((5.0, 95.0))


def test_interval_covers_the_sampling_spread_of_belief():
    """The bootstrap sd of a label's belief matches its spread over fresh test sets of the same model."""
    rng = np.random.default_rng(0)
    k, n = 3, 2000

    def draw(size):
        y = rng.integers(0, k, size)
        logits = rng.normal(size=(size, k)) + 2.5 * np.eye(k)[y]
        return np.exp(logits) / np.exp(logits).sum(1, keepdims=True), y

    fresh = np.array([trust_opinions(*draw(n))["belief"].iloc[0] for _ in range(200)])
    probs, labels = draw(n)
    boot = bootstrap_opinions(probs, labels, resample_counts(n, BootstrapParams(resamples=400)))["belief"][:, 0]
    # the sd of an sd estimate from 200 draws is ~5 %; allow four of those on each side
    assert 0.8 < boot.std() / fresh.std() < 1.25


def test_other_fusions_are_refused():
    probs, labels = predictions()
    with pytest.raises(ValueError, match="cumulative"):
        bootstrap_opinions(
            probs, labels, np.ones((1, len(labels)), np.float32), TrustParams(cluster_fusion="averaging")
        )
