"""Bootstrap over test samples: how much a number moves when the test set is drawn again.

A resample of the N test samples is a vector of multinomial counts w (Σ w = N;
sample i drawn w_i times). Every statistic of the trust opinion is a sum over
samples, so a resample only reweights those sums: with A the N × (K·M)
one-hot matrix of the (class, cluster) bin of every probability, the cluster
counts of all B resamples are one matrix product W·A (B × K·M), and the
true-label counts W·(A ∘ T). That makes B = 200 resamples of a 10,000-sample
epoch a few milliseconds instead of 200 passes of Algorithm 1.

Percentile intervals (Efron & Tibshirani 1993, §13.3): the (α/2, 1 − α/2)
quantiles of the B replicates. The same resamples (one seed) are used for
every epoch, calibration state and training seed of a dataset, because they
are all evaluated on the same test set.

Memory grows with N·B and no faster: beyond :data:`SAMPLE_BLOCK` samples the
counts are kept as one byte each (:func:`resample_counts`), and every product of the counts with an N × F
matrix of per-sample terms is one product for at most :data:`SAMPLE_BLOCK`
samples and otherwise a sum over blocks of that many samples, each block's
terms built as it is needed (:func:`resampled_sums`). Up to that size the
numbers are those of one float32 product of the whole matrices; beyond it,
the float32 products of the blocks are added in float64.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from trustcal.measures.bins import TopLabel, bin_indices
from trustcal.measures.limits import MAX_RESAMPLES, MAX_SEED, RESAMPLES_COST, SEED_COST
from trustcal.measures.metric_params import MetricParams
from trustcal.measures.metrics import METRICS
from trustcal.measures.options import check_fields, setting
from trustcal.measures.trust import TrustParams, cluster_index


@dataclass(frozen=True)
class BootstrapParams:
    """The test-set bootstrap behind every ``*_lo`` / ``*_hi`` interval: the number of resamples, the seed of
    their draw (the same resamples for every epoch and calibrator) and the interval's level."""

    resamples: int = setting(
        200,
        "resamples of the test set behind every interval",
        low=1,
        high=MAX_RESAMPLES,
        cost=RESAMPLES_COST,
        flag="bootstrap",
        off=0,
        metavar="B",
    )
    seed: int = setting(0, "seed of the resamples' draw", low=0, high=MAX_SEED, cost=SEED_COST)
    level: float = setting(
        0.95, "level of the percentile intervals", kind=float, low=0, high=1, low_open=True, high_open=True
    )

    def __post_init__(self):
        check_fields(self)


DRAWS_PER_BLOCK = 1 << 22  # draws made at once by resample_counts (32 MB of int64, and as much for their counts)
SAMPLE_BLOCK = 1 << 16  # samples per product of the counts with per-sample terms (resampled_sums)


