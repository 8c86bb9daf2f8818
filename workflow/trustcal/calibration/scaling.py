"""Calibrators that rescale the logits before the softmax (docs/method.md §2, §2.5–2.9).

- ``none``: softmax(z), nothing fitted.
- ``temperature``: softmax(z / T), T from :func:`~trustcal.calibration.temperature.fit_temperature`.
- ``vector`` (Guo et al. 2017): softmax(w ∘ z + b), w, b ∈ R^K.
- ``matrix`` (Guo et al. 2017) with ODIR (Kull et al. 2019): softmax(W z + b), W ∈ R^{K×K}.
- ``dirichlet`` (Kull et al. 2019): matrix scaling, with ODIR, of log_softmax(z).

The last three minimise the mean NLL (plus ODIR's penalty), a convex function, in float64
with :func:`~trustcal.calibration.solver.minimize_box`: projected Newton steps with the
analytic gradient and Hessian of :class:`_ScalingLoss` (Bertsekas 1982), starting at the
identity map (w = 1 or W = I, b = 0), so an already calibrated input stays put; after
``solver.NEWTON_MAX_ITER`` steps without converging, SciPy's L-BFGS-B finishes.
Beyond ``newton_max_parameters`` parameters (matrix and Dirichlet scaling past K = 20, vector
scaling past K = 1000), where the Hessian costs more than it saves, L-BFGS-B runs alone from
the same start, its default iteration limit also bounded by ``solver.MAX_WORK`` operations.
Every scale (w_k, W_kk) is bounded to [1/t_max, 1/t_min], the temperature search
interval read as a per-class inverse temperature. The fit runs on standardised
features and drops the directions the softmax cannot see (both explained in
:class:`_ScalingLoss`); the parameters reported are those of the formulas above.
A fit that stops unconverged on a split the map reached classifies without error says
so (``separable``: the NLL has no minimum there). Options: ``tol`` (1e-8, on every
projected gradient component), ``max_iter`` (1000), and for matrix and Dirichlet
``odir_lambda``, ``odir_mu`` (0.01 each).
"""

from __future__ import annotations

import functools
from abc import abstractmethod

import numpy as np

from trustcal.calibration.base import Calibrator, check_logits, no_more_options, option, require
from trustcal.calibration.solver import Box, iteration_plan, minimize_box
from trustcal.calibration.temperature import T_MAX, T_MIN, fit_temperature, log_softmax

# ODIR's default weights (docs/method.md §2.7). Kull et al. choose λ and μ by cross-validation
# over 10^-5…10^3; one fixed pair is kept here, so 100 epochs × 8 runs need no inner CV.
ODIR_LAMBDA = 0.01
ODIR_MU = 0.01
MAX_ITER = 1000  # iterations, Newton's and L-BFGS-B's together; the fits on network logits take 5–20
TOL = 1e-8  # stop when every (projected) gradient component of the mean loss is below it (L-BFGS-B's gtol)


class _SoftmaxMap(Calibrator):
    """A map that ends in a softmax: its log-probabilities are exact (a log-softmax), never floored."""

    @abstractmethod
    def predict_log_proba(self, logits) -> np.ndarray:
        """N×K float64 exact log-probabilities of the calibrated predictions."""

    def predict_proba(self, logits):
        return np.exp(self.predict_log_proba(logits))

    def predict(self, logits):
        log_probs = self.predict_log_proba(logits)
        return np.exp(log_probs), log_probs


class NoCalibration(_SoftmaxMap):
    """softmax(z): the uncalibrated probabilities, for comparison."""

    method = "none"
    name = "no calibration"

    @classmethod
    def _fit(cls, z, y, t_min, t_max, options):
        no_more_options(cls.method, options, cls.options)
        return cls(z.shape[1])

    def predict_log_proba(self, logits):
        return log_softmax(check_logits(logits, self.n_classes))

    @property
    def n_parameters(self):
        return 0

    def _arrays(self):
        return {}

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(n_classes, **flags)


