"""One-vs-rest binning calibrators of the softmax probabilities (docs/method.md §2.10–2.11).

Each class k gets its own map g_k of its softmax probability p_k = softmax(z)_k, fitted
on the indicator 1[y = k]; the K outputs g_k(p_k) are then divided by their sum so a
row sums to 1 (Zadrozny & Elkan 2002). A row whose K outputs are all 0 (possible when
every one of its bins saw no positive) becomes uniform, 1/K each.

- ``histogram`` (Zadrozny & Elkan 2001): g_k is constant on ``bins`` equal-width bins
  of [0, 1] (bin b holds b/B ≤ p < (b+1)/B, the last one also p = 1), equal to the
  fraction of fit samples in the bin whose label is k; a bin no fit sample fell into
  keeps its centre (b + ½)/B, the value of a calibrated input (netcal's rule too). NumPy only.
- ``isotonic`` (Zadrozny & Elkan 2002): g_k is scikit-learn's
  ``IsotonicRegression(increasing=True, out_of_bounds="clip", y_min=0, y_max=1)``, kept
  as its thresholds (X_thresholds_, y_thresholds_) and evaluated with ``np.interp`` after
  clipping to the fitted range, which is what scikit-learn's predict computes (SciPy's
  interp1d hands float64 linear interpolation to ``np.interp``).

``irm`` (multiclass isotonic regression, Zhang, Kailkhura and Han 2020, docs/method.md §2.16) fits one
isotonic map g to every class's (p_k, 1[y = k]) pair pooled together, so that a row's classes keep their
order (one-vs-rest isotonic regression breaks it: its K maps differ and flatten to ties). The output is
g(p_k) + ε p_k, ε = 1e-9, divided by the row's sum: the ε term of the authors' ``mir_calibrate`` keeps
every probability positive and breaks g's ties by the softmax's order.
"""

from __future__ import annotations

import numpy as np

from trustcal.calibration.base import Calibrator, check_logits, no_more_options, option, require
from trustcal.calibration.temperature import softmax

BINS = 15  # histogram bins per class, the bin count of Guo et al.'s ECE


def normalise(q: np.ndarray) -> np.ndarray:
    """Rows divided by their sum; a row of zeros becomes uniform."""
    total = q.sum(axis=1, keepdims=True)
    out = np.full_like(q, 1.0 / q.shape[1])
    np.divide(q, total, out=out, where=total > 0)
    return out


def bin_index(p: np.ndarray, bins: int) -> np.ndarray:
    """The bin ⌊p·B⌋ of each probability, p = 1 in the last bin."""
    return np.minimum((p * bins).astype(np.intp), bins - 1)


class HistogramBinning(Calibrator):
    """One-vs-rest histogram binning with ``bins`` (default 15) equal-width bins per class."""

    method = "histogram"
    name = "histogram binning"
    options = ("bins",)

    def __init__(self, n_classes, values, **flags):
        super().__init__(n_classes, **flags)
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        if self.values.ndim != 2 or self.values.shape[0] != n_classes:
            raise ValueError(f"'histogram' needs K×bins values, got shape {self.values.shape} for K = {n_classes}")

    @classmethod
    def _fit(cls, z, y, t_min, t_max, options):
        bins = option(options, "bins", BINS, "count")
        no_more_options(cls.method, options, cls.options)
        k = z.shape[1]
        idx = bin_index(softmax(z), bins)
        values = np.empty((k, bins))
        centres = (np.arange(bins) + 0.5) / bins
        for c in range(k):
            count = np.bincount(idx[:, c], minlength=bins)
            positives = np.bincount(idx[:, c], weights=(y == c).astype(np.float64), minlength=bins)
            values[c] = np.where(count > 0, positives / np.maximum(count, 1), centres)
        return cls(k, values)

    def predict_proba(self, logits):
        p = softmax(check_logits(logits, self.n_classes))
        idx = bin_index(p, self.values.shape[1])
        return normalise(self.values[np.arange(self.n_classes), idx])

    @property
    def n_parameters(self):
        return self.values.size

    def _arrays(self):
        return {"values": self.values}

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(n_classes, arrays["values"], **flags)


