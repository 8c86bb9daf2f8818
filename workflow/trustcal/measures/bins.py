"""Input checks, the top-label view and the bins shared by every metric of :mod:`trustcal.measures.metrics`,
:mod:`~trustcal.measures.calibration_errors`, :mod:`~trustcal.measures.kuiper` and
:mod:`~trustcal.measures.geometric` (docs/method.md §5).

``probs`` is N × K floats, ``labels`` N integers in [0, K); the bin-edge conventions (equal-width
``(i/M, (i+1)/M]`` with 0 in the first bin, equal-mass ``⌊r·M/N⌋`` by stable rank) are stated once,
in the :mod:`trustcal.measures.metrics` docstring. :class:`TopLabel` is computed once per prediction
set and keeps what several metrics read (the sort of the confidences, their bins). The metric modules
import this one, so they form no import cycle.
"""

from __future__ import annotations

import numpy as np

BINNINGS = ("width", "mass")


def check_predictions(probs, labels) -> tuple[np.ndarray, np.ndarray]:
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
        return mass_bins(stable_ranks(conf.ravel()), n_bins).reshape(conf.shape)
    raise ValueError(f"binning must be one of {BINNINGS}, got {binning!r}")


def stable_ranks(values: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Rank r ∈ [0, N) of each value in a stable sort (``order``: that sort, when already at hand)."""
    order = np.argsort(values, kind="stable") if order is None else order
    rank = np.empty(values.size, dtype=np.int64)
    rank[order] = np.arange(values.size)
    return rank


def mass_bins(rank: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-mass bin ⌊r·M/N⌋ of each rank (:mod:`trustcal.measures.metrics` docstring)."""
    return (rank * n_bins) // max(rank.size, 1)


def binned_means(conf: np.ndarray, hit: np.ndarray, idx: np.ndarray, n_bins: int):
    """Per bin: count, mean confidence and mean hit rate (NaN for empty bins)."""
    count = np.bincount(idx, minlength=n_bins).astype(float)
    nonempty = count > 0
    safe = np.where(nonempty, count, 1.0)
    mean_conf = np.where(nonempty, np.bincount(idx, weights=conf, minlength=n_bins) / safe, np.nan)
    mean_hit = np.where(nonempty, np.bincount(idx, weights=hit, minlength=n_bins) / safe, np.nan)
    return count, mean_conf, mean_hit


def onevsrest_binned(probs: np.ndarray, labels: np.ndarray, n_bins: int, binning: str = "width"):
    """One-vs-rest binning of every column p_·k (one bin set per class, flat index m + M·k).

    Returns (onehot, flat, count, mean_p, mean_o) with the per-bin arrays of
    :func:`binned_means` (length M·K, NaN means for empty bins). Shared by
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
    count, mean_p, mean_o = binned_means(probs.ravel(), onehot.ravel(), flat, n_bins * k)
    return onehot, flat, count, mean_p, mean_o


class TopLabel:
    """The top-label view of one prediction set, computed once and read by every metric of it.

    ``conf`` C_i = max_k p_ik and ``hit`` 1[argmax_i = y_i] (ties → lowest index; 0/1 floats), and, on
    first use and then kept: ``order`` (the stable ascending sort of the confidences), ``rank`` (each
    sample's place in it), ``onehot`` (1[y_i = k], N × K), the bins of each (bin count, binning) with
    their per-bin means (:meth:`binned`) and the one-vs-rest bins of the K columns (:meth:`onevsrest`).
    :meth:`of` builds it from ``probs`` and ``labels`` (checked by :func:`check_predictions`), with the
    exact ``log_probs`` where there are any; :meth:`of_scores` from any score and its 0/1 hits (then
    ``probs``, ``labels`` and ``log_probs`` are None).
    """

    def __init__(self, conf: np.ndarray, hit: np.ndarray, probs=None, labels=None, log_probs=None):
        self.conf, self.hit = conf, hit
        self.probs, self.labels, self.log_probs = probs, labels, log_probs
        self._cache: dict[tuple, object] = {}

    @classmethod
    def of(cls, probs, labels, log_probs=None) -> TopLabel:
        """The top label of ``probs`` (N × K) against ``labels`` (N)."""
        probs, labels = check_predictions(probs, labels)
        pred = np.argmax(probs, axis=1)
        conf = probs[np.arange(len(labels)), pred]
        return cls(conf, (pred == labels).astype(float), probs, labels, log_probs)

    @classmethod
    def of_scores(cls, score: np.ndarray, hit: np.ndarray) -> TopLabel:
        """A score (float64, N) in the place of the confidence, with its 0/1 ``hit``."""
        return cls(score, hit)

    def kept(self, key: tuple, make):
        """``make()`` on first use, then the same value, its arrays read-only (every metric reads them)."""
        if key not in self._cache:
            value = make()
            for array in value if isinstance(value, tuple) else (value,):
                if isinstance(array, np.ndarray):
                    array.flags.writeable = False
            self._cache[key] = value
        return self._cache[key]

    @property
    def order(self) -> np.ndarray:
        return self.kept(("order",), lambda: np.argsort(self.conf, kind="stable"))

    @property
    def rank(self) -> np.ndarray:
        return self.kept(("rank",), lambda: stable_ranks(self.conf, self.order))

    @property
    def onehot(self) -> np.ndarray:
        def make():
            onehot = np.zeros_like(self.probs)
            onehot[np.arange(len(self.labels)), self.labels] = 1.0
            return onehot

        return self.kept(("onehot",), make)

    def weights_in_order(self, counts: np.ndarray | None) -> np.ndarray:
        """(1 + B) × N weights in increasing confidence (columns in :attr:`order`): a row of ones (the
        set itself), then the B × N resample ``counts`` (None: the row of ones alone); of the counts' own type
        where they are unsigned integers (:func:`~trustcal.measures.bootstrap.resample_counts`: one byte
        each), float32 otherwise. Kept for the last ``counts`` given (the smooth measures and the bootstrap of
        the scores read the same), read only."""
        kept = self._cache.get(("weights_in_order",))
        if kept is not None and kept[0] is counts:
            return kept[1]
        b = 0 if counts is None else len(counts)
        whole = b and np.issubdtype(np.asarray(counts).dtype, np.unsignedinteger)
        weights = np.empty((1 + b, self.conf.size), dtype=np.asarray(counts).dtype if whole else np.float32)
        weights[0] = 1
        if b:
            np.take(np.asarray(counts, dtype=weights.dtype), self.order, axis=1, out=weights[1:])
        weights.flags.writeable = False
        self._cache[("weights_in_order",)] = (counts, weights)
        return weights

    def bins(self, n_bins: int, binning: str = "width") -> np.ndarray:
        """:func:`bin_indices` of the confidences (the equal-mass bins from :attr:`rank`)."""

        def make():
            if binning != "mass" or n_bins < 1:
                return bin_indices(self.conf, n_bins, binning)
            return mass_bins(self.rank, n_bins)

        return self.kept(("bins", n_bins, binning), make)

    def binned(self, n_bins: int, binning: str = "width"):
        """:func:`binned_means` of (confidence, hit) in :meth:`bins`: count, mean confidence, mean hit."""
        return self.kept(
            ("binned", n_bins, binning), lambda: binned_means(self.conf, self.hit, self.bins(n_bins, binning), n_bins)
        )

    def onevsrest(self, n_bins: int, binning: str = "width"):
        """:func:`onevsrest_binned` of the K columns: onehot, flat bin, count, mean p, frequency."""
        return self.kept(
            ("onevsrest", n_bins, binning), lambda: onevsrest_binned(self.probs, self.labels, n_bins, binning)
        )


def _log_beta(a: np.ndarray, b: np.ndarray, log_fact: np.ndarray) -> np.ndarray:
    """log B(a, b) for whole a, b ≥ 1: log (a − 1)! (b − 1)! / (a + b − 1)!."""
    return log_fact[(a - 1).astype(int)] + log_fact[(b - 1).astype(int)] - log_fact[(a + b - 1).astype(int)]


def _beta_cf(a: np.ndarray, b: np.ndarray, x: np.ndarray, terms: int) -> np.ndarray:
    """The continued fraction of the regularized incomplete beta function (modified Lentz; Numerical
    Recipes §6.4), element by element, ``terms`` terms: converged for x < (a + 1)/(a + b + 2)."""
    tiny = 1e-300
    c = np.ones_like(x)
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
    h = d.copy()
    for m in range(1, terms + 1):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
            c = 1.0 + num / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            h = h * d * c
    return h


def _beta_cdf(a: np.ndarray, b: np.ndarray, x: np.ndarray, log_fact: np.ndarray) -> np.ndarray:
    """The regularized incomplete beta function I_x(a, b), whole a, b ≥ 1, 0 < x < 1."""
    terms = int(10 + 2 * np.sqrt(np.max(a + b, initial=1)))  # Lentz converges in O(√(a + b)) terms (tested)
    front = np.exp(a * np.log(x) + b * np.log1p(-x) - _log_beta(a, b, log_fact))
    direct = x < (a + 1) / (a + b + 2)
    xs, aa, bb = np.where(direct, x, 1 - x), np.where(direct, a, b), np.where(direct, b, a)
    part = front * _beta_cf(aa, bb, xs, terms) / aa
    return np.where(direct, part, 1.0 - part)


def clopper_pearson(correct, total, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The Clopper–Pearson (exact binomial) interval of a bin's accuracy: ``correct`` right answers of
    ``total`` samples, arrays (or numbers) of whole counts; NaN where ``total`` is 0.

    The bounds are the quantiles α/2 of Beta(k, n − k + 1) (0 when k = 0) and 1 − α/2 of Beta(k + 1, n − k)
    (1 when k = n), α = 1 − level: the p at which the binomial tail of k is α/2 on either side. They are
    found by bisection on the Beta distribution function (the incomplete beta function, by its continued
    fraction), with numpy only: scipy's ``beta.ppf``, which the light install does not have, is the
    tests' oracle.
    """
    k = np.atleast_1d(np.asarray(correct, dtype=float))
    n = np.atleast_1d(np.asarray(total, dtype=float))
    k, n = np.broadcast_arrays(k, n)
    if np.any((k < 0) | (k > n) | (k != np.round(k)) | (n != np.round(n))):
        raise ValueError("correct and total must be whole counts with 0 ≤ correct ≤ total")
    alpha = 1.0 - level
    lo, hi = np.full(k.shape, np.nan), np.full(k.shape, np.nan)
    some = n > 0
    lo[some & (k == 0)] = 0.0
    hi[some & (k == n)] = 1.0
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, int(n.max(initial=0)) + 2)))])

    def quantile(a: np.ndarray, b: np.ndarray, q: float) -> np.ndarray:
        """x with I_x(a, b) = q, by bisection (the distribution function rises with x)."""
        left, right = np.zeros(a.shape), np.ones(a.shape)
        for _ in range(50):  # to below 1e-15
            mid = (left + right) / 2
            below = _beta_cdf(a, b, mid, log_fact) < q
            left, right = np.where(below, mid, left), np.where(below, right, mid)
        return (left + right) / 2

    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        need = some & (k > 0)
        if need.any():
            lo[need] = quantile(k[need], n[need] - k[need] + 1, alpha / 2)
        need = some & (k < n)
        if need.any():
            hi[need] = quantile(k[need] + 1, n[need] - k[need], 1 - alpha / 2)
    return lo, hi
