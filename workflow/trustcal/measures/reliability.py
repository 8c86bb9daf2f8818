"""Reliability curves and their summary numbers (Jospin et al. 2022 §VII; docs/method.md §8), re-exported by
:mod:`trustcal.measures.metrics`. Equal-width bins as in the :mod:`trustcal.measures.metrics` docstring.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from trustcal.measures.bins import TopLabel, bin_indices, binned_means

__all__ = [
    "reliability_curve",
    "reliability_table",
    "reliability_table_of",
    "reliability_summary",
    "reliability_summary_of",
]


def reliability_curve(probs, labels, n_bins: int = 10, class_index: int | None = None) -> pd.DataFrame:
    """Reliability diagram in equal-width bins (docs/method.md §8; Jospin et al. Eq. 49).

    ``class_index=None``: top-label (confidence = max prob, event = argmax is
    right). An int c: one-vs-rest (predicted p_ic, event y_i = c).
    Columns: bin, bin_lower, bin_upper, bin_centre, mean_predicted,
    observed_frequency, count; empty bins have count 0 and NaN means.
    """
    top = TopLabel.of(probs, labels)
    probs, labels = top.probs, top.labels
    if class_index is None:
        pred, hit = top.conf, top.hit
    else:
        if not 0 <= class_index < probs.shape[1]:
            raise ValueError(f"class_index must lie in [0, {probs.shape[1]}), got {class_index}")
        pred, hit = probs[:, class_index], (labels == class_index).astype(float)
    count, mean_pred, freq = binned_means(pred, hit, bin_indices(pred, n_bins), n_bins)
    edges = np.arange(n_bins + 1) / n_bins
    return pd.DataFrame(
        {
            "bin": np.arange(n_bins),
            "bin_lower": edges[:-1],
            "bin_upper": edges[1:],
            "bin_centre": (np.arange(n_bins) + 0.5) / n_bins,
            "mean_predicted": mean_pred,
            "observed_frequency": freq,
            "count": count.astype(np.int64),
        }
    )


def reliability_table(probs, labels, n_bins: int = 10) -> pd.DataFrame:
    """All reliability curves in one tidy table: the top-label curve
    (``class_index`` <NA>) and the K one-vs-rest curves, with a ``curve``
    column ("top_label" / "one_vs_rest").

    The K + 1 curves of :func:`reliability_curve`, binned at once: the one-vs-rest bins of every class
    are one flat set (:func:`~trustcal.measures.bins.onevsrest_binned`), so each bin sums the same samples
    in the same order.
    """
    return reliability_table_of(TopLabel.of(probs, labels), n_bins)


def reliability_table_of(top: TopLabel, n_bins: int = 10) -> pd.DataFrame:
    """:func:`reliability_table` of a :class:`~trustcal.measures.bins.TopLabel`."""
    k = top.probs.shape[1]
    rest = top.onevsrest(n_bins)[2:]  # count, mean p, frequency: M·K each, class-major
    count, mean_pred, freq = (np.concatenate([t, r]) for t, r in zip(top.binned(n_bins), rest, strict=True))
    curves = k + 1
    edges = np.arange(n_bins + 1) / n_bins
    return pd.DataFrame(
        {
            "curve": np.repeat(np.array(["top_label", "one_vs_rest"], dtype=object), [n_bins, n_bins * k]),
            "class_index": pd.array([pd.NA] * n_bins + np.repeat(np.arange(k), n_bins).tolist(), dtype="Int64"),
            "bin": np.tile(np.arange(n_bins), curves),
            "bin_lower": np.tile(edges[:-1], curves),
            "bin_upper": np.tile(edges[1:], curves),
            "bin_centre": np.tile((np.arange(n_bins) + 0.5) / n_bins, curves),
            "mean_predicted": mean_pred,
            "observed_frequency": freq,
            "count": count.astype(np.int64),
        }
    )


def _mean_abs_gap(x: np.ndarray, y: np.ndarray) -> float:
    """(1/(x_last − x_first)) ∫ |p̃(x) − x| dx for the polyline through sorted points (x, y), exactly.

    On each segment the gap d = p̃(x) − x is linear, from d0 to d1 over a
    width h: the integral of |d| is h·(|d0| + |d1|)/2 when they have the same
    sign and h·(d0² + d1²)/(2(|d0| + |d1|)) when they change sign. A single
    point (zero width) gives its |d|, the limit of the mean.
    """
    d = y - x
    if x.size == 1 or x[-1] <= x[0]:
        return float(np.mean(np.abs(d)))
    h = np.diff(x)
    d0, d1 = d[:-1], d[1:]
    a0, a1 = np.abs(d0), np.abs(d1)
    same = d0 * d1 >= 0
    denom = np.where(same, 1.0, a0 + a1)  # a0 + a1 > 0 whenever the sign changes
    area = np.where(same, h * (a0 + a1) / 2, h * (d0 * d0 + d1 * d1) / (2 * denom))
    return float(np.sum(area) / (x[-1] - x[0]))


def reliability_summary(curve: pd.DataFrame) -> dict[str, float]:
    """Summary numbers of a reliability curve (docs/method.md §8); both are 0 for a calibrated model.

    * ``squared_distance`` = Σ_m n_m (obs_m − pred_m)² / Σ_m n_m: the squared
      distance to the diagonal integrated against the distribution of the
      predictions (Jospin et al. Eq. 54 with dp̂ the empirical measure of p̂).
    * ``mean_abs_gap`` = (1/(x_M − x_1)) ∫_{x_1}^{x_M} |p̃(p̂) − p̂| dp̂: the
      mean vertical distance between the curve and the diagonal, taken
      uniformly over the range of predictions the curve covers, where p̃ is
      the piecewise-linear curve through the non-empty bins'
      (mean_predicted, observed_frequency) points and x_1 ≤ … ≤ x_M their
      abscissae (a single point gives its |gap|). Integrated exactly. It
      replaces the area under the curve (Eq. 53), whose value for a
      calibrated model depends on the range the predictions cover.

    Both are NaN for a curve without a non-empty bin.
    """
    return _summary_from_binned(
        curve["count"].to_numpy(dtype=float),
        curve["mean_predicted"].to_numpy(dtype=float),
        curve["observed_frequency"].to_numpy(dtype=float),
    )


def reliability_summary_of(top: TopLabel, n_bins: int = 10) -> dict[str, float]:
    """:func:`reliability_summary` of the top-label curve of a :class:`~trustcal.measures.bins.TopLabel` in
    ``n_bins`` equal-width bins."""
    return _summary_from_binned(*top.binned(n_bins))


def _summary_from_binned(count: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """:func:`reliability_summary` from the curve's per-bin count, mean predicted and observed frequency."""
    keep = count > 0
    if not keep.any():
        return {"squared_distance": math.nan, "mean_abs_gap": math.nan}
    x, y = x[keep], y[keep]
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    sq = float(np.sum(count[keep][order] * (y - x) ** 2) / np.sum(count[keep]))
    return {"squared_distance": sq, "mean_abs_gap": _mean_abs_gap(x, y)}
