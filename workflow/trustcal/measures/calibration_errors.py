"""Calibration errors beyond the binned ECE, and selective-prediction risk (docs/method.md §5.4–5.8).

Every public function takes ``probs`` (N × K, rows summing to 1) and
``labels`` (N integers in [0, K)), like :mod:`trustcal.measures.metrics`,
which re-exports them. "Top-label" means confidence C_i = max_k p_ik,
prediction argmax (ties → lowest index) and hit_i = 1[prediction = y_i].
NumPy only and vectorised: no per-sample Python loop.

* :func:`smece` — smooth ECE (Błasiok & Nakkiran 2023), a port of
  ``relplot.smECE`` (relplot 1.0.3) with its bandwidth search;
  :func:`smooth_ece` is the same at a fixed bandwidth (``relplot.smECE_sigma``).
* :func:`l2_ece` — binned L2 calibration error, plug-in or debiased
  (Kumar, Liang & Ma 2019).
* :func:`brier_decomposition` — Murphy's reliability / resolution /
  uncertainty with the within-bin term of Stephenson, Coelho & Jolliffe 2008.
* :func:`ks_error` — Kolmogorov–Smirnov calibration error (Gupta et al. 2021).
* :func:`risk_coverage`, :func:`aurc`, :func:`eaurc` — selective prediction
  (Geifman, Uziel & El-Yaniv 2019); :func:`augrc` (Traub et al. 2024).
* :func:`spiegelhalter_test`, :func:`ks_test` — calibration tests with p-values
  (Spiegelhalter 1986; Arrieta-Ibarra et al. 2022).

Each metric is computed once, by a function of a :class:`~trustcal.measures.bins.TopLabel`
(``smece_of``, ``l2_ece_of``, …: the shared sort and bins of one prediction set), which the table
:data:`trustcal.measures.metrics.METRICS` reads; the function of ``probs`` and ``labels`` builds
the TopLabel and calls it.

Ties in the confidence: :func:`ks_error`, :func:`risk_coverage`,
:func:`aurc` and :func:`augrc` treat equal confidences as one group (no threshold can separate
them), so their values do not depend on the order of the samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from trustcal.measures.bins import TopLabel

# The estimators of probabilities and labels, which trustcal.measures.metrics re-exports with its own.
ESTIMATORS = (
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
)
__all__ = [
    *ESTIMATORS,
    "smece_of",
    "l2_ece_of",
    "brier_decomposition_of",
    "ks_error_of",
    "risk_curve",
    "aurc_of",
    "augrc_of",
    "spiegelhalter_of",
    "ks_test_of",
]

# relplot 1.0.3 constants (relplot/config.py, relplot/metrics.py, relplot/kernels.py)
SMECE_MESH_PTS = 200  # config.smECE_mesh_pts: minimum number of evaluation points t
SMECE_DENSITY_EPS = 1e-4  # BaseKernelMixin.smooth: eps added to the kernel density
SMECE_SEARCH_EPS = 1e-3  # smECE(eps=0.001): bandwidths below this end the search
SMECE_REFINE = 10  # search_param(refine=10): bisection steps → bandwidth to within 2^-10


# --------------------------------------------------------------------------
# §5.4 smooth ECE (Błasiok & Nakkiran 2023; relplot)


class _ReflectedSmoother:
    """relplot's ``ReflectedGaussianKernel.apply`` for the two series (f − y, 1) of one sample.

    relplot spreads each weight onto a grid of E points on [0, 1] by linear
    interpolation (``smooth_round_to_grid``), reflects the grid at both ends,
    convolves with a Gaussian sampled on the same grid (height 1/(√(2π)σ),
    support truncated to ±1/2), and reads the result back at the evaluation
    points by linear interpolation (``interpolate``). E = ⌊max(2000,
    round(20/σ))/2⌋ + 1 depends on σ only for σ < 0.01, so the grid and its
    Fourier transform are kept per E. The convolution is done by FFT (relplot:
    ``np.convolve``); the two agree up to float64 round-off, about
    log2(n_fft)·ε relative to the largest smoothed value.
    """

    def __init__(self, f: np.ndarray, resid: np.ndarray):
        self.f = f
        self.series = np.stack([resid, np.ones_like(resid)])  # (2, N): numerator and density
        self._grids: dict[int, tuple[int, np.ndarray]] = {}

    def _grid_fft(self, e: int) -> tuple[int, np.ndarray]:
        if e not in self._grids:
            pos = self.f * (e - 1)
            bins = pos.astype(int).clip(0, e - 2)  # relplot truncates toward zero, then clips
            frac = pos - bins
            values = np.stack(
                [
                    np.bincount(bins, weights=(1 - frac) * y, minlength=e)
                    + np.bincount(bins + 1, weights=frac * y, minlength=e)
                    for y in self.series
                ]
            )
            ext = np.concatenate([values[:, ::-1][:, :-1], values, values[:, ::-1][:, 1:]], axis=1)  # 3E − 2
            n_fft = 1 << (ext.shape[1] + e - 2).bit_length()  # ≥ full convolution length 4E − 3
            self._grids[e] = (n_fft, np.fft.rfft(ext, n_fft))
        return self._grids[e]

    def smooth(self, sigma: float, t: np.ndarray) -> np.ndarray:
        """(2, len(t)): the smoothed residual sum and the kernel density at the points t."""
        e = max(2000, round(20 / sigma)) // 2 + 1
        n_fft, ext_fft = self._grid_fft(e)
        tk = np.linspace(0, 1, e)
        kernel = np.exp(-(tk - 0.5) * (tk - 0.5) / (2 * sigma**2))
        kernel /= np.sqrt(2 * np.pi) * sigma
        full = np.fft.irfft(ext_fft * np.fft.rfft(kernel, n_fft), n_fft)
        start = (e - 1) + e // 2  # np.convolve(..., "valid")[E//2 : E//2 + E]
        smoothed = full[:, start : start + e]
        inds = (t * (e - 1)).astype(int).clip(0, e - 2)  # relplot.kernels.interpolate
        bucket = 1 / (e - 1)
        residual = (t - inds * bucket) / bucket
        return smoothed[:, inds] * (1 - residual) + smoothed[:, inds + 1] * residual


def _smooth_ece_at(smoother: _ReflectedSmoother, sigma: float) -> float:
    """relplot.metrics.smooth_ece: Σ_t |r̂(t)|·δ̂(t) / Σ_t δ̂(t) on max(round(10/σ), 200) points."""
    t = np.linspace(0, 1, max(round(10 / sigma), SMECE_MESH_PTS))
    num, dens = smoother.smooth(sigma, t)
    dens = dens + SMECE_DENSITY_EPS
    rs = num / dens
    return float(np.sum(np.abs(rs) * dens) / np.sum(dens))


def smece_of(top: TopLabel, eps: float = SMECE_SEARCH_EPS) -> tuple[float, float]:
    """(smECE, σ*) of a :class:`~trustcal.measures.bins.TopLabel` with relplot's bandwidth search
    (``relplot.metrics.smECE`` / ``search_param``).

    σ* is the fixed point σ = smECE_σ searched by bisection on (0, 1]: if
    σ = 1 already satisfies σ ≥ smECE_σ it is taken; otherwise 10 halvings
    keep the smallest tested σ with σ ≥ smECE_σ, so σ* is within 2^-10 of the
    fixed point (σ < eps counts as "below").
    """
    return top.kept(("smece", eps), lambda: _smece_search(top, eps))  # the scores and the smooth diagram read it


def _smece_search(top: TopLabel, eps: float) -> tuple[float, float]:
    smoother = _ReflectedSmoother(top.conf, top.conf - top.hit)
    cache: dict[float, float] = {}

    def value(sigma: float) -> float:
        if sigma not in cache:
            cache[sigma] = _smooth_ece_at(smoother, sigma)
        return cache[sigma]

    def below(alpha: float) -> bool:  # relplot's check_smooth_ece
        return alpha < eps or alpha < value(alpha)

    sigma = 1.0
    if not below(1.0):
        start, end = 1.0, 0.0
        for _ in range(SMECE_REFINE):
            mid = (start + end) / 2
            if below(mid):
                end = mid
            else:
                start = mid
        sigma = start
    return value(sigma), sigma


def smooth_ece(conf, hit, sigma: float) -> float:
    """Smooth ECE at a fixed bandwidth σ (= ``relplot.smECE_sigma(conf, hit, sigma)``; docs/method.md §5.4).

    ``conf``: predicted probabilities in [0, 1]; ``hit``: 0/1 outcomes. The
    residuals conf − hit are smoothed with a Gaussian kernel reflected at 0
    and 1 (Nadaraya–Watson) and their absolute value is averaged against the
    kernel density of the predictions.
    """
    conf = np.asarray(conf, dtype=float).ravel()
    hit = np.asarray(hit, dtype=float).ravel()
    if conf.shape != hit.shape or conf.size == 0:
        raise ValueError("conf and hit must be non-empty and of equal length")
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    return _smooth_ece_at(_ReflectedSmoother(conf, conf - hit), float(sigma))


def smece(probs, labels, *, return_sigma: bool = False):
    """Top-label smooth ECE (Błasiok & Nakkiran 2023; docs/method.md §5.4).

    smECE = smECE_σ* with σ* the fixed point σ = smECE_σ (found to within
    2^-10 by relplot's bisection), computed exactly as ``relplot.smECE(conf,
    hit)`` for relplot 1.0.3 (reflected Gaussian kernel, no logit scaling).
    Ideal value 0; no bins. ``return_sigma=True`` returns (smECE, σ*).
    """
    value, sigma = smece_of(TopLabel.of(probs, labels))
    return (value, sigma) if return_sigma else value


# --------------------------------------------------------------------------
# §5.5 L2 calibration error (Kumar, Liang & Ma 2019)


def l2_ece_of(top: TopLabel, n_bins: int, binning: str) -> tuple[float, float]:
    """(plug-in, debiased) top-label L2 calibration error (see :func:`l2_ece`) in the bins of one binning."""
    count, mean_conf, mean_hit = top.binned(n_bins, binning)
    sq_gap = np.where(count > 0, (mean_conf - mean_hit) ** 2, 0.0)
    # unbiased per-bin estimate of (E[conf] − E[hit])²: subtract the variance of the bin's accuracy,
    # acc(1 − acc)/(n − 1); bins with fewer than 2 samples contribute 0 (as in ``calibration``)
    two = count >= 2
    var_hit = np.where(two, mean_hit * (1 - mean_hit) / np.where(two, count - 1, 1), 0.0)
    unbiased = np.where(two, sq_gap - var_hit, 0.0)
    plugin = float(np.sum(count * sq_gap) / top.conf.size)
    debiased = float(np.sum(count * unbiased) / top.conf.size)
    return math.sqrt(plugin), math.sqrt(max(debiased, 0.0))


def l2_ece(probs, labels, n_bins: int = 15, binning: str = "mass", debias: bool = False) -> float:
    """Top-label L2 calibration error (Kumar, Liang & Ma 2019; docs/method.md §5.5).

    Plug-in: sqrt(Σ_m |B_m|/N · (conf(B_m) − acc(B_m))²).
    Debiased (``debias=True``): each bin's squared gap minus the variance of
    its accuracy, acc(1 − acc)/(|B_m| − 1) (bins with fewer than 2 samples
    count 0), then sqrt(max(·, 0)) — the estimator of ``calibration``
    (uncertainty-calibration 0.1.4) ``unbiased_l2_ce``.

    Bins as :func:`trustcal.measures.metrics.bin_indices`; ``binning="mass"``
    is the equal-mass binning of Kumar et al. (their library differs only in
    where the ⌈N/M⌉-sized bins go and in ties; see docs/method.md §5.5).
    """
    return l2_ece_of(TopLabel.of(probs, labels), int(n_bins), binning)[1 if debias else 0]


# --------------------------------------------------------------------------
# §5.6 Brier decomposition (Murphy 1973; Stephenson, Coelho & Jolliffe 2008)


def brier_decomposition_of(top: TopLabel, n_bins: int) -> dict[str, float]:
    """The four terms of :func:`brier_decomposition` from the one-vs-rest bins of ``top``
    (:meth:`~trustcal.measures.bins.TopLabel.onevsrest`)."""
    probs = top.probs
    onehot, flat, count, mean_p, mean_o = top.onevsrest(n_bins)
    n, k = probs.shape
    nonempty = count > 0
    f_bar = np.where(nonempty, mean_p, 0.0)
    o_bar = np.where(nonempty, mean_o, 0.0)
    o_class = onehot.mean(axis=0)
    f = probs.ravel()
    # within bin b: Σ (f − f̄)² − 2 Σ (f − f̄)(o − ō) = Σ (f − f̄)(f − 2o), since Σ_b (f − f̄) = 0
    within = np.sum((f - f_bar[flat]) * (f - 2.0 * onehot.ravel()))
    return {
        "brier_reliability": float(np.sum(count * (f_bar - o_bar) ** 2) / n),
        "brier_resolution": float(np.sum(count * (o_bar - np.repeat(o_class, count.size // k)) ** 2) / n),
        "brier_uncertainty": float(np.sum(o_class * (1.0 - o_class))),
        "brier_within_bin": float(within / n),
    }


def brier_decomposition(probs, labels, n_bins: int = 10) -> dict[str, float]:
    """Brier = reliability − resolution + uncertainty + within_bin, exactly (docs/method.md §5.6).

    One-vs-rest over the K classes, each column p_·k binned in the equal-width
    bins of :func:`trustcal.measures.metrics.bin_indices`; with bin b of class
    k holding n_b forecasts of mean f̄_b and outcome frequency ō_b, and ō_k the
    frequency of class k:

    * brier_reliability = (1/N) Σ_k Σ_b n_b (f̄_b − ō_b)²
    * brier_resolution  = (1/N) Σ_k Σ_b n_b (ō_b − ō_k)²
    * brier_uncertainty = Σ_k ō_k (1 − ō_k)
    * brier_within_bin  = (1/N) Σ_k Σ_i [(p_ik − f̄_b)² − 2 (p_ik − f̄_b)(1[y_i = k] − ō_b)]
      (Stephenson et al.'s within-bin variance minus within-bin covariance;
      0 when the forecasts are constant within every bin).

    The sum equals :func:`trustcal.measures.metrics.brier` up to round-off.
    """
    return brier_decomposition_of(TopLabel.of(probs, labels), int(n_bins))


# --------------------------------------------------------------------------
# §5.7 Kolmogorov–Smirnov calibration error (Gupta et al. 2021)


def _group_ends(sorted_values: np.ndarray) -> np.ndarray:
    """Mask of the last position of each run of equal values in a sorted array."""
    return np.append(sorted_values[1:] != sorted_values[:-1], True)


def ks_error_of(top: TopLabel) -> float:
    """KS error (see :func:`ks_error`) along ``top.order``."""
    c = top.conf[top.order]
    walk = np.cumsum(top.hit[top.order] - c)
    return float(np.max(np.abs(walk[_group_ends(c)])) / top.conf.size)


def ks_error(probs, labels) -> float:
    """Top-label KS calibration error (Gupta et al. 2021; docs/method.md §5.7).

    Sort by confidence; KS = max_i |Σ_{j ≤ i} (hit_j − C_j)| / N, the largest
    distance between the cumulative accuracy and the cumulative confidence.
    The maximum is taken at the end of each group of equal confidences, so the
    value does not depend on the order of tied samples. Ideal 0; no bins.
    """
    return ks_error_of(TopLabel.of(probs, labels))


# --------------------------------------------------------------------------
# §5.8 selective prediction (Geifman, Uziel & El-Yaniv 2019)


def risk_curve(conf: np.ndarray, hit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(score ``conf`` sorted decreasingly, risk_k for k = 1..N), ties as a group (see :func:`risk_coverage`);
    ``conf`` any score (float64), ``hit`` its 0/1 hits."""
    order = np.argsort(-conf, kind="stable")
    c = conf[order]
    err = 1.0 - hit[order]
    cum = np.cumsum(err)
    new = np.append(True, c[1:] != c[:-1])
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], c.size)
    before = np.where(starts > 0, cum[np.maximum(starts - 1, 0)], 0.0)
    rate = (cum[ends - 1] - before) / (ends - starts)  # error rate within each tie group
    k = np.arange(1, c.size + 1)
    expected = before[group] + (k - starts[group]) * rate[group]
    return c, expected / k


