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
from trustcal.calibration.scaling_loss import _ScalingLoss
from trustcal.calibration.solver import (
    NEWTON_MAX_ITER,
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
