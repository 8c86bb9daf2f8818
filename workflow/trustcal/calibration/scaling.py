"""Calibrators that rescale the logits before the softmax (docs/method.md §2, §2.5–2.9).

- ``none``: softmax(z), nothing fitted.
- ``temperature``: softmax(z / T), T from :func:`~trustcal.calibration.temperature.fit_temperature`.
- ``vector`` (Guo et al. 2017): softmax(w ∘ z + b), w, b ∈ R^K.
- ``matrix`` (Guo et al. 2017) with ODIR (Kull et al. 2019): softmax(W z + b), W ∈ R^{K×K}.
- ``dirichlet`` (Kull et al. 2019): matrix scaling, with ODIR, of log_softmax(z).

The last three minimise the mean NLL (plus ODIR's penalty), a convex function, in float64
by projected Newton steps with the analytic gradient and Hessian (Bertsekas 1982),
starting at the identity map (w = 1 or W = I, b = 0), so an already calibrated input
stays put; after NEWTON_MAX_ITER steps without converging, SciPy's L-BFGS-B finishes.
Beyond ``newton_max_parameters`` parameters (matrix and Dirichlet scaling past K = 20, vector
scaling past K = 1000), where the Hessian costs more than it saves, L-BFGS-B runs alone from
the same start, its default iteration limit also bounded by MAX_WORK operations.
Every scale (w_k, W_kk) is bounded to [1/t_max, 1/t_min], the temperature search
interval read as a per-class inverse temperature. The fit runs on standardised
features and drops the directions the softmax cannot see (both explained in
:meth:`_LinearScaling._fit`); the parameters reported are those of the formulas above.
A fit that stops unconverged on a split the map reached classifies without error says
so (``separable``: the NLL has no minimum there). Options: ``tol`` (1e-8, on every
projected gradient component), ``max_iter`` (1000), and for matrix and Dirichlet
``odir_lambda``, ``odir_mu`` (0.01 each).
"""

from __future__ import annotations

import contextlib
from abc import abstractmethod

import numpy as np

from trustcal.calibration.base import Calibrator, check_logits, no_more_options, option, require
from trustcal.calibration.temperature import T_MAX, T_MIN, fit_temperature, log_softmax

# ODIR's default weights (docs/method.md §2.7). Kull et al. choose λ and μ by cross-validation
# over 10^-5…10^3; one fixed pair is kept here, so 100 epochs × 8 runs need no inner CV.
ODIR_LAMBDA = 0.01
ODIR_MU = 0.01
MAX_ITER = 1000  # iterations, Newton's and L-BFGS-B's together; the fits on network logits take 5–20
TOL = 1e-8  # stop when every (projected) gradient component of the mean loss is below it (L-BFGS-B's gtol)
FTOL = 1e-14  # L-BFGS-B ftol: relative decrease of the loss per step, near float64 round-off
NEWTON_MAX_ITER = 50  # Newton steps before L-BFGS-B takes over
# The default iteration limit of a fit by L-BFGS-B alone is also bounded by its arithmetic: an iteration's two
# products of N×K by K×K cost 4·N·(K² + K) operations, and MAX_WORK of them are about two minutes on one core
# at 50 GFLOP/s: 1000 iterations up to K ≈ 500 at N = 5000, 49 at K = 1000 and N = 25,000 (docs/method.md §2.9).
MAX_WORK = 5e12
NEWTON_RCOND = 1e-12  # Newton's floor on the Hessian's eigenvalues, a fraction of the largest


