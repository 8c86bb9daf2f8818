"""Calibration and trust metrics of a classifier's predicted probabilities.

Every function takes ``probs`` (N × K floats, rows summing to 1) and
``labels`` (N integers in [0, K)) and is pure and vectorised (no per-sample
Python loop). Formulas and sources are in each docstring; section numbers
refer to ``docs/method.md``. The smooth ECE, L2 ECE, Brier decomposition,
KS error and selective-prediction risk (§5.4–5.8) live in
:mod:`trustcal.measures.calibration_errors` and are re-exported here.

Bin-edge conventions (stated once, used everywhere):

* **Equal-width bins** (``binning="width"``, Guo et al. 2017; docs/method.md §5): M bins
  ``(i/M, (i+1)/M]``, right-closed, with a confidence of exactly 0 put in the
  first bin. The edges are ``i/M`` computed by one correctly rounded division,
  so a confidence of exactly 0.3 (the float nearest 3/10) lands in
  ``(0.2, 0.3]`` and 1.0 in the last bin. Values a few ulp outside [0, 1]
  (float32 softmax) are clamped into the first/last bin.
  netcal ≥ 1.3 uses NumPy histogram bins ``[i/M, (i+1)/M)`` (last bin closed)
  after clipping to [eps, 1 − eps]; torchmetrics uses ``torch.bucketize(...,
  right=True)``, i.e. ``[i/M, (i+1)/M)`` plus an extra bin holding exactly 1.0.
  All three agree whenever no confidence sits exactly on an inner edge i/M;
  netcal also agrees at 1.0, torchmetrics does not.
* **Equal-mass bins** (``binning="mass"``, adaptive ECE): sort the N
  confidences (stable sort, so ties keep sample order) and give the sample of
  rank r ∈ [0, N) the bin ``⌊r·M/N⌋``; bins hold ⌊N/M⌋ or ⌈N/M⌉ samples.
  Equal confidences may straddle two bins; this keeps the populations equal,
  which is what the adaptive estimator is for.
* **Geometric measured bins** (docs/method.md §7): see :func:`geometric_bins`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from trustcal.measures.bins import (
    _binned_means,
    _check,
    _mass_bins,
    _onevsrest_binned,
    _stable_ranks,
    _top_label,
    bin_indices,
)
from trustcal.measures.calibration_errors import (
    _augrc_from_top_label,
    _aurc_from_top_label,
    _brier_decomposition_from_binned,
    _ks_from_top_label,
    _ks_test_from_top_label,
    _l2_from_top_label,
    _smece_from_top_label,
    _spiegelhalter_from_top_label,
    augrc,
    aurc,
    brier_decomposition,
    brownian_max_abs_sf,
    eaurc,
    ks_error,
    ks_test,
    l2_ece,
    risk_coverage,
    smece,
    smooth_ece,
    spiegelhalter_test,
)
from trustcal.measures.kuiper import _kuiper_test_from_top_label, brownian_range_sf, kuiper_test
from trustcal.numerics import mean_nll

__all__ = [
    "accuracy",
    "nll",
    "brier",
    "ece",
    "mce",
    "classwise_ece",
    "smooth_ece",
    "smece",
    "l2_ece",
    "brier_decomposition",
    "ks_error",
    "risk_coverage",
    "aurc",
    "eaurc",
    "augrc",
    "spiegelhalter_test",
    "ks_test",
    "brownian_max_abs_sf",
    "kuiper_test",
    "brownian_range_sf",
    "bin_indices",
    "question_answer_trust",
    "trust_spectrum",
    "net_trust_score",
    "expected_confidence",
    "trust_density",
    "trust_density_table",
    "generalized_mean",
    "geometric_bins",
    "geometric_metrics",
    "reliability_curve",
    "reliability_table",
    "reliability_summary",
    "scalar_metrics",
]

# --------------------------------------------------------------------------
# §5 accuracy, NLL, Brier, ECE family


def accuracy(probs, labels) -> float:
    """Fraction of samples whose argmax equals the label (docs/method.md §5)."""
    probs, labels = _check(probs, labels)
    return float(np.mean(np.argmax(probs, axis=1) == labels))


def nll(probs, labels, log_probs=None) -> float:
    """Mean negative log-likelihood −(1/N) Σ_i log p_{i,y_i} (docs/method.md §5, §2.12): exact from
    ``log_probs`` (the log-softmax of logits) when given; else with p floored at PROB_FLOOR, float64 eps as in
    scikit-learn's ``log_loss``."""
    probs, labels = _check(probs, labels)
    return mean_nll(probs, labels, log_probs)


