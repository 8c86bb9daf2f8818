"""The smooth ECE on resamples of the test set, and the smooth reliability diagram with its band
(Błasiok & Nakkiran, ICLR 2024; docs/method.md §5.4, §13.3).

Both rest on relplot's kernel smoother as :mod:`trustcal.measures.calibration_errors` ports it: each
sample's weight is spread onto a grid of E points, the grid is mirrored at 0 and 1 and convolved with
a Gaussian. A resample of the test set (:func:`trustcal.measures.bootstrap.resample_counts`) only
changes the weights, w_i copies of sample i, so the grids of all B resamples are B weighted sums over
the same N samples (one pass in increasing confidence) and their convolutions one batch of FFTs.

* :func:`bootstrap_smece` — the smooth ECE of every resample at a given bandwidth (the test set's σ*:
  relplot's ``smECE_sigma`` on the resample's rows), or each with its own bandwidth search (then the
  replicate equals :func:`trustcal.measures.metrics.smece` on the resample's rows), to float64 rounding.
* :func:`smooth_reliability` — E[hit | confidence = t] smoothed at the test set's bandwidth σ*, on a mesh
  of t, with the density of the confidences and, given resamples, the percentile band of the resamples'
  curves at the same σ* (relplot's ``prepare_rel_diagram`` draws its band the same way, from its own
  random resamples); read from the grids at the points t directly.
* :func:`smooth_measures` — both for one top label, from one set of grids (the scores stage's call).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from trustcal.measures.bins import TopLabel
from trustcal.measures.bootstrap import percentile_interval
from trustcal.measures.calibration_errors import (
    SMECE_DENSITY_EPS,
    SMECE_MESH_PTS,
    SMECE_REFINE,
    SMECE_SEARCH_EPS,
    smece_of,
)
from trustcal.measures.metric_params import SMECE_BANDWIDTHS

__all__ = ["SMECE_BANDWIDTHS", "bootstrap_smece", "smooth_measures", "smooth_reliability", "smooth_reliability_of"]


def _grid_size(sigma: float) -> int:
    """relplot's grid: E = ⌊max(2000, round(20/σ))/2⌋ + 1 points on [0, 1]."""
    return max(2000, round(20 / sigma)) // 2 + 1


_CHUNK = 256  # samples (in increasing confidence) per block of the spreading product


