"""The bootstrap in memory proportional to the data: counts of one byte beyond SAMPLE_BLOCK samples (float32 up to
it), drawn a few resamples at a time with the same draws as one call; the products with per-sample terms in blocks of samples (exact for whole-number terms,
to float32 rounding otherwise); and a peak that a B × N float32 copy of the counts alone would exceed."""

import tracemalloc

import numpy as np
import pytest

from trustcal.evaluation import MetricParams
from trustcal.measures import bootstrap as bs
from trustcal.measures.bins import TopLabel
from trustcal.measures.bootstrap import (
    BootstrapParams,
    bootstrap_opinions,
    bootstrap_scores_of,
    bootstrap_selective_scores,
    resample_counts,
    resampled_sums,
)
from trustcal.measures.selective import opinion_scores
from trustcal.measures.trust import TrustParams


def one_call_counts(n: int, params: BootstrapParams) -> np.ndarray:
    """The counts as one call draws them: all B × n draws at once (the draw before blocks)."""
    rng = np.random.default_rng(params.seed)
    draws = rng.integers(0, n, size=(params.resamples, n))
    draws += n * np.arange(params.resamples)[:, None]
    return np.bincount(draws.ravel(), minlength=params.resamples * n).reshape(params.resamples, n)


@pytest.mark.parametrize("n, resamples", [(1, 3), (7, 50), (1001, 40), (20_001, 200)])
@pytest.mark.parametrize("block", [None, 1000], ids=["float32 counts", "counts of one byte"])
def test_counts_drawn_in_blocks_are_the_draws_of_one_call(n, resamples, block, monkeypatch):
    monkeypatch.setattr(bs, "DRAWS_PER_BLOCK", 3 * n + 1)  # three resamples a block, the last one shorter
    if block:
        monkeypatch.setattr(bs, "SAMPLE_BLOCK", block)
    params = BootstrapParams(resamples=resamples, seed=7)
    got = resample_counts(n, params)
    assert got.dtype == (np.uint8 if block and n > block else np.float32) and got.shape == (resamples, n)
    assert np.array_equal(got, one_call_counts(n, params))
    assert (got.sum(axis=1) == n).all()


def test_a_count_beyond_one_byte_widens_the_counts(monkeypatch):
    """A sample drawn 300 times in a resample (every draw of the first resample on sample 0) does not wrap."""

    class AllOnFirst:
        def __init__(self):
            self.calls = 0

        def integers(self, low, high, size):
            self.calls += 1
            return np.zeros(size, dtype=np.int64) if self.calls == 1 else np.arange(np.prod(size)).reshape(size) % high

    monkeypatch.setattr(bs, "DRAWS_PER_BLOCK", 300)  # one resample a block
    monkeypatch.setattr(bs, "SAMPLE_BLOCK", 100)  # counts of one byte
    monkeypatch.setattr(bs.np.random, "default_rng", lambda seed: AllOnFirst())
    got = resample_counts(300, BootstrapParams(resamples=3))
    assert got.dtype == np.uint16
    assert got[0, 0] == 300 and got[0, 1:].sum() == 0 and (got[1:] == 1).all()