def risk_coverage(probs, labels, points=None) -> pd.DataFrame:
    """Risk–coverage curve of selective prediction by confidence (docs/method.md §5.8).

    Samples are accepted in order of decreasing top-label confidence; at
    coverage k/N the risk is the error rate among the k accepted.
    Ties: samples of equal confidence cannot be separated by a threshold, so
    within such a group the risk is the expected one when the group is
    accepted in random order (its errors spread evenly); at the end of a
    group it is the exact error rate. The curve therefore does not depend on
    the order of the samples.

    ``points``: None → every k = 1..N; an int m → coverages j/m, j = 1..m; a
    sequence of coverages in (0, 1] → each rounded up to the next k/N.
    Columns: coverage (k/N), risk, threshold (the k-th largest confidence).
    """
    top = TopLabel.of(probs, labels)
    c, risk = risk_curve(top.conf, top.hit)
    n = c.size
    coverage = np.arange(1, n + 1) / n
    if points is None:
        rows = np.arange(n)
    else:
        wanted = np.arange(1, int(points) + 1) / int(points) if np.isscalar(points) else np.asarray(points, float)
        if wanted.size == 0 or np.any((wanted <= 0) | (wanted > 1)):
            raise ValueError("points must be a positive int or coverages in (0, 1]")
        rows = np.searchsorted(coverage, wanted, side="left")  # smallest k with k/N ≥ coverage
    return pd.DataFrame({"coverage": coverage[rows], "risk": risk[rows], "threshold": c[rows]})