def brier(probs, labels) -> float:
    """Brier score (1/N) Σ_i Σ_k (p_ik − 1[y_i = k])² (docs/method.md §5; Brier 1950)."""
    probs, labels = _check(probs, labels)
    onehot = np.zeros_like(probs)
    onehot[np.arange(len(labels)), labels] = 1.0
    return float(np.mean(np.sum((probs - onehot) ** 2, axis=1)))


def _gaps_from_top_label(conf: np.ndarray, hit: np.ndarray, n_bins: int, binning: str, idx: np.ndarray | None = None):
    """Per bin: count and |accuracy − confidence| (``idx``: the bins, when already at hand)."""
    idx = bin_indices(conf, n_bins, binning) if idx is None else idx
    count, mean_conf, mean_hit = _binned_means(conf, hit, idx, n_bins)
    return count, np.abs(mean_hit - mean_conf)


def _top_label_gaps(probs, labels, n_bins: int, binning: str):
    return _gaps_from_top_label(*_top_label(*_check(probs, labels)), n_bins, binning)


def _ece_from_gaps(count: np.ndarray, gap: np.ndarray) -> float:
    return float(np.sum(count[count > 0] * gap[count > 0]) / np.sum(count))


def _mce_from_gaps(count: np.ndarray, gap: np.ndarray) -> float:
    return float(np.max(gap[count > 0]))


def ece(probs, labels, n_bins: int = 10, binning: str = "width") -> float:
    """Top-label expected calibration error (Guo et al. 2017; docs/method.md §5).

    ECE = Σ_m |B_m|/N · |acc(B_m) − conf(B_m)| with confidence = max prob,
    prediction = argmax, and bins as in the module docstring.
    """
    return _ece_from_gaps(*_top_label_gaps(probs, labels, n_bins, binning))


def mce(probs, labels, n_bins: int = 10, binning: str = "width") -> float:
    """Maximum calibration error max_m |acc(B_m) − conf(B_m)| over non-empty bins (docs/method.md §5)."""
    return _mce_from_gaps(*_top_label_gaps(probs, labels, n_bins, binning))


def _classwise_from_binned(count: np.ndarray, mean_p: np.ndarray, mean_o: np.ndarray, n: int, k: int) -> float:
    gap = np.where(count > 0, np.abs(mean_o - mean_p), 0.0)
    per_class = np.sum((count * gap).reshape(k, -1), axis=1) / n
    return float(np.mean(per_class))


def classwise_ece(probs, labels, n_bins: int = 10, binning: str = "width") -> float:
    """Classwise ECE (Kull et al. 2019; docs/method.md §5): mean over classes k of the
    one-vs-rest ECE of (p_ik, 1[y_i = k]),
    (1/K) Σ_k Σ_m |B_km|/N · |freq(B_km) − mean p(B_km)|.
    """
    probs, labels = _check(probs, labels)
    _, _, count, mean_p, mean_o = _onevsrest_binned(probs, labels, n_bins, binning)
    return _classwise_from_binned(count, mean_p, mean_o, *probs.shape)


# --------------------------------------------------------------------------
# §6 NetTrustScore family (Wong, Wang, Hryniowski 2020)


def question_answer_trust(probs, labels, alpha: float = 1.0, beta: float = 1.0) -> np.ndarray:
    """Question-answer trust per sample (Wong et al. Eq. 3; docs/method.md §6).

    Q_i = C_i^α if argmax_i = y_i, else (1 − C_i)^β, with C_i = max_k p_ik
    (clipped to [0, 1] so float32 round-off cannot make 1 − C negative).
    """
    probs, labels = _check(probs, labels)
    return _qa_trust_from_top_label(*_top_label(probs, labels), alpha, beta)


