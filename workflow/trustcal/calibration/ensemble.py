"""Ensemble temperature scaling (Zhang, Kailkhura and Han 2020; docs/method.md §2.14).

*Mix-n-Match: Ensemble and Compositional Methods for Uncertainty Calibration in Deep Learning* (ICML 2020):
the calibrated probabilities are a mixture of the temperature-scaled, the raw and the uniform predictions,

    p = w_T softmax(z / T) + w_1 softmax(z) + w_u / K,   w on the simplex (w ≥ 0, Σ w = 1),

fitted as the authors fit it: T minimises the mean Brier score of softmax(z / T) over [t_min, t_max], then w
minimises the mean Brier score of the mixture. The second step is a quadratic programme in three
variables on the simplex, solved exactly (every face's equality-constrained optimum, the best feasible one),
so the fit never raises its own objective: w = (0, 1, 0), the raw model, is one of the candidates.
"""

from __future__ import annotations

import itertools

import numpy as np

from trustcal.calibration.base import check_logits, no_more_options, require
from trustcal.calibration.scaling import TemperatureFirst
from trustcal.calibration.temperature import log_softmax

XATOL = 1e-10  # the search for log T stops within this of the minimum


def _brier(probs: np.ndarray, labels: np.ndarray) -> float:
    """Mean over samples of Σ_k (p_k − 1[y = k])²."""
    rows = np.arange(len(labels))
    return float(((probs * probs).sum(axis=1) - 2 * probs[rows, labels] + 1).mean())


def simplex_quadratic(a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """argmin over the simplex of wᵀ A w − 2 cᵀ w (A symmetric positive semi-definite): each face's
    equality-constrained optimum (its KKT system), the feasible one of lowest value."""
    m = len(c)
    best, best_value = None, np.inf
    for size in range(1, m + 1):
        for face in itertools.combinations(range(m), size):
            idx = list(face)
            kkt = np.zeros((size + 1, size + 1))
            kkt[:size, :size] = 2 * a[np.ix_(idx, idx)]
            kkt[:size, size] = kkt[size, :size] = 1.0
            rhs = np.append(2 * c[idx], 1.0)
            solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:size]
            if (solution < 0).any() or not np.isclose(solution.sum(), 1.0):
                continue
            w = np.zeros(m)
            w[idx] = solution
            value = w @ a @ w - 2 * c @ w
            if value < best_value:
                best, best_value = w, value
    return best


class EnsembleTemperatureScaling(TemperatureFirst):
    """ETS (Zhang et al. 2020): w_T softmax(z / T) + w_1 softmax(z) + w_u / K, fitted by the Brier score."""

    method = "ets"
    name = "ensemble temperature scaling"
    options = ()

    def __init__(self, n_classes, temperature, weights, **flags):
        super().__init__(n_classes, **flags)
        self._temperature = float(temperature)
        self.weights = np.asarray(weights, dtype=np.float64)
        if self.weights.shape != (3,):
            raise ValueError(f"'ets' needs 3 weights, got shape {self.weights.shape}")

    def predict_log_proba(self, logits):
        z = check_logits(logits, self.n_classes)
        with np.errstate(divide="ignore"):
            log_w = np.log(self.weights)
        parts = (
            log_w[0] + log_softmax(z / self._temperature),
            log_w[1] + log_softmax(z),
            log_w[2] - np.log(z.shape[1]),
        )
        return np.logaddexp.reduce(np.broadcast_arrays(*parts), axis=0)

    @property
    def n_parameters(self):
        return 3  # T and two free weights

    def _arrays(self):
        return {"temperature": np.array(self._temperature), "weights": self.weights}

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(n_classes, arrays["temperature"].item(), arrays["weights"], **flags)

    @classmethod
    def _fit(cls, z, labels, t_min, t_max, options):
        no_more_options(cls.method, options, cls.options)
        optimize = require("scipy.optimize", "scipy", cls.method)
        n, k = z.shape
        raw = np.exp(log_softmax(z))
        found = optimize.minimize_scalar(
            lambda u: _brier(np.exp(log_softmax(z / np.exp(u))), labels),
            bounds=(np.log(t_min), np.log(t_max)),
            method="bounded",
            options={"xatol": XATOL},
        )
        t = float(np.exp(found.x))
        parts = np.stack([np.exp(log_softmax(z / t)), raw, np.full((n, k), 1.0 / k)])  # 3×N×K
        flat = parts.reshape(3, -1)
        onehot = np.zeros((n, k))
        onehot[np.arange(n), labels] = 1.0
        a = flat @ flat.T / n
        c = flat @ onehot.ravel() / n
        weights = simplex_quadratic(a, c)
        at_bound = bool(np.isclose(t, t_min, rtol=1e-6) or np.isclose(t, t_max, rtol=1e-6))
        return cls(k, t, weights, converged=bool(found.success), at_bound=at_bound, iterations=int(found.nfev))