def _circular_kernel(sigma: float, e: int) -> np.ndarray:
    """relplot's kernel (E points on [0, 1], height 1/(√(2π)σ), centred at index E//2) placed for a circular
    convolution of period L = 2E − 2: offset d = j − p (−E//2 … E − 1 − E//2) at index d mod L."""
    tk = np.linspace(0, 1, e)
    kernel = np.exp(-(tk - 0.5) * (tk - 0.5) / (2 * sigma**2))
    kernel /= np.sqrt(2 * np.pi) * sigma
    placed = np.zeros(2 * e - 2)
    placed[(np.arange(e) - e // 2) % (2 * e - 2)] = kernel
    return placed


class _WeightedGrids:
    """relplot's reflected Gaussian smoother of several series of the same N samples, for B weightings at once.

    ``series``: arrays of N values y_i (e.g. the residuals C_i − hit_i and ones); ``counts``: B × N
    weights w_bi. :meth:`smooth` gives, per weighting b and series, Σ_i w_bi·y_i·K_σ(t, C_i) at the points
    t, discretised as ``relplot.kernels.ReflectedGaussianKernel.apply`` (see
    :class:`trustcal.measures.calibration_errors._ReflectedSmoother`, the one-weighting version).

    relplot mirrors the grid of E points once at each end (3E − 2 points) and convolves it with the
    kernel (E points, reach ±E//2 grid steps). Within that reach the mirrored grid equals the grid's
    periodic even extension of period L = 2E − 2, so the convolution is a circular one of length L,
    about half the length of the zero-padded linear convolution, with the same values up to float64
    round-off (a few ε times the grid size, relative to the largest smoothed value). The grids of all
    weightings are one blocked product of the counts with the per-sample spreading weights.
    """

    def __init__(self, conf: np.ndarray, series: list[np.ndarray], counts: np.ndarray, order: np.ndarray | None = None):
        # in increasing confidence, the grid cells of the samples then never decrease (``order``: that sort,
        # when at hand; ``counts`` already in it when ``order`` is given)
        if order is None:
            order = np.argsort(conf, kind="stable")
            counts = np.asarray(counts)[:, order]
        self.conf = np.asarray(conf, dtype=np.float64)[order]
        self.series = np.stack([np.asarray(y, dtype=np.float64)[order] for y in series])  # (S, N)
        self.counts = counts
        # per E (and series): the grids (transforms) of every weighting, and which are filled
        self._grids: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._ffts: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def grids(self, e: int, rows: np.ndarray) -> np.ndarray:
        """(rows, series, E): the weightings ``rows``' series spread onto the grid by linear interpolation
        (relplot's ``smooth_round_to_grid``), one product of their counts with a band of spreading weights
        per block of samples. Kept per E and weighting: a bandwidth below 0.01 has a grid of its own
        (E > 1001), tried by a few of the resamples' searches only, so only theirs are spread."""
        if e not in self._grids:
            self._grids[e] = np.zeros((len(self.counts), len(self.series), e)), np.zeros(len(self.counts), bool)
        out, done = self._grids[e]
        todo = rows[~done[rows]]
        if todo.size:
            self._spread(e, slice(None) if todo.size == len(self.counts) else todo, out)
            done[todo] = True
        return out[rows]

    def _spread(self, e: int, rows, out: np.ndarray) -> None:
        """Add the series of the weightings ``rows`` (a slice or indices) spread onto E points to ``out``."""
        pos = self.conf * (e - 1)
        cell = pos.astype(int).clip(0, e - 2)  # relplot truncates toward zero, then clips
        frac = pos - cell
        n_series, n = self.series.shape
        counts = self.counts[rows]
        for a in range(0, n, _CHUNK):
            b = min(a + _CHUNK, n)
            lo, width = cell[a], cell[b - 1] + 2 - cell[a]  # the cells this block of samples touches
            within = np.arange(b - a)
            spread = np.zeros((b - a, n_series, width))
            spread[within, :, cell[a:b] - lo] = ((1 - frac[a:b]) * self.series[:, a:b]).T
            spread[within, :, cell[a:b] + 1 - lo] = (frac[a:b] * self.series[:, a:b]).T
            block = counts[:, a:b].astype(np.float64) @ spread.reshape(b - a, -1)
            out[rows, :, lo : lo + width] += block.reshape(len(counts), n_series, width)

    def _spectrum(self, e: int, series: int, rows: np.ndarray) -> np.ndarray:
        """(rows, L/2 + 1): the transforms of the weightings ``rows``' extended grids of one series, kept per
        (E, series) and weighting."""
        key = (e, series)
        if key not in self._ffts:
            self._ffts[key] = np.zeros((len(self.counts), e), complex), np.zeros(len(self.counts), bool)
        out, done = self._ffts[key]
        todo = rows[~done[rows]]
        if todo.size:
            grids = self.grids(e, todo)[:, series]
            out[todo] = np.fft.rfft(np.concatenate([grids, grids[:, -2:0:-1]], axis=-1), axis=-1)
            done[todo] = True
        return out[rows]

    def smooth(self, sigma: float, t: np.ndarray, rows: np.ndarray, series: Sequence[int]) -> np.ndarray:
        """(rows, len(series), len(t)): the smoothed ``series`` (their indices) of the weightings ``rows`` at
        the points t."""
        e = _grid_size(sigma)
        period = 2 * e - 2
        spectra = [self._spectrum(e, s, rows) for s in series]
        spectrum = spectra[0][:, None] if len(spectra) == 1 else np.stack(spectra, axis=1)
        smoothed = np.fft.irfft(spectrum * _kernel_spectrum(sigma, e), period)[..., :e]
        inds = (t * (e - 1)).astype(int).clip(0, e - 2)  # relplot.kernels.interpolate
        bucket = 1 / (e - 1)
        residual = (t - inds * bucket) / bucket
        return smoothed[..., inds] * (1 - residual) + smoothed[..., inds + 1] * residual

    def read_at(self, sigma: float, t: np.ndarray, rows: np.ndarray, series: Sequence[int]) -> np.ndarray:
        """:meth:`smooth`'s values by direct summation: each point t reads two grid points, each the grid
        weighted by the kernel folded back from the periodic even extension, so a few points t are one product
        of the grids with E × len(t) weights (:func:`_readout_weights`) instead of a convolution of the whole
        grid. The same sums in another order, without the FFT's round-off (relative to the largest grid value,
        so large where the density is near 0 and a ratio divides by it)."""
        e = _grid_size(sigma)
        grids = self.grids(e, rows)[:, list(series)]
        return (grids.reshape(-1, e) @ _readout_weights(sigma, e, tuple(t))).reshape(len(rows), len(series), len(t))


@lru_cache(maxsize=64)
def _readout_weights(sigma: float, e: int, t: tuple[float, ...]) -> np.ndarray:
    """(E, len(t)): the weight of grid point j in the smoothed grid read at each t (relplot's linear
    interpolation between the two grid points around t), the circular convolution of :meth:`_WeightedGrids.smooth`
    written out: smoothed[g] = Σ_j grid[j]·(k[(g − j) mod L] + k[(g + j) mod L] for 0 < j < E − 1), k the
    kernel :func:`_circular_kernel` places (read only)."""
    t = np.asarray(t)
    kernel = _circular_kernel(sigma, e)
    period = kernel.size
    inds = (t * (e - 1)).astype(int).clip(0, e - 2)  # relplot.kernels.interpolate
    bucket = 1 / (e - 1)
    residual = (t - inds * bucket) / bucket
    j = np.arange(e)[:, None]
    inner = ((j > 0) & (j < e - 1)).astype(np.float64)

    def folded(g: np.ndarray) -> np.ndarray:  # (E, len(g)): the weight of grid point j in smoothed[g]
        return kernel[(g[None, :] - j) % period] + inner * kernel[(g[None, :] + j) % period]

    weights = folded(inds) * (1 - residual) + folded(inds + 1) * residual
    weights.flags.writeable = False
    return weights


@lru_cache(maxsize=4096)
def _kernel_spectrum(sigma: float, e: int) -> np.ndarray:
    """The transform of :func:`_circular_kernel`: the bandwidths the bisection tries are the same few
    dyadic fractions for every epoch and calibration state, so each is transformed once (read only)."""
    spectrum = np.fft.rfft(_circular_kernel(sigma, e))
    spectrum.flags.writeable = False
    return spectrum


@lru_cache(maxsize=4096)
def _interpolated_sum(sigma: float, points: int) -> np.ndarray:
    """v (E) with v · grid = Σ_t (smoothed grid read at t) for any grid, by linearity: the read-out weights of
    every t, correlated circularly with the kernel (one FFT) and folded back from the grid's periodic even
    extension onto the grid. Only the density's sum over t enters the smooth ECE, so the density needs this
    dot product, not a convolution per resample. t: ``points`` equally spaced points on [0, 1]; kept per
    (σ, points), read only."""
    t = np.linspace(0, 1, points)
    e = _grid_size(sigma)
    period = 2 * e - 2
    inds = (t * (e - 1)).astype(int).clip(0, e - 2)
    bucket = 1 / (e - 1)
    residual = (t - inds * bucket) / bucket
    readout = np.bincount(inds, 1 - residual, minlength=period) + np.bincount(inds + 1, residual, minlength=period)
    # c[m] = Σ_j readout[j]·kernel[(j − m) mod L]
    c = np.fft.irfft(np.fft.rfft(readout) * np.conj(np.fft.rfft(_circular_kernel(sigma, e))), period)
    folded = c[:e].copy()
    folded[1 : e - 1] += c[period - 1 : e - 1 : -1]  # extension point L − q is grid point q
    folded.flags.writeable = False
    return folded


# the series of the grids :func:`smooth_measures` shares: the residual conf − hit (the smooth ECE), the hit
# (the diagram's accuracy) and 1 (the density of the confidences)
RESIDUAL, HIT, ONES = 0, 1, 2


def _shared_grids(conf: np.ndarray, hit: np.ndarray, weights: np.ndarray, order: np.ndarray | None = None):
    """:class:`_WeightedGrids` of the series conf − hit, hit and 1 under ``weights`` (in ``order`` when given)."""
    return _WeightedGrids(conf, [conf - hit, hit, np.ones_like(conf)], weights, order)


def _smece_at(grids: _WeightedGrids, sigma: float, rows: np.ndarray) -> np.ndarray:
    """smECE_σ of the weightings ``rows`` of ``grids``, as relplot's ``smooth_ece``: Σ_t |r̂(t)|·δ̂(t) / Σ_t δ̂(t)
    with δ̂ = density + 10⁻⁴ and r̂ = smoothed residual / δ̂, that is Σ_t |smoothed residual(t)| / Σ_t δ̂(t)."""
    e = _grid_size(sigma)
    points = max(round(10 / sigma), SMECE_MESH_PTS)
    residual = grids.smooth(sigma, np.linspace(0, 1, points), rows, (RESIDUAL,))[:, 0]
    density = grids.grids(e, rows)[:, ONES] @ _interpolated_sum(sigma, points) + points * SMECE_DENSITY_EPS
    return np.sum(np.abs(residual), axis=1) / density


def _bootstrap_smece(grids: _WeightedGrids, every: np.ndarray) -> np.ndarray:
    """The smooth ECE of the weightings ``every`` of ``grids``, each with its own bandwidth search (below)."""
    b = every.size

    def values(sigmas: np.ndarray, rows: np.ndarray) -> np.ndarray:
        out = np.empty(rows.size)
        for sigma in np.unique(sigmas):  # resamples trying the same σ share the kernel
            same = sigmas == sigma
            out[same] = _smece_at(grids, float(sigma), rows[same])
        return out

    at_one = values(np.ones(b), every)
    search = ~(1.0 < at_one)  # σ = 1 is kept where 1 < smECE_1 (relplot's check_smooth_ece)
    start, end, value = np.ones(b), np.zeros(b), at_one.copy()
    for _ in range(SMECE_REFINE):
        mid = (start + end) / 2
        small = mid < SMECE_SEARCH_EPS  # below the search's floor: counts as "below" unevaluated
        need = search & ~small
        tried = np.full(b, np.nan)
        tried[need] = values(mid[need], every[need])
        below = small | (mid < tried)
        end = np.where(search & below, mid, end)
        up = search & ~below
        start = np.where(up, mid, start)
        value = np.where(up, tried, value)
    return value


def bootstrap_smece(conf, hit, counts: np.ndarray, sigma: float | None = None) -> np.ndarray:
    """The top-label smooth ECE of every resample (``counts``: B × N), a length-B array.

    With ``sigma`` (the test set's σ*, :func:`smooth_measures`' default): smECE_σ of every resample, the
    bandwidth held fixed (relplot's ``smECE_sigma`` on the drawn rows). Without: each resample searches its
    own bandwidth with relplot's bisection (:func:`trustcal.measures.calibration_errors.smece`): σ = 1 if
    σ ≥ smECE_σ already, otherwise ten halvings of (0, 1] keeping the smallest σ tried with σ ≥ smECE_σ.
    The B searches run side by side: at each step the resamples that try the same σ share one kernel, and
    their grids are spread and transformed once per grid size (the same E for every σ ≥ 0.01).
    """
    conf = np.asarray(conf, dtype=np.float64)
    hit = np.asarray(hit, dtype=np.float64)
    if counts.shape[1] != conf.size:
        raise ValueError(f"counts have {counts.shape[1]} samples, the confidences {conf.size}")
    grids, every = _shared_grids(conf, hit, counts), np.arange(len(counts))
    return _bootstrap_smece(grids, every) if sigma is None else _smece_at(grids, float(sigma), every)


def _diagram(grids: _WeightedGrids, sigma: float, points: int, n: int, level: float, bands: bool) -> dict:
    """The smooth reliability diagram (:func:`smooth_reliability`) of weighting 0 of ``grids`` (the set
    itself) at σ, with the band of the weightings after it when ``bands``."""
    t = np.linspace(0.0, 1.0, int(points))
    smoothed = grids.read_at(sigma, t, np.arange(len(grids.counts) if bands else 1), (HIT, ONES))
    ((hits, dens),) = smoothed[:1]
    out = {
        "confidence": t,
        "accuracy": hits / (dens + SMECE_DENSITY_EPS),
        "density": dens / n,
        "bandwidth": np.full(t.size, sigma),
    }
    if bands:
        curves = smoothed[1:, 0] / (smoothed[1:, 1] + SMECE_DENSITY_EPS)
        out["accuracy_lo"], out["accuracy_hi"] = percentile_interval(curves, level)
    return out


def smooth_reliability(conf, hit, counts: np.ndarray | None = None, points: int = 101, level: float = 0.95):
    """The smooth reliability diagram of (confidence, hit) on ``points`` equally spaced t in [0, 1].

    Returns a dict of arrays of length ``points``: ``confidence`` (t), ``accuracy`` (the kernel estimate
    Σ_i hit_i·K(t, C_i) / (Σ_i K(t, C_i) + 10⁻⁴), relplot's ``KernelSmoother`` with the reflected kernel),
    ``density`` ((1/N) Σ_i K(t, C_i), the kernel density of the confidences, relplot's
    ``ReflectedGaussianKernel.kde``), and ``bandwidth`` (σ*,
    the smooth ECE's, the same at every t). With resample ``counts`` (B × N): ``accuracy_lo`` /
    ``accuracy_hi``, the ``level`` percentile band of the B resamples' curves at the same σ*.
    """
    conf = np.asarray(conf, dtype=np.float64)
    hit = np.asarray(hit, dtype=np.float64)
    n = conf.size
    if n == 0 or hit.shape != conf.shape:
        raise ValueError("conf and hit must be non-empty and of equal length")
    return smooth_reliability_of(TopLabel.of_scores(conf, hit), counts, points, level)


def smooth_reliability_of(top: TopLabel, counts: np.ndarray | None = None, points: int = 101, level: float = 0.95):
    """:func:`smooth_reliability` of the top label ``top``."""
    n = top.conf.size
    if counts is not None and counts.shape[1] != n:
        raise ValueError(f"counts have {counts.shape[1]} samples, the confidences {n}")
    grids = _shared_grids(top.conf, top.hit, top.weights_in_order(counts), top.order)
    _, sigma = smece_of(top)
    return _diagram(grids, sigma, points, n, level, counts is not None)


def smooth_measures(
    top: TopLabel, counts: np.ndarray, points: int = 101, level: float = 0.95, bandwidth: str = "shared"
) -> tuple[np.ndarray, dict]:
    """(:func:`bootstrap_smece`, :func:`smooth_reliability`) of the top label ``top`` under the resample
    ``counts`` (B × N), from one set of grids: the set itself and its B resamples spread onto them once, in
    the confidence order ``top`` keeps, at the σ* its smooth ECE found. ``bandwidth`` (:data:`SMECE_BANDWIDTHS`):
    ``shared``, every resample's smooth ECE at that σ* (the grids the diagram reads); ``own``, each resample's
    own search."""
    n = top.conf.size
    if counts.shape[1] != n:
        raise ValueError(f"counts have {counts.shape[1]} samples, the confidences {n}")
    if bandwidth not in SMECE_BANDWIDTHS:
        raise ValueError(f"bandwidth must be one of {SMECE_BANDWIDTHS}, got {bandwidth!r}")
    grids = _shared_grids(top.conf, top.hit, top.weights_in_order(counts), top.order)
    _, sigma = smece_of(top)
    resamples = np.arange(1, len(counts) + 1)
    replicates = _bootstrap_smece(grids, resamples) if bandwidth == "own" else _smece_at(grids, sigma, resamples)
    return replicates, _diagram(grids, sigma, points, n, level, True)
