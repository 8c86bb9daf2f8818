"""Dataset shift: CIFAR-10-C's corruptions of test images at severities 1–5 (:mod:`trustcal.shift.corruptions`),
for measuring calibration and trust as the inputs drift from the training distribution."""

from trustcal.shift.corruptions import CORRUPTIONS, SEVERITIES, Corruption, available, corrupt, unavailable

__all__ = ["CORRUPTIONS", "SEVERITIES", "Corruption", "available", "corrupt", "unavailable"]