class IsotonicCalibration(Calibrator):
    """One-vs-rest isotonic regression (scikit-learn's PAV), kept as thresholds per class.

    State: ``x`` and ``y``, every class's X_thresholds_ and y_thresholds_ one after the
    other, and ``offsets`` (K+1): class k's are ``x[offsets[k]:offsets[k+1]]``.
    Parameters: the number of constant pieces (distinct fitted levels) summed over classes,
    the degrees of freedom of an isotonic fit.
    """

    method = "isotonic"
    name = "isotonic regression"

    def __init__(self, n_classes, x, y, offsets, **flags):
        super().__init__(n_classes, **flags)
        self.x = np.ascontiguousarray(x, dtype=np.float64)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        if (
            self.offsets.shape != (n_classes + 1,)
            or self.offsets[0] != 0
            or self.offsets[-1] != len(self.x)
            or self.x.shape != self.y.shape
            or (np.diff(self.offsets) < 1).any()
        ):
            raise ValueError("'isotonic' state: x, y and offsets do not fit together")

    @classmethod
    def _fit(cls, z, y, t_min, t_max, options):
        no_more_options(cls.method, options, cls.options)
        isotonic = require("sklearn.isotonic", "scikit-learn", cls.method)
        p = softmax(z)
        xs, ys = [], []
        for c in range(z.shape[1]):
            iso = isotonic.IsotonicRegression(increasing=True, out_of_bounds="clip", y_min=0.0, y_max=1.0)
            iso.fit(p[:, c], (y == c).astype(np.float64))
            xs.append(iso.X_thresholds_)
            ys.append(iso.y_thresholds_)
        offsets = np.concatenate([[0], np.cumsum([len(x) for x in xs])])
        return cls(z.shape[1], np.concatenate(xs), np.concatenate(ys), offsets)

    def class_map(self, c: int, p: np.ndarray) -> np.ndarray:
        """Class c's fitted isotonic map at probabilities p (before the renormalisation)."""
        xt, yt = self.x[self.offsets[c] : self.offsets[c + 1]], self.y[self.offsets[c] : self.offsets[c + 1]]
        return np.interp(np.clip(p, xt[0], xt[-1]), xt, yt)

    def predict_proba(self, logits):
        p = softmax(check_logits(logits, self.n_classes))
        q = np.empty_like(p)
        for c in range(self.n_classes):
            q[:, c] = self.class_map(c, p[:, c])
        return normalise(q)

    @property
    def n_parameters(self):
        return int(sum(len(np.unique(self.y[a:b])) for a, b in zip(self.offsets[:-1], self.offsets[1:])))

    def _arrays(self):
        return {"x": self.x, "y": self.y, "offsets": self.offsets}

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(n_classes, arrays["x"], arrays["y"], arrays["offsets"], **flags)


IRM_EPSILON = 1e-9  # the authors' mir_calibrate adds 1e-9 p to g(p): no zero probability, ties kept in order


class MulticlassIsotonic(Calibrator):
    """IRM (Zhang et al. 2020): one isotonic map of the softmax probability for every class, pooled, fitted
    on the N×K pairs (p_k, 1[y = k]); state: its thresholds ``x`` and levels ``y``."""

    method = "irm"
    name = "multiclass isotonic regression"

    def __init__(self, n_classes, x, y, **flags):
        super().__init__(n_classes, **flags)
        self.x = np.ascontiguousarray(x, dtype=np.float64)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        if self.x.ndim != 1 or self.x.shape != self.y.shape or len(self.x) < 1:
            raise ValueError("'irm' state: x and y must be vectors of the same length")

    @classmethod
    def _fit(cls, z, y, t_min, t_max, options):
        no_more_options(cls.method, options, cls.options)
        isotonic = require("sklearn.isotonic", "scikit-learn", cls.method)
        p = softmax(z)
        onehot = np.zeros_like(p)
        onehot[np.arange(len(y)), y] = 1.0
        iso = isotonic.IsotonicRegression(increasing=True, out_of_bounds="clip", y_min=0.0, y_max=1.0)
        iso.fit(p.ravel(), onehot.ravel())
        return cls(z.shape[1], iso.X_thresholds_, iso.y_thresholds_)

    def predict_proba(self, logits):
        p = softmax(check_logits(logits, self.n_classes))
        g = np.interp(np.clip(p, self.x[0], self.x[-1]), self.x, self.y)
        return normalise(g + IRM_EPSILON * p)

    @property
    def n_parameters(self):
        return len(np.unique(self.y))

    def _arrays(self):
        return {"x": self.x, "y": self.y}

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(n_classes, arrays["x"], arrays["y"], **flags)