def trust_spectrum(probs, labels, n_classes: int | None = None, alpha: float = 1.0, beta: float = 1.0) -> np.ndarray:
    """Trust spectrum T(z) = mean of Q_i over samples with true label z (Wong Eq. 5; docs/method.md §6).

    Returns an array of length ``n_classes`` (default K); NaN for labels
    that do not occur.
    """
    q = question_answer_trust(probs, labels, alpha, beta)
    labels = np.asarray(labels).astype(np.int64)
    k = np.asarray(probs).shape[1] if n_classes is None else int(n_classes)
    if labels.max() >= k:
        raise ValueError(f"labels reach {labels.max()} but n_classes = {k}")
    return _spectrum_from_q(q, labels, k)


def _qa_trust_from_top_label(conf: np.ndarray, hit: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    conf = np.clip(conf, 0.0, 1.0)
    return np.where(hit > 0, conf**alpha, (1.0 - conf) ** beta)


def _spectrum_from_q(q: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    count = np.bincount(labels, minlength=k).astype(float)
    total = np.bincount(labels, weights=q, minlength=k)
    return np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)


def net_trust_score(probs, labels, alpha: float = 1.0, beta: float = 1.0) -> float:
    """NetTrustScore T_M = Σ_z P(z) T(z), P(z) the label frequency (Wong Eq. 6; docs/method.md §6).

    With P(z) = n_z/N this is exactly the mean of Q over all samples.
    """
    probs, labels = _check(probs, labels)
    return _net_trust_from_q(question_answer_trust(probs, labels, alpha, beta), labels, probs.shape[1])


def _net_trust_from_q(q: np.ndarray, labels: np.ndarray, k: int) -> float:
    spectrum = _spectrum_from_q(q, labels, k)
    freq = np.bincount(labels, minlength=k) / len(labels)
    return float(np.sum(freq[freq > 0] * spectrum[freq > 0]))


def expected_confidence(probs, labels) -> tuple[float, float]:
    """Mean confidence C = max prob on correct and on incorrect answers (Wong Eq. 7–8; docs/method.md §6).

    Returns (C̄_correct, C̄_incorrect); NaN for a group with no sample.
    """
    return _expected_confidence_from_top_label(*_top_label(*_check(probs, labels)))


def _expected_confidence_from_top_label(conf: np.ndarray, hit: np.ndarray) -> tuple[float, float]:
    right = hit > 0
    c_right = float(np.mean(conf[right])) if right.any() else math.nan
    c_wrong = float(np.mean(conf[~right])) if (~right).any() else math.nan
    return c_right, c_wrong


def trust_density(q, gamma: float = 0.5, grid=None) -> tuple[np.ndarray, np.ndarray]:
    """Trust density: reflected Gaussian KDE of question-answer trust values (Wong §2.2; docs/method.md §6).

    f(x) = 1/(N h) Σ_i Σ_k [φ((x − 2k − q_i)/h) + φ((x − 2k + q_i)/h)],  h = γ/√N,

    i.e. the plain Gaussian KDE plus its mirror images in 0 and 1 (and the
    images of those, k ∈ ℤ), so that f integrates to 1 over [0, 1] for any N.
    Images farther than 9h from the grid are skipped (φ(9) ≈ 1e-18 of the
    kernel's peak). ``grid`` defaults to 201 points on
    [0, 1] and should lie within [0, 1]. Returns (grid, density); the density
    is NaN when ``q`` is empty.
    """
    q = np.asarray(q, dtype=float).ravel()
    grid = np.linspace(0.0, 1.0, 201) if grid is None else np.asarray(grid, dtype=float)
    if q.size == 0:
        return grid, np.full(grid.shape, np.nan)
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma}")
    h = gamma / math.sqrt(q.size)
    reach = 9.0 * h  # φ(9) ≈ 1e-18: images farther away than this contribute nothing
    n_img = 1 + math.ceil(reach / 2.0)
    density = np.zeros(grid.shape)
    x = grid.ravel()[:, None]
    lo, hi = x.min() - reach, x.max() + reach
    for k in range(-n_img, n_img + 1):  # a handful of mirror images, not a loop over samples
        for centres in (2 * k + q, 2 * k - q):
            centres = centres[(centres >= lo) & (centres <= hi)]  # only images within reach
            if centres.size == 0:
                continue
            z = x - centres[None, :]  # (G, n) kernel arguments, updated in place
            z *= 1.0 / h
            np.square(z, out=z)
            z *= -0.5
            density += np.exp(z, out=z).sum(axis=1).reshape(grid.shape)
    return grid, density / (q.size * h * math.sqrt(2.0 * math.pi))


