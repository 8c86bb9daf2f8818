"""Telling in-distribution inputs from out-of-distribution ones by a score (higher: more in-distribution).

* :func:`auroc` — the area under the ROC curve, by ranks (the Mann–Whitney U statistic over n_in · n_out):
  the probability that an in-distribution input scores above an out-of-distribution one, ties counting
  one half (average ranks), which is what the trapezoidal ROC area gives with tied scores.
* :func:`fpr_at_tpr` — the false-positive rate at 95 % true-positive rate: accept every input scoring at
  least t, t the largest threshold that accepts at least 95 % of the in-distribution inputs (the
  ⌈0.95 · n_in⌉-th highest in-distribution score); the fraction of out-of-distribution inputs accepted.
* :func:`negative_entropy` — Σ p log p of each prediction (0 for a one-hot one), a score of the kind.
* :func:`detection_replicates` — both on resamples given as counts (how often each input is drawn), every
  resample at once from one sort of the pooled scores: a resample's value equals that of the scores it
  draws, repeated as often as drawn (``tests/unit/measures/test_detection.py``).
"""

from __future__ import annotations

import numpy as np

RESAMPLE_CHUNK = 16  # resamples per pass of detection_replicates

__all__ = ["auroc", "average_ranks", "detection_replicates", "fpr_at_tpr", "negative_entropy"]


def _pair(inside, outside) -> tuple[np.ndarray, np.ndarray]:
    inside = np.asarray(inside, dtype=np.float64).ravel()
    outside = np.asarray(outside, dtype=np.float64).ravel()
    if inside.size == 0 or outside.size == 0:
        raise ValueError(f"both sides need scores (got {inside.size} in and {outside.size} out of distribution)")
    if not (np.isfinite(inside).all() and np.isfinite(outside).all()):
        raise ValueError("scores must be finite")
    return inside, outside


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1 … n of ``values``, tied values sharing the mean of their ranks."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]  # one past each group's last
    mean_rank = (starts + 1 + ends) / 2.0  # the ranks starts + 1 … ends, averaged
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def auroc(inside, outside) -> float:
    """The ROC area of telling ``inside`` (in-distribution scores, the positives) from ``outside``."""
    inside, outside = _pair(inside, outside)
    n_in, n_out = inside.size, outside.size
    ranks = average_ranks(np.concatenate([inside, outside]))
    u = ranks[:n_in].sum() - n_in * (n_in + 1) / 2.0
    return float(u / (n_in * n_out))


def fpr_at_tpr(inside, outside, tpr: float = 0.95) -> float:
    """The fraction of ``outside`` scoring at least the threshold that accepts ``tpr`` of ``inside``."""
    inside, outside = _pair(inside, outside)
    k = int(_tpr_count(tpr, inside.size))  # how many in-distribution inputs must be accepted
    threshold = np.sort(inside)[::-1][k - 1]
    return float(np.mean(outside >= threshold))


def _tpr_count(tpr: float, n) -> np.ndarray:
    """How many of n in-distribution inputs a threshold must accept for a true-positive rate of ``tpr``."""
    if not 0 < tpr <= 1:
        raise ValueError(f"tpr must be in (0, 1], not {tpr}")
    return np.ceil(np.round(tpr * np.asarray(n, dtype=np.float64), 9))


def _group_sums(weights: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """B × groups: each row of ``weights`` (B × n) summed by ``group`` (n)."""
    from scipy import sparse

    indicator = sparse.csr_matrix((np.ones(group.size), (group, np.arange(group.size))), shape=(n_groups, group.size))
    return np.asarray((indicator @ weights.T).T)


def detection_replicates(inside, outside, counts_in, counts_out, tpr: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The AUROC and the false-positive rate at ``tpr`` of each resample: ``counts_in`` (B × n_in) and
    ``counts_out`` (B × n_out) say how often each input is drawn in resample b (in and out of distribution
    resampled apart, each keeping its size). Returns two arrays of length B.

    The pooled scores are sorted once into groups of equal value; per resample, the in- and
    out-of-distribution weight of each group gives the Mann–Whitney count (ties one half) and the largest
    threshold whose accepted in-distribution weight reaches ⌈tpr · n_in⌉, as :func:`auroc` and
    :func:`fpr_at_tpr` on the drawn scores."""
    inside, outside = _pair(inside, outside)
    w_in = np.atleast_2d(np.asarray(counts_in, dtype=np.float64))
    w_out = np.atleast_2d(np.asarray(counts_out, dtype=np.float64))
    if w_in.shape[1] != inside.size or w_out.shape[1] != outside.size or len(w_in) != len(w_out):
        raise ValueError(
            f"counts of shape {w_in.shape} and {w_out.shape} do not fit {inside.size} and {outside.size} scores"
        )
    scores = np.concatenate([inside, outside])
    order = np.argsort(scores, kind="stable")
    ordered = scores[order]
    new_value = np.r_[True, ordered[1:] != ordered[:-1]]
    # the group (ascending value) of each input: an n × groups indicator, so that a resample's weight per
    # group is one sparse product for all resamples (B × n work)
    group = np.empty(scores.size, dtype=np.int64)
    group[order] = np.cumsum(new_value) - 1
    n_groups, n_in = int(new_value.sum()), inside.size
    area, fpr = np.empty(len(w_in)), np.empty(len(w_in))
    k = _tpr_count(tpr, n_in)
    for lo in range(0, len(w_in), RESAMPLE_CHUNK):  # a few resamples at a time: their arrays stay in cache
        part = slice(lo, lo + RESAMPLE_CHUNK)
        pos = _group_sums(w_in[part], group[:n_in], n_groups)
        neg = _group_sums(w_out[part], group[n_in:], n_groups)
        neg_cum, pos_cum = np.cumsum(neg, axis=1), np.cumsum(pos, axis=1)
        total_pos, total_neg = pos_cum[:, -1], neg_cum[:, -1]
        # Mann–Whitney: each in-distribution weight times the out-of-distribution weight below it, ties ½
        area[part] = np.einsum("bg,bg->b", pos, neg_cum - 0.5 * neg) / (total_pos * total_neg)
        # the threshold: the highest group whose value accepts (weight at or above it) at least k inputs
        accepts = (total_pos[:, None] - pos_cum + pos) >= k - 1e-9
        last = accepts.sum(axis=1) - 1
        rows = np.arange(len(last))
        fpr[part] = (total_neg - neg_cum[rows, last] + neg[rows, last]) / total_neg
    return area, fpr


def negative_entropy(probs, log_probs=None) -> np.ndarray:
    """Σ_k p_k log p_k of each row (≤ 0; 0 for a one-hot row), from ``log_probs`` where given (exact)."""
    probs = np.asarray(probs, dtype=np.float64)
    logs = np.log(np.where(probs > 0, probs, 1.0)) if log_probs is None else np.asarray(log_probs, dtype=np.float64)
    return np.sum(np.where(probs > 0, probs * logs, 0.0), axis=1)