def aurc_of(top: TopLabel) -> tuple[float, float]:
    """(AURC, E-AURC) (see :func:`aurc`, :func:`eaurc`)."""
    _, risk = risk_curve(top.conf, top.hit)
    n = top.conf.size
    errors = n - float(np.sum(top.hit))
    k = np.arange(1, n + 1)
    optimal = np.maximum(k - (n - errors), 0.0) / k  # all errors ranked last
    value = float(np.mean(risk))
    return value, value - float(np.mean(optimal))


def aurc(probs, labels) -> float:
    """Area under the risk–coverage curve, (1/N) Σ_{k=1..N} risk_k (Geifman et al. 2019; docs/method.md §5.8).

    risk_k as in :func:`risk_coverage` (ties as a group). Equals 1 − the
    "coverage-accuracy area" of ``calibration.get_selective_stats`` when the
    confidences are distinct. Lower is better; its minimum depends on the accuracy.
    """
    return aurc_of(TopLabel.of(probs, labels))[0]


def eaurc(probs, labels) -> float:
    """Excess AURC = AURC − AURC* (Geifman et al. 2019; docs/method.md §5.8).

    AURC* is the AURC of the oracle ranking with the same accuracy (every
    error ranked after every correct prediction): with E errors,
    AURC* = (1/N) Σ_{k > N − E} (k − (N − E))/k. Ideal 0; ≥ 0 for any ranking.
    """
    return aurc_of(TopLabel.of(probs, labels))[1]


