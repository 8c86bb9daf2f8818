"""The smooth ECE on resamples of the test set, and the smooth reliability diagram with its band
(Błasiok & Nakkiran, ICLR 2024; docs/method.md §5.4, §13.3).

Both rest on relplot's kernel smoother as :mod:`trustcal.measures.calibration_errors` ports it: each
sample's weight is spread onto a grid of E points, the grid is mirrored at 0 and 1 and convolved with
a Gaussian. A resample of the test set (:func:`trustcal.measures.bootstrap.resample_counts`) only
changes the weights, w_i copies of sample i, so the grids of all B resamples are B weighted sums over
the same N samples (one pass in increasing confidence) and their convolutions one batch of FFTs.

* :func:`bootstrap_smece` — the smooth ECE of every resample, each with its own bandwidth search: the
  replicate equals :func:`trustcal.measures.metrics.smece` on the resample's rows (float64 rounding).
* :func:`smooth_reliability` — E[hit | confidence = t] smoothed at the test set's bandwidth σ*, on a mesh
  of t, with the density of the confidences and, given resamples, the percentile band of the resamples'
  curves at the same σ* (relplot's ``prepare_rel_diagram`` draws its band the same way, from its own
  random resamples).
"""

from __future__ import annotations

import numpy as np

from trustcal.measures.bootstrap import percentile_interval
from trustcal.measures.calibration_errors import (
    _SMECE_DENSITY_EPS,
    _SMECE_MESH_PTS,
    _SMECE_REFINE,
    _SMECE_SEARCH_EPS,
    _smece_from_top_label,
)

__all__ = ["bootstrap_smece", "smooth_reliability"]

_CACHED_GRID = 2001  # grids up to this size keep their FFT for every resample (≤ 26 MB at B = 200)


def _grid_size(sigma: float) -> int:
    """relplot's grid: E = ⌊max(2000, round(20/σ))/2⌋ + 1 points on [0, 1]."""
    return max(2000, round(20 / sigma)) // 2 + 1