def _one_blas_thread():
    """Limit BLAS to one thread where threadpoolctl (a scikit-learn dependency) is installed."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


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
        optimize = require("scipy.optimize", "scipy", cls.method)
        linalg = require("scipy.linalg", "scipy", cls.method)

        x = cls.features(z)
        n, k = x.shape
        # The fit runs in standardised features (x − m)/σ (m_j, σ_j the mean and standard deviation
        # of feature j), with parameters W' = W·diag(σ) and c = b + W m, so that weights and biases
        # see inputs of one size: log-probabilities have means near −10 and those of probability
        # files reach −708, where the raw fit took 2–4× more iterations. The penalties stay on
        # W and b = c − W m, so the optimum is the same.
        m = x.mean(axis=0)
        sigma = x.std(axis=0)
        sigma[~(sigma > 0)] = 1.0
        xs = (x - m) / sigma
        m_s = m / sigma  # W m = W' m_s
        c_lam, c_mu = 2 * lam / (k * (k - 1)), 2 * mu / k  # d/dθ of λ/(K(K−1))·Σθ² and μ/K·Σθ²
        # θ = (d, u, c): the K scales d (W's diagonal, or w), W's K(K−1) off-diagonal entries u
        # (matrix and Dirichlet only) and the K biases c, all in standardised units. The softmax
        # does not change when a constant is added to every class's score, so W + 1vᵀ and b + a·1
        # predict what W and b do; the fit keeps the representative that minimises ODIR's
        # penalty, off-diagonal column sums and Σb equal to 0 (where ODIR's optimum lies), by
        # centring u per column and b. The loss is then flat along the dropped directions, and
        # the optimiser never moves along them (kept as free parameters, their weak curvature, ~λ/K,
        # took 2–3× more iterations).
        off = ~np.eye(k, dtype=bool) if cls.full else None
        n_off = k * (k - 1) if cls.full else 0
        reg = np.broadcast_to(c_lam / sigma**2, (k, k))  # ODIR's weight on W_ij = W'_ij / σ_j

        def centre_columns(a):
            a[off] -= np.broadcast_to(a.sum(axis=0) / (k - 1), (k, k))[off]
            return a

        def unpack(theta):
            """W' (K×K, or the K scales), c and the bias b = c − W m (centred) of θ."""
            c = theta[k + n_off :]
            if cls.full:
                w = np.zeros((k, k))
                w[off] = theta[k : k + n_off]
                w = centre_columns(w) + np.diag(theta[:k])
                b = c - w @ m_s
            else:
                w = theta[:k]
                b = c - w * m_s
            return w, c, b - b.mean()

        xt = np.ascontiguousarray(xs.T)  # K×N: the reductions over classes run along contiguous rows
        cols = np.arange(n)

        def loss_grad(theta):
            w, c, b = unpack(theta)
            s = w @ xt if cls.full else xt * w[:, None]
            s += c[:, None]
            s -= s.max(axis=0)
            s_true = s[labels, cols]
            np.exp(s, out=s)
            total = s.sum(axis=0)
            loss = np.mean(np.log(total) - s_true) + 0.5 * c_mu * (b @ b)
            s /= total * n  # softmax / N
            s[labels, cols] -= 1.0 / n  # (softmax − onehot) / N = d(mean NLL)/d(scores)
            gc = s.sum(axis=1) + c_mu * b
            if not cls.full:
                gw = (s * xt).sum(axis=1) - c_mu * b * m_s
                return loss, np.concatenate([gw, gc - gc.mean()])
            gw = s @ xs - c_mu * np.outer(b, m_s)
            loss += 0.5 * (reg[off] * w[off]) @ w[off]
            go = centre_columns(np.where(off, gw + reg * w, 0.0))
            return loss, np.concatenate([np.diag(gw), go[off], gc - gc.mean()])

        lo, hi = sigma / t_max, sigma / t_min  # 1/t_max ≤ W_kk ≤ 1/t_min in standardised units
        theta0 = np.concatenate([sigma, np.zeros(n_off), m])  # the identity map: W = I, b = 0

        # Newton's method with the analytic Hessian (the loss is convex in θ). The scores are
        # s_ia = Σ_j V_aj A_iaj, V = [W', c] linear in θ (V = J θ), with A_i = [x_i, 1] for every
        # class (matrix, Dirichlet) or A_ia = [x_ia, 1] (vector); the NLL's Hessian in V is
        # (1/N) Σ_i (diag p_i − p_i p_iᵀ) ⊗ A_i A_iᵀ, and ODIR's penalty is ½|Q θ|² (Q linear), so
        # H = Jᵀ H_V J + QᵀQ, singular only along the dropped directions, where g has no component.
        def newton_hessian():
            """The function θ ↦ H(θ) (its constant parts built once)."""
            a_feat = np.concatenate([xt, np.ones((1, n))]) if cls.full else None  # F×N, F = K + 1
            n_theta = len(theta0)
            unit = np.eye(n_theta)
            rows_j, rows_q = [], []
            for j in range(n_theta):
                w, c, b = unpack(unit[j])
                rows_j.append(np.column_stack([w, c]).ravel())
                rows_q.append(np.concatenate([np.sqrt(c_mu) * b, np.sqrt(reg[off]) * w[off]]) if cls.full else 0 * b)
            jac, q = np.array(rows_j).T, np.array(rows_q).T
            h_pen = q.T @ q

            def hessian(theta):
                w, c, _ = unpack(theta)
                s = w @ xt if cls.full else xt * w[:, None]
                s += c[:, None]
                s -= s.max(axis=0)
                np.exp(s, out=s)
                s /= s.sum(axis=0)  # K×N probabilities
                if cls.full:
                    g = (s[:, None, :] * a_feat[None, :, :]).reshape(k * (k + 1), n)  # rows (a, j): p_ia A_ij
                    blocks = (g @ a_feat.T).reshape(k, k + 1, k + 1)  # Σ_i p_ia A_i A_iᵀ
                else:
                    px = s * xt
                    g = np.stack([px, s], axis=1).reshape(2 * k, n)  # rows (a, 0): p_ia x_ia, (a, 1): p_ia
                    sums = np.stack([(px * xt).sum(axis=1), px.sum(axis=1), px.sum(axis=1), s.sum(axis=1)], 1)
                    blocks = sums.reshape(k, 2, 2)
                h_v = -(g @ g.T)  # NumPy computes a product with its own transpose as one symmetric rank-N update
                f = blocks.shape[1]
                h_v.reshape(k, f, k, f)[np.arange(k), :, np.arange(k), :] += blocks
                return jac.T @ (h_v / n) @ jac + h_pen

            return hessian

        # Projected Newton (Bertsekas 1982) for the box on the scales: a scale at a bound whose gradient
        # pushes outwards is held there; the step solves the Newton system on the others and is projected
        # onto the box. Stops when the projected gradient is below tol (L-BFGS-B's gtol test).
        box_lo = np.concatenate([lo, np.full(n_off + k, -np.inf)])
        box_hi = np.concatenate([hi, np.full(n_off + k, np.inf)])

        def held(theta, grad):
            """Scales at, or within ε of, a bound their gradient pushes them across (Bertsekas' ε-active set,
            ε the smaller of 1 % of the box and the length of the projected gradient step)."""
            eps = np.minimum(0.01 * (box_hi - box_lo), np.linalg.norm(theta - np.clip(theta - grad, box_lo, box_hi)))
            return ((theta <= box_lo + eps) & (grad > 0)) | ((theta >= box_hi - eps) & (grad < 0))

        def stationary(theta, grad):
            """Every component of the projected gradient below tol."""
            outward = ((theta <= box_lo) & (grad > 0)) | ((theta >= box_hi) & (grad < 0))
            return bool(np.abs(np.where(outward, 0.0, grad)).max() <= tol)

        with _one_blas_thread():  # N×K times K×K: threads only add overhead (and fight a busy machine)
            theta = np.clip(theta0, box_lo, box_hi)
            loss, grad = loss_grad(theta)
            it = 0
            # Newton where its exact Hessian pays (up to newton_max_parameters parameters), else L-BFGS-B alone,
            # by default for at most MAX_WORK operations.
            newton = len(theta0) <= cls.newton_max_parameters
            newton_steps = min(max_iter, NEWTON_MAX_ITER) if newton else 0
            if not newton and not max_iter_given:
                max_iter = min(max_iter, max(1, int(MAX_WORK / (4 * n * len(theta0)))))
            hessian = newton_hessian() if newton_steps and not stationary(theta, grad) else None
            while not (converged := stationary(theta, grad)) and it < newton_steps:
                it += 1
                fixed = held(theta, grad)
                free = ~fixed
                h = hessian(theta)
                # H + μI, μ = NEWTON_RCOND × H's largest diagonal entry: the gradient has no component along the
                # dropped directions (where H is singular), and along a direction where the loss keeps falling
                # without a minimum (separable data) the long step meets the box.
                mu = NEWTON_RCOND * np.diag(h).max()
                step = np.zeros_like(theta)
                h_free = h[np.ix_(free, free)] + mu * np.eye(free.sum())
                try:
                    step[free] = -linalg.cho_solve(linalg.cho_factor(h_free), grad[free])
                except linalg.LinAlgError:  # not positive definite in float64: floor the eigenvalues at μ
                    lam, vec = np.linalg.eigh(h_free)
                    step[free] = -vec @ ((vec.T @ grad[free]) / np.maximum(lam, mu))
                step[fixed] = -grad[fixed] / np.maximum(np.diag(h)[fixed], mu)  # towards their bound
                t = 1.0
                for _ in range(50):  # Armijo backtracking along the projected path
                    trial = np.clip(theta + t * step, box_lo, box_hi)
                    trial_loss, trial_grad = loss_grad(trial)
                    if trial_loss <= loss + 1e-4 * (grad @ (trial - theta)):
                        break
                    t *= 0.5
                else:
                    break  # no decrease along the Newton path (float64 rounding): L-BFGS-B finishes
                theta, loss, grad = trial, trial_loss, trial_grad
            nit = it
            if not converged and it < max_iter:
                # Newton stalled or took NEWTON_MAX_ITER steps: L-BFGS-B finishes from the point reached, with the
                # iterations left.
                res = optimize.minimize(
                    loss_grad,
                    theta,
                    jac=True,
                    method="L-BFGS-B",
                    bounds=list(zip(box_lo[:k], box_hi[:k])) + [(None, None)] * (n_off + k),
                    options=dict(maxiter=max_iter - it, gtol=tol, ftol=FTOL),
                )
                theta, converged, nit = res.x, bool(res.success), it + int(res.nit)
        w, c, b = unpack(theta)
        d = theta[:k]
        separable = False
        if not converged:  # does the map reached classify every fit sample correctly (a positive margin)?
            s = (w @ xt if cls.full else xt * w[:, None]) + c[:, None]
            s_true = s[labels, cols].copy()
            s[labels, cols] = -np.inf
            separable = bool((s_true > s.max(axis=0)).all())
        return cls(
            k,
            w / sigma,
            b,
            converged=converged,
            at_bound=bool(((d <= lo) | (d >= hi)).any()),
            iterations=nit,
            separable=separable,
        )