def resample_counts(n: int, params: BootstrapParams = BootstrapParams()) -> np.ndarray:
    """B × n multinomial counts: how often each of the n samples is drawn in each resample. As float32 (what
    the products with per-sample terms take, :func:`resampled_sums`) up to :data:`SAMPLE_BLOCK` samples;
    beyond, as unsigned integers of one byte (a quarter of float32's memory; two, or more, where a sample is
    drawn more than 255 times in a resample, which so large a test set practically never sees), each block
    of samples taken to float32 as it is used.

    The n draws with replacement of each resample come from one generator seeded with ``params.seed``, a few
    resamples at a time (:data:`DRAWS_PER_BLOCK` draws): the same draws, in the same order, as one call
    drawing all B × n, so the counts do not depend on the block size."""
    rng = np.random.default_rng(params.seed)
    b = params.resamples
    counts = np.zeros((b, n), dtype=np.float32 if n <= SAMPLE_BLOCK else np.uint8)
    rows = max(1, DRAWS_PER_BLOCK // max(n, 1))
    for start in range(0, b, rows):
        stop = min(b, start + rows)
        draws = rng.integers(0, n, size=(stop - start, n))  # n draws with replacement per resample
        draws += n * np.arange(stop - start)[:, None]  # one block of n bins per resample
        block = np.bincount(draws.ravel(), minlength=(stop - start) * n).reshape(stop - start, n)
        del draws
        if counts.dtype.kind == "u" and block.size and block.max() > np.iinfo(counts.dtype).max:
            counts = counts.astype(np.min_scalar_type(int(block.max())))
        counts[start:stop] = block
    return counts


def resampled_sums(counts: np.ndarray, terms, n: int, dtype=np.float32) -> np.ndarray:
    """Σ_i counts[b, i]·terms[i, f] for every resample b and column f (B × F, float64): each resample's sum
    of the per-sample terms, its copies of a sample counted as often as it was drawn.

    ``terms``: the N × F matrix, or a function ``terms(start, stop)`` giving its rows start … stop − 1 (so
    that the whole matrix is never built). Computed in ``dtype`` (float32, as the counts are exact in it:
    whole numbers below 2^24) as one product where n ≤ :data:`SAMPLE_BLOCK`, otherwise one product per
    block of that many samples, the blocks' products added in float64; whole-number terms (counts of
    bins) give exact sums either way."""
    rows = terms if callable(terms) else (lambda start, stop: terms[start:stop])
    if n <= SAMPLE_BLOCK:
        return (np.asarray(counts, dtype=dtype) @ np.asarray(rows(0, n), dtype=dtype)).astype(np.float64)
    total = None
    for start in range(0, n, SAMPLE_BLOCK):
        stop = min(n, start + SAMPLE_BLOCK)
        part = np.asarray(counts[:, start:stop], dtype=dtype) @ np.asarray(rows(start, stop), dtype=dtype)
        total = part.astype(np.float64) if total is None else total + part
    return total


def resample_rows(counts: np.ndarray, columns: np.ndarray | None = None):
    """The resamples' counts a few at a time, as float32 rows (B_block × N, in the order ``columns`` when
    given): (first resample, block) pairs of about :data:`DRAWS_PER_BLOCK` values each, for the passes that
    go one resample at a time, so that no B × N copy of the counts is made."""
    n = counts.shape[1]
    rows = max(1, DRAWS_PER_BLOCK // max(n, 1))
    for start in range(0, len(counts), rows):
        block = counts[start : start + rows]
        if columns is not None:
            block = np.take(block, columns, axis=1)  # row by row: a few times faster than block[:, columns]
        yield start, np.asarray(block, dtype=np.float32)


def percentile_interval(replicates: np.ndarray, level: float = 0.95, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of ``replicates`` along ``axis`` (NaN replicates ignored)."""
    alpha = (1.0 - level) / 2.0
    replicates = np.asarray(replicates)
    # np.quantile where nothing is NaN: the same numbers, one sort instead of one call per column
    quantile = np.nanquantile if np.isnan(replicates).any() else np.quantile
    lo, hi = quantile(replicates, [alpha, 1.0 - alpha], axis=axis)
    return lo, hi


def bootstrap_opinions(
    probs: np.ndarray, labels: np.ndarray, counts: np.ndarray, params: TrustParams = TrustParams()
) -> dict[str, np.ndarray]:
    """Class and network opinions of every resample: ``belief``, ``disbelief``, ``uncertainty``,
    each B × (K + 1) (labels 0 … K−1, then the network), as :func:`trustcal.measures.trust.trust_opinions`
    computes them on the resampled test set. Cumulative fusion only (the sum of evidence)."""
    if params.cluster_fusion != "cumulative" or params.class_fusion != "cumulative":
        raise ValueError("the bootstrap of trust opinions supports cumulative fusion only")
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels)
    n_samples, k = probs.shape
    if counts.shape[1] != n_samples:
        raise ValueError(f"counts have {counts.shape[1]} samples, the predictions {n_samples}")
    m = params.clusters
    bins = np.arange(k) * m + cluster_index(probs, m)  # N × K: the (class, cluster) bin of each value
    true_bin = bins[np.arange(n_samples), labels]  # the bin of each sample's true-label probability

    def binned(start: int, stop: int) -> np.ndarray:
        """Rows start … stop − 1 of [one-hot (class, cluster) bins of the K values | that of the true label's]."""
        rows = np.arange(stop - start)
        block = np.zeros((stop - start, 2 * k * m), dtype=np.float32)
        block[np.repeat(rows, k), bins[start:stop].ravel()] = 1.0
        block[rows, k * m + true_bin[start:stop]] = 1.0
        return block

    both = resampled_sums(counts, binned, n_samples)  # integer counts, exact in float32 (< 2^24)
    n = both[:, : k * m].reshape(-1, k, m)
    t = both[:, k * m :].reshape(-1, k, m)
    if params.representative == "midpoint":
        rp = (np.arange(m) + 0.5) / m
    else:  # the cluster mean of each resample; the midpoint where a cluster is empty

        def valued(start: int, stop: int) -> np.ndarray:  # the value in its (class, cluster) bin
            block = np.zeros((stop - start, k * m))
            block[np.repeat(np.arange(stop - start), k), bins[start:stop].ravel()] = probs[start:stop].ravel()
            return block

        sums = resampled_sums(counts, valued, n_samples, dtype=np.float64).reshape(-1, k, m)
        rp = np.where(n > 0, sums / np.maximum(n, 1), (np.arange(m) + 0.5) / m)
    expected = n * rp
    s = params.alpha * np.maximum(t - expected, 0) + params.beta * np.maximum(expected - t, 0)
    r_c, s_c = t.sum(axis=2), s.sum(axis=2)  # B × K, cumulative fusion over clusters
    r = np.concatenate([r_c, r_c.sum(axis=1, keepdims=True)], axis=1)  # … and over classes
    s = np.concatenate([s_c, s_c.sum(axis=1, keepdims=True)], axis=1)
    total = params.weight + r + s
    return dict(belief=r / total, disbelief=s / total, uncertainty=params.weight / total)


def bootstrap_scores(
    probs: np.ndarray,
    labels: np.ndarray,
    counts: np.ndarray,
    metrics: MetricParams = MetricParams(),
    log_probs: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The scores of every resample (``counts``: B × N, :func:`resample_counts`), each a length-B array:
    :func:`bootstrap_scores_of` the top label of ``probs`` against ``labels`` (``log_probs``: their exact
    log-probabilities, for the NLL)."""
    return bootstrap_scores_of(TopLabel.of(probs, labels, log_probs), counts, metrics)


def bootstrap_scores_of(
    top: TopLabel, counts: np.ndarray, metrics: MetricParams = MetricParams(), names: Collection[str] | None = None
) -> dict[str, np.ndarray]:
    """The scores of every resample (``counts``: B × N, :func:`resample_counts`) of the predictions of
    ``top`` (a :class:`~trustcal.measures.bins.TopLabel`), each a length-B array: every metric of
    :data:`trustcal.measures.metrics.METRICS` with a per-sample term (accuracy, mean_confidence, nll,
    brier, net_trust_score), ece, ece_{M} and ece_mass_{M} for every M of ``metrics.ece_bins``,
    classwise_ece, l2_ece and l2_ece_debiased (``metrics.l2_bins`` equal-mass bins), ks_error, aurc,
    eaurc and augrc (docs/method.md §5), under ``metrics`` (a :class:`~trustcal.measures.metric_params.MetricParams`).
    Not the smooth ECE: its kernel sum over a fine grid would cost a second
    per epoch.

    Each is a sum over samples, or over bins of sums over samples, so all B resamples come from one
    matrix product of the counts with an N × F matrix of per-sample terms (F ≈ 5 + Σ M + K·M),
    and the KS error from one cumulative sum. The equal-width bins are the same on every resample,
    so those replicates equal the metric recomputed on the resampled rows. The equal-mass bins are
    those of the full test set (a resample's own ranks would move its edges slightly): the interval
    describes the ECE over fixed bins (docs/method.md §5).

    ``names``: these scores (None: every one; KS and the areas come together), each equal to the same score of the whole computation up
    to float32 rounding of its sums; the product then has only their columns and the KS and AURC walks run
    only when asked for (a shifted set's row needs accuracy, NLL, Brier and ECE: a tenth of the columns).
    """
    probs, conf, hit = top.probs, top.conf, top.hit
    m0 = metrics.ece_bins[0]
    wanted = None if names is None else set(names) | ({f"ece_{m0}"} if "ece" in names else set())

    def asked(*score: str) -> bool:
        return wanted is None or not wanted.isdisjoint(score)

    n, k = probs.shape
    if counts.shape[1] != n:
        raise ValueError(f"counts have {counts.shape[1]} samples, the predictions {n}")
    rows = np.arange(n)
    per_sample = {  # one column each
        metric.columns(metrics)[0]: metric.term(top, metrics)
        for metric in METRICS.values()
        if metric.term and asked(metric.columns(metrics)[0])
    }
    gap = hit - conf
    order = top.order  # one sort serves the equal-mass bins, KS and AURC
    binned = []  # (name, bins, bin of each sample, value of each sample): one column per bin
    for m in metrics.ece_bins:
        for name, scheme in ((f"ece_{m}", "width"), (f"ece_mass_{m}", "mass")):
            if asked(name):
                binned.append((name, m, top.bins(m, scheme), gap))
    l2 = asked("l2_ece", "l2_ece_debiased")
    if l2:
        l2_bins = metrics.l2_bins
        l2_idx = top.bins(l2_bins, "mass")
        for name, values in (("count", np.ones(n)), ("conf", conf), ("hit", hit)):
            binned.append((f"l2_{name}", l2_bins, l2_idx, values))
    classwise = asked("classwise_ece")
    columns = list(per_sample) + [b[0] for b in binned] + ["classwise_ece"] * classwise
    widths = [1] * len(per_sample) + [b[1] for b in binned] + [k * m0] * classwise

    def features(first: int, stop: int) -> np.ndarray:
        """Rows first … stop − 1 of the N × F matrix of per-sample terms, filled in place (float32, as the counts)."""
        block = np.zeros((stop - first, sum(widths)), dtype=np.float32)
        within = rows[: stop - first]
        for column, values in enumerate(per_sample.values()):
            block[:, column] = values[first:stop]
        start = len(per_sample)
        for _, width, idx, values in binned:
            block[within, start + idx[first:stop]] = values[first:stop]
            start += width
        if classwise:
            cls_idx = bin_indices(probs[first:stop], m0, "width") + m0 * np.arange(k)[None, :]  # a bin set a class
            block[within[:, None], start + cls_idx] = top.onehot[first:stop] - probs[first:stop]
        return block

    sums = resampled_sums(counts, features, n) / n  # B × F: each resample's sums / N
    out, start = {}, 0
    for name, width in zip(columns, widths):
        block = sums[:, start : start + width]
        start += width
        if width == 1:
            out[name] = block[:, 0]
        elif name == "classwise_ece":
            out[name] = np.abs(block).sum(axis=1) / k
        elif name.startswith("l2_"):
            out[name] = block * n  # per-bin sums (count, confidence, hits) of each resample
        else:
            out[name] = np.abs(block).sum(axis=1)
    if f"ece_{m0}" in out:
        out["ece"] = out[f"ece_{m0}"]
    if l2:
        out["l2_ece"], out["l2_ece_debiased"] = _l2(out.pop("l2_count"), out.pop("l2_conf"), out.pop("l2_hit"), n)
    if not asked("ks_error", "aurc", "eaurc", "augrc"):
        return out
    # KS and AURC: each resample's counts in increasing confidence (a contiguous row of N counts per
    # resample, so every pass below runs along memory), summed over each group of equal confidences
    # (cumulative sums over the samples, read at the last sample of each group)
    ranked = conf[order]
    ends = np.flatnonzero(np.append(ranked[1:] != ranked[:-1], True))  # last sample of each group
    ends = None if ends.size == n else ends  # no ties (the usual case): every sample ends its group
    drawn = top.weights_in_order(counts)[1:]  # B × N, the columns in increasing confidence
    if ends is None:  # distinct confidences (the usual case): one pass per resample for KS and the areas
        walk_extremes, areas = _distinct_walks(drawn, hit[order], n, gap[order])
        out["ks_error"] = np.maximum(walk_extremes[:, 0], -walk_extremes[:, 1]) / n
        out["aurc"], out["eaurc"], out["augrc"] = areas
        return out
    extremes = np.empty((len(drawn), 2))
    for first, block in resample_rows(drawn):  # a few resamples at a time: no B × N float64 walk
        walk = np.cumsum(block * gap[order], axis=1, dtype=np.float64)[:, ends]  # Σ (hit − conf) so far
        extremes[first : first + len(block)] = np.stack([walk.max(axis=1), walk.min(axis=1)], axis=1)
    out["ks_error"] = np.maximum(extremes[:, 0], -extremes[:, 1]) / n
    out["aurc"], out["eaurc"], out["augrc"] = _ranked_areas(drawn, hit[order], ends, n)
    return out


def _ranked_areas(
    drawn: np.ndarray, hit: np.ndarray, ends: np.ndarray | None, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AURC, E-AURC and AUGRC of each resample from its counts ``drawn`` (B × N) and ``hit`` in increasing
    score, ``ends`` the last sample of each group of equal scores (None: every score distinct)."""
    if ends is None:  # a resample's groups are its copies of one sample
        return _distinct_walks(drawn, hit, n)[1]
    # per group: the copies drawn and the wrong ones among them (sums of whole numbers below 2^24, exact in
    # float32), and their running sums over the groups; one resample at a time, so that its arrays stay in the
    # processor's cache (the areas to float64 rounding of the whole-matrix sums)
    starts = np.concatenate([[0], ends[:-1] + 1])
    miss = (1 - hit).astype(np.float32)
    harmonic = _harmonic(n)
    areas = np.empty((3, len(drawn)))
    for i, row in enumerate(drawn):
        row = np.asarray(row, dtype=np.float32)  # counts of one byte: summed as float32 (exact below 2^24)
        through = np.cumsum(np.add.reduceat(row, starts).astype(np.int64))[None]
        wrong = np.cumsum(np.add.reduceat(row * miss, starts).astype(np.int64))[None]
        areas[:, i] = np.concatenate(_aurc(through, wrong, n, harmonic))
    return areas[0], areas[1], areas[2]


def _harmonic(n: int) -> np.ndarray:
    """H_0 … H_n."""
    return np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])


def bootstrap_selective(score: np.ndarray, hit: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    """AURC, E-AURC and AUGRC of every resample (``counts``: B × N) when the N predictions are accepted in
    decreasing ``score`` (any confidence score: the max probability gives the replicates of
    :func:`bootstrap_scores`), each a length-B array. ``hit``: 1 for a right prediction, 0 for a wrong one.
    Equal scores form one group (docs/method.md §5.8), whatever their number: a score taking a few values
    (the per-prediction opinion of §3.6 is constant within a (class, cluster) pair) costs what a distinct
    one does. The replicates equal :func:`trustcal.measures.selective.selective_areas` on the drawn rows."""
    score = np.asarray(score, dtype=np.float64)
    hit = np.asarray(hit, dtype=np.float64)
    n = score.size
    if counts.shape[1] != n:
        raise ValueError(f"counts have {counts.shape[1]} samples, the scores {n}")
    order = np.argsort(score, kind="stable")
    ranked = score[order]
    ends = np.flatnonzero(np.append(ranked[1:] != ranked[:-1], True))
    ends = None if ends.size == n else ends
    areas = np.empty((3, len(counts)))
    for first, block in resample_rows(counts, order):  # a few resamples at a time, in increasing score
        areas[:, first : first + len(block)] = _ranked_areas(block, hit[order], ends, n)
    return {"aurc": areas[0], "eaurc": areas[1], "augrc": areas[2]}


_GROUPED = 128  # scores with at most this many distinct values (jointly) share one matrix product


def bootstrap_selective_scores(
    scores: dict[str, np.ndarray], hit: np.ndarray, counts: np.ndarray
) -> dict[str, dict[str, np.ndarray]]:
    """:func:`bootstrap_selective` of each of several scores of the same predictions, to the last bit.

    Scores with few distinct values (the scores of the per-prediction opinion are functions of the
    (class, cluster) pair, so they take at most K·M values together) are done together: the drawn copies
    and the wrong ones of every joint group of equal values, for every resample, are one product of the
    counts with an N × 2P one-hot matrix (P joint groups; whole numbers below 2^24, exact in float32), and
    each score's groups are sums of those columns. Other scores go through :func:`bootstrap_selective`.
    """
    hit = np.asarray(hit, dtype=np.float64)
    n = hit.size
    out, grouped = {}, {}
    key = np.zeros(n, dtype=np.int64)
    for name, score in scores.items():
        score = np.asarray(score, dtype=np.float64)
        if score.size != n or counts.shape[1] != n:
            raise ValueError(f"counts have {counts.shape[1]} samples, the hits {n}, the scores {score.size}")
        values, inverse = np.unique(score, return_inverse=True)
        if values.size >= min(n, _GROUPED + 1):  # distinct values, or too many groups
            out[name] = bootstrap_selective(score, hit, counts)
            continue
        grouped[name] = inverse
        key = np.unique(key * values.size + inverse, return_inverse=True)[1]  # joint group so far, < P·size
    if grouped:
        joint = int(key.max()) + 1
        if joint > _GROUPED:
            return out | {name: bootstrap_selective(scores[name], hit, counts) for name in grouped}
        rows = np.arange(n)

        def onehot(start: int, stop: int) -> np.ndarray:
            block = np.zeros((stop - start, 2 * joint), dtype=np.float32)
            within = rows[: stop - start]
            block[within, key[start:stop]] = 1.0
            block[within, joint + key[start:stop]] = 1.0 - hit[start:stop]
            return block

        sums = resampled_sums(counts, onehot, n)  # B × 2P: drawn, then wrong, per joint group (whole numbers)
        representative = np.zeros(joint, dtype=np.int64)
        representative[key] = rows  # a sample of each joint group
        for name, inverse in grouped.items():
            merge = np.zeros((joint, int(inverse.max()) + 1))
            merge[np.arange(joint), inverse[representative]] = 1.0  # joint group → the score's group
            whole = (sums[:, :joint].astype(np.float64) @ merge).astype(np.int64)  # in increasing score
            missed = (sums[:, joint:].astype(np.float64) @ merge).astype(np.int64)
            through = np.asfortranarray(np.cumsum(whole, axis=1))  # as _ranked_areas lays them out
            wrong = np.asfortranarray(np.cumsum(missed, axis=1))
            aurc, eaurc, augrc = _aurc(through, wrong, n)
            out[name] = {"aurc": aurc, "eaurc": eaurc, "augrc": augrc}
    return {name: out[name] for name in scores}


def _distinct_walks(
    drawn: np.ndarray, hit: np.ndarray, n: int, gap: np.ndarray | None = None
) -> tuple[np.ndarray | None, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """AURC, E-AURC and AUGRC of each resample when the N confidences are distinct: ``drawn`` (B × N counts)
    and ``hit`` in increasing confidence; with ``gap`` (hit − confidence in that order) also the largest
    and smallest of each resample's running sum Σ w·gap (B × 2), the KS error's walk. One resample at a
    time, so that its running sums stay in the processor's cache (the same numbers as whole-matrix passes;
    the areas' sums over the misses to float64 rounding: numpy's pairwise sum of a row depends on where the
    row starts in memory).

    Σ_k risk_k = Σ over the errors of Σ_{k ≥ its position} 1/k. A missed sample drawn w times after
    s drawn samples of higher confidence holds positions s + 1 … s + w (its copies are one group, all
    errors), so it adds Σ_{j=0}^{w−1} (H_N − H_{s+j}) = w·(H_N − H_{s+w} + 1) − s·(H_{s+w} − H_s), by
    Σ_{t<m} H_t = m·(H_m − 1); s comes from the counts summed up to each miss.

    AUGRC (:func:`trustcal.measures.metrics.augrc`) = Σ_groups W·(2·A_before + E)/(2N²); summed
    over the groups of the misses, Σ_i W_i·A_before,i = Σ_misses w·(u − w) with u the counts drawn
    up to and including the miss (the samples of lower confidence accepted after it), so
    AUGRC = Σ_misses w·(2u − w)/(2N²).
    """
    b = len(drawn)
    harmonic = _harmonic(n)
    misses = np.flatnonzero(hit == 0)
    extremes = None if gap is None else np.empty((b, 2))
    area, errors, generalized = np.zeros(b), np.zeros(b, dtype=np.int64), np.zeros(b)
    through = misses[-1] + 1 if misses.size else 0
    for i, row in enumerate(drawn):
        row = np.asarray(row, dtype=np.float32)  # counts of one byte: summed as float32 (exact below 2^24)
        if gap is not None:
            walk = np.cumsum(row * gap, dtype=np.float64)  # Σ (hit − conf) so far
            extremes[i] = walk.max(), walk.min()
        if not misses.size:
            continue
        upto = np.cumsum(row[:through])[misses]  # drawn up to and including each miss (exact in float32)
        w = row[misses]
        s = n - upto  # drawn with a higher confidence
        h_end = harmonic[(s + w).astype(np.intp)]
        area[i] = (w * (harmonic[n] - h_end + 1.0) - s * (h_end - harmonic[s.astype(np.intp)])).sum() / n
        errors[i] = int(w.sum(dtype=np.float64))
        # 2u − w is a whole number below 2^24 (exact in float32); its products with w reach N², so in float64
        generalized[i] = np.einsum("m,m->", w, 2 * upto - w, dtype=np.float64)
    optimal = (errors - (n - errors) * (harmonic[n] - harmonic[n - errors])) / n  # every error ranked last
    return extremes, (area, area - optimal, generalized / (2.0 * n * n))


def _l2(count: np.ndarray, conf: np.ndarray, hit: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Plug-in and debiased top-label L2 calibration error of each resample from its per-bin sums
    (B × M each), as :func:`trustcal.measures.metrics.l2_ece` computes them."""
    safe = np.maximum(count, 1)
    gap2 = np.where(count > 0, (conf / safe - hit / safe) ** 2, 0.0)
    acc = hit / safe
    two = count >= 2
    unbiased = np.where(two, gap2 - acc * (1 - acc) / np.maximum(count - 1, 1), 0.0)
    plugin = (count * gap2).sum(axis=1) / n
    debiased = (count * unbiased).sum(axis=1) / n
    return np.sqrt(plugin), np.sqrt(np.maximum(debiased, 0.0))


def _aurc(
    through: np.ndarray, wrong: np.ndarray, n: int, harmonic: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AURC, E-AURC and AUGRC of each resample, as :func:`trustcal.measures.metrics.aurc` computes them,
    from the samples drawn (``through``) and the errors among them (``wrong``) up to the end of each
    group of equal confidence (B × groups, in increasing confidence; whole numbers).

    Samples are accepted in decreasing confidence; equal confidences form one group whose errors
    spread evenly (the resample's copies of a sample share its confidence, so they join its group).
    A group that starts after s accepted samples with A errors before it, W members and E errors
    adds Σ_{k=s+1}^{s+W} (A + (k − s)·E/W)/k = (A − s·E/W)(H_{s+W} − H_s) + E to Σ_k risk_k, with
    H the harmonic numbers: O(B·N) for all resamples, a few passes over B × groups arrays.
    AUGRC = Σ_groups W·(2A + E)/(2N²) (the trapezoid of each group, :func:`trustcal.measures.metrics.augrc`).
    """
    size, errors = np.diff(through, axis=1, prepend=0), np.diff(wrong, axis=1, prepend=0)
    rate = errors / np.maximum(size, 1)  # an empty group has no error (and adds nothing: H_{s+0} − H_s = 0)
    before = n - through  # accepted before the group: every sample of higher confidence
    harmonic = _harmonic(n) if harmonic is None else harmonic  # H_0 … H_n
    h_before = harmonic[before]
    # H_{s+W} − H_s: s + W is the s of the previous group (the next-lower confidence; n before the first)
    steps = np.empty(h_before.shape)
    steps[:, 0] = harmonic[n] - h_before[:, 0]
    np.subtract(h_before[:, :-1], h_before[:, 1:], out=steps[:, 1:])
    total = wrong[:, -1]  # errors of each resample (Σ_groups E)
    coefficient = (total[:, None] - wrong) - before * rate  # A − s·E/W of each group
    area = (np.einsum("bg,bg->b", coefficient, steps) + total) / n
    e = total.astype(np.int64)
    optimal = (e - (n - e) * (harmonic[n] - harmonic[n - e])) / n  # every error ranked last
    generalized = np.einsum("bg,bg->b", size.astype(np.float64), 2.0 * (total[:, None] - wrong) + errors) / (
        2.0 * n * n
    )
    return area, area - optimal, generalized
