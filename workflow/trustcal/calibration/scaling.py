"""Calibrators that rescale the logits before the softmax (docs/method.md §2, §2.5–2.9).

- ``none``: softmax(z), nothing fitted.
- ``temperature``: softmax(z / T), T from :func:`~trustcal.calibration.temperature.fit_temperature`.
- ``vector`` (Guo et al. 2017): softmax(w ∘ z + b), w, b ∈ R^K.
- ``matrix`` (Guo et al. 2017) with ODIR (Kull et al. 2019): softmax(W z + b), W ∈ R^{K×K}.
- ``dirichlet`` (Kull et al. 2019): matrix scaling, with ODIR, of log_softmax(z).

The last three minimise the mean NLL (plus ODIR's penalty) in float64 with
``scipy.optimize.minimize(method="L-BFGS-B")`` and the analytic gradient, starting at
the identity map (w = 1 or W = I, b = 0), so an already calibrated input stays put.
Every scale (w_k, W_kk) is bounded to [1/t_max, 1/t_min], the temperature search
interval read as a per-class inverse temperature. The fit runs on standardised
features and drops the directions the softmax cannot see (both explained in
:meth:`_LinearScaling._fit`); the parameters reported are those of the formulas above.
Options: ``tol`` (L-BFGS-B's gtol, 1e-8), ``max_iter`` (1000), and for matrix and
Dirichlet ``odir_lambda``, ``odir_mu`` (0.01 each).
"""

from __future__ import annotations

import contextlib

import numpy as np

from trustcal.calibration.base import Calibrator, check_logits, no_more_options, option, require
from trustcal.calibration.temperature import fit_temperature, log_softmax, softmax

# ODIR's default weights (docs/method.md §2.7). Kull et al. choose λ and μ by cross-validation
# over 10^-5…10^3; one fixed pair is kept here, so 100 epochs × 8 runs need no inner CV.
ODIR_LAMBDA = 0.01
ODIR_MU = 0.01
MAX_ITER = 1000  # L-BFGS-B iterations; the fits on network logits take tens
TOL = 1e-8  # L-BFGS-B gtol: stop when every (projected) gradient component of the mean loss is below it
FTOL = 1e-14  # L-BFGS-B ftol: relative decrease of the loss per step, near float64 round-off


def _one_blas_thread():
    """Limit BLAS to one thread where threadpoolctl (a scikit-learn dependency) is installed."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


class NoCalibration(Calibrator):
    """softmax(z): the uncalibrated probabilities, for comparison."""

    method = "none"
    name = "no calibration"

    @classmethod
    def _fit(cls, z, y, t_min, t_max, options):
        no_more_options(cls.method, options, cls.options)
        return cls(z.shape[1])

    def predict_proba(self, logits):
        return softmax(check_logits(logits, self.n_classes))

    @property
    def n_parameters(self):
        return 0

    def _arrays(self):
        return {}

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(n_classes, **flags)


class TemperatureScaling(Calibrator):
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

    def predict_proba(self, logits):
        return softmax(check_logits(logits, self.n_classes), self._temperature)

    @property
    def n_parameters(self):
        return 1

    def _arrays(self):
        return {"temperature": np.array(self._temperature, dtype=np.float64)}

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(n_classes, arrays["temperature"].item(), **flags)


class _LinearScaling(Calibrator):
    """softmax(W x + b) of features x = features(z); W diagonal (vector scaling) or full."""

    full: bool  # W a full K×K matrix (else a vector of K scales)
    odir: bool  # ODIR options accepted

    def __init__(self, n_classes, weights, bias, **flags):
        super().__init__(n_classes, **flags)
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

    def predict_proba(self, logits):
        return softmax(self._scores(self.features(check_logits(logits, self.n_classes))))

    @property
    def n_parameters(self):
        return self.weights.size + self.bias.size

    def _arrays(self):
        return {"weights": self.weights, "bias": self.bias}

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(n_classes, arrays["weights"], arrays["bias"], **flags)

    @classmethod
    def _fit(cls, z, labels, t_min, t_max, options):
        lam = option(options, "odir_lambda", ODIR_LAMBDA, "nonneg") if cls.odir else 0.0
        mu = option(options, "odir_mu", ODIR_MU, "nonneg") if cls.odir else 0.0
        max_iter = option(options, "max_iter", MAX_ITER, "count")
        tol = option(options, "tol", TOL, "pos")
        no_more_options(cls.method, options, cls.options)
        optimize = require("scipy.optimize", "scipy", cls.method)

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
        # L-BFGS-B never moves along them (kept as free parameters, their weak curvature, ~λ/K,
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
        bounds = list(zip(lo, hi)) + [(None, None)] * (n_off + k)
        theta0 = np.concatenate([sigma, np.zeros(n_off), m])  # the identity map: W = I, b = 0
        with _one_blas_thread():  # N×K times K×K: threads only add overhead (and fight a busy machine)
            res = optimize.minimize(
                loss_grad,
                theta0,
                jac=True,
                method="L-BFGS-B",
                bounds=bounds,
                options=dict(maxiter=max_iter, gtol=tol, ftol=FTOL),
            )
        w, _, b = unpack(res.x)
        d = res.x[:k]
        return cls(
            k,
            w / sigma,
            b,
            converged=bool(res.success),
            at_bound=bool(((d <= lo) | (d >= hi)).any()),
            iterations=int(res.nit),
        )


class VectorScaling(_LinearScaling):
    """softmax(w ∘ z + b) (Guo et al. 2017), unregularised; w_k ∈ [1/t_max, 1/t_min]."""

    method = "vector"
    name = "vector scaling"
    options = ("max_iter", "tol")
    full, odir = False, False


class MatrixScaling(_LinearScaling):
    """softmax(W z + b) (Guo et al. 2017) with ODIR (Kull et al. 2019); W_kk ∈ [1/t_max, 1/t_min]."""

    method = "matrix"
    name = "matrix scaling"
    options = ("odir_lambda", "odir_mu", "max_iter", "tol")
    full, odir = True, True


class DirichletCalibration(_LinearScaling):
    """softmax(W log_softmax(z) + b) (Kull et al. 2019) with ODIR; W_kk ∈ [1/t_max, 1/t_min]."""

    method = "dirichlet"
    name = "Dirichlet calibration"
    options = ("odir_lambda", "odir_mu", "max_iter", "tol")
    full, odir = True, True

    @staticmethod
    def features(z):
        return log_softmax(z)
