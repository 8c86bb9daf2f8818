"""The interface every post-hoc calibrator shares (docs/method.md §2), and the checks they all use.

:func:`trustcal.calibration.methods.fit_calibrator` fits any method of
:data:`trustcal.calibration.methods.METHODS` by name; the methods live in ``scaling`` (none,
temperature, vector, matrix, dirichlet) and ``binning`` (histogram, isotonic), which build on
this module (and are not imported by it).

A :class:`Calibrator` is fitted on one split's N×K logits and integer labels, maps any
N×K logits to calibrated probabilities with :meth:`Calibrator.predict_proba`, and is
saved as a dict of NumPy arrays (:meth:`Calibrator.state`, for ``np.savez``) from which
:meth:`Calibrator.from_state` rebuilds it exactly. For inputs that are probabilities
rather than logits, the caller passes log-probabilities as the logits.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from trustcal.calibration.temperature import T_MAX, T_MIN
from trustcal.errors import TrustcalError
from trustcal.numerics import logits_nll, mean_nll


class MissingDependencyError(TrustcalError, ImportError):
    """A calibration method needs a package the light install leaves out (scipy, scikit-learn)."""


def require(module: str, package: str, method: str):
    """Import ``module`` for calibration ``method``, or say which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(
            f"calibration method '{method}' needs {package}: pip install 'trustcal[calibration]'"
        ) from e


def check_logits(logits, n_classes: int | None = None) -> np.ndarray:
    """N×K finite float64 logits (N ≥ 1, K ≥ 2; K = n_classes when given)."""
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] == 0 or z.shape[1] < 2:
        raise ValueError(f"logits must be an N×K array with N ≥ 1 and K ≥ 2 (got shape {z.shape})")
    if n_classes is not None and z.shape[1] != n_classes:
        raise ValueError(f"the calibrator was fitted on {n_classes} classes, these logits have {z.shape[1]}")
    if not np.isfinite(z).all():
        raise ValueError(
            "logits must be finite (for probabilities pass trustcal.numerics.floored_log(p), as trustcal assess does)"
        )
    return z


def check_labels(labels, n: int, n_classes: int) -> np.ndarray:
    """N integer labels in 0..K−1."""
    y = np.asarray(labels)
    if y.shape != (n,):
        raise ValueError(f"labels must be a vector of {n} class indices (got shape {y.shape})")
    if y.dtype.kind not in "iu":
        if y.dtype.kind != "f" or not np.array_equal(y, np.round(y)):
            raise ValueError(f"labels must be integer class indices (got dtype {y.dtype})")
        y = y.astype(np.int64)
    if y.min() < 0 or y.max() >= n_classes:
        raise ValueError(f"labels must lie in 0..{n_classes - 1} (got {y.min()}..{y.max()})")
    return y.astype(np.intp)


def check_bounds(t_min: float, t_max: float) -> None:
    if not 0 < t_min < t_max < np.inf:
        raise ValueError(f"need 0 < t_min < t_max < inf (got t_min={t_min}, t_max={t_max})")


def option(options: dict, name: str, default, kind: str) -> Any:
    """Pop option ``name`` and check it: kind is 'nonneg' (finite float ≥ 0), 'pos' (finite float > 0) or 'count' (int ≥ 1)."""
    value = options.pop(name, default)
    if kind == "count":
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"option {name} must be an integer ≥ 1 (got {value!r})")
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"option {name} must be a number (got {value!r})")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (kind == "pos" and value == 0):
        raise ValueError(f"option {name} must be a finite number {'> 0' if kind == 'pos' else '≥ 0'} (got {value!r})")
    return value


def no_more_options(method: str, options: dict, accepted: tuple[str, ...]) -> None:
    if options:
        valid = ", ".join(accepted) if accepted else "none"
        raise ValueError(
            f"unknown option(s) for calibration method '{method}': {', '.join(sorted(options))} (valid: {valid})"
        )


def linear_map(method: str, full: bool, n_classes: int, weights, bias) -> tuple[np.ndarray, np.ndarray]:
    """The weights (K×K when ``full``, else K scales) and the K biases of a linear map of calibrator ``method``,
    as contiguous float64 arrays; a ValueError when their shapes are not those."""
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    bias = np.ascontiguousarray(bias, dtype=np.float64)
    shape = (n_classes, n_classes) if full else (n_classes,)
    if weights.shape != shape or bias.shape != (n_classes,):
        raise ValueError(
            f"'{method}' needs weights {shape} and bias ({n_classes},), got {weights.shape} and {bias.shape}"
        )
    return weights, bias


