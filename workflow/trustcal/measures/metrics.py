"""Calibration and trust metrics of a classifier's predicted probabilities.

Every function takes ``probs`` (N × K floats, rows summing to 1) and
``labels`` (N integers in [0, K)) and is pure and vectorised (no per-sample
Python loop). Formulas and sources are in each docstring; section numbers
refer to ``docs/method.md``. The smooth ECE, L2 ECE, Brier decomposition,
KS error and selective-prediction risk (§5.4–5.8) live in
:mod:`trustcal.measures.calibration_errors`, the geometric family (§7) in
:mod:`trustcal.measures.geometric`, the reliability curves (§8) in :mod:`trustcal.measures.reliability`;
all are re-exported here.

A metric of the top label is computed by one function of a :class:`~trustcal.measures.bins.TopLabel`
(``ece_of``, ``net_trust_score_of``, …), which holds the confidences, the hits, their sort and bins of
one prediction set, computed once; the function of ``probs`` and ``labels`` builds the TopLabel and calls
it. :data:`METRICS` names every scalar metric (its columns, their values and, for a mean, the per-sample
term): :func:`scalar_metrics`, the bootstrap (:func:`trustcal.measures.bootstrap.bootstrap_scores`) and
the columns of scores.csv (:func:`trustcal.evaluation.score_columns`) read it, so a metric is added
by one entry.

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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from trustcal.measures.bins import TopLabel, bin_indices, check_predictions
from trustcal.measures.calibration_errors import (  # the ESTIMATORS re-exported, and what METRICS reads
    ESTIMATORS,
    augrc_of,
    aurc_of,
    brier_decomposition_of,
    ks_error_of,
    ks_test_of,
    l2_ece_of,
    smece_of,
    spiegelhalter_of,
)
from trustcal.measures.calibration_errors import augrc as augrc
from trustcal.measures.calibration_errors import aurc as aurc
from trustcal.measures.calibration_errors import brier_decomposition as brier_decomposition
from trustcal.measures.calibration_errors import brownian_max_abs_sf as brownian_max_abs_sf
from trustcal.measures.calibration_errors import eaurc as eaurc
from trustcal.measures.calibration_errors import ks_error as ks_error
from trustcal.measures.calibration_errors import ks_test as ks_test
from trustcal.measures.calibration_errors import l2_ece as l2_ece
from trustcal.measures.calibration_errors import risk_coverage as risk_coverage
from trustcal.measures.calibration_errors import smece as smece
from trustcal.measures.calibration_errors import smooth_ece as smooth_ece
from trustcal.measures.calibration_errors import spiegelhalter_test as spiegelhalter_test
from trustcal.measures.geometric import GEOMETRIC_COLUMNS, generalized_mean, geometric_bins, geometric_metrics
from trustcal.measures.kuiper import brownian_range_sf, kuiper_test, kuiper_test_of
from trustcal.measures.metric_params import MetricParams
from trustcal.measures.reliability import (
    reliability_curve,
    reliability_summary,
    reliability_summary_of,
    reliability_table,
)
from trustcal.numerics import mean_nll, true_class_nll

__all__ = [
    "accuracy",
    "nll",
    "brier",
    "ece",
    "mce",
    "classwise_ece",
    *ESTIMATORS,  # trustcal.measures.calibration_errors's, imported above
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
    "MetricParams",
    "Metric",
    "METRICS",
    "scalar_columns",
    "scalar_metrics_of",
]

# --------------------------------------------------------------------------
# §5 accuracy, NLL, Brier, ECE family


def accuracy(probs, labels) -> float:
    """Fraction of samples whose argmax equals the label (docs/method.md §5)."""
    probs, labels = check_predictions(probs, labels)
    return float(np.mean(np.argmax(probs, axis=1) == labels))


def nll(probs, labels, log_probs=None) -> float:
    """Mean negative log-likelihood −(1/N) Σ_i log p_{i,y_i} (docs/method.md §5, §2.12): exact from
    ``log_probs`` (the log-softmax of logits) when given; else with p floored at PROB_FLOOR, float64 eps as in
    scikit-learn's ``log_loss``."""
    probs, labels = check_predictions(probs, labels)
    return mean_nll(probs, labels, log_probs)


def brier_terms(top: TopLabel) -> np.ndarray:
    """Σ_k (p_ik − 1[y_i = k])² of each sample: the Brier score is their mean."""
    return np.sum((top.probs - top.onehot) ** 2, axis=1)


def brier(probs, labels) -> float:
    """Brier score (1/N) Σ_i Σ_k (p_ik − 1[y_i = k])² (docs/method.md §5; Brier 1950)."""
    return float(np.mean(brier_terms(TopLabel.of(probs, labels))))