class TemperatureScaling(_SoftmaxMap):
    """softmax(z / T) with T from :func:`fit_temperature` (options ``tol``, ``max_iter`` as there)."""

    method = "temperature"
    name = "temperature scaling"
    options = ("tol", "max_iter")

    def __init__(self, n_classes, temperature, **flags):
        super().__init__(n_classes, **flags)
        self._temperature = float(temperature)

    @classmethod
    def _fit(cls, z, y, t_min, t_max, options):
        tol = option(options, "tol", 1e-10, "pos")
        max_iter = option(options, "max_iter", 100, "count")
        no_more_options(cls.method, options, cls.options)
        f = fit_temperature(z, y, t_min=t_min, t_max=t_max, tol=tol, max_iter=max_iter)
        return cls(z.shape[1], f.temperature, converged=f.converged, at_bound=f.at_bound, iterations=f.iterations)

    @classmethod
    def identity(cls, n_classes, **flags):
        return cls(n_classes, 1.0, **flags)

    def bound_detail(self, t_min, t_max):
        t = self._temperature
        side = "lower bound t_min" if abs(t - t_min) <= abs(t - t_max) else "upper bound t_max"
        return (
            f"T = {t:g} is the {side} of the search interval [{t_min:g}, {t_max:g}], and the NLL still falls beyond it"
        )

    @property
    def temperature(self):
        return self._temperature

    def predict_log_proba(self, logits):
        return log_softmax(check_logits(logits, self.n_classes) / self._temperature)

    @property
    def n_parameters(self):
        return 1

    def _arrays(self):
        return {"temperature": np.array(self._temperature, dtype=np.float64)}

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(n_classes, arrays["temperature"].item(), **flags)