class VectorScaling(_LinearScaling):
    """softmax(w ∘ z + b) (Guo et al. 2017), unregularised; w_k ∈ [1/t_max, 1/t_min]."""

    method = "vector"
    name = "vector scaling"
    options = ("max_iter", "tol")
    full, odir = False, False
    newton_max_parameters = 2000  # K ≤ 1000: its Hessian, 4K² × N products, costs a few gradients of matrix scaling


class MatrixScaling(_LinearScaling):
    """softmax(W z + b) (Guo et al. 2017) with ODIR (Kull et al. 2019); W_kk ∈ [1/t_max, 1/t_min]."""

    method = "matrix"
    name = "matrix scaling"
    options = ("odir_lambda", "odir_mu", "max_iter", "tol")
    full, odir = True, True
    newton_max_parameters = 420  # K ≤ 20: beyond, its Hessian, (K² + K)² × N products, costs more than L-BFGS-B


class DirichletCalibration(_LinearScaling):
    """softmax(W log_softmax(z) + b) (Kull et al. 2019) with ODIR; W_kk ∈ [1/t_max, 1/t_min]."""

    method = "dirichlet"
    name = "Dirichlet calibration"
    options = ("odir_lambda", "odir_mu", "max_iter", "tol")
    full, odir = True, True
    newton_max_parameters = 420  # K ≤ 20: beyond, its Hessian, (K² + K)² × N products, costs more than L-BFGS-B

    @staticmethod
    def features(z):
        return log_softmax(z)
