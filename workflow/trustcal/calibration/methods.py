"""Every calibration method by name: :data:`METHODS`, :func:`fit_calibrator`, :func:`calibrator_from_state`.

The methods live in ``scaling`` (none, temperature, vector, matrix, dirichlet), ``binning``
(histogram, isotonic, irm), ``structured`` (sms, svs) and ``ensemble`` (ets), all built on the interface of ``base``; this module sits above all three,
so that no module of the family imports one that imports it back.
"""

from __future__ import annotations

import numpy as np

from trustcal.calibration.base import Calibrator
from trustcal.calibration.binning import HistogramBinning, IsotonicCalibration, MulticlassIsotonic
from trustcal.calibration.ensemble import EnsembleTemperatureScaling
from trustcal.calibration.scaling import (
    DirichletCalibration,
    MatrixScaling,
    NoCalibration,
    TemperatureScaling,
    VectorScaling,
)
from trustcal.calibration.structured import StructuredMatrixScaling, StructuredVectorScaling
from trustcal.calibration.temperature import T_MAX, T_MIN
from trustcal.calibration.user import user_calibrator_class
from trustcal.imports import is_import_path

METHODS: tuple[str, ...] = (
    "none",
    "temperature",
    "vector",
    "matrix",
    "dirichlet",
    "histogram",
    "isotonic",
    "sms",
    "svs",
    "ets",
    "irm",
)
_CLASSES: dict[str, type[Calibrator]] = {
    c.method: c
    for c in (
        NoCalibration,
        TemperatureScaling,
        VectorScaling,
        MatrixScaling,
        DirichletCalibration,
        HistogramBinning,
        IsotonicCalibration,
        StructuredMatrixScaling,
        StructuredVectorScaling,
        EnsembleTemperatureScaling,
        MulticlassIsotonic,
    )
}


ONE_VS_REST = ("histogram", "isotonic")
MANY_CLASSES = 20  # above this many classes a one-vs-rest binning calibrator is steered to irm (§2.10)


def many_classes_advice(method: str, n_classes: int | None) -> str | None:
    """The line that steers a one-vs-rest binning calibrator away from ``n_classes`` > :data:`MANY_CLASSES`
    classes, before it is fitted (docs/method.md §2.10); None where it does not apply."""
    if method not in ONE_VS_REST or not n_classes or n_classes <= MANY_CLASSES:
        return None
    name = _CLASSES[method].name
    return (
        f"{name} at {n_classes} classes: its {n_classes} one-vs-rest maps are fitted on few positives each and "
        "give the true class probability 0 wherever its bin saw none, which raises the test NLL above the raw "
        "model's (docs/method.md §2.10). Fix: use irm (one isotonic map for every class) or temperature."
    )


def calibrator_class(method: str) -> type[Calibrator]:
    """The :class:`Calibrator` subclass of ``method``: one of :data:`METHODS`, or a user's calibrator by its
    import path ``package.module:Class`` (:mod:`trustcal.calibration.user`); a ValueError naming the valid
    ones otherwise."""
    if is_import_path(method):
        return user_calibrator_class(method)
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(
            f"unknown calibration method {method!r}; valid: {', '.join(METHODS)}, or a calibrator of your own by "
            "its import path package.module:Class"
        )
    return _CLASSES[method]


def fit_calibrator(
    method: str, logits: np.ndarray, labels: np.ndarray, *, t_min: float = T_MIN, t_max: float = T_MAX, **options
) -> Calibrator:
    """Fit calibrator ``method`` on N×K ``logits`` (log-probabilities for probability inputs) and N labels.

    ``t_min``/``t_max`` bound the temperature, and vector, matrix and Dirichlet scaling's
    per-class scales to [1/t_max, 1/t_min]. Options: ``tol``, ``max_iter`` (temperature,
    vector, matrix, dirichlet), ``odir_lambda``, ``odir_mu`` (matrix, dirichlet), ``bins``
    (histogram), ``lambda_intercept``, ``lambda_diagonal`` (sms, svs), ``lambda_off_diagonal`` (sms);
    anything else is a ValueError.
    """
    return calibrator_class(method).fit(logits, labels, t_min=t_min, t_max=t_max, **options)


def calibrator_from_state(method: str, state) -> Calibrator:
    """The calibrator whose :meth:`Calibrator.state` this is (a dict, or ``np.load`` of its ``np.savez``)."""
    return calibrator_class(method).from_state(state)