def trust_density_table(
    probs, labels, gamma: float = 0.5, grid=None, alpha: float = 1.0, beta: float = 1.0
) -> pd.DataFrame:
    """Tidy table of the trust density of every label z present (columns label, trust, density)."""
    probs, labels = _check(probs, labels)
    q = question_answer_trust(probs, labels, alpha, beta)
    frames = []
    for z in np.unique(labels):  # one KDE per class (K iterations)
        x, f = trust_density(q[labels == z], gamma=gamma, grid=grid)
        frames.append(pd.DataFrame({"label": int(z), "trust": x, "density": f}))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------
# §7 geometric accuracy, decisiveness, robustness (Nelson 2017; George et al.)


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
    probs, labels = _check(probs, labels)
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
    probs, labels = _check(probs, labels)
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


# --------------------------------------------------------------------------
# §8 calibration curves (Jospin et al. 2022 §VII)


def reliability_curve(probs, labels, n_bins: int = 10, class_index: int | None = None) -> pd.DataFrame:
    """Reliability diagram in equal-width bins (docs/method.md §8; Jospin et al. Eq. 49).

    ``class_index=None``: top-label (confidence = max prob, event = argmax is
    right). An int c: one-vs-rest (predicted p_ic, event y_i = c).
    Columns: bin, bin_lower, bin_upper, bin_centre, mean_predicted,
    observed_frequency, count; empty bins have count 0 and NaN means.
    """
    probs, labels = _check(probs, labels)
    if class_index is None:
        pred, hit = _top_label(probs, labels)
    else:
        if not 0 <= class_index < probs.shape[1]:
            raise ValueError(f"class_index must lie in [0, {probs.shape[1]}), got {class_index}")
        pred, hit = probs[:, class_index], (labels == class_index).astype(float)
    count, mean_pred, freq = _binned_means(pred, hit, bin_indices(pred, n_bins), n_bins)
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
    are one flat set (:func:`_onevsrest_binned`), so each bin sums the same samples in the same order.
    """
    probs, labels = _check(probs, labels)
    k = probs.shape[1]
    conf, hit = _top_label(probs, labels)
    top = _binned_means(conf, hit, bin_indices(conf, n_bins), n_bins)
    rest = _onevsrest_binned(probs, labels, n_bins)[2:]  # count, mean p, frequency: M·K each, class-major
    count, mean_pred, freq = (np.concatenate([t, r]) for t, r in zip(top, rest))
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
    return _reliability_summary_from_binned(
        curve["count"].to_numpy(dtype=float),
        curve["mean_predicted"].to_numpy(dtype=float),
        curve["observed_frequency"].to_numpy(dtype=float),
    )


def _reliability_summary_from_binned(count: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """:func:`reliability_summary` from the curve's per-bin count, mean predicted and observed frequency."""
    keep = count > 0
    if not keep.any():
        return {"squared_distance": math.nan, "mean_abs_gap": math.nan}
    x, y = x[keep], y[keep]
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    sq = float(np.sum(count[keep][order] * (y - x) ** 2) / np.sum(count[keep]))
    return {"squared_distance": sq, "mean_abs_gap": _mean_abs_gap(x, y)}


# --------------------------------------------------------------------------
# all scalars at once