def augrc_of(top: TopLabel) -> float:
    """AUGRC (see :func:`augrc`) along ``top.order`` reversed (decreasing confidence; the value does not depend
    on the order inside a tie group: its sums are of whole numbers)."""
    conf, hit = top.conf, top.hit
    order = top.order[::-1]
    c = conf[order]
    ends = np.append(np.flatnonzero(c[1:] != c[:-1]), c.size - 1)  # last sample of each tie group
    accepted = (ends + 1).astype(float)  # accepted up to the end of each group
    wrong = np.cumsum(1.0 - hit[order])[ends]  # … and wrong among them
    size = np.diff(accepted, prepend=0.0)
    before = np.concatenate([[0.0], wrong[:-1]])
    # trapezoid of each group: (W/N)·(A_before + A_end)/(2N)
    return float(np.sum(size * (before + wrong)) / (2.0 * conf.size**2))


def augrc(probs, labels) -> float:
    """Area under the generalized risk–coverage curve (Traub et al., NeurIPS 2024; docs/method.md §5.8).

    Accepting the k most confident samples, the generalized risk is the fraction of ALL N samples
    that are accepted and wrong, g(k/N) = (errors among the k)/N, with g(0) = 0. AUGRC = ∫_0^1 g(c) dc
    of the curve through (0, 0) and the (coverage, g) of every threshold, linear in between: between
    two thresholds a tie group enters in random order, so its expected errors grow linearly with the
    coverage — the same tie rule as :func:`aurc` (errors spread evenly over the group). Hence
    AUGRC = (1/(2N²)) Σ_groups W·(A_before + A_after), W the group's size and A the errors accepted
    before / after it. All right → 0; all wrong → 1/2; an uninformative score (one tie group) with
    error rate r → r/2; the oracle ranking (errors last) → r²/2. Lower is better.
    """
    return augrc_of(TopLabel.of(probs, labels))


