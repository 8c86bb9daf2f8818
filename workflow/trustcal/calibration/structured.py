"""Structured matrix and vector scaling (Berta et al. 2025; docs/method.md §2.13).

Berta, Holzmüller, Jordan, Bach, *Structured Matrix Scaling for Multi-Class Calibration* (2025):

1. temperature scaling, T from :func:`~trustcal.calibration.temperature.fit_temperature`;
2. its probabilities mixed with the uniform distribution, weight ε = 1/(N + 1) (Laplace smoothing, so
   that no log-probability is below log(ε/K));
3. x = log of those probabilities, and softmax(W x + b) fitted by the mean NLL plus ridge penalties that pull
   W towards the identity and b towards 0, each weighted by how many parameters it holds per sample:

   loss = mean NLL + λ_b K/N · Σ b_k² + λ_d K/N · Σ (W_kk − 1)² + λ_o K(K−1)/N · Σ_{i≠j} W_ij².

``sms``: W a full K×K matrix; ``svs``: W diagonal (structured vector scaling). λ_b = λ_d = λ_o = 1 by
default (options ``lambda_intercept``, ``lambda_diagonal``, ``lambda_off_diagonal``), as in probmetrics,
the reference implementation. The penalty is strictly convex, so the minimum is unique; SciPy's L-BFGS
finds it from W = I, b = 0 (options ``max_iter``, ``tol``). Unlike ODIR's penalty (§2.7), whose weight per
off-diagonal entry falls as 1/K², this one grows with K: at K = 100 the off-diagonal entries stay near 0
unless the data demand otherwise, which keeps the map near temperature scaling where data are few.
"""

from __future__ import annotations

import numpy as np

from trustcal.calibration.base import check_logits, linear_map, no_more_options, option, require
from trustcal.calibration.scaling import MAX_ITER, TOL, TemperatureFirst
from trustcal.calibration.solver import NEWTON_MAX_ITER, Box, HessianOperator, economy, iteration_plan, minimize_box
from trustcal.calibration.temperature import fit_temperature, log_softmax

LAMBDA = 1.0  # the default of each of λ_b, λ_d, λ_o (Berta et al. 2025; probmetrics' default)
OPERATOR_CLASSES = 100  # sms past this many classes: truncated Newton steps (_StructuredLoss.hessian_operator)


def mixed_log_proba(logits: np.ndarray, temperature: float, mixture: float) -> np.ndarray:
    """log((1 − ε) softmax(z / T) + ε / K): the features of structured scaling (exact where ε = 0)."""
    log_p = log_softmax(logits / temperature)
    if mixture == 0:
        return log_p
    k = logits.shape[1]
    return np.logaddexp(np.log1p(-mixture) + log_p, np.log(mixture / k))


class _StructuredLoss:
    """The mean NLL of softmax(W x + b) plus the ridge penalties of the module docstring, as a function of
    θ = (W − I, b) (full) or θ = (w − 1, b) (diagonal), and its gradient."""

    def __init__(self, x: np.ndarray, labels: np.ndarray, full: bool, lam_b: float, lam_d: float, lam_o: float):
        n, k = x.shape
        self.x, self.labels, self.full, self.n, self.k = x, labels, full, n, k
        self.r_b, self.r_d, self.r_o = lam_b * k / n, lam_d * k / n, lam_o * k * (k - 1) / n
        self.rows = np.arange(n)
        self.n_w = k * k if full else k
        self._operand = None  # x in the precision of the operator's products (hessian_operator)
        self._kept = None  # (θ, N×K probabilities) of the last loss_grad, for the operator at the step's point

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        delta = theta[: self.n_w]
        return (delta.reshape(self.k, self.k) if self.full else delta), theta[self.n_w :]

    def scores(self, delta: np.ndarray, b: np.ndarray) -> np.ndarray:
        x = self.x
        return x + (x @ delta.T if self.full else x * delta) + b

    def loss_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        delta, b = self.unpack(theta)
        s = self.scores(delta, b)
        s -= s.max(axis=1, keepdims=True)
        s_true = s[self.rows, self.labels]
        np.exp(s, out=s)
        total = s.sum(axis=1)
        nll = np.mean(np.log(total) - s_true)
        if self._operand is not None:  # the next truncated Newton step starts here: keep its probabilities
            self._kept = (theta.copy(), s / total[:, None])
        s /= (total * self.n)[:, None]
        s[self.rows, self.labels] -= 1.0 / self.n  # d(mean NLL)/d(scores)
        diag = np.diag(delta) if self.full else delta
        penalty = self.r_b * (b @ b) + self.r_d * (diag @ diag)
        if self.full:
            off_sq = (delta * delta).sum() - diag @ diag
            penalty += self.r_o * off_sq
            g_w = s.T @ self.x + 2 * self.r_o * delta
            g_w[np.diag_indices(self.k)] += 2 * (self.r_d - self.r_o) * diag
        else:
            g_w = (s * self.x).sum(axis=0) + 2 * self.r_d * delta
        g_b = s.sum(axis=0) + 2 * self.r_b * b
        return nll + penalty, np.concatenate([g_w.ravel(), g_b])

    def hessian_operator(self, theta: np.ndarray) -> HessianOperator:
        """H at θ of the full map (``sms``) as an operator, for its truncated Newton steps past OPERATOR_CLASSES
        classes: a product H v costs two products of N×K by K×K, what a gradient costs (L-BFGS took 54
        iterations, unconverged, and 224 s at K = 1,000, N = 25,000); the preconditioner is H's diagonal, the
        NLL's (1/N) Σ_n p_na (1 − p_na) x_nj² plus the ridge's. Past FLOAT32_CLASSES classes the products run
        in float32 (:func:`~trustcal.calibration.solver.economy`)."""
        n, k = self.n, self.k
        if self._operand is None:
            self._operand = self.x.astype(economy(n, k)[0], copy=False)
        x = self._operand
        if self._kept is not None and np.array_equal(self._kept[0], theta):
            p = self._kept[1]
        else:
            delta, b = self.unpack(theta)
            p = self.scores(delta, b)
            p -= p.max(axis=1, keepdims=True)
            np.exp(p, out=p)
            p /= p.sum(axis=1, keepdims=True)
        w = p * (1 - p)
        ridge = np.full((k, k), 2 * self.r_o)
        ridge[np.diag_indices(k)] = 2 * self.r_d
        diagonal = np.concatenate([(w.T @ self.x**2 / n + ridge).ravel(), w.mean(axis=0) + 2 * self.r_b])
        p = p.astype(x.dtype, copy=False)

        def product(v):
            d_delta, d_b = self.unpack(v)
            r = x @ d_delta.T.astype(x.dtype, copy=False)
            r += d_b
            r *= p
            r -= p * r.sum(axis=1, keepdims=True)
            r /= n
            g_w = (r.T @ x).astype(np.float64, copy=False)
            return np.concatenate(
                [(g_w + ridge * d_delta).ravel(), r.sum(axis=0, dtype=np.float64) + 2 * self.r_b * d_b]
            )

        return HessianOperator(product, lambda r: r / diagonal, diagonal)


