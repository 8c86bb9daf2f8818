"""Geometric accuracy, decisiveness and robustness, reported and measured (Nelson 2017; George et al.;
docs/method.md §7), re-exported by :mod:`trustcal.measures.metrics`.

Every function takes ``probs`` (N × K floats, rows summing to 1) and ``labels`` (N integers in [0, K)),
as the other metrics do (:func:`trustcal.measures.bins.check_predictions`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from trustcal.measures.bins import check_predictions

__all__ = ["generalized_mean", "geometric_bins", "geometric_metrics", "GEOMETRIC_COLUMNS"]

# the keys of geometric_metrics, in its order
GEOMETRIC_COLUMNS = (
    "geometric_accuracy",
    "geometric_accuracy_measured",
    "decisiveness",
    "decisiveness_measured",
    "robustness",
    "robustness_measured",
    "confidence_slope",
)


def generalized_mean(x, rho: float, weights=None) -> float:
    """Generalized (power) mean M_ρ(x) = (Σ w_i x_i^ρ / Σ w_i)^(1/ρ); M_0 = exp(Σ w_i log x_i / Σ w_i).

    x ≥ 0. A zero gives M_ρ = 0 for ρ ≤ 0 (the limit). Source: docs/method.md §7,
    George et al. §3.
    """
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return math.nan
    with np.errstate(divide="ignore"):
        if rho == 0:
            return float(np.exp(np.average(np.log(x), weights=weights)))
        return float(np.average(x**rho, weights=weights) ** (1.0 / rho))


def _correct_class_probs(probs: np.ndarray, labels: np.ndarray):
    """q_i = p_{i,y_i} and the N(K−1) wrong-class probabilities p_ik, k ≠ y_i."""
    n, k = probs.shape
    mask = np.ones((n, k), dtype=bool)
    mask[np.arange(n), labels] = False
    return probs[np.arange(n), labels], probs[mask]


def _geometric_binning(q: np.ndarray, n_bins: int):
    """Equal-population bins over the correct-class probabilities q (docs/method.md §7).

    Returns (assign, lower, upper, singular): ``assign(values)`` gives the bin
    of any probabilities (−1 if none), and per-bin edges and singular flags.
    """
    n = q.size
    values, counts = np.unique(q, return_counts=True)
    singular = values[counts * n_bins >= n]  # would fill a bin on its own
    rest = np.sort(q[~np.isin(q, singular)])
    n_reg = max(n_bins - singular.size, 1) if rest.size else 0
    if n_reg:
        starts = (np.arange(n_reg) * rest.size) // n_reg
        lower_reg = rest[starts]
        lower_reg[0] = 0.0  # the first bin starts at 0, so every probability has a bin
    else:
        lower_reg = np.empty(0)
    upper_reg = np.append(lower_reg[1:], 1.0) if n_reg else np.empty(0)

    def assign(x: np.ndarray) -> np.ndarray:
        out = np.full(x.shape, -1, dtype=np.int64)
        if n_reg:
            out = np.searchsorted(lower_reg, x, side="right") - 1  # lower_j <= x < lower_{j+1}
            out = np.clip(out, 0, n_reg - 1)
        if singular.size:
            pos = np.clip(np.searchsorted(singular, x), 0, singular.size - 1)
            on_point = singular[pos] == x
            out = np.where(on_point, n_reg + pos, out)
        return out

    lower = np.concatenate([lower_reg, singular])
    upper = np.concatenate([upper_reg, singular])
    is_singular = np.concatenate([np.zeros(n_reg, bool), np.ones(singular.size, bool)])
    return assign, lower, upper, is_singular


def _geometric_counts(probs: np.ndarray, labels: np.ndarray, n_bins: int):
    """The bins of :func:`geometric_bins` with their counts and probability sums.

    Returns (q, bin_of_q, per_bin) with ``per_bin`` a dict of arrays: lower,
    upper, singular, c (correct-class probabilities in the bin), w (wrong-class
    probabilities in the bin), sum_correct (Σ q over the bin) and sum_all
    (S: Σ of every reported probability in the bin, correct and wrong class).
    """
    q, wrong = _correct_class_probs(probs, labels)
    assign, lower, upper, singular = _geometric_binning(q, n_bins)
    nb = lower.size
    bq = assign(q)
    bw = assign(wrong)
    inside = bw >= 0  # wrong-class values outside every bin (only when all bins are singular)
    c = np.bincount(bq, minlength=nb)
    sum_correct = np.bincount(bq, weights=q, minlength=nb)
    per_bin = {
        "lower": lower,
        "upper": upper,
        "singular": singular,
        "c": c,
        "w": np.bincount(bw[inside], minlength=nb),
        "sum_correct": sum_correct,
        "sum_all": sum_correct + np.bincount(bw[inside], weights=wrong[inside], minlength=nb),
    }
    return q, bq, per_bin


def geometric_bins(probs, labels, eps: float = 0.01, n_bins: int = 10) -> pd.DataFrame:
    """Nelson's histogram of reported against measured probability (docs/method.md §7.2; George et al. §4).

    Procedure (choices marked *):

    1. q_i = p_{i,y_i}. *A value v is a singularity when it occurs at least
       N/B times (it would fill a bin on its own). Each singularity gets a
       point bin [v, v] holding exactly the probabilities equal to v.
    2. The other q_i are sorted and split into B − (number of singularities)
       (at least 1) equal-population bins by rank r → ⌊r·B'/N'⌋ (populations
       ⌊N'/B'⌋ or ⌈N'/B'⌉). *Bin j covers [lower_j, lower_{j+1}) with lower_j
       its smallest member, except lower_0 = 0 and the last bin closed at 1,
       so the bins partition [0, 1] minus the singular points. Equal values
       always share a bin (an empty bin can result and is dropped).
    3. Every reported probability p_ik (all N·K of them) is placed in the bin
       covering its value: c_j of them are correct-class (k = y_i), w_j are
       wrong-class; S_j is the sum of all c_j + w_j values.
    4. reported_j = S_j/(c_j + w_j) (the bin's mean reported probability) and
       measured_j = max(c_j/(c_j + w_j), ε) (the fraction of them that
       belong to the true class); ratio_j = c_j/S_j (observed over expected
       number of true classes; NaN when S_j = 0).

    Columns: bin, lower, upper, singular, n_correct, n_wrong, mean_correct
    (mean q_i in the bin), reported, measured, ratio (only bins with
    n_correct > 0).
    """
    probs, labels = check_predictions(probs, labels)
    _, _, b = _geometric_counts(probs, labels, n_bins)
    keep = b["c"] > 0
    total = b["c"] + b["w"]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(b["sum_all"] > 0, b["c"] / b["sum_all"], np.nan)
    return pd.DataFrame(
        {
            "bin": np.arange(keep.size)[keep],
            "lower": b["lower"][keep],
            "upper": b["upper"][keep],
            "singular": b["singular"][keep],
            "n_correct": b["c"][keep],
            "n_wrong": b["w"][keep],
            "mean_correct": b["sum_correct"][keep] / b["c"][keep],
            "reported": b["sum_all"][keep] / total[keep],
            "measured": np.maximum(b["c"][keep] / total[keep], eps),
            "ratio": ratio[keep],
        }
    )


def _measured_probs(q: np.ndarray, bq: np.ndarray, b: dict) -> np.ndarray:
    """Measured correct-class probability of each sample: q_i · c_j/S_j, j its bin (docs/method.md §7.2).

    When S_j = 0 (every probability in the bin is 0, so q_i = reported_j = 0)
    the ratio q_i/reported_j is taken as 1 and the measured probability is the
    bin's fraction c_j/(c_j + w_j). Clipped to at most 1; the ε floor is
    applied by the caller.
    """
    c, s = b["c"].astype(float), b["sum_all"]
    positive = s > 0
    ratio = np.where(positive, c / np.where(positive, s, 1.0), 0.0)
    fraction = c / np.maximum(c + b["w"], 1)
    m = np.where(positive[bq], q * ratio[bq], fraction[bq])
    return np.minimum(m, 1.0)


def geometric_metrics(probs, labels, eps: float = 0.01, n_bins: int = 10) -> dict[str, float]:
    """Geometric accuracy, decisiveness and robustness, reported and measured (docs/method.md §7).

    Reported: generalized means of q_i = max(p_{i,y_i}, ε) with ρ = 0
    (geometric accuracy), 1 (decisiveness), −2/3 (robustness).
    Measured: the same means of m_i = clip(q_i · c_j/S_j, ε, 1), j the bin of
    q_i in :func:`geometric_bins`: the reported probability rescaled by its
    bin's observed-over-expected count of true classes (measured_j /
    reported_j). For a calibrated model E[c_j] = E[S_j], so m_i ≈ q_i and
    measured ≈ reported; in a point (singular) bin m_i = c_j/(c_j + w_j),
    the paper's fraction.
    confidence_slope = (D_meas − R_meas)/(D_rep − R_rep): < 1 overconfident,
    > 1 underconfident; NaN when D_rep − R_rep ≤ 1e-12 (all q_i equal, up to
    round-off in the means).
    """
    probs, labels = check_predictions(probs, labels)
    q, bq, b = _geometric_counts(probs, labels, n_bins)
    reported = np.maximum(q, eps)
    measured = np.maximum(_measured_probs(q, bq, b), eps)
    out = {}
    for name, rho in (("geometric_accuracy", 0.0), ("decisiveness", 1.0), ("robustness", -2.0 / 3.0)):
        out[name] = generalized_mean(reported, rho)
        out[f"{name}_measured"] = generalized_mean(measured, rho)
    den = out["decisiveness"] - out["robustness"]
    num = out["decisiveness_measured"] - out["robustness_measured"]
    out["confidence_slope"] = num / den if abs(den) > 1e-12 else math.nan
    return out
