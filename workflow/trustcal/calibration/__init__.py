"""Post-hoc calibrators fitted on one split's logits (docs/method.md §2).

Today the paper's temperature scaling: :func:`fit_temperature` finds T, :func:`calibration_row`
is one epoch's row of ``calibration.csv``.
"""

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
    "T_MAX",
    "T_MIN",
    "TemperatureFit",
    "calibration_row",
    "fit_temperature",
    "log_softmax",
    "nll_from_logits",
    "softmax",
]