def _gaps(top: TopLabel, n_bins: int, binning: str):
    """Per bin: count and |accuracy − confidence|."""
    count, mean_conf, mean_hit = top.binned(n_bins, binning)
    return count, np.abs(mean_hit - mean_conf)


def ece_of(top: TopLabel, n_bins: int = 10, binning: str = "width") -> float:
    """:func:`ece` of a :class:`~trustcal.measures.bins.TopLabel`."""
    count, gap = _gaps(top, n_bins, binning)
    return float(np.sum(count[count > 0] * gap[count > 0]) / np.sum(count))


def mce_of(top: TopLabel, n_bins: int = 10, binning: str = "width") -> float:
    """:func:`mce` of a :class:`~trustcal.measures.bins.TopLabel`."""
    count, gap = _gaps(top, n_bins, binning)
    return float(np.max(gap[count > 0]))


def ece(probs, labels, n_bins: int = 10, binning: str = "width") -> float:
    """Top-label expected calibration error (Guo et al. 2017; docs/method.md §5).

    ECE = Σ_m |B_m|/N · |acc(B_m) − conf(B_m)| with confidence = max prob,
    prediction = argmax, and bins as in the module docstring.
    """
    return ece_of(TopLabel.of(probs, labels), n_bins, binning)


def mce(probs, labels, n_bins: int = 10, binning: str = "width") -> float:
    """Maximum calibration error max_m |acc(B_m) − conf(B_m)| over non-empty bins (docs/method.md §5)."""
    return mce_of(TopLabel.of(probs, labels), n_bins, binning)


def classwise_ece_of(top: TopLabel, n_bins: int = 10, binning: str = "width") -> float:
    """:func:`classwise_ece` of a :class:`~trustcal.measures.bins.TopLabel`."""
    _, _, count, mean_p, mean_o = top.onevsrest(n_bins, binning)
    n, k = top.probs.shape
    gap = np.where(count > 0, np.abs(mean_o - mean_p), 0.0)
    per_class = np.sum((count * gap).reshape(k, -1), axis=1) / n
    return float(np.mean(per_class))


def classwise_ece(probs, labels, n_bins: int = 10, binning: str = "width") -> float:
    """Classwise ECE (Kull et al. 2019; docs/method.md §5): mean over classes k of the
    one-vs-rest ECE of (p_ik, 1[y_i = k]),
    (1/K) Σ_k Σ_m |B_km|/N · |freq(B_km) − mean p(B_km)|.
    """
    return classwise_ece_of(TopLabel.of(probs, labels), n_bins, binning)


# --------------------------------------------------------------------------
# §6 NetTrustScore family (Wong, Wang, Hryniowski 2020)


def question_answer_trust_of(top: TopLabel, alpha: float = 1.0, beta: float = 1.0) -> np.ndarray:
    """:func:`question_answer_trust` of a :class:`~trustcal.measures.bins.TopLabel`."""
    conf = np.clip(top.conf, 0.0, 1.0)
    return np.where(top.hit > 0, conf**alpha, (1.0 - conf) ** beta)


def question_answer_trust(probs, labels, alpha: float = 1.0, beta: float = 1.0) -> np.ndarray:
    """Question-answer trust per sample (Wong et al. Eq. 3; docs/method.md §6).

    Q_i = C_i^α if argmax_i = y_i, else (1 − C_i)^β, with C_i = max_k p_ik
    (clipped to [0, 1] so float32 round-off cannot make 1 − C negative).
    """
    return question_answer_trust_of(TopLabel.of(probs, labels), alpha, beta)


def _spectrum_from_q(q: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    count = np.bincount(labels, minlength=k).astype(float)
    total = np.bincount(labels, weights=q, minlength=k)
    return np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)


def trust_spectrum_of(top: TopLabel, n_classes: int | None = None, alpha: float = 1.0, beta: float = 1.0) -> np.ndarray:
    """:func:`trust_spectrum` of a :class:`~trustcal.measures.bins.TopLabel`."""
    k = top.probs.shape[1] if n_classes is None else int(n_classes)
    if top.labels.max() >= k:
        raise ValueError(f"labels reach {top.labels.max()} but n_classes = {k}")
    return _spectrum_from_q(question_answer_trust_of(top, alpha, beta), top.labels, k)