def temperature_bound(t: float, t_min: float, t_max: float) -> str:
    """Which bound T is at, in words: "T = 0.01 is the lower bound t_min of the search interval [0.01, 100]"."""
    side = "lower bound t_min" if abs(t - t_min) <= abs(t - t_max) else "upper bound t_max"
    return f"T = {t:g} is the {side} of the search interval [{t_min:g}, {t_max:g}]"


class Calibrator(ABC):
    """A fitted post-hoc calibrator: logits → calibrated probabilities.

    Subclasses set ``method`` and ``options``, implement :meth:`_fit`, :meth:`predict_proba`,
    :meth:`_arrays` (the fitted parameters) and :meth:`_from_arrays`, and say how many
    parameters they fitted in :attr:`n_parameters`. Those whose family contains the identity
    map (temperature, vector, matrix, Dirichlet) also implement :meth:`identity`.

    ``identity_fallback`` is True when the fit was rejected for raising the fit split's NLL
    above the uncalibrated model's and the identity map is used instead (:meth:`fit`).
    """

    method: ClassVar[str]
    options: ClassVar[tuple[str, ...]] = ()
    name: ClassVar[str] = ""  # what the method is called in warnings ("temperature scaling")

    def __init__(
        self,
        n_classes: int,
        *,
        converged: bool = True,
        at_bound: bool = False,
        iterations: int = 0,
        identity_fallback: bool = False,
    ):
        self.n_classes = int(n_classes)
        self.converged = bool(converged)
        self.at_bound = bool(at_bound)
        self.iterations = int(iterations)
        self.identity_fallback = bool(identity_fallback)

    @classmethod
    def fit(cls, logits, labels, *, t_min: float = T_MIN, t_max: float = T_MAX, **options) -> Calibrator:
        """Fit on N×K logits and N labels in 0..K−1; ``options`` as the method documents.

        The safeguard of docs/method.md §2.12: for a method whose family contains the identity
        map, if the fitted map's NLL on these logits (:meth:`nll`, exact, as every table's) exceeds
        that of softmax(logits) by more than float64 rounding, the identity map is returned instead,
        with ``identity_fallback`` set (and ``converged``/``iterations`` of the rejected fit)."""
        z = check_logits(logits)
        y = check_labels(labels, len(z), z.shape[1])
        check_bounds(t_min, t_max)
        cal = cls._fit(z, y, t_min, t_max, dict(options))
        identity = cls.identity(z.shape[1], converged=cal.converged, iterations=cal.iterations, identity_fallback=True)
        if identity is not None:
            raw, fitted = logits_nll(z, y), cal.nll(z, y)
            # Rounding of a log-softmax of K terms of size ≤ |z| (row-centred): (K + 2) eps (1 + max |z|) per sample.
            rounding = (
                (z.shape[1] + 2) * np.finfo(np.float64).eps * (1 + np.abs(z - z.max(axis=1, keepdims=True)).max())
            )
            if fitted > raw + rounding:
                return identity
        return cal

    @classmethod
    def identity(cls, n_classes: int, **flags) -> Calibrator | None:
        """The member of this method's family that maps logits to softmax(logits) (None if there is none)."""
        return None

    @classmethod
    @abstractmethod
    def _fit(cls, z: np.ndarray, y: np.ndarray, t_min: float, t_max: float, options: dict) -> Calibrator:
        """Fit on checked float64 logits and labels; pop the options used (with :func:`option`) and
        call :func:`no_more_options`."""

    @abstractmethod
    def predict_proba(self, logits: np.ndarray) -> np.ndarray:
        """N×K float64 calibrated probabilities: rows sum to 1, entries in [0, 1]."""

    def predict(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The calibrated probabilities and their exact log-probabilities (N×K float64 each), or None in place
        of the latter for a map that gives probabilities (histogram binning, isotonic regression: a bin can
        give 0), whose NLL floors them (docs/method.md §2.12)."""
        return self.predict_proba(logits), None

    def nll(self, logits: np.ndarray, labels: np.ndarray) -> float:
        """Mean NLL of the calibrated predictions of ``logits``, as every table reports it
        (:func:`trustcal.numerics.mean_nll` of :meth:`predict`)."""
        probs, log_probs = self.predict(logits)
        return mean_nll(probs, labels, log_probs)

    @property
    @abstractmethod
    def n_parameters(self) -> int:
        """How many parameters were fitted."""

    @abstractmethod
    def _arrays(self) -> dict[str, np.ndarray]: ...

    @classmethod
    @abstractmethod
    def _from_arrays(cls, n_classes: int, arrays: dict[str, np.ndarray], **flags) -> Calibrator: ...

    @property
    def temperature(self) -> float:
        return float("nan")

    def state(self) -> dict[str, np.ndarray]:
        """Everything needed to rebuild the calibrator, as NumPy arrays (for ``np.savez``)."""
        return {
            "n_classes": np.array(self.n_classes, dtype=np.int64),
            "converged": np.array(self.converged),
            "at_bound": np.array(self.at_bound),
            "iterations": np.array(self.iterations, dtype=np.int64),
            "identity_fallback": np.array(self.identity_fallback),
            **self._arrays(),
        }

    @classmethod
    def from_state(cls, state) -> Calibrator:
        """The calibrator :meth:`state` describes (a dict, or what ``np.load`` returns for its ``np.savez``)."""
        arrays = {k: np.asarray(state[k]) for k in state}
        missing = {"n_classes", "converged", "at_bound", "iterations"} - set(arrays)
        if missing:
            raise ValueError(f"not a '{cls.method}' calibrator's state: {', '.join(sorted(missing))} missing")
        flags = {k: arrays.pop(k).item() for k in ("converged", "at_bound", "iterations")}
        if "identity_fallback" in arrays:  # states saved before the safeguard have none
            flags["identity_fallback"] = bool(arrays.pop("identity_fallback").item())
        try:
            return cls._from_arrays(int(arrays.pop("n_classes")), arrays, **flags)
        except KeyError as e:
            raise ValueError(f"not a '{cls.method}' calibrator's state: {e.args[0]} missing") from None

    def summary(self) -> dict:
        """temperature (NaN unless method == 'temperature'), converged, at_bound, iterations, parameters,
        identity_fallback."""
        return dict(
            temperature=self.temperature,
            converged=self.converged,
            at_bound=self.at_bound,
            iterations=self.iterations,
            parameters=int(self.n_parameters),
            identity_fallback=self.identity_fallback,
        )

    def bound_detail(self, t_min: float, t_max: float) -> str:
        """Which parameter is at which bound of [t_min, t_max] (for :meth:`diagnostics`)."""
        return "a parameter is at a bound"

    def diagnostics(self, t_min: float = T_MIN, t_max: float = T_MAX) -> list[tuple[str, str]]:
        """(code, sentence) for each way this fit deserves a warning, each sentence naming the calibrator
        and its state: ``calibrator_identity_fallback``, ``calibrator_not_converged``, and
        ``temperature_at_bound`` (temperature scaling) or ``calibrator_at_bound`` (a class's scale).
        The sentences state facts only; the caller adds the fix in its own terms (CLI flags, config keys)."""
        who = f"calibrator '{self.method}' ({self.name or self.method})"
        found = []
        if self.identity_fallback:
            found.append(
                (
                    "calibrator_identity_fallback",
                    f"{who}: the fitted map raised the NLL of the split it was fitted on above the uncalibrated "
                    f"model's (after {self.iterations} iterations{'' if self.converged else ', not converged'}), so "
                    "the identity map is used: its probabilities are the uncalibrated ones",
                )
            )
        if not self.converged and not self.identity_fallback:
            found.append(
                (
                    "calibrator_not_converged",
                    f"{who} did not converge: the optimiser stopped after {self.iterations} iterations without "
                    "meeting its tolerance (options max_iter, tol); the map it reached is used, and its NLL on the "
                    "fit split is no higher than the uncalibrated model's",
                )
            )
        if self.at_bound and not self.identity_fallback:
            code = "temperature_at_bound" if self.method == "temperature" else "calibrator_at_bound"
            found.append((code, f"{who}: {self.bound_detail(t_min, t_max)}"))
        return found

    def __repr__(self) -> str:
        return f"<{type(self).__name__} method={self.method!r} K={self.n_classes} {self.summary()}>"