class _StructuredScaling(TemperatureFirst):
    """softmax(W x + b), x = log((1 − ε) softmax(z / T) + ε / K) (the module docstring)."""

    full: bool
    options = ("lambda_intercept", "lambda_diagonal", "lambda_off_diagonal", "max_iter", "tol")

    def __init__(self, n_classes, temperature, mixture, weights, bias, **flags):
        super().__init__(n_classes, **flags)
        self._temperature = float(temperature)
        self.mixture = float(mixture)
        self.weights, self.bias = linear_map(self.method, self.full, n_classes, weights, bias)

    @classmethod
    def identity(cls, n_classes, **flags):
        weights = np.eye(n_classes) if cls.full else np.ones(n_classes)
        return cls(n_classes, 1.0, 0.0, weights, np.zeros(n_classes), **flags)

    def predict_log_proba(self, logits):
        x = mixed_log_proba(check_logits(logits, self.n_classes), self._temperature, self.mixture)
        return log_softmax((x @ self.weights.T if self.full else x * self.weights) + self.bias)

    @property
    def n_parameters(self):
        return 1 + self.weights.size + self.bias.size

    def _arrays(self):
        return {
            "temperature": np.array(self._temperature),
            "mixture": np.array(self.mixture),
            "weights": self.weights,
            "bias": self.bias,
        }

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(
            n_classes,
            arrays["temperature"].item(),
            arrays["mixture"].item(),
            arrays["weights"],
            arrays["bias"],
            **flags,
        )

    @classmethod
    def _fit(cls, z, labels, t_min, t_max, options):
        lam_b = option(options, "lambda_intercept", LAMBDA, "nonneg")
        lam_d = option(options, "lambda_diagonal", LAMBDA, "nonneg")
        lam_o = option(options, "lambda_off_diagonal", LAMBDA, "nonneg") if cls.full else 0.0
        max_iter_given = "max_iter" in options
        max_iter = option(options, "max_iter", MAX_ITER, "count")
        tol = option(options, "tol", TOL, "pos")
        no_more_options(cls.method, options, cls.options)
        require("scipy.optimize", "scipy", cls.method)
        n, k = z.shape
        ts = fit_temperature(z, labels, t_min=t_min, t_max=t_max)
        mixture = 1.0 / (n + 1)
        loss = _StructuredLoss(mixed_log_proba(z, ts.temperature, mixture), labels, cls.full, lam_b, lam_d, lam_o)
        theta0 = np.zeros(loss.n_w + k)
        if cls.full and k > OPERATOR_CLASSES:
            newton_steps, make_hessian = min(max_iter, NEWTON_MAX_ITER), lambda: loss.hessian_operator
        else:
            newton_steps, make_hessian = 0, None
            _, max_iter = iteration_plan(len(theta0), 0, max_iter, max_iter_given, 4 * n * len(theta0))
        free = np.full(len(theta0), np.inf)
        found = minimize_box(
            loss.loss_grad,
            make_hessian,
            theta0,
            Box(-free, free),
            tol=tol,
            max_iter=max_iter,
            newton_steps=newton_steps,
        )
        delta, b = loss.unpack(found.theta)
        weights = delta + (np.eye(k) if cls.full else 1.0)
        return cls(
            k,
            ts.temperature,
            mixture,
            weights,
            b,
            converged=found.converged and ts.converged,
            at_bound=ts.at_bound,
            iterations=found.iterations + ts.iterations,
        )


class StructuredMatrixScaling(_StructuredScaling):
    """SMS (Berta et al. 2025): temperature scaling, then matrix scaling of the smoothed log-probabilities
    with ridge penalties towards the identity."""

    method = "sms"
    name = "structured matrix scaling"
    full = True


class StructuredVectorScaling(_StructuredScaling):
    """SVS (Berta et al. 2025): temperature scaling, then vector scaling of the smoothed log-probabilities
    with ridge penalties towards the identity."""

    method = "svs"
    name = "structured vector scaling"
    full = False
    options = ("lambda_intercept", "lambda_diagonal", "max_iter", "tol")