def scalar_metrics(
    probs,
    labels,
    *,
    log_probs=None,
    ece_bins=(10, 15),
    nts_alpha: float = 1.0,
    nts_beta: float = 1.0,
    geo_eps: float = 0.01,
    geo_bins: int = 10,
    reliability_bins: int = 10,
    l2_bins: int = 15,
) -> dict[str, float]:
    """Every scalar metric as a flat dict with stable snake_case keys; ``log_probs``, the exact
    log-probabilities of predictions from logits, makes the NLL exact (:func:`nll`).

    Keys (sections of docs/method.md in brackets):

    * accuracy, mean_confidence, nll, brier [§5.3];
    * ece (= ece_{ece_bins[0]}), ece_{M}, ece_mass_{M}, mce_{M} for each M in
      ``ece_bins`` [§5.1–5.2]; classwise_ece (ece_bins[0] width bins) [§5.3];
    * smece [§5.4]; l2_ece, l2_ece_debiased (``l2_bins`` equal-mass bins) [§5.5];
    * brier_reliability, brier_resolution, brier_uncertainty, brier_within_bin
      (one-vs-rest, ``reliability_bins`` equal-width bins; they add up to brier) [§5.6];
    * ks_error [§5.7]; aurc, eaurc, augrc [§5.8];
    * spiegelhalter_z, spiegelhalter_p (two-sided), ks_p (top-label calibration tests) [§5.9]; kuiper_p
      (:func:`~trustcal.measures.kuiper.kuiper_test`) [§13.4];
    * net_trust_score, confidence_correct, confidence_incorrect [§6];
    * geometric_accuracy, decisiveness, robustness and their *_measured;
      confidence_slope [§7];
    * reliability_sq_distance, reliability_mean_abs_gap (top-label curve,
      ``reliability_bins`` bins) [§8].
    """
    probs, labels = _check(probs, labels)
    ece_bins = tuple(int(m) for m in ece_bins)
    if not ece_bins:
        raise ValueError("ece_bins must name at least one bin count")
    n, k = probs.shape
    conf, hit = _top_label(probs, labels)  # the argmax, once
    order = np.argsort(conf, kind="stable")  # one sort: the equal-mass bins, the KS error, AUGRC
    rank = _stable_ranks(conf, order)
    width = {m: _gaps_from_top_label(conf, hit, m, "width") for m in ece_bins}  # shared by ECE and MCE
    out: dict[str, float] = {
        "accuracy": float(np.mean(hit)),
        "mean_confidence": float(np.mean(conf)),
        "nll": nll(probs, labels, log_probs),
        "brier": brier(probs, labels),
        "ece": _ece_from_gaps(*width[ece_bins[0]]),
    }
    for m in ece_bins:
        out[f"ece_{m}"] = _ece_from_gaps(*width[m])
    for m in ece_bins:
        out[f"ece_mass_{m}"] = _ece_from_gaps(*_gaps_from_top_label(conf, hit, m, "mass", _mass_bins(rank, m)))
    for m in ece_bins:
        out[f"mce_{m}"] = _mce_from_gaps(*width[m])
    binned = _onevsrest_binned(probs, labels, ece_bins[0])
    out["classwise_ece"] = _classwise_from_binned(*binned[2:], *probs.shape)
    out["smece"] = _smece_from_top_label(conf, hit)[0]
    out["l2_ece"], out["l2_ece_debiased"] = _l2_from_top_label(
        conf, hit, int(l2_bins), "mass", _mass_bins(rank, int(l2_bins))
    )
    if int(reliability_bins) != ece_bins[0]:
        binned = _onevsrest_binned(probs, labels, int(reliability_bins))
    out.update(_brier_decomposition_from_binned(probs, *binned))
    out["ks_error"] = _ks_from_top_label(conf, hit, order)
    out["aurc"], out["eaurc"] = _aurc_from_top_label(conf, hit)
    out["augrc"] = _augrc_from_top_label(conf, hit, order)
    out["spiegelhalter_z"], out["spiegelhalter_p"] = _spiegelhalter_from_top_label(conf, hit)
    out["ks_p"] = _ks_test_from_top_label(conf, hit, order)[1]
    out["kuiper_p"] = _kuiper_test_from_top_label(conf, hit, order)[1]
    out["net_trust_score"] = _net_trust_from_q(_qa_trust_from_top_label(conf, hit, nts_alpha, nts_beta), labels, k)
    out["confidence_correct"], out["confidence_incorrect"] = _expected_confidence_from_top_label(conf, hit)
    out.update(geometric_metrics(probs, labels, eps=geo_eps, n_bins=geo_bins))
    rb = int(reliability_bins)
    summary = _reliability_summary_from_binned(*_binned_means(conf, hit, bin_indices(conf, rb), rb))
    out["reliability_sq_distance"] = summary["squared_distance"]
    out["reliability_mean_abs_gap"] = summary["mean_abs_gap"]
    return {k: float(v) for k, v in out.items()}
