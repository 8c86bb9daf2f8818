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
``odir_lambda``, ``odir_mu``: ODIR's weights, by default chosen by cross-validation on the fit
split (:func:`choose_odir`, docs/method.md §2.7: μ = λ along a grid of powers of ten, folds
stratified by label, warm starts from strong to weak); a number fixes λ, and μ at 0.01 unless
given too (the fits of earlier versions, unchanged). The folds' fits past K = 20, and the final
fit there, take truncated Newton steps (:meth:`_ScalingLoss.hessian_operator`) instead of
L-BFGS-B; the chosen weights and the path are saved in the state.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from trustcal.calibration.base import (
    Calibrator,
    check_logits,
    linear_map,
    no_more_options,
    option,
    require,
    temperature_bound,
)
from trustcal.calibration.solver import (
    NEWTON_MAX_ITER,
    Box,
    HessianOperator,
    iteration_plan,
    minimize_box,
)
from trustcal.calibration.temperature import T_MAX, T_MIN, fit_temperature, log_softmax
from trustcal.numerics import one_blas_thread

# ODIR's weights (docs/method.md §2.7): chosen by cross-validation on the fit split by default, as Kull et al. do;
# a fixed odir_lambda keeps odir_mu = ODIR_MU unless it is given too (the fixed pair of earlier versions).
ODIR_LAMBDA = 0.01
ODIR_MU = 0.01
CV = "cv"  # the value of odir_lambda / odir_mu that asks for cross-validation (odir_lambda's default)
ODIR_GRID = tuple(10.0**e for e in range(8, -6, -1))  # the path, strong to weak: 1e8, 1e7, …, 1e-5 at most
ODIR_PRIOR_SD = 1e-3  # the path starts where ODIR's prior holds each off-diagonal weight within this of 0
ODIR_FOLDS = 5  # stratified by label, where the folds' fits take Newton steps with the exact Hessian (K ≤ 20)
START_ROWS = 5000  # the truncated Newton steps' start, temperature scaling's map, is fitted on at most this many
FLOAT32_GRAM = 200  # past this many classes the ODIR operator's preconditioner sums its Gram matrix in float32


def gram32(g: np.ndarray) -> np.ndarray:
    """g gᵀ summed in float32 (a symmetric rank-N update), returned in float64."""
    g32 = g.astype(np.float32)
    return (g32 @ g32.T).astype(np.float64)


ODIR_FOLDS_OPERATOR = 3  # where they take truncated Newton steps (K > 20): each fit costs 10–100 gradients
ODIR_PATIENCE = 2  # the path stops at the second grid point in a row above the best held-out NLL …
ODIR_RISE = 1e-3  # … or at the first above it by more than this (nats per sample)
# The path's cost, ODIR_CV_GRADIENTS gradients of 4·N·K² operations per fold (measured at K = 100: 60–120), is
# bounded by ODIR_CV_MAX_WORK operations (~20 s on one core at 50 GFLOP/s: up to K ≈ 500 at N = 5,000); beyond,
# λ = μ = the grid's first point (docs/method.md §2.7)
ODIR_CV_GRADIENTS = 100
ODIR_CV_MAX_WORK = 1e12
CV_TOL = 1e-5  # the folds' fits: projected gradient components below it (their held-out NLL to ~1e-6)
CV_MAX_ITER = 100  # the folds' fits: Newton steps (then L-BFGS-B) per grid point
CV_SEED = 0  # the folds are drawn with this seed: a fit split always gets the same folds
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


