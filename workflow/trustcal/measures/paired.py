"""Paired differences of a score between two calibration states, over training seeds (docs/method.md §12).

Two states A and B (the raw model and a calibrator, or two calibrators) are scored on the same
test set, and their bootstrap replicates on the same resamples (:mod:`trustcal.measures.bootstrap`:
one set of multinomial counts for every epoch, calibrator and seed of a dataset). For seed s the
difference is d_s = m_A(s) − m_B(s) on the full test set and d_{s,b} on resample b. Over S seeds
the estimate is d̄ = mean_s d_s and its variance has two parts:

* the test-set term T: the part of the test-set noise that all seeds share, the mean over pairs
  s ≠ s' of Cov_b(d_{s,b}, d_{s',b}). Equivalently T = [S²·Var_b(mean_s d_{s,b}) − Σ_s Var_b(d_{s,b})]
  / (S(S − 1)): the variance of the seed mean over resamples, less the noise that differs between
  seeds, which the seed term already holds. Set to 0 when noise makes it negative;
* the seed term s²_d / S, with s²_d the sample variance of d_s over seeds: the training spread
  and the seed × test-set interaction.

SE² = T + s²_d/S. The interval is d̄ ± h with the two half-widths added in quadrature,
h² = q_B²·T + q_S²·s²_d/S, q_S Student's t quantile with S − 1 degrees of freedom (the seed term is
estimated from S values) and q_B the one with B − 1 (the test-set term, from B resamples; ≈ the
normal quantile). At either extreme (no seed spread, or no shared test-set noise) this is the exact
t interval; in between it covers more than the level asks: under normality at most 0.987 (S = 2),
0.977 (S = 3), 0.966 (S = 5), 0.957 (S = 10) for a 95 % interval, never less than 0.95. The
Welch–Satterthwaite interval d̄ ± t_ν·SE covers less than the level in between (as low as 0.88 for
S = 2, 0.93 for S = 3, 0.943 for S = 5), because ν is computed from the same noisy s²_d that sets
the width (docs/method.md §12.3). With one seed there is no seed term: the interval is the
percentile interval of the paired replicates d_{1,b} (quantiles at the positions p·(B + 1) of the
sorted replicates, whose expected coverage is the level for any B), and it covers the difference of
that one trained pair of models, not the mean over training seeds.

Every function takes the per-seed values with the seeds on the last axis (``points``: … × S) and
the replicates with seeds then resamples last (``replicates``: … × S × B), so whole tables (epochs ×
calibrators × metrics) go in one call. Index 0 of the last axis of :func:`paired_arrays`'s scores is the
full test set and 1 … B the resamples, as in the verdict's runs.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from functools import lru_cache
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from trustcal.measures.bootstrap import BootstrapParams

# the scores kept per (epoch, calibrator) in a seed's paired.npz, when the scores stage computes them
PAIRED_METRICS = (
    "accuracy",
    "nll",
    "brier",
    "ece",
    "smece",
    "classwise_ece",
    "l2_ece_debiased",
    "ks_error",
    "aurc",
    "augrc",
    "net_trust_score",
    "nll_calibration",
    "nll_refinement",
    "brier_calibration",
    "brier_refinement",
)
PAIRED_KEYS = ("epochs", "calibrators", "metrics", "scores", "resamples", "seed", "level")


class PairedInterval(NamedTuple):
    """The paired difference over seeds: each field has the leading shape of the input."""

    estimate: np.ndarray  # mean over seeds of the full-test-set difference
    lo: np.ndarray
    hi: np.ndarray
    se: np.ndarray  # √(test-set term + seed term); the replicates' sd with one seed
    df: np.ndarray  # degrees of freedom of the seed term, S − 1; inf with one seed


class VarianceTerms(NamedTuple):
    """The two parts of SE² (module docstring) and the resamples they use."""

    test: np.ndarray  # T, the test-set noise shared by the seeds (≥ 0)
    seed: np.ndarray  # s²_d / S
    resamples: np.ndarray  # resamples present for every seed


def t_quantile(p: float, df) -> np.ndarray:
    """Student's t quantile at probability ``p`` for each of ``df`` (rounded down to a whole number;
    NaN below 1; the normal quantile for an infinite df).

    Whole degrees of freedom have a closed-form distribution function (Abramowitz & Stegun 26.7.3):
    with θ = arctan(t/√ν), P(|T| ≤ t) = 2θ/π + (2/π)·sin θ·Σ_{k<(ν−1)/2} c_k cos^{2k+1} θ (ν odd,
    c_0 = 1, c_k = c_{k−1}·2k/(2k + 1)) or sin θ·Σ_{k<ν/2} c_k cos^{2k} θ (ν even,
    c_k = c_{k−1}·(2k − 1)/(2k)), solved for θ by bisection. Above ν = 1000, the Cornish–Fisher
    expansion (A&S 26.7.5) to ν⁻⁴. numpy only: the verdict runs without scipy.
    """
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1) (got {p})")
    df = np.asarray(df, dtype=float)
    whole = np.floor(df)
    out = np.full(df.shape, math.nan)
    for nu in np.unique(whole[np.isfinite(whole) & (whole >= 1)]):
        out[whole == nu] = _t_quantile(float(p), int(nu))
    out[np.isposinf(df)] = NormalDist().inv_cdf(p)
    return out


@lru_cache(maxsize=4096)
def _t_quantile(p: float, nu: int) -> float:
    if p < 0.5:
        return -_t_quantile(1.0 - p, nu)
    z = NormalDist().inv_cdf(p)
    if nu > 1000:
        g1 = (z**3 + z) / 4
        g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
        g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
        g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
        return z + g1 / nu + g2 / nu**2 + g3 / nu**3 + g4 / nu**4
    target = 2.0 * p - 1.0  # P(|T| ≤ t)
    terms = (nu - 1) // 2 if nu % 2 else nu // 2
    k = np.arange(1, terms)
    c = np.cumprod(np.concatenate([[1.0], 2 * k / (2 * k + 1) if nu % 2 else (2 * k - 1) / (2 * k)]))[:terms]

    def coverage(theta: float) -> float:
        s, co = math.sin(theta), math.cos(theta)
        series = np.polynomial.polynomial.polyval(co * co, c) if terms else 0.0
        if nu % 2:
            return 2.0 / math.pi * (theta + s * co * series)
        return s * series

    lo, hi = 0.0, math.pi / 2
    for _ in range(200):  # bisection to the float64 resolution of θ
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if coverage(mid) < target else (lo, mid)
    return math.sqrt(nu) * math.tan(0.5 * (lo + hi))


def _check(points: np.ndarray, replicates: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    points = np.asarray(points, dtype=float)
    if points.ndim < 1 or points.shape[-1] < 1:
        raise ValueError(f"points must have the seeds on their last axis (shape … × S), got shape {points.shape}")
    if replicates is None:
        replicates = np.empty(points.shape + (0,))
    replicates = np.asarray(replicates, dtype=float)
    if replicates.shape[:-1] != points.shape:
        raise ValueError(
            f"replicates must have shape points.shape + (B,) = {points.shape} + (B,), got {replicates.shape}"
        )
    return points, replicates


def variance_terms(points, replicates) -> VarianceTerms:
    """The test-set and seed terms of SE² (module docstring) for S ≥ 2 seeds.

    A resample where any seed's replicate is not finite is left out for every seed (the resamples
    are shared). With fewer than two resamples the test-set term is 0 (none measured)."""
    points, replicates = _check(points, replicates)
    n_seeds = points.shape[-1]
    if n_seeds < 2:
        raise ValueError("the seed term needs at least 2 seeds")
    with np.errstate(invalid="ignore", divide="ignore"):
        seed = np.var(points, axis=-1, ddof=1) / n_seeds
        present = np.isfinite(replicates).all(axis=-2, keepdims=True)  # … × 1 × B
        n_b = present.sum(axis=-1)[..., 0]
        reps = np.where(present, replicates, 0.0)
        centred = np.where(present, reps - reps.sum(axis=-1, keepdims=True) / np.maximum(n_b, 1)[..., None, None], 0.0)
        denom = np.maximum(n_b - 1, 1)
        var_each = (centred**2).sum(axis=-1) / denom[..., None]  # … × S
        var_mean = (centred.mean(axis=-2) ** 2).sum(axis=-1) / denom
        test = (n_seeds**2 * var_mean - var_each.sum(axis=-1)) / (n_seeds * (n_seeds - 1))
    test = np.where(n_b >= 2, np.maximum(test, 0.0), 0.0)
    return VarianceTerms(test, seed, n_b)


def paired_interval(points, replicates=None, level: float = 0.95) -> PairedInterval:
    """The interval of the seed mean of a per-seed difference (module docstring).

    Args:
        points: … × S, the difference of the two states on the full test set, per seed.
        replicates: … × S × B, the same difference on each resample (the same resample b for every
            seed), or None (no test-set term).
        level: the interval's coverage.

    Returns:
        :class:`PairedInterval`, each field of shape …. A cell with a non-finite point in any seed is
        NaN. With one seed: the percentile interval of the finite replicates (``df`` infinite); with
        none either, ``lo = hi = estimate`` and ``se`` NaN.
    """
    points, replicates = _check(points, replicates)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level})")
    n_seeds, n_resamples = points.shape[-1], replicates.shape[-1]
    estimate = points.mean(axis=-1)
    shape = estimate.shape
    if n_seeds == 1:
        reps = replicates[..., 0, :]
        if n_resamples < 2:
            return PairedInterval(
                estimate, estimate.copy(), estimate.copy(), np.full(shape, math.nan), np.full(shape, math.nan)
            )
        with warnings.catch_warnings():  # an all-NaN cell gives NaN, as wanted
            warnings.simplefilter("ignore", RuntimeWarning)
            # the Weibull positions p·(B + 1): expected coverage exactly ``level`` (numpy's default
            # positions 1 + p·(B − 1) give level·(B − 1)/(B + 1), 0.9405 for B = 200)
            alpha = (1.0 - level) / 2.0
            lo, hi = np.nanquantile(reps, [alpha, 1.0 - alpha], axis=-1, method="weibull")
            se = np.nanstd(reps, axis=-1, ddof=1)
        bad = ~np.isfinite(estimate)
        lo, hi = np.where(bad, math.nan, lo), np.where(bad, math.nan, hi)
        return PairedInterval(estimate, lo, hi, np.where(bad, math.nan, se), np.full(shape, math.inf))
    terms = variance_terms(points, replicates)
    p = 0.5 + level / 2
    q_seed = t_quantile(p, n_seeds - 1)
    q_test = t_quantile(p, np.where(terms.resamples >= 2, terms.resamples - 1, math.nan))
    half = np.sqrt(np.where(terms.resamples >= 2, q_test**2 * terms.test, 0.0) + q_seed**2 * terms.seed)
    bad = ~np.isfinite(estimate) | ~np.isfinite(half)
    nan = np.full(shape, math.nan)
    return PairedInterval(
        estimate,
        np.where(bad, nan, estimate - half),
        np.where(bad, nan, estimate + half),
        np.where(bad, nan, np.sqrt(terms.test + terms.seed)),
        np.where(bad, nan, float(n_seeds - 1)),
    )


def paired_interval_from_intervals(points, lo, hi, level: float = 0.95) -> PairedInterval:
    """:func:`paired_interval` when each seed kept only its own ``level`` interval of the difference,
    not its replicates (all three … × S; e.g. a table's ``diff_*``, ``diff_*_lo``, ``diff_*_hi``).

    Each seed's test-set standard error is read from its interval, se_s = (hi_s − lo_s)/(2·z), z the
    normal quantile; the test-set term T (the mean covariance between seeds) is replaced by its upper
    bound (mean_s se_s)², since Cov(d_s, d_s') ≤ se_s·se_s' (Cauchy–Schwarz). So the interval is at
    least as wide as :func:`paired_interval`'s on the same replicates, and equal to it (up to the t
    quantile of B − 1 degrees of freedom against z) when the seeds share all their test-set noise:
    conservative, never narrower than what the replicates would give (docs/method.md §12.7). With one
    seed: that seed's interval.
    """
    points = np.asarray(points, dtype=float)
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if points.ndim < 1 or points.shape[-1] < 1 or lo.shape != points.shape or hi.shape != points.shape:
        raise ValueError(
            f"points, lo and hi must have one shape with the seeds last (… × S), got {points.shape}, "
            f"{lo.shape} and {hi.shape}"
        )
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level})")
    n_seeds = points.shape[-1]
    z = NormalDist().inv_cdf(0.5 + level / 2)
    estimate = points.mean(axis=-1)
    se_test = ((hi - lo) / (2 * z)).mean(axis=-1)
    if n_seeds == 1:
        lo1, hi1 = lo[..., 0], hi[..., 0]
        bad = ~(np.isfinite(estimate) & np.isfinite(lo1) & np.isfinite(hi1))
        nan = np.full(estimate.shape, math.nan)
        return PairedInterval(
            estimate,
            np.where(bad, nan, lo1),
            np.where(bad, nan, hi1),
            np.where(bad, nan, se_test),
            np.full(estimate.shape, math.inf),
        )
    with np.errstate(invalid="ignore"):
        seed = np.var(points, axis=-1, ddof=1) / n_seeds
    half = np.sqrt(z**2 * se_test**2 + t_quantile(0.5 + level / 2, n_seeds - 1) ** 2 * seed)
    bad = ~np.isfinite(estimate) | ~np.isfinite(half)
    nan = np.full(estimate.shape, math.nan)
    return PairedInterval(
        estimate,
        np.where(bad, nan, estimate - half),
        np.where(bad, nan, estimate + half),
        np.where(bad, nan, np.sqrt(se_test**2 + seed)),
        np.where(bad, nan, float(n_seeds - 1)),
    )


def paired_arrays(
    kept: Mapping[tuple[int, str], tuple[Mapping[str, float], Mapping[str, np.ndarray]]],
    bootstrap: BootstrapParams,
    metrics: Iterable[str] = PAIRED_METRICS,
) -> dict[str, np.ndarray]:
    """One seed's ``paired.npz``: the scores of every (epoch, calibrator) on the full test set and on
    every resample, from which any two calibrators' paired difference follows.

    Args:
        kept: (epoch, calibrator) → (the scores on the full test set, their bootstrap replicates of
            length B), as :func:`trustcal.evaluation.score_tables` keeps them for the test split.
        bootstrap: the parameters the resamples were drawn with (recorded: seeds can only be paired
            on the same resamples).
        metrics: the scores to keep; those without replicates (or missing anywhere) are left out.

    Returns:
        ``epochs`` (E), ``calibrators`` (C), ``metrics`` (M), ``scores``, float32 E × C × M × (B + 1)
        (index 0 the full test set; NaN for an (epoch, calibrator) that was not scored), and
        ``resamples``, ``seed``, ``level`` of ``bootstrap``.
    """
    if not kept:
        raise ValueError("no bootstrapped test-split scores to keep (the scores need bootstrap parameters)")
    epochs = sorted({int(e) for e, _ in kept})
    calibrators = list(dict.fromkeys(c for _, c in kept))
    names = [m for m in metrics if all(m in reps and m in point for point, reps in kept.values())]
    resamples = {len(next(iter(reps.values()))) for _, reps in kept.values()}
    if resamples != {bootstrap.resamples}:
        raise ValueError(f"the kept replicates have {sorted(resamples)} resamples, the bootstrap {bootstrap.resamples}")
    b = bootstrap.resamples
    scores = np.full((len(epochs), len(calibrators), len(names), b + 1), np.nan, dtype=np.float32)
    e_pos = {e: i for i, e in enumerate(epochs)}
    c_pos = {c: i for i, c in enumerate(calibrators)}
    for (epoch, calibrator), (point, reps) in kept.items():
        for m, name in enumerate(names):
            scores[e_pos[int(epoch)], c_pos[calibrator], m, 0] = point[name]
            scores[e_pos[int(epoch)], c_pos[calibrator], m, 1:] = reps[name]
    return dict(
        epochs=np.array(epochs, dtype=np.int64),
        calibrators=np.array(calibrators, dtype=str),
        metrics=np.array(names, dtype=str),
        scores=scores,
        resamples=np.array(bootstrap.resamples),
        seed=np.array(bootstrap.seed),
        level=np.array(bootstrap.level),
    )


def stack_seeds(per_seed: Mapping[int, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Several seeds' :func:`paired_arrays` as one array S × E × C × M × (B + 1) (``scores``), on the
    epochs, calibrators and metrics every seed has (``epochs``, ``calibrators``, ``metrics``;
    ``seeds`` in order). The seeds must share the resamples (same test set, same bootstrap seed)."""
    if not per_seed:
        raise ValueError("no seeds to stack")
    seeds = sorted(per_seed)
    arrays = [per_seed[s] for s in seeds]
    epochs = sorted(set.intersection(*(set(int(e) for e in a["epochs"]) for a in arrays)))
    calibrators = [c for c in arrays[0]["calibrators"] if all(c in a["calibrators"] for a in arrays)]
    metrics = [m for m in arrays[0]["metrics"] if all(m in a["metrics"] for a in arrays)]
    drawn = {(int(a["resamples"]), int(a["seed"])) for a in arrays if "seed" in a}
    widths = {a["scores"].shape[-1] for a in arrays}
    if len(widths) != 1 or len(drawn) > 1:
        raise ValueError(
            "the seeds were scored on different resamples (resamples, bootstrap seed): "
            f"{sorted(drawn) or sorted(w - 1 for w in widths)}"
        )
    out = []
    for a in arrays:
        e = [list(map(int, a["epochs"])).index(x) for x in epochs]
        c = [list(a["calibrators"]).index(x) for x in calibrators]
        m = [list(a["metrics"]).index(x) for x in metrics]
        out.append(a["scores"][np.ix_(e, c, m)])
    return dict(
        seeds=np.array(seeds),
        epochs=np.array(epochs),
        calibrators=np.array(calibrators, dtype=str),
        metrics=np.array(metrics, dtype=str),
        scores=np.stack(out),
    )
