"""Telling in-distribution inputs from out-of-distribution ones by a score (higher: more in-distribution).

* :func:`auroc` — the area under the ROC curve, by ranks (the Mann–Whitney U statistic over n_in · n_out):
  the probability that an in-distribution input scores above an out-of-distribution one, ties counting
  one half (average ranks), which is what the trapezoidal ROC area gives with tied scores.
* :func:`fpr_at_tpr` — the false-positive rate at 95 % true-positive rate: accept every input scoring at
  least t, t the largest threshold that accepts at least 95 % of the in-distribution inputs (the
  ⌈0.95 · n_in⌉-th highest in-distribution score); the fraction of out-of-distribution inputs accepted.
* :func:`negative_entropy` — Σ p log p of each prediction (0 for a one-hot one), a score of the kind.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["auroc", "average_ranks", "fpr_at_tpr", "negative_entropy"]


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
    if not 0 < tpr <= 1:
        raise ValueError(f"tpr must be in (0, 1], not {tpr}")
    k = math.ceil(round(tpr * inside.size, 9))  # how many in-distribution inputs must be accepted
    threshold = np.sort(inside)[::-1][k - 1]
    return float(np.mean(outside >= threshold))


def negative_entropy(probs, log_probs=None) -> np.ndarray:
    """Σ_k p_k log p_k of each row (≤ 0; 0 for a one-hot row), from ``log_probs`` where given (exact)."""
    probs = np.asarray(probs, dtype=np.float64)
    logs = np.log(np.where(probs > 0, probs, 1.0)) if log_probs is None else np.asarray(log_probs, dtype=np.float64)
    return np.sum(np.where(probs > 0, probs * logs, 0.0), axis=1)