def trust_spectrum(probs, labels, n_classes: int | None = None, alpha: float = 1.0, beta: float = 1.0) -> np.ndarray:
    """Trust spectrum T(z) = mean of Q_i over samples with true label z (Wong Eq. 5; docs/method.md §6).

    Returns an array of length ``n_classes`` (default K); NaN for labels
    that do not occur.
    """
    return trust_spectrum_of(TopLabel.of(probs, labels), n_classes, alpha, beta)


def net_trust_score_of(top: TopLabel, alpha: float = 1.0, beta: float = 1.0) -> float:
    """:func:`net_trust_score` of a :class:`~trustcal.measures.bins.TopLabel`."""
    k = top.probs.shape[1]
    spectrum = _spectrum_from_q(question_answer_trust_of(top, alpha, beta), top.labels, k)
    freq = np.bincount(top.labels, minlength=k) / len(top.labels)
    return float(np.sum(freq[freq > 0] * spectrum[freq > 0]))


def net_trust_score(probs, labels, alpha: float = 1.0, beta: float = 1.0) -> float:
    """NetTrustScore T_M = Σ_z P(z) T(z), P(z) the label frequency (Wong Eq. 6; docs/method.md §6).

    With P(z) = n_z/N this is exactly the mean of Q over all samples.
    """
    return net_trust_score_of(TopLabel.of(probs, labels), alpha, beta)


def expected_confidence_of(top: TopLabel) -> tuple[float, float]:
    """:func:`expected_confidence` of a :class:`~trustcal.measures.bins.TopLabel`."""
    right = top.hit > 0
    c_right = float(np.mean(top.conf[right])) if right.any() else math.nan
    c_wrong = float(np.mean(top.conf[~right])) if (~right).any() else math.nan
    return c_right, c_wrong


def expected_confidence(probs, labels) -> tuple[float, float]:
    """Mean confidence C = max prob on correct and on incorrect answers (Wong Eq. 7–8; docs/method.md §6).

    Returns (C̄_correct, C̄_incorrect); NaN for a group with no sample.
    """
    return expected_confidence_of(TopLabel.of(probs, labels))


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
    top = TopLabel.of(probs, labels)
    return _density_table(question_answer_trust_of(top, alpha, beta), top.labels, gamma, grid)


def trust_density_table_of(top: TopLabel, metrics: MetricParams = MetricParams()) -> pd.DataFrame:
    """:func:`trust_density_table` of a :class:`~trustcal.measures.bins.TopLabel` under ``metrics``: its
    ``density_gamma``, ``nts_alpha`` and ``nts_beta``, on ``density_points`` points of [0, 1]."""
    q = question_answer_trust_of(top, metrics.nts_alpha, metrics.nts_beta)
    return _density_table(q, top.labels, metrics.density_gamma, np.linspace(0.0, 1.0, metrics.density_points))


def _density_table(q: np.ndarray, labels: np.ndarray, gamma: float, grid) -> pd.DataFrame:
    """The trust density of the question-answer trust ``q`` of each label present, one KDE per class."""
    frames = []
    for z in np.unique(labels):  # K iterations
        x, f = trust_density(q[labels == z], gamma=gamma, grid=grid)
        frames.append(pd.DataFrame({"label": int(z), "trust": x, "density": f}))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------
# all scalars at once: the table of metrics


@dataclass(frozen=True)
class Metric:
    """One entry of :data:`METRICS`: the ``columns`` it adds to :func:`scalar_metrics` (and to scores.csv)
    under the settings, their ``values`` on a :class:`~trustcal.measures.bins.TopLabel` (in that order),
    and, for a metric that is the mean of a per-sample ``term`` (N values), that term:
    :func:`trustcal.measures.bootstrap.bootstrap_scores` resamples it with the others in one product."""

    columns: Callable[[MetricParams], tuple[str, ...]]
    values: Callable[[TopLabel, MetricParams], tuple[float, ...]]
    term: Callable[[TopLabel, MetricParams], np.ndarray] | None = None


def _named(*columns: str) -> Callable[[MetricParams], tuple[str, ...]]:
    return lambda s: columns


def _pick(values: dict[str, float], columns: tuple[str, ...]) -> tuple[float, ...]:
    return tuple(values[c] for c in columns)


BRIER_TERMS = ("brier_reliability", "brier_resolution", "brier_uncertainty", "brier_within_bin")