# --------------------------------------------------------------------------
# §5.9 calibration tests with p-values (Spiegelhalter 1986; Arrieta-Ibarra et al. 2022)


def spiegelhalter_of(top: TopLabel) -> tuple[float, float]:
    """(z, two-sided p) of Spiegelhalter's test (see :func:`spiegelhalter_test`)."""
    conf, hit = top.conf, top.hit
    numerator = float(np.sum((hit - conf) * (1.0 - 2.0 * conf)))
    variance = float(np.sum((1.0 - 2.0 * conf) ** 2 * conf * (1.0 - conf)))
    if variance <= 0.0:  # every confidence 0, 1/2 or 1: no spread under the null
        return (math.nan, math.nan) if numerator == 0.0 else (math.copysign(math.inf, numerator), 0.0)
    z = numerator / math.sqrt(variance)
    return z, math.erfc(abs(z) / math.sqrt(2.0))


def spiegelhalter_test(probs, labels) -> tuple[float, float]:
    """Spiegelhalter's calibration test on the top label (Spiegelhalter 1986; docs/method.md §5.9).

    Z = Σ_i (hit_i − C_i)(1 − 2C_i) / √(Σ_i (1 − 2C_i)² C_i (1 − C_i)): under the null hypothesis
    that P(hit | C) = C (top-label calibration) the numerator has mean 0 and the denominator is its
    standard deviation, so Z is asymptotically standard normal. Returns (Z, p) with the two-sided
    p = P(|N(0,1)| ≥ |Z|) = erfc(|Z|/√2). Z > 0: the hits fall short of the confidences where
    C > 1/2 (overconfidence). MAPIE's ``spiegelhalter_p_value`` is the one-sided 1 − Φ(Z).
    NaN when every confidence is 0, 1/2 or 1 and the numerator is 0; p = 0 when the numerator is not.
    """
    return spiegelhalter_of(TopLabel.of(probs, labels))


