"""The interface every post-hoc calibrator shares (docs/method.md §2), and the checks they all use.

:func:`fit_calibrator` fits any method of :data:`CALIBRATORS` by name and
:func:`calibrator_from_state` rebuilds one from its saved arrays; the methods live in
``scaling`` (none, temperature, vector, matrix, dirichlet) and ``binning`` (histogram,
isotonic), imported on first use.

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

CALIBRATORS: tuple[str, ...] = ("none", "temperature", "vector", "matrix", "dirichlet", "histogram", "isotonic")


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
        raise ValueError("logits must be finite (for probabilities pass log(max(p, tiny)), as trustcal assess does)")
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


class Calibrator(ABC):
    """A fitted post-hoc calibrator: logits → calibrated probabilities.

    Subclasses set ``method`` and ``options``, implement :meth:`_fit`, :meth:`predict_proba`,
    :meth:`_arrays` (the fitted parameters) and :meth:`_from_arrays`, and say how many
    parameters they fitted in :attr:`n_parameters`.
    """

    method: ClassVar[str]
    options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, n_classes: int, *, converged: bool = True, at_bound: bool = False, iterations: int = 0):
        self.n_classes = int(n_classes)
        self.converged = bool(converged)
        self.at_bound = bool(at_bound)
        self.iterations = int(iterations)

    @classmethod
    def fit(cls, logits, labels, *, t_min: float = T_MIN, t_max: float = T_MAX, **options) -> Calibrator:
        """Fit on N×K logits and N labels in 0..K−1; ``options`` as the method documents."""
        z = check_logits(logits)
        y = check_labels(labels, len(z), z.shape[1])
        check_bounds(t_min, t_max)
        return cls._fit(z, y, t_min, t_max, dict(options))

    @classmethod
    @abstractmethod
    def _fit(cls, z: np.ndarray, y: np.ndarray, t_min: float, t_max: float, options: dict) -> Calibrator:
        """Fit on checked float64 logits and labels; pop the options used (with :func:`option`) and
        call :func:`no_more_options`."""

    @abstractmethod
    def predict_proba(self, logits: np.ndarray) -> np.ndarray:
        """N×K float64 calibrated probabilities: rows sum to 1, entries in [0, 1]."""

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
        try:
            return cls._from_arrays(int(arrays.pop("n_classes")), arrays, **flags)
        except KeyError as e:
            raise ValueError(f"not a '{cls.method}' calibrator's state: {e.args[0]} missing") from None

    def summary(self) -> dict:
        """temperature (NaN unless method == 'temperature'), converged, at_bound, iterations, parameters."""
        return dict(
            temperature=self.temperature,
            converged=self.converged,
            at_bound=self.at_bound,
            iterations=self.iterations,
            parameters=int(self.n_parameters),
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} method={self.method!r} K={self.n_classes} {self.summary()}>"


def calibrator_class(method: str) -> type[Calibrator]:
    """The :class:`Calibrator` subclass of ``method`` (a ValueError naming the valid ones otherwise)."""
    if not isinstance(method, str) or method not in CALIBRATORS:
        raise ValueError(f"unknown calibration method {method!r}; valid: {', '.join(CALIBRATORS)}")
    from trustcal.calibration import binning, scaling  # they import this module

    classes = (
        scaling.NoCalibration,
        scaling.TemperatureScaling,
        scaling.VectorScaling,
        scaling.MatrixScaling,
        scaling.DirichletCalibration,
        binning.HistogramBinning,
        binning.IsotonicCalibration,
    )
    return {c.method: c for c in classes}[method]


def fit_calibrator(
    method: str, logits: np.ndarray, labels: np.ndarray, *, t_min: float = T_MIN, t_max: float = T_MAX, **options
) -> Calibrator:
    """Fit calibrator ``method`` on N×K ``logits`` (log-probabilities for probability inputs) and N labels.

    ``t_min``/``t_max`` bound the temperature, and vector, matrix and Dirichlet scaling's
    per-class scales to [1/t_max, 1/t_min]. Options: ``tol``, ``max_iter`` (temperature,
    vector, matrix, dirichlet), ``odir_lambda``, ``odir_mu`` (matrix, dirichlet), ``bins``
    (histogram); anything else is a ValueError.
    """
    return calibrator_class(method).fit(logits, labels, t_min=t_min, t_max=t_max, **options)


def calibrator_from_state(method: str, state) -> Calibrator:
    """The calibrator whose :meth:`Calibrator.state` this is (a dict, or ``np.load`` of its ``np.savez``)."""
    return calibrator_class(method).from_state(state)