class _WeightedGrids:
    """relplot's reflected Gaussian smoother of several series of the same N samples, for B weightings at once.

    ``series``: arrays of N values y_i (e.g. the residuals C_i − hit_i and ones); ``counts``: B × N
    weights w_bi. :meth:`smooth` gives, per weighting b and series, Σ_i w_bi·y_i·K_σ(t, C_i) at the points
    t, discretised exactly as ``relplot.kernels.ReflectedGaussianKernel.apply`` (see
    :class:`trustcal.measures.calibration_errors._ReflectedSmoother`, the one-weighting version).
    """

    def __init__(self, conf: np.ndarray, series: list[np.ndarray], counts: np.ndarray):
        order = np.argsort(conf, kind="stable")  # the grid cells of the samples then never decrease
        self.conf = np.asarray(conf, dtype=np.float64)[order]
        self.series = [np.asarray(y, dtype=np.float64)[order] for y in series]
        self.counts = np.asarray(counts)[:, order]
        self._ffts: dict[int, tuple[int, np.ndarray]] = {}

    def _spread(self, e: int, rows: np.ndarray) -> np.ndarray:
        """(rows, series, E): each weighting's series spread onto the grid by linear interpolation."""
        pos = self.conf * (e - 1)
        cell = pos.astype(int).clip(0, e - 2)  # relplot truncates toward zero, then clips
        frac = pos - cell
        starts = np.flatnonzero(np.append(True, cell[1:] != cell[:-1]))  # first sample of each occupied cell
        occupied = cell[starts]
        weights = self.counts[rows]
        out = np.zeros((rows.size, len(self.series), e))
        for j, y in enumerate(self.series):
            out[:, j, occupied] += np.add.reduceat(weights * ((1 - frac) * y), starts, axis=1)
            out[:, j, occupied + 1] += np.add.reduceat(weights * (frac * y), starts, axis=1)
        return out

    def _fft(self, e: int, rows: np.ndarray) -> tuple[int, np.ndarray]:
        """FFT of the mirrored grids (rows, series, n_fft/2 + 1); kept for every weighting when E is small."""
        if e in self._ffts:
            n_fft, spectrum = self._ffts[e]
            return n_fft, spectrum[rows]
        every = np.arange(len(self.counts))
        ext = self.mirrored(e, every if e <= _CACHED_GRID else rows)
        n_fft = 1 << (ext.shape[-1] + e - 2).bit_length()  # ≥ the full convolution's length 4E − 3
        spectrum = np.fft.rfft(ext, n_fft)
        if e <= _CACHED_GRID:
            self._ffts[e] = (n_fft, spectrum)
            return n_fft, spectrum[rows]
        return n_fft, spectrum

    def smooth(self, sigma: float, t: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """(rows, series, len(t)): the smoothed series of the weightings ``rows`` at the points t."""
        e = _grid_size(sigma)
        n_fft, spectrum = self._fft(e, rows)
        tk = np.linspace(0, 1, e)
        kernel = np.exp(-(tk - 0.5) * (tk - 0.5) / (2 * sigma**2))
        kernel /= np.sqrt(2 * np.pi) * sigma
        full = np.fft.irfft(spectrum * np.fft.rfft(kernel, n_fft), n_fft)
        start = (e - 1) + e // 2  # np.convolve(..., "valid")[E//2 : E//2 + E]
        smoothed = full[..., start : start + e]
        inds = (t * (e - 1)).astype(int).clip(0, e - 2)  # relplot.kernels.interpolate
        bucket = 1 / (e - 1)
        residual = (t - inds * bucket) / bucket
        return smoothed[..., inds] * (1 - residual) + smoothed[..., inds + 1] * residual

    def mirrored(self, e: int, rows: np.ndarray) -> np.ndarray:
        """(rows, series, 3E − 2): the grids mirrored at both ends, as the convolution sees them."""
        values = self._spread(e, rows)
        flipped = values[..., ::-1]
        return np.concatenate([flipped[..., :-1], values, flipped[..., 1:]], axis=-1)


def _interpolated_sum(sigma: float, t: np.ndarray, n_fft: int) -> np.ndarray:
    """v (3E − 2) with v · mirrored grid = Σ_t (smoothed grid read at t) for any grid, by linearity: the
    read-out weights of every t, correlated with the kernel (one FFT). Only the density's sum over t enters
    the smooth ECE, so the density needs this dot product, not a convolution per resample."""
    e = _grid_size(sigma)
    inds = (t * (e - 1)).astype(int).clip(0, e - 2)
    bucket = 1 / (e - 1)
    residual = (t - inds * bucket) / bucket
    readout = np.bincount(inds, 1 - residual, minlength=e) + np.bincount(inds + 1, residual, minlength=e)
    placed = np.zeros(n_fft)
    start = (e - 1) + e // 2
    placed[start : start + e] = readout
    tk = np.linspace(0, 1, e)
    kernel = np.exp(-(tk - 0.5) * (tk - 0.5) / (2 * sigma**2))
    kernel /= np.sqrt(2 * np.pi) * sigma
    # v[m] = Σ_q placed[q]·kernel[q − m]: no wrap-around, as n_fft ≥ 4E − 2 leaves zeros between them
    correlation = np.fft.irfft(np.fft.rfft(placed) * np.conj(np.fft.rfft(kernel, n_fft)), n_fft)
    return correlation[: 3 * e - 2]


class _SmoothECE:
    """smECE_σ of B weightings of (confidence, hit), as relplot's ``smooth_ece``: Σ_t |r̂(t)|·δ̂(t) / Σ_t δ̂(t)
    with δ̂ = density + 10⁻⁴ and r̂ = smoothed residual / δ̂, that is Σ_t |smoothed residual(t)| / Σ_t δ̂(t)."""

    def __init__(self, conf: np.ndarray, hit: np.ndarray, counts: np.ndarray):
        self.residuals = _WeightedGrids(conf, [conf - hit], counts)
        self.weights = _WeightedGrids(conf, [np.ones_like(conf)], counts)
        self._mirrored: dict[int, np.ndarray] = {}

    def __call__(self, sigma: float, rows: np.ndarray) -> np.ndarray:
        e = _grid_size(sigma)
        t = np.linspace(0, 1, max(round(10 / sigma), _SMECE_MESH_PTS))
        residual = self.residuals.smooth(sigma, t, rows)[:, 0]
        if e in self._mirrored:
            grids = self._mirrored[e][rows]
        elif e <= _CACHED_GRID:  # the density's mirrored grids, kept for every weighting as the FFTs are
            self._mirrored[e] = self.weights.mirrored(e, np.arange(len(self.weights.counts)))[:, 0]
            grids = self._mirrored[e][rows]
        else:
            grids = self.weights.mirrored(e, rows)[:, 0]
        n_fft = 1 << (4 * e - 4).bit_length()  # as _WeightedGrids._fft
        density = grids @ _interpolated_sum(sigma, t, n_fft) + t.size * _SMECE_DENSITY_EPS
        return np.sum(np.abs(residual), axis=1) / density


def bootstrap_smece(conf, hit, counts: np.ndarray) -> np.ndarray:
    """The top-label smooth ECE of every resample (``counts``: B × N), a length-B array.

    Each resample searches its own bandwidth with relplot's bisection
    (:func:`trustcal.measures.calibration_errors.smece`): σ = 1 if σ ≥ smECE_σ already, otherwise ten
    halvings of (0, 1] keeping the smallest σ tried with σ ≥ smECE_σ. The B searches run side by side:
    at each step the resamples that try the same σ share one kernel, and their grids (the same E for
    every σ ≥ 0.01) are spread and transformed once.
    """
    conf = np.asarray(conf, dtype=np.float64)
    hit = np.asarray(hit, dtype=np.float64)
    if counts.shape[1] != conf.size:
        raise ValueError(f"counts have {counts.shape[1]} samples, the confidences {conf.size}")
    smooth_ece = _SmoothECE(conf, hit, counts)
    b = len(counts)

    def values(sigmas: np.ndarray, rows: np.ndarray) -> np.ndarray:
        out = np.empty(rows.size)
        for sigma in np.unique(sigmas):  # resamples trying the same σ share the kernel
            same = sigmas == sigma
            out[same] = smooth_ece(float(sigma), rows[same])
        return out

    every = np.arange(b)
    at_one = values(np.ones(b), every)
    search = ~(1.0 < at_one)  # σ = 1 is kept where 1 < smECE_1 (relplot's check_smooth_ece)
    start, end, value = np.ones(b), np.zeros(b), at_one.copy()
    for _ in range(_SMECE_REFINE):
        mid = (start + end) / 2
        small = mid < _SMECE_SEARCH_EPS  # below the search's floor: counts as "below" unevaluated
        need = search & ~small
        tried = np.full(b, np.nan)
        tried[need] = values(mid[need], every[need])
        below = small | (mid < tried)
        end = np.where(search & below, mid, end)
        up = search & ~below
        start = np.where(up, mid, start)
        value = np.where(up, tried, value)
    return value


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
    _, sigma = _smece_from_top_label(conf, hit)
    t = np.linspace(0.0, 1.0, int(points))
    series = [hit, np.ones_like(conf)]
    ((hits, dens),) = _WeightedGrids(conf, series, np.ones((1, n))).smooth(sigma, t, np.zeros(1, dtype=int))
    out = {
        "confidence": t,
        "accuracy": hits / (dens + _SMECE_DENSITY_EPS),
        "density": dens / n,
        "bandwidth": np.full(t.size, sigma),
    }
    if counts is not None:
        if counts.shape[1] != n:
            raise ValueError(f"counts have {counts.shape[1]} samples, the confidences {n}")
        smoothed = _WeightedGrids(conf, series, counts).smooth(sigma, t, np.arange(len(counts)))
        curves = smoothed[:, 0] / (smoothed[:, 1] + _SMECE_DENSITY_EPS)
        out["accuracy_lo"], out["accuracy_hi"] = percentile_interval(curves, level)
    return out