def predictions(n: int, k: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(0, 1.5, (n, k))
    logits[np.arange(n), labels] += 1.5
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return probs, labels


def test_sums_in_blocks_of_samples_equal_one_product(monkeypatch):
    """Whole-number terms: exactly; real terms: to float32 rounding of the N terms."""
    counts = resample_counts(5000, BootstrapParams(resamples=30)).astype(np.uint8)
    rng = np.random.default_rng(1)
    whole = rng.integers(0, 3, (5000, 4)).astype(np.float32)
    real = rng.normal(size=(5000, 4)).astype(np.float32)
    one_whole, one_real = resampled_sums(counts, whole, 5000), resampled_sums(counts, real, 5000)
    assert np.array_equal(one_whole, (counts.astype(np.float32) @ whole).astype(np.float64))
    assert np.array_equal(one_real, (counts.astype(np.float32) @ real).astype(np.float64))
    monkeypatch.setattr(bs, "SAMPLE_BLOCK", 999)
    assert np.array_equal(resampled_sums(counts, whole, 5000), one_whole)
    built = []
    blocked = resampled_sums(counts, lambda a, b: built.append((a, b)) or real[a:b], 5000)
    assert built == [(a, min(a + 999, 5000)) for a in range(0, 5000, 999)]
    assert np.allclose(blocked, one_real, rtol=0, atol=5000 * 4 * np.finfo(np.float32).eps * np.abs(real).max())
    assert not np.array_equal(blocked, one_real)  # the blocks really were summed apart


def test_the_replicates_in_blocks_of_samples_are_those_of_one_product(monkeypatch):
    """Opinions and selective areas (sums of whole numbers): the same to the last bit; the scores to float32
    rounding of their sums."""
    probs, labels = predictions(4000)
    counts = resample_counts(4000, BootstrapParams(resamples=40))
    assert counts.dtype == np.float32
    trust = TrustParams()
    hit = (probs.argmax(axis=1) == labels).astype(float)
    conf = probs.max(axis=1)
    scores = opinion_scores(conf, np.round(conf, 1), 1 - np.round(conf, 1), 0.5)

    def everything():
        return (
            bootstrap_opinions(probs, labels, counts, trust),
            bootstrap_opinions(probs, labels, counts, TrustParams(representative="mean")),
            bootstrap_selective_scores(scores, hit, counts),
            bootstrap_scores_of(TopLabel.of(probs, labels), counts, MetricParams()),
        )

    opinions, mean, selective, scalar = everything()
    monkeypatch.setattr(bs, "SAMPLE_BLOCK", 1000)
    counts = counts.astype(np.uint8)  # as resample_counts keeps them beyond SAMPLE_BLOCK samples
    opinions2, mean2, selective2, scalar2 = everything()
    for name in opinions:
        assert np.array_equal(opinions[name], opinions2[name]), name
        assert np.allclose(mean[name], mean2[name], rtol=1e-12, atol=0), name
    for name in selective:
        for area in selective[name]:
            assert np.array_equal(selective[name][area], selective2[name][area]), (name, area)
    assert scalar.keys() == scalar2.keys()
    for name in scalar:
        assert np.allclose(scalar[name], scalar2[name], rtol=1e-5, atol=1e-6), name


def test_the_weights_in_confidence_order_keep_the_counts_one_byte_each():
    probs, labels = predictions(3000)
    counts = resample_counts(3000, BootstrapParams(resamples=20)).astype(np.uint8)
    top = TopLabel.of(probs, labels)
    weights = top.weights_in_order(counts)
    assert weights.dtype == np.uint8 and weights.shape == (21, 3000)
    assert (weights[0] == 1).all() and np.array_equal(weights[1:], counts[:, top.order])
    assert top.weights_in_order(counts.astype(np.float64)).dtype == np.float32  # other counts: float32, as before


def test_the_bootstrap_of_the_scores_needs_no_b_by_n_float32_copy_of_the_counts():
    """300,000 samples, 200 resamples: the counts take 60 MB (one byte each); a float32 copy of them alone would
    take 240 MB, the N × F terms as much again. The scores' replicates stay well below one such copy."""
    n = 300_000
    probs, labels = predictions(n, k=10)
    counts = resample_counts(n, BootstrapParams())
    top = TopLabel.of(probs, labels)
    top.onehot, top.order, top.rank  # noqa: B018 (kept by the TopLabel for every metric, not the bootstrap's)
    tracemalloc.start()
    try:
        bootstrap_scores_of(top, counts, MetricParams())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    float32_copy = counts.size * 4
    assert peak < 0.75 * float32_copy, f"peak {peak / 2**20:.0f} MB"


def test_selective_scores_refuse_counts_of_another_size():
    counts = resample_counts(3, BootstrapParams(resamples=5))
    with pytest.raises(ValueError, match=r"^counts have 3 samples, the hits 4, the scores 4$"):
        bootstrap_selective_scores({"confidence": np.ones(4)}, np.ones(4), counts)