def brownian_max_abs_sf(x: float) -> float:
    """P(max_{0≤t≤1} |B_t| ≥ x) for a standard Brownian motion B (Darling & Siegert 1953).

    x < 1: 1 − (4/π) Σ_{k≥0} (−1)^k/(2k+1) · exp(−(2k+1)²π²/(8x²)) (terms fall as exp(−π²k²/2));
    x ≥ 1: the reflection series 2 Σ_{k≥1} (−1)^{k+1} erfc((2k−1)x/√2), accurate far in the tail
    where 1 − CDF would cancel to 0. 40 terms reach double precision in both branches.
    """

    def cdf_below_1(x: float) -> float:
        terms = (
            (-1) ** k / (2 * k + 1) * math.exp(-((2 * k + 1) ** 2) * math.pi**2 / (8.0 * x * x)) for k in range(40)
        )
        return 4.0 / math.pi * sum(terms)

    def sf_from_1(x: float) -> float:
        return 2.0 * sum((-1) ** (k + 1) * math.erfc((2 * k - 1) * x / math.sqrt(2.0)) for k in range(1, 41))

    return brownian_sf(x, cdf_below_1, sf_from_1)


def brownian_sf(x: float, cdf_below_1: Callable[[float], float], sf_from_1: Callable[[float], float]) -> float:
    """P(S ≥ x) of a statistic S ≥ 0 of Brownian motion from its two series: ``cdf_below_1``, P(S < x) for
    0 < x < 1, and ``sf_from_1``, P(S ≥ x) for x ≥ 1 (so the far tail does not cancel to 0); NaN for NaN, 1 for
    x ≤ 0. Both series are called with ``float(x)``."""
    x = float(x)
    if math.isnan(x):
        return math.nan
    if x <= 0.0:
        return 1.0
    return 1.0 - cdf_below_1(x) if x < 1.0 else sf_from_1(x)


def ks_test_of(top: TopLabel) -> tuple[float, float]:
    """(statistic, p) of the KS calibration test (see :func:`ks_test`)."""
    conf = top.conf
    scale = math.sqrt(float(np.sum(conf * (1.0 - conf))))
    walk = ks_error_of(top) * conf.size  # max_i |Σ_{j≤i} (hit_j − C_j)|
    if scale <= 0.0:  # every confidence 0 or 1
        return (math.nan, math.nan) if walk == 0.0 else (math.inf, 0.0)
    statistic = walk / scale
    return statistic, brownian_max_abs_sf(statistic)


def ks_test(probs, labels) -> tuple[float, float]:
    """Kolmogorov–Smirnov calibration test on the top label (Arrieta-Ibarra et al., JMLR 2022;
    Tygert 2022; docs/method.md §5.9).

    Sorted by confidence, the walk S_i = Σ_{j≤i} (hit_j − C_j) has, under calibration, independent
    steps of variance C_j(1 − C_j); scaled by σ = √(Σ_j C_j(1 − C_j)) it tends to a standard
    Brownian motion on [0, 1]. Statistic = max_i |S_i| / σ = N·ks_error/σ ("ECCE-MAD" over its
    length scale); p = P(max |B| ≥ statistic) (:func:`brownian_max_abs_sf`). Ties as in
    :func:`ks_error` (the walk read at the end of each tie group; MAPIE jitters them instead).
    """
    return ks_test_of(TopLabel.of(probs, labels))
