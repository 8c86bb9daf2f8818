"""Post-hoc calibrators fitted on one split's logits (docs/method.md §2).

The paper's temperature scaling: :func:`fit_temperature` finds T, :func:`calibration_row`
is one epoch's row of ``calibration.csv``. The family behind one interface
(:class:`Calibrator`): :func:`fit_calibrator` fits any method of :data:`METHODS`
(none, temperature, vector, matrix, dirichlet, histogram, isotonic) and
:func:`calibrator_from_state` rebuilds one from its saved arrays.
"""

from trustcal.calibration.base import Calibrator, MissingDependencyError
from trustcal.calibration.methods import METHODS, calibrator_from_state, fit_calibrator
from trustcal.calibration.table import CALIBRATION_COLUMNS, calibration_row
from trustcal.calibration.temperature import (
    T_MAX,
    T_MIN,
    TemperatureFit,
    fit_temperature,
    log_softmax,
    nll_from_logits,
    softmax,
)

__all__ = [
    "CALIBRATION_COLUMNS",
    "Calibrator",
    "METHODS",
    "MissingDependencyError",
    "T_MAX",
    "T_MIN",
    "TemperatureFit",
    "calibration_row",
    "calibrator_from_state",
    "fit_calibrator",
    "fit_temperature",
    "log_softmax",
    "nll_from_logits",
    "softmax",
]