class TemperatureFirst(_SoftmaxMap):
    """A map whose first step is temperature scaling (structured scaling, ETS): its T is reported by
    :attr:`temperature` and in its bound warning, not in the summary (NaN there: the map is more than a
    temperature); ``_temperature`` is set by the subclass."""

    _temperature: float

    @property
    def temperature(self):
        return self._temperature

    def summary(self):
        return {**super().summary(), "temperature": float("nan")}

    def bound_detail(self, t_min, t_max):
        return f"its temperature step's {temperature_bound(self._temperature, t_min, t_max)}"


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
        return f"{temperature_bound(self._temperature, t_min, t_max)}, and the NLL still falls beyond it"

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
    W and b = c − W m, so the optimum is the same. With ``centred=False`` (m = 0: x/σ, c = b) the
    intercept penalty touches the biases alone, as the truncated Newton steps of
    :meth:`hessian_operator` need when μ is strong (cross-validation's path starts there).

    θ = (d, u, c): the K scales d (W's diagonal, or w), W's K(K−1) off-diagonal entries u
    (``full`` only: matrix and Dirichlet) and the K biases c, all in standardised units. The softmax
    does not change when a constant is added to every class's score, so W + 1vᵀ and b + a·1
    predict what W and b do; the fit keeps the representative that minimises ODIR's
    penalty, off-diagonal column sums and Σb equal to 0 (where ODIR's optimum lies), by
    centring u per column and b. The loss is then flat along the dropped directions, and
    the optimiser never moves along them (kept as free parameters, their weak curvature, ~λ/K,
    took 2–3× more iterations).
    """

    def __init__(self, x: np.ndarray, labels: np.ndarray, full: bool, lam: float, mu: float, centred: bool = True):
        n, k = x.shape
        self.n, self.k, self.full, self.labels, self.centred = n, k, full, labels, centred
        m = x.mean(axis=0) if centred else np.zeros(k)
        sigma = x.std(axis=0)
        sigma[~(sigma > 0)] = 1.0
        self.m, self.sigma = m, sigma
        self.xs = (x - m) / sigma
        self.m_s = m / sigma  # W m = W' m_s
        self.off = ~np.eye(k, dtype=bool) if full else None
        self.n_off = k * (k - 1) if full else 0
        self.set_penalty(lam, mu)
        self.xt = np.ascontiguousarray(self.xs.T)  # K×N: the reductions over classes run along contiguous rows
        self.cols = np.arange(n)
        self._parts = None  # the Hessian's constant parts (penalised_hessian_function)
        self._direction = None  # the features' main direction (hessian_operator_function)

    def set_penalty(self, lam: float, mu: float) -> None:
        """ODIR's weights λ and μ (cross-validation moves along them with one loss)."""
        k = self.k
        self.c_lam, self.c_mu = 2 * lam / (k * (k - 1)), 2 * mu / k  # d/dθ of λ/(K(K−1))·Σθ² and μ/K·Σθ²
        self.reg = np.broadcast_to(self.c_lam / self.sigma**2, (k, k))  # ODIR's weight on W_ij = W'_ij / σ_j

    def theta_of(self, weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """θ of the map softmax(W x + b) (W full; its off-diagonal columns summing to 0, as :meth:`unpack` gives)."""
        w = weights * self.sigma  # W' = W diag(σ)
        return np.concatenate([np.diag(w), w[self.off], bias + w @ self.m_s])

    def log_proba(self, theta: np.ndarray, x: np.ndarray) -> np.ndarray:
        """N×K log-probabilities of softmax(W x + b) at θ, for features ``x`` in original units."""
        w, _, b = self.unpack(theta)
        weights = w / self.sigma  # W = W' diag(1/σ), or w_k / σ_k
        return log_softmax((x @ weights.T if self.full else x * weights) + b)

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

    def probabilities(self, theta: np.ndarray) -> np.ndarray:
        """K×N softmax probabilities at θ."""
        w, c, _ = self.unpack(theta)
        s = self.scores(w, c)
        s -= s.max(axis=0)
        np.exp(s, out=s)
        s /= s.sum(axis=0)
        return s

    def penalised_hessian_function(self):
        """As :meth:`hessian_function`, its penalty part μ·A + λ·B from parts built once per loss, so that a
        path along λ and μ (:func:`choose_odir`) rebuilds nothing but the data part."""
        if self._parts is None:
            n_theta = 2 * self.k + self.n_off
            unit, rows_j, rows_b, rows_u = np.eye(n_theta), [], [], []
            inv_var = np.broadcast_to(1 / self.sigma**2, (self.k, self.k))[self.off] if self.full else None
            for j in range(n_theta):
                w, c, b = self.unpack(unit[j])
                rows_j.append(np.column_stack([w, c]).ravel())
                rows_b.append(b)
                if self.full:
                    rows_u.append(np.sqrt(inv_var) * w[self.off])
            q_b = np.array(rows_b)
            q_u = np.array(rows_u) if self.full else np.zeros((n_theta, 0))
            a_feat = np.concatenate([self.xt, np.ones((1, self.n))]) if self.full else None
            self._parts = (a_feat, np.array(rows_j).T, q_b @ q_b.T, q_u @ q_u.T)
        a_feat, jac, h_b, h_u = self._parts
        return functools.partial(self.hessian, a_feat, jac, self.c_mu * h_b + self.c_lam * h_u)

    def scales_operator(self, theta: np.ndarray) -> HessianOperator:
        """H at θ of vector scaling (``full`` False) as an operator, for its truncated Newton steps past
        ``VectorScaling.newton_max_parameters``: a product H v costs two passes over the K×N features (the dense
        Hessian, 4K²N products, cost 13 s a step at K = 1,000, N = 25,000); the preconditioner is each class's
        exact 2×2 block of (w_a, c_a), the classes' couplings through the softmax left out."""
        if self.full:
            raise ValueError("the scales' Hessian operator is vector scaling's")
        k, n, xt = self.k, self.n, self.xt
        p = self.probabilities(theta)
        w = p * (1 - p)
        wx = w * xt
        h_ww, h_wc, h_cc = (wx * xt).sum(axis=1) / n, wx.sum(axis=1) / n, w.sum(axis=1) / n
        det = h_ww * h_cc - h_wc**2
        det = np.where(det > 0, det, np.finfo(float).tiny)

        def precondition(r):
            rw, rc = r[:k], r[k:]
            return np.concatenate([(h_cc * rw - h_wc * rc) / det, (h_ww * rc - h_wc * rw) / det])

        def product(v):
            ds = xt * v[:k, None]
            ds += v[k:, None]
            r = p * ds
            r -= p * r.sum(axis=0)
            r /= n
            gc = r.sum(axis=1)
            return np.concatenate([(r * xt).sum(axis=1), gc - gc.mean()])

        return HessianOperator(product, precondition, np.concatenate([h_ww, h_cc]))

    def hessian_operator_function(self):
        """The function θ ↦ :class:`~trustcal.calibration.solver.HessianOperator` of the full map on uncentred
        features (``centred=False``), for the truncated Newton steps of cross-validation (docs/method.md §2.9)."""
        if self.centred or not self.full:
            raise ValueError("the Hessian operator is that of the full map on uncentred features")
        if self._direction is None:  # the top eigenvector of (1/N) Σ x_n x_nᵀ
            self._direction = np.linalg.eigh(self.xt @ self.xs / self.n)[1][:, -1]
        return self.hessian_operator

    def hessian_operator(self, theta: np.ndarray) -> HessianOperator:
        """H at θ as an operator. A product H v costs what a gradient does (two products of K×K by K×N). The
        preconditioner M keeps three parts of H: the exact 2K×2K block of W's diagonal and the biases (where the
        classes interact through the softmax; with the intercept penalty, which on uncentred features touches
        the biases alone), factorised once per step; for each class a, the block of its off-diagonal weights
        W'_aj, modelled as its exact diagonal (the NLL's (1/N) Σ_n p_na (1 − p_na) x_nj² plus ODIR's) plus one
        rank-one term along the features' main direction v, matched to the block's curvature along v (the
        log-probabilities of Dirichlet calibration share a large common part, −log Σ exp z, that makes their
        weights move together); the couplings between these blocks are left out. With ODIR's weights
        strong, the off-diagonal weights are nearly uncoupled and M is close to H."""
        from scipy import linalg

        k, n, off, n_off, xt, xs, v = self.k, self.n, self.off, self.n_off, self.xt, self.xs, self._direction
        p = self.probabilities(theta)
        px = p * xt
        g = np.concatenate([px, p])
        # M only steers the conjugate gradients (the products H v are exact): past FLOAT32_GRAM classes its
        # Gram matrix, 4K²N products, is summed in float32, half the time (float64 where that is not positive definite)
        gram = gram32(g) if k > FLOAT32_GRAM else g @ g.T
        h = -gram  # the (d, c) block: Σ_n (diag p − p pᵀ) ⊗ [x_na x_nb, x_na; x_nb, 1] at each class's own feature
        idx = np.arange(k)
        h[idx, idx] += (px * xt).sum(axis=1)
        cross = px.sum(axis=1)
        h[idx, k + idx] += cross
        h[k + idx, idx] += cross
        h[k + idx, k + idx] += p.sum(axis=1)
        h /= n
        h[k:, k:] += self.c_mu * (np.eye(k) - 1.0 / k)  # ½ μ' |b|², b = c − mean(c)
        diag_dc = np.diag(h).copy()
        h[k:, k:] += diag_dc.max() / k  # stiff along the flat direction c + t·1 (H and the gradient are 0 there)
        try:
            factor = linalg.cho_factor(h)
        except linalg.LinAlgError:  # float32's rounding: the block again in float64
            if k <= FLOAT32_GRAM:
                raise
            factor = linalg.cho_factor(h + (gram - g @ g.T) / n)
        w = p * (1 - p)
        rows = (w @ (xs * xs)) / n + self.reg  # K×K: the curvature of each W'_aj alone (NLL + ODIR)
        # Each class's rank-one term γ_a v vᵀ, matched to (1/N) Σ_n w_na (v·x_n)²; D_a = diag − γ_a v² kept > 0
        along = (w @ (xs @ v) ** 2) / n
        spread = 1 - (v**4).sum()
        gamma = (along - (rows - self.reg) @ v**2) / spread if spread > 1e-12 else np.zeros(k)
        with np.errstate(divide="ignore"):
            room = np.where(off, rows / v**2, np.inf).min(axis=1)
        gamma = np.clip(gamma, 0.0, 0.9 * room)
        d_rows = rows - gamma[:, None] * v**2
        v_rows = np.where(off, v[None, :], 0.0)
        v_d = v_rows / d_rows
        shrink = gamma / (1 + gamma * (v_rows * v_d).sum(axis=1))

        def precondition(r):
            out = np.empty_like(r)
            solved = linalg.cho_solve(factor, np.concatenate([r[:k], r[k + n_off :]]))
            out[:k], out[k + n_off :] = solved[:k], solved[k:]
            u = np.zeros((k, k))
            u[off] = r[k : k + n_off]
            u /= d_rows  # Sherman–Morrison, row by row: (D + γ v vᵀ)⁻¹ r
            u -= (shrink * (v_rows * u).sum(axis=1))[:, None] * v_d
            out[k : k + n_off] = u[off]
            return out

        def product(v):
            dw, dc, db = self.unpack(v)
            ds = dw @ xt
            ds += dc[:, None]
            r = p * ds
            r -= p * r.sum(axis=0)
            r /= n
            gw = r @ xs
            go = self.centre_columns(np.where(off, gw + self.reg * dw, 0.0))
            gc = r.sum(axis=1) + self.c_mu * db
            return np.concatenate([np.diag(gw), go[off], gc - gc.mean()])

        return HessianOperator(product, precondition, np.concatenate([diag_dc[:k], rows[off], diag_dc[k:]]))

    def separates(self, w: np.ndarray, c: np.ndarray) -> bool:
        """The map (W', c) classifies every sample correctly: its true class's score above every other."""
        labels, cols = self.labels, self.cols
        s = self.scores(w, c)
        s_true = s[labels, cols].copy()
        s[labels, cols] = -np.inf
        return bool((s_true > s.max(axis=0)).all())


def odir_grid(n: int, k: int) -> tuple[float, ...]:
    """The points of ODIR_GRID from the first at which ODIR's penalty, a Gaussian prior of standard deviation
    √(K(K−1)/(2Nλ)) on each off-diagonal weight (docs/method.md §2.7), holds them within ODIR_PRIOR_SD of 0:
    beyond it the fits are those of λ = ∞ (W diagonal) to the precision that matters."""
    start = k * (k - 1) / (2 * n * ODIR_PRIOR_SD**2)
    return tuple(t for t in ODIR_GRID if t < 10 * start) or ODIR_GRID[-1:]


def stratified_folds(labels: np.ndarray, n_folds: int) -> np.ndarray:
    """Each sample's fold, 0…n_folds−1: the samples of a class in an order drawn with CV_SEED, dealt in turn,
    so that every fold holds ⌊n_c/F⌋ or ⌈n_c/F⌉ of class c's n_c samples (and the fold sizes differ by ≤ 1)."""
    order = np.lexsort((np.random.default_rng(CV_SEED).random(len(labels)), labels))
    fold = np.empty(len(labels), dtype=np.intp)
    fold[order] = np.arange(len(labels)) % n_folds
    return fold


@dataclass(frozen=True)
class OdirChoice:
    """ODIR's weights chosen by :func:`choose_odir`, with the path that chose them."""

    lam: float
    mu: float
    grid: np.ndarray  # the path's points tried, strong to weak (ODIR_GRID as far as it went)
    cv_nll: np.ndarray  # the held-out NLL at each, pooled over the folds
    weights: np.ndarray | None = None  # W and b at the chosen point, averaged over the folds (the final fit's
    bias: np.ndarray | None = None  # start); None where the path did not run


def choose_odir(
    x: np.ndarray, labels: np.ndarray, t_min: float, t_max: float, lam: float | None, mu: float | None, newton: bool
) -> OdirChoice | None:
    """ODIR's λ and μ by cross-validation on the fit split (features ``x``; docs/method.md §2.7), its folds
    stratified by label (:func:`stratified_folds`): ODIR_FOLDS of them, ODIR_FOLDS_OPERATOR past the Newton limit.

    ``lam``/``mu``: a fixed weight, or None for one chosen (both None: μ = λ). The path runs over
    :func:`odir_grid` from strong to weak, each fold's fit starting where the same fold's fit at the previous
    point ended; it stops once ODIR_PATIENCE points in a row have a held-out NLL (pooled over the folds) above
    the best so far, or one is above it by more than ODIR_RISE; the best point wins (the stronger on a tie).
    ``newton``: the folds' fits take Newton steps with the exact Hessian, else truncated Newton steps
    (:meth:`_ScalingLoss.hessian_operator`) from temperature scaling's map; both to CV_TOL. None when there are fewer than 2 samples; the
    grid's first point, its held-out NLL NaN, when the path would cost more than ODIR_CV_MAX_WORK operations.
    """
    n, k = x.shape
    n_folds = min(ODIR_FOLDS if newton else ODIR_FOLDS_OPERATOR, n)
    if n_folds < 2:
        return None
    if n_folds * ODIR_CV_GRADIENTS * 4 * (n - n // n_folds) * k * k > ODIR_CV_MAX_WORK:
        t = odir_grid(n, k)[0]  # too dear: the grid's first point, not cross-validated (NaN)
        return OdirChoice(t if lam is None else lam, t if mu is None else mu, np.array([t]), np.array([np.nan]))
    with one_blas_thread():
        return _odir_path(x, labels, t_min, t_max, lam, mu, newton, n_folds)


def _odir_path(x, labels, t_min, t_max, lam, mu, newton, n_folds) -> OdirChoice:
    """:func:`choose_odir`'s path, on ``n_folds`` folds."""
    n, k = x.shape
    fold = stratified_folds(labels, n_folds)
    folds = []
    for f in range(n_folds):
        train = fold != f
        loss = _ScalingLoss(x[train], labels[train], True, 1.0, 1.0, centred=newton)
        folds.append(dict(loss=loss, theta=None, box=loss.box(t_min, t_max), test=~train))
    grid, cv_nll, best = [], [], []
    for t in odir_grid(n, k):
        lam_t, mu_t = t if lam is None else lam, t if mu is None else mu
        total, found = 0.0, []
        for entry in folds:
            loss = entry["loss"]
            loss.set_penalty(lam_t, mu_t)
            if entry["theta"] is None:
                train = ~entry["test"]
                entry["theta"] = loss.identity() if newton else _operator_start(loss, x[train], t_min, t_max)
            make = loss.penalised_hessian_function if newton else loss.hessian_operator_function
            entry["theta"] = minimize_box(
                loss.loss_grad,
                make,
                entry["theta"],
                entry["box"],
                tol=CV_TOL,
                max_iter=CV_MAX_ITER,
                newton_steps=CV_MAX_ITER,
            ).theta
            test = entry["test"]
            log_p = loss.log_proba(entry["theta"], x[test])
            total -= log_p[np.arange(len(log_p)), labels[test]].sum()
            found.append(loss.unpack(entry["theta"]))
        grid.append(t)
        cv_nll.append(total / n)
        if not best or cv_nll[-1] < cv_nll[best[0]]:
            best = [len(grid) - 1, found]
        if len(grid) - 1 - best[0] >= ODIR_PATIENCE or cv_nll[-1] > cv_nll[best[0]] + ODIR_RISE:
            break
    i, found = best
    sigmas = [entry["loss"].sigma for entry in folds]
    weights = np.mean([w / sigma for (w, _, _), sigma in zip(found, sigmas)], axis=0)
    bias = np.mean([b for _, _, b in found], axis=0)
    t = grid[i]
    return OdirChoice(
        t if lam is None else lam, t if mu is None else mu, np.array(grid), np.array(cv_nll), weights, bias
    )


def _operator_start(loss: _ScalingLoss, x: np.ndarray, t_min: float, t_max: float) -> np.ndarray:
    """θ of temperature scaling's map, W = I/T, b = 0 (T fitted on ``x``, the loss's features), where truncated
    Newton steps start: at 5,000 × 100 and 10,000 × 300 they then take 4 steps where they took 5–9 from
    the identity map (docs/method.md §2.9). Only a start: T is fitted on at most START_ROWS of the samples
    (every m-th), 10 s of 64 at 25,000 × 1,000 on all of them."""
    theta = loss.identity()
    m = -(-len(x) // START_ROWS)
    theta[: loss.k] /= fit_temperature(x[::m], loss.labels[::m], t_min=t_min, t_max=t_max).temperature
    return theta


def _odir_option(options: dict, name: str):
    """Option ``name``: 'cv' (None: chosen by cross-validation), a number ≥ 0, or absent (the string 'absent')."""
    if name not in options:
        return "absent"
    if isinstance(options[name], str) and options[name] == CV:
        del options[name]
        return None
    if isinstance(options[name], str):
        raise ValueError(f"option {name} must be a number or '{CV}' (got {options.pop(name)!r})")
    return option(options, name, None, "nonneg")


class _LinearScaling(_SoftmaxMap):
    """softmax(W x + b) of features x = features(z); W diagonal (vector scaling) or full."""

    full: bool  # W a full K×K matrix (else a vector of K scales)
    odir: bool  # ODIR options accepted
    # Newton with the exact Hessian up to this many parameters, L-BFGS-B alone beyond (docs/method.md §2.9)
    newton_max_parameters: int

    def __init__(self, n_classes, weights, bias, *, separable: bool = False, **flags):
        super().__init__(n_classes, **flags)
        self.separable = bool(separable)  # not converged, and the map reached classifies every fit sample correctly
        self.weights, self.bias = linear_map(self.method, self.full, n_classes, weights, bias)

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
    def _odir(cls, options: dict) -> tuple[float | None, float | None]:
        """ODIR's λ and μ from the options (None: chosen by cross-validation); 0, 0 without ODIR."""
        return 0.0, 0.0

    @classmethod
    def _fit(cls, z, labels, t_min, t_max, options):
        lam, mu = cls._odir(options)
        max_iter_given = "max_iter" in options
        max_iter = option(options, "max_iter", MAX_ITER, "count")
        tol = option(options, "tol", TOL, "pos")
        no_more_options(cls.method, options, cls.options)
        for module in ("scipy.optimize", "scipy.linalg"):  # the solver's
            require(module, "scipy", cls.method)
        x = cls.features(z)
        k = x.shape[1]
        newton = (2 * k + k * (k - 1) if cls.full else 2 * k) <= cls.newton_max_parameters
        choice = None
        if lam is None or mu is None:
            choice = choose_odir(x, labels, t_min, t_max, lam, mu, newton)
            lam, mu = (choice.lam, choice.mu) if choice else (ODIR_LAMBDA, ODIR_MU)
        # Cross-validated past the Newton limit: truncated Newton steps from the folds' average map; vector
        # scaling past its limit: truncated Newton steps from the identity
        operator = choice is not None and not newton
        scales_operator = not cls.full and not newton
        loss = _ScalingLoss(x, labels, cls.full, lam, mu, centred=not operator)
        theta0, box = loss.identity(), loss.box(t_min, t_max)
        if operator:
            if choice.weights is None:  # no path: from temperature scaling's map
                theta0 = _operator_start(loss, x, t_min, t_max)
            else:
                theta0 = loss.theta_of(choice.weights, choice.bias)
            newton_steps, make_hessian = min(max_iter, NEWTON_MAX_ITER), loss.hessian_operator_function
        elif scales_operator:
            newton_steps, make_hessian = min(max_iter, NEWTON_MAX_ITER), lambda: loss.scales_operator
        else:
            # An L-BFGS-B iteration's operations, 4·N per parameter: matrix scaling's two products of N×K by K×K
            # are 4·N·(K² + K) (docs/method.md §2.9).
            work = 4 * loss.n * len(theta0)
            newton_steps, max_iter = iteration_plan(
                len(theta0), cls.newton_max_parameters, max_iter, max_iter_given, work
            )
            make_hessian = loss.hessian_function
        found = minimize_box(
            loss.loss_grad, make_hessian, theta0, box, tol=tol, max_iter=max_iter, newton_steps=newton_steps
        )
        w, c, b = loss.unpack(found.theta)
        d = found.theta[:k]
        odir = {}
        if cls.odir:
            odir = dict(odir_lambda=lam, odir_mu=mu)
            if choice is not None:
                odir.update(odir_grid=choice.grid, odir_cv_nll=choice.cv_nll)
        return cls(
            k,
            w / loss.sigma,
            b,
            converged=found.converged,
            at_bound=bool(((d <= box.lo[:k]) | (d >= box.hi[:k])).any()),
            iterations=found.iterations,
            # not converged, does the map reached classify every fit sample correctly (a positive margin)?
            separable=not found.converged and loss.separates(w, c),
            **odir,
        )


class VectorScaling(_LinearScaling):
    """softmax(w ∘ z + b) (Guo et al. 2017), unregularised; w_k ∈ [1/t_max, 1/t_min]."""

    method = "vector"
    name = "vector scaling"
    options = ("max_iter", "tol")
    full, odir = False, False
    newton_max_parameters = 200  # K ≤ 100: beyond, truncated Newton steps (scales_operator); its Hessian costs 4K² × N


class _FullScaling(_LinearScaling):
    """softmax(W x + b), W a full matrix, with ODIR (Kull et al. 2019); W_kk ∈ [1/t_max, 1/t_min].

    ``odir_lambda``, ``odir_mu``: ODIR's weights (NaN for a state saved before they were recorded);
    ``odir_grid``, ``odir_cv_nll``: the cross-validation's path and held-out NLLs (empty when both were given)."""

    options = ("odir_lambda", "odir_mu", "max_iter", "tol")
    full, odir = True, True
    newton_max_parameters = 420  # K ≤ 20: beyond, its Hessian, (K² + K)² × N products, costs more than L-BFGS-B

    def __init__(
        self,
        n_classes,
        weights,
        bias,
        *,
        odir_lambda: float = np.nan,
        odir_mu: float = np.nan,
        odir_grid=(),
        odir_cv_nll=(),
        **flags,
    ):
        super().__init__(n_classes, weights, bias, **flags)
        self.odir_lambda, self.odir_mu = float(odir_lambda), float(odir_mu)
        self.odir_grid = np.array(odir_grid, dtype=np.float64)
        self.odir_cv_nll = np.array(odir_cv_nll, dtype=np.float64)

    @classmethod
    def _odir(cls, options):
        lam, mu = _odir_option(options, "odir_lambda"), _odir_option(options, "odir_mu")
        if lam == "absent":
            lam = None  # cross-validated by default
        if mu == "absent":
            mu = None if lam is None else ODIR_MU  # with λ: μ = λ on the path; a fixed λ keeps the fixed μ
        return lam, mu

    def _arrays(self):
        return {
            **super()._arrays(),
            "odir_lambda": np.array(self.odir_lambda),
            "odir_mu": np.array(self.odir_mu),
            "odir_grid": self.odir_grid,
            "odir_cv_nll": self.odir_cv_nll,
        }

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        odir = {name: arrays[name] for name in ("odir_grid", "odir_cv_nll") if name in arrays}
        for name in ("odir_lambda", "odir_mu"):  # states saved before they were recorded have none
            if name in arrays:
                odir[name] = arrays[name].item()
        separable = bool(arrays["separable"].item()) if "separable" in arrays else False
        return cls(n_classes, arrays["weights"], arrays["bias"], separable=separable, **odir, **flags)


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