class _ScalingLoss:
    """The mean NLL of softmax(W x + b) plus ODIR's penalty, as the function of θ that the solver minimises.

    The fit runs in standardised features (x − m)/σ (m_j, σ_j the mean and standard deviation
    of feature j), with parameters W' = W·diag(σ) and c = b + W m, so that weights and biases
    see inputs of one size: log-probabilities have means near −10 and those of probability
    files reach −708, where the raw fit took 2–4× more iterations. The penalties stay on
    W and b = c − W m, so the optimum is the same.

    θ = (d, u, c): the K scales d (W's diagonal, or w), W's K(K−1) off-diagonal entries u
    (``full`` only: matrix and Dirichlet) and the K biases c, all in standardised units. The softmax
    does not change when a constant is added to every class's score, so W + 1vᵀ and b + a·1
    predict what W and b do; the fit keeps the representative that minimises ODIR's
    penalty, off-diagonal column sums and Σb equal to 0 (where ODIR's optimum lies), by
    centring u per column and b. The loss is then flat along the dropped directions, and
    the optimiser never moves along them (kept as free parameters, their weak curvature, ~λ/K,
    took 2–3× more iterations).
    """

    def __init__(self, x: np.ndarray, labels: np.ndarray, full: bool, lam: float, mu: float):
        n, k = x.shape
        self.n, self.k, self.full, self.labels = n, k, full, labels
        m = x.mean(axis=0)
        sigma = x.std(axis=0)
        sigma[~(sigma > 0)] = 1.0
        self.m, self.sigma = m, sigma
        self.xs = (x - m) / sigma
        self.m_s = m / sigma  # W m = W' m_s
        self.c_lam, self.c_mu = 2 * lam / (k * (k - 1)), 2 * mu / k  # d/dθ of λ/(K(K−1))·Σθ² and μ/K·Σθ²
        self.off = ~np.eye(k, dtype=bool) if full else None
        self.n_off = k * (k - 1) if full else 0
        self.reg = np.broadcast_to(self.c_lam / sigma**2, (k, k))  # ODIR's weight on W_ij = W'_ij / σ_j
        self.xt = np.ascontiguousarray(self.xs.T)  # K×N: the reductions over classes run along contiguous rows
        self.cols = np.arange(n)

    def identity(self) -> np.ndarray:
        """θ of the identity map: W = I, b = 0."""
        return np.concatenate([self.sigma, np.zeros(self.n_off), self.m])

    def box(self, t_min: float, t_max: float) -> Box:
        """1/t_max ≤ W_kk ≤ 1/t_min in standardised units; the other components free."""
        free = self.n_off + self.k
        return Box(
            np.concatenate([self.sigma / t_max, np.full(free, -np.inf)]),
            np.concatenate([self.sigma / t_min, np.full(free, np.inf)]),
        )

    def centre_columns(self, a: np.ndarray) -> np.ndarray:
        """``a`` with each column's off-diagonal entries shifted to sum to 0 (in place)."""
        off = self.off
        a[off] -= np.broadcast_to(a.sum(axis=0) / (self.k - 1), (self.k, self.k))[off]
        return a

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """W' (K×K, or the K scales), c and the bias b = c − W m (centred) of θ."""
        k, n_off = self.k, self.n_off
        c = theta[k + n_off :]
        if self.full:
            w = np.zeros((k, k))
            w[self.off] = theta[k : k + n_off]
            w = self.centre_columns(w) + np.diag(theta[:k])
            b = c - w @ self.m_s
        else:
            w = theta[:k]
            b = c - w * self.m_s
        return w, c, b - b.mean()

    def scores(self, w: np.ndarray, c: np.ndarray) -> np.ndarray:
        """K×N scores W' x_s + c of the standardised features."""
        s = w @ self.xt if self.full else self.xt * w[:, None]
        s += c[:, None]
        return s

    def loss_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The mean NLL plus ODIR's penalty at θ, and its gradient."""
        w, c, b = self.unpack(theta)
        n, labels, cols, c_mu = self.n, self.labels, self.cols, self.c_mu
        s = self.scores(w, c)
        s -= s.max(axis=0)
        s_true = s[labels, cols]
        np.exp(s, out=s)
        total = s.sum(axis=0)
        loss = np.mean(np.log(total) - s_true) + 0.5 * c_mu * (b @ b)
        s /= total * n  # softmax / N
        s[labels, cols] -= 1.0 / n  # (softmax − onehot) / N = d(mean NLL)/d(scores)
        gc = s.sum(axis=1) + c_mu * b
        if not self.full:
            gw = (s * self.xt).sum(axis=1) - c_mu * b * self.m_s
            return loss, np.concatenate([gw, gc - gc.mean()])
        off, reg = self.off, self.reg
        gw = s @ self.xs - c_mu * np.outer(b, self.m_s)
        loss += 0.5 * (reg[off] * w[off]) @ w[off]
        go = self.centre_columns(np.where(off, gw + reg * w, 0.0))
        return loss, np.concatenate([np.diag(gw), go[off], gc - gc.mean()])

    # The analytic Hessian (the loss is convex in θ). The scores are s_ia = Σ_j V_aj A_iaj, V = [W', c] linear
    # in θ (V = J θ), with A_i = [x_i, 1] for every class (matrix, Dirichlet) or A_ia = [x_ia, 1] (vector); the
    # NLL's Hessian in V is (1/N) Σ_i (diag p_i − p_i p_iᵀ) ⊗ A_i A_iᵀ, and ODIR's penalty is ½|Q θ|² (Q linear),
    # so H = Jᵀ H_V J + QᵀQ, singular only along the dropped directions, where the gradient has no component.
    def hessian_function(self):
        """The function θ ↦ H(θ), its constant parts (A, J and QᵀQ) built once."""
        n, k, full = self.n, self.k, self.full
        a_feat = np.concatenate([self.xt, np.ones((1, n))]) if full else None  # F×N, F = K + 1
        n_theta = 2 * k + self.n_off
        unit = np.eye(n_theta)
        rows_j, rows_q = [], []
        for j in range(n_theta):
            w, c, b = self.unpack(unit[j])
            rows_j.append(np.column_stack([w, c]).ravel())
            rows_q.append(
                np.concatenate([np.sqrt(self.c_mu) * b, np.sqrt(self.reg[self.off]) * w[self.off]]) if full else 0 * b
            )
        jac, q = np.array(rows_j).T, np.array(rows_q).T
        return functools.partial(self.hessian, a_feat, jac, q.T @ q)

    def hessian(self, a_feat, jac: np.ndarray, h_pen: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """H(θ) = Jᵀ H_V J + QᵀQ, given A (``a_feat``, full only), J and QᵀQ."""
        n, k = self.n, self.k
        w, c, _ = self.unpack(theta)
        s = self.scores(w, c)
        s -= s.max(axis=0)
        np.exp(s, out=s)
        s /= s.sum(axis=0)  # K×N probabilities
        if self.full:
            g = (s[:, None, :] * a_feat[None, :, :]).reshape(k * (k + 1), n)  # rows (a, j): p_ia A_ij
            blocks = (g @ a_feat.T).reshape(k, k + 1, k + 1)  # Σ_i p_ia A_i A_iᵀ
        else:
            xt = self.xt
            px = s * xt
            g = np.stack([px, s], axis=1).reshape(2 * k, n)  # rows (a, 0): p_ia x_ia, (a, 1): p_ia
            sums = np.stack([(px * xt).sum(axis=1), px.sum(axis=1), px.sum(axis=1), s.sum(axis=1)], 1)
            blocks = sums.reshape(k, 2, 2)
        h_v = -(g @ g.T)  # NumPy computes a product with its own transpose as one symmetric rank-N update
        f = blocks.shape[1]
        h_v.reshape(k, f, k, f)[np.arange(k), :, np.arange(k), :] += blocks
        return jac.T @ (h_v / n) @ jac + h_pen

    def separates(self, w: np.ndarray, c: np.ndarray) -> bool:
        """The map (W', c) classifies every sample correctly: its true class's score above every other."""
        labels, cols = self.labels, self.cols
        s = self.scores(w, c)
        s_true = s[labels, cols].copy()
        s[labels, cols] = -np.inf
        return bool((s_true > s.max(axis=0)).all())


class _LinearScaling(_SoftmaxMap):
    """softmax(W x + b) of features x = features(z); W diagonal (vector scaling) or full."""

    full: bool  # W a full K×K matrix (else a vector of K scales)
    odir: bool  # ODIR options accepted
    # Newton with the exact Hessian up to this many parameters, L-BFGS-B alone beyond (docs/method.md §2.9)
    newton_max_parameters: int

    def __init__(self, n_classes, weights, bias, *, separable: bool = False, **flags):
        super().__init__(n_classes, **flags)
        self.separable = bool(separable)  # not converged, and the map reached classifies every fit sample correctly
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.bias = np.ascontiguousarray(bias, dtype=np.float64)
        shape = (n_classes, n_classes) if self.full else (n_classes,)
        if self.weights.shape != shape or self.bias.shape != (n_classes,):
            raise ValueError(
                f"'{self.method}' needs weights {shape} and bias ({n_classes},), "
                f"got {self.weights.shape} and {self.bias.shape}"
            )

    @staticmethod
    def features(z: np.ndarray) -> np.ndarray:
        return z

    @classmethod
    def identity(cls, n_classes, **flags):
        return cls(n_classes, np.eye(n_classes) if cls.full else np.ones(n_classes), np.zeros(n_classes), **flags)

    def scales(self) -> np.ndarray:
        """The K per-class scales: W's diagonal, or w."""
        return np.diag(self.weights).copy() if self.full else self.weights

    def bound_detail(self, t_min, t_max):
        d, symbol = self.scales(), "W[k,k]" if self.full else "w[k]"
        slack = 4 * np.finfo(np.float64).eps  # the scales are W'/σ of bounds σ/t: two roundings
        parts = []
        for side, bound, at in (
            ("lower bound 1/t_max", 1 / t_max, d <= (1 / t_max) * (1 + slack)),
            ("upper bound 1/t_min", 1 / t_min, d >= (1 / t_min) * (1 - slack)),
        ):
            if at.any():
                classes = ", ".join(map(str, np.flatnonzero(at)))
                parts.append(
                    f"the scale {symbol} of class{'es' if at.sum() > 1 else ''} {classes} is at its {side} = {bound:g}"
                )
        return "; ".join(parts) or "a scale is at a bound of [1/t_max, 1/t_min]"

    def _scores(self, x: np.ndarray) -> np.ndarray:
        return (x @ self.weights.T if self.full else x * self.weights) + self.bias

    def predict_log_proba(self, logits):
        return log_softmax(self._scores(self.features(check_logits(logits, self.n_classes))))

    @property
    def n_parameters(self):
        return self.weights.size + self.bias.size

    def _arrays(self):
        return {"weights": self.weights, "bias": self.bias, "separable": np.array(self.separable)}

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        separable = bool(arrays["separable"].item()) if "separable" in arrays else False  # older states have none
        return cls(n_classes, arrays["weights"], arrays["bias"], separable=separable, **flags)

    def diagnostics(self, t_min=T_MIN, t_max=T_MAX):
        """As :meth:`Calibrator.diagnostics`; a fit that did not converge on a fit split this map separates
        says so: the NLL has no minimum there, it falls towards 0 as the map is scaled up."""
        found = super().diagnostics(t_min, t_max)
        if not self.separable:
            return found
        who = f"calibrator '{self.method}' ({self.name})"
        sentence = (
            f"{who} did not converge: the fit split is separable by this map (the map reached classifies every "
            "fit sample correctly), so the NLL has no minimum: it keeps falling towards 0 as the scales grow; "
            f"stopped after {self.iterations} iterations (options max_iter, tol); the map reached is used, and its "
            "NLL on the fit split is no higher than the uncalibrated model's"
        )
        return [(code, sentence if code == "calibrator_not_converged" else text) for code, text in found]

    @classmethod
    def _fit(cls, z, labels, t_min, t_max, options):
        lam = option(options, "odir_lambda", ODIR_LAMBDA, "nonneg") if cls.odir else 0.0
        mu = option(options, "odir_mu", ODIR_MU, "nonneg") if cls.odir else 0.0
        max_iter_given = "max_iter" in options
        max_iter = option(options, "max_iter", MAX_ITER, "count")
        tol = option(options, "tol", TOL, "pos")
        no_more_options(cls.method, options, cls.options)
        for module in ("scipy.optimize", "scipy.linalg"):  # the solver's
            require(module, "scipy", cls.method)
        loss = _ScalingLoss(cls.features(z), labels, cls.full, lam, mu)
        theta0, box = loss.identity(), loss.box(t_min, t_max)
        # An L-BFGS-B iteration's operations, 4·N per parameter: matrix scaling's two products of N×K by K×K
        # are 4·N·(K² + K) (docs/method.md §2.9).
        work = 4 * loss.n * len(theta0)
        newton_steps, max_iter = iteration_plan(len(theta0), cls.newton_max_parameters, max_iter, max_iter_given, work)
        found = minimize_box(
            loss.loss_grad, loss.hessian_function, theta0, box, tol=tol, max_iter=max_iter, newton_steps=newton_steps
        )
        k = loss.k
        w, c, b = loss.unpack(found.theta)
        d = found.theta[:k]
        return cls(
            k,
            w / loss.sigma,
            b,
            converged=found.converged,
            at_bound=bool(((d <= box.lo[:k]) | (d >= box.hi[:k])).any()),
            iterations=found.iterations,
            # not converged, does the map reached classify every fit sample correctly (a positive margin)?
            separable=not found.converged and loss.separates(w, c),
        )


class VectorScaling(_LinearScaling):
    """softmax(w ∘ z + b) (Guo et al. 2017), unregularised; w_k ∈ [1/t_max, 1/t_min]."""

    method = "vector"
    name = "vector scaling"
    options = ("max_iter", "tol")
    full, odir = False, False
    newton_max_parameters = 2000  # K ≤ 1000: its Hessian, 4K² × N products, costs a few gradients of matrix scaling


class _FullScaling(_LinearScaling):
    """softmax(W x + b), W a full matrix, with ODIR (Kull et al. 2019); W_kk ∈ [1/t_max, 1/t_min]."""

    options = ("odir_lambda", "odir_mu", "max_iter", "tol")
    full, odir = True, True
    newton_max_parameters = 420  # K ≤ 20: beyond, its Hessian, (K² + K)² × N products, costs more than L-BFGS-B


class MatrixScaling(_FullScaling):
    """softmax(W z + b) (Guo et al. 2017) with ODIR (Kull et al. 2019); W_kk ∈ [1/t_max, 1/t_min]."""

    method = "matrix"
    name = "matrix scaling"


class DirichletCalibration(_FullScaling):
    """softmax(W log_softmax(z) + b) (Kull et al. 2019) with ODIR; W_kk ∈ [1/t_max, 1/t_min]."""

    method = "dirichlet"
    name = "Dirichlet calibration"

    @staticmethod
    def features(z):
        return log_softmax(z)