# name → metric, in the order of the columns of scalar_metrics and scores.csv (docs/method.md §5–§8, §13.4);
# a metric is added by one entry
METRICS: dict[str, Metric] = {
    "accuracy": Metric(_named("accuracy"), lambda t, s: (float(np.mean(t.hit)),), lambda t, s: t.hit),
    "mean_confidence": Metric(_named("mean_confidence"), lambda t, s: (float(np.mean(t.conf)),), lambda t, s: t.conf),
    "nll": Metric(
        _named("nll"),
        lambda t, s: (mean_nll(t.probs, t.labels, t.log_probs),),
        lambda t, s: true_class_nll(t.probs, t.labels, t.log_probs),
    ),
    "brier": Metric(_named("brier"), lambda t, s: (float(np.mean(brier_terms(t))),), lambda t, s: brier_terms(t)),
    "ece": Metric(_named("ece"), lambda t, s: (ece_of(t, s.ece_bins[0]),)),
    "ece_width": Metric(
        lambda s: tuple(f"ece_{m}" for m in s.ece_bins), lambda t, s: tuple(ece_of(t, m) for m in s.ece_bins)
    ),
    "ece_mass": Metric(
        lambda s: tuple(f"ece_mass_{m}" for m in s.ece_bins),
        lambda t, s: tuple(ece_of(t, m, "mass") for m in s.ece_bins),
    ),
    "mce": Metric(
        lambda s: tuple(f"mce_{m}" for m in s.ece_bins), lambda t, s: tuple(mce_of(t, m) for m in s.ece_bins)
    ),
    "classwise_ece": Metric(_named("classwise_ece"), lambda t, s: (classwise_ece_of(t, s.ece_bins[0]),)),
    "smece": Metric(_named("smece"), lambda t, s: smece_of(t)[:1]),
    "l2_ece": Metric(_named("l2_ece", "l2_ece_debiased"), lambda t, s: l2_ece_of(t, s.l2_bins, "mass")),
    "brier_decomposition": Metric(
        _named(*BRIER_TERMS),
        lambda t, s: _pick(brier_decomposition_of(t, s.reliability_bins), BRIER_TERMS),
    ),
    "ks_error": Metric(_named("ks_error"), lambda t, s: (ks_error_of(t),)),
    "aurc": Metric(_named("aurc", "eaurc"), lambda t, s: aurc_of(t)),
    "augrc": Metric(_named("augrc"), lambda t, s: (augrc_of(t),)),
    "spiegelhalter": Metric(_named("spiegelhalter_z", "spiegelhalter_p"), lambda t, s: spiegelhalter_of(t)),
    "ks_p": Metric(_named("ks_p"), lambda t, s: ks_test_of(t)[1:]),
    "kuiper_p": Metric(_named("kuiper_p"), lambda t, s: kuiper_test_of(t)[1:]),
    "net_trust_score": Metric(
        _named("net_trust_score"),
        lambda t, s: (net_trust_score_of(t, s.nts_alpha, s.nts_beta),),
        lambda t, s: question_answer_trust_of(t, s.nts_alpha, s.nts_beta),
    ),
    "expected_confidence": Metric(
        _named("confidence_correct", "confidence_incorrect"), lambda t, s: expected_confidence_of(t)
    ),
    "geometric": Metric(
        _named(*GEOMETRIC_COLUMNS),
        lambda t, s: _pick(geometric_metrics(t.probs, t.labels, s.geo_eps, s.geo_bins), GEOMETRIC_COLUMNS),
    ),
    "reliability": Metric(
        _named("reliability_sq_distance", "reliability_mean_abs_gap"),
        lambda t, s: _pick(reliability_summary_of(t, s.reliability_bins), ("squared_distance", "mean_abs_gap")),
    ),
}


def scalar_columns(metrics: MetricParams = MetricParams()) -> list[str]:
    """The keys of :func:`scalar_metrics` under ``metrics``, in order."""
    return [column for metric in METRICS.values() for column in metric.columns(metrics)]


def scalar_metrics_of(top: TopLabel, metrics: MetricParams = MetricParams()) -> dict[str, float]:
    """:func:`scalar_metrics` of a :class:`~trustcal.measures.bins.TopLabel` (its ``log_probs`` make the NLL
    exact) under ``metrics``."""
    out: dict[str, float] = {}
    for metric in METRICS.values():
        out.update(zip(metric.columns(metrics), metric.values(top, metrics), strict=True))
    return {k: float(v) for k, v in out.items()}


def scalar_metrics(probs, labels, *, log_probs=None, **settings) -> dict[str, float]:
    """Every scalar metric as a flat dict with stable snake_case keys; ``log_probs``, the exact
    log-probabilities of predictions from logits, makes the NLL exact (:func:`nll`); ``settings``, fields of
    :class:`MetricParams` (``ece_bins=(10, 15)``, …), the others at its defaults. One entry of :data:`METRICS`
    each, in its order.

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
    return scalar_metrics_of(TopLabel.of(probs, labels, log_probs), MetricParams(**settings))
