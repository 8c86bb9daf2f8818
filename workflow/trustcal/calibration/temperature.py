"""Temperature scaling (Guo et al. 2017; docs/method.md §2), in float64 NumPy.

The mean NLL of softmax(β z) is convex in β = 1/T: its derivative is
g(β) = mean(E_p[z] − z_y) and its second derivative mean(Var_p[z]) ≥ 0.
We solve g(β) = 0 by Newton's method safeguarded with bisection inside the
bracket [1/T_max, 1/T_min] (:func:`trustcal.calibration.solver.bracketed_newton`),
so T can never leave (0, ∞) and a solution at a bound is reported as such.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trustcal.calibration.solver import bracketed_newton
from trustcal.numerics import log_softmax

T_MIN, T_MAX = 0.01, 100.0  # the temperature search interval (config: calibration.t_min / t_max)


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Row-wise softmax(z / T), stable for any finite logits (the row max is subtracted)."""
    return np.exp(log_softmax(np.asarray(logits, dtype=np.float64) / temperature))


def nll_from_logits(logits: np.ndarray, labels: np.ndarray, temperature: float = 1.0) -> float:
    """Mean negative log-likelihood of softmax(z / T)."""
    labels = np.asarray(labels)
    lp = log_softmax(np.asarray(logits, dtype=np.float64) / temperature)
    return float(-lp[np.arange(len(labels)), labels].mean())


@dataclass(frozen=True)
class TemperatureFit:
    temperature: float
    nll_before: float
    nll_after: float
    converged: bool
    at_bound: bool
    iterations: int


def _grad_hess(beta: float, z: np.ndarray, zy: np.ndarray) -> tuple[float, float]:
    p = np.exp(log_softmax(beta * z))
    ez = (p * z).sum(axis=1)
    var = (p * z * z).sum(axis=1) - ez * ez
    return float((ez - zy).mean()), float(np.maximum(var, 0).mean())


def _checked(logits, labels, t_min: float, t_max: float) -> tuple[np.ndarray, np.ndarray]:
    """N×K float64 logits and N labels, with 0 < t_min < t_max < inf (a ValueError otherwise)."""
    z = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels)
    if z.ndim != 2 or len(z) != len(labels) or len(z) == 0:
        raise ValueError(f"logits must be N×K and labels N (got {z.shape} and {labels.shape})")
    if not 0 < t_min < t_max < np.inf:
        raise ValueError("need 0 < t_min < t_max < inf")
    return z, labels


def fit_temperature(
    logits: np.ndarray,
    labels: np.ndarray,
    *,
    t_min: float = T_MIN,
    t_max: float = T_MAX,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> TemperatureFit:
    """The T in [t_min, t_max] minimising the mean NLL of softmax(logits / T)."""
    z, labels = _checked(logits, labels, t_min, t_max)
    zy = z[np.arange(len(z)), labels]
    before = nll_from_logits(z, labels)
    lo, hi = 1.0 / t_max, 1.0 / t_min
    g_lo, _ = _grad_hess(lo, z, zy)
    g_hi, _ = _grad_hess(hi, z, zy)
    # NLL is flat (e.g. constant logits per row): any T is optimal, keep T = 1.
    if abs(g_lo) <= tol and abs(g_hi) <= tol:
        return TemperatureFit(1.0, before, before, True, False, 0)
    if g_lo >= 0:  # increasing on the whole bracket: smallest β, largest T
        return TemperatureFit(t_max, before, nll_from_logits(z, labels, t_max), True, True, 0)
    if g_hi <= 0:  # still decreasing at the largest β: smallest T
        return TemperatureFit(t_min, before, nll_from_logits(z, labels, t_min), True, True, 0)

    root = bracketed_newton(lambda beta: _grad_hess(beta, z, zy), min(max(1.0, lo), hi), lo, hi, tol, max_iter)
    t = 1.0 / root.beta
    return TemperatureFit(t, before, nll_from_logits(z, labels, t), root.converged, False, root.iterations)


def newton_temperature(
    logits: np.ndarray,
    labels: np.ndarray,
    *,
    start: float = 1.0,
    t_min: float = T_MIN,
    t_max: float = T_MAX,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> float:
    """The T of :func:`fit_temperature` (the same minimiser, to its tolerance ``tol``) at a fraction of its cost.

    Each step of :func:`fit_temperature` takes a log-softmax of the whole array; here the rows are shifted
    by their maximum once (d = z − max_k z, so softmax(βz) = softmax(βd) for β > 0), and a step is one
    exp of βd and three row sums as matrix–vector products: g(β) = mean(E_p[d] − d_y) and
    g'(β) = mean(Var_p[d]). The bounds are not evaluated first: Newton's method starts at 1/``start``
    (e.g. the T of a similar fit) inside the bracket [1/t_max, 1/t_min], which every evaluation narrows
    (g is increasing); a step that leaves the bracket bisects it. A minimiser beyond a bound drives the
    bracket onto that bound, and the bound is returned, as :func:`fit_temperature` does.
    """
    z, labels = _checked(logits, labels, t_min, t_max)
    d = z - z.max(axis=1, keepdims=True)
    dy = d[np.arange(len(d)), labels]
    ones = np.ones(d.shape[1])

    def slope(beta: float) -> tuple[float, float]:  # g(β) and g'(β)
        e = np.exp(beta * d)
        ed = e * d
        total, first, second = e @ ones, ed @ ones, (ed * d) @ ones
        mean = first / total
        return float(np.mean(mean - dy)), float(np.mean(np.maximum(second / total - mean * mean, 0.0)))

    def nll(beta: float) -> float:  # mean −log softmax(βd)_y; d ≤ 0, so exp(βd) cannot overflow
        return float(np.mean(np.log(np.exp(beta * d) @ ones) - beta * dy))

    lo, hi = 1.0 / t_max, 1.0 / t_min
    root = bracketed_newton(slope, min(max(1.0 / start, lo), hi), lo, hi, tol, max_iter)
    beta, g = root.beta, root.slope
    if beta - 1.0 / t_max <= tol * max(1.0, beta) and g > 0:  # the NLL still rises at the smallest β
        return t_max
    if 1.0 / t_min - beta <= tol * max(1.0, beta) and g < 0:  # still falls at the largest β
        return t_min
    # Stopped on a flat stretch (|g| ≤ tol) that still slopes towards a bound: the bound when its NLL is
    # lower, as fit_temperature finds it (Newton's method would otherwise stop short of it, with the same
    # NLL to about tol but another map on held-out data).
    bound = 1.0 / t_min if g < 0 else 1.0 / t_max
    if g != 0 and nll(bound) < nll(beta):
        return 1.0 / bound
    return 1.0 / beta
