"""Input checks and bins shared by every metric of :mod:`trustcal.measures.metrics` and
:mod:`trustcal.measures.calibration_errors` (docs/method.md §5).

``probs`` is N × K floats, ``labels`` N integers in [0, K); the bin-edge conventions (equal-width
``(i/M, (i+1)/M]`` with 0 in the first bin, equal-mass ``⌊r·M/N⌋`` by stable rank) are stated once,
in the :mod:`trustcal.measures.metrics` docstring. Both metric modules import this one and neither
imports the other's internals, so the two form no import cycle.
"""

from __future__ import annotations

import numpy as np

BINNINGS = ("width", "mass")


def _check(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    """Validate shapes; return float64 probs (N, K) and int64 labels (N,)."""
    probs = np.asarray(probs, dtype=float)
    labels = np.asarray(labels)
    if probs.ndim != 2:
        raise ValueError(f"probs must be 2-D (N, K), got shape {probs.shape}")
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D (N,), got shape {labels.shape}")
    if probs.shape[0] != labels.shape[0]:
        raise ValueError(f"probs has {probs.shape[0]} rows but labels has {labels.shape[0]} entries")
    if probs.shape[0] == 0:
        raise ValueError("no samples: probs and labels are empty")
    if probs.shape[1] < 2:
        raise ValueError(f"need at least 2 classes, got K = {probs.shape[1]}")
    if not np.issubdtype(labels.dtype, np.integer):
        if not np.all(np.mod(labels, 1) == 0):
            raise ValueError("labels must be integers")
        labels = labels.astype(np.int64)
    if labels.min() < 0 or labels.max() >= probs.shape[1]:
        raise ValueError(f"labels must lie in [0, {probs.shape[1]}), got range [{labels.min()}, {labels.max()}]")
    return probs, labels.astype(np.int64, copy=False)


def _top_label(probs: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Confidence (max prob) and correctness (argmax == label; ties → lowest index)."""
    pred = np.argmax(probs, axis=1)
    conf = probs[np.arange(len(labels)), pred]
    return conf, (pred == labels).astype(float)


def bin_indices(conf, n_bins: int = 10, binning: str = "width") -> np.ndarray:
    """Bin index in [0, n_bins) of each confidence (conventions: :mod:`trustcal.measures.metrics` docstring)."""
    conf = np.asarray(conf, dtype=float)
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    if binning == "width":
        edges = np.arange(n_bins + 1) / n_bins
        idx = np.searchsorted(edges, conf, side="left") - 1  # edges[i] < c <= edges[i+1]
        return np.clip(idx, 0, n_bins - 1)
    if binning == "mass":
        return _mass_bins(_stable_ranks(conf.ravel()), n_bins).reshape(conf.shape)
    raise ValueError(f"binning must be one of {BINNINGS}, got {binning!r}")


def _stable_ranks(values: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Rank r ∈ [0, N) of each value in a stable sort (``order``: that sort, when already at hand)."""
    order = np.argsort(values, kind="stable") if order is None else order
    rank = np.empty(values.size, dtype=np.int64)
    rank[order] = np.arange(values.size)
    return rank


def _mass_bins(rank: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-mass bin ⌊r·M/N⌋ of each rank (:mod:`trustcal.measures.metrics` docstring)."""
    return (rank * n_bins) // max(rank.size, 1)


def _binned_means(conf: np.ndarray, hit: np.ndarray, idx: np.ndarray, n_bins: int):
    """Per bin: count, mean confidence and mean hit rate (NaN for empty bins)."""
    count = np.bincount(idx, minlength=n_bins).astype(float)
    nonempty = count > 0
    safe = np.where(nonempty, count, 1.0)
    mean_conf = np.where(nonempty, np.bincount(idx, weights=conf, minlength=n_bins) / safe, np.nan)
    mean_hit = np.where(nonempty, np.bincount(idx, weights=hit, minlength=n_bins) / safe, np.nan)
    return count, mean_conf, mean_hit


def _onevsrest_binned(probs: np.ndarray, labels: np.ndarray, n_bins: int, binning: str = "width"):
    """One-vs-rest binning of every column p_·k (one bin set per class, flat index m + M·k).

    Returns (onehot, flat, count, mean_p, mean_o) with the per-bin arrays of
    :func:`_binned_means` (length M·K, NaN means for empty bins). Shared by
    :func:`trustcal.measures.metrics.classwise_ece` and the Brier decomposition (docs/method.md §5.6).
    """
    n, k = probs.shape
    onehot = np.zeros_like(probs)
    onehot[np.arange(n), labels] = 1.0
    if binning == "mass":  # ranks within each class column
        idx = np.stack([bin_indices(probs[:, c], n_bins, "mass") for c in range(k)], axis=1)
    else:
        idx = bin_indices(probs, n_bins, binning)
    flat = (idx + n_bins * np.arange(k)[None, :]).ravel()  # one bin set per class
    count, mean_p, mean_o = _binned_means(probs.ravel(), onehot.ravel(), flat, n_bins * k)
    return onehot, flat, count, mean_p, mean_o
