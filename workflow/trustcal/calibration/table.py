"""One row of ``calibration.csv`` per epoch: the fitted temperature and the NLL it gives (docs/method.md §2)."""

from __future__ import annotations

import numpy as np

from trustcal.calibration.temperature import T_MAX, T_MIN, fit_temperature, nll_from_logits

CALIBRATION_COLUMNS = (
    "epoch",
    "temperature",
    "val_nll_before",
    "val_nll_after",
    "converged",
    "at_bound",
    "fit_split",
    "fit_nll_before",
    "fit_nll_after",
    "iterations",
)


def calibration_row(epoch: int, d: dict[str, np.ndarray], split: str = "val", *, t_min=T_MIN, t_max=T_MAX) -> dict:
    """One row of calibration.csv: T fitted on ``d[f"{split}_logits"]``, NLL reported on the validation logits."""
    fit = fit_temperature(d[f"{split}_logits"], d[f"{split}_labels"], t_min=t_min, t_max=t_max)
    return dict(
        epoch=epoch,
        temperature=fit.temperature,
        val_nll_before=nll_from_logits(d["val_logits"], d["val_labels"]),
        val_nll_after=nll_from_logits(d["val_logits"], d["val_labels"], fit.temperature),
        converged=fit.converged,
        at_bound=fit.at_bound,
        fit_split=split,
        fit_nll_before=fit.nll_before,
        fit_nll_after=fit.nll_after,
        iterations=fit.iterations,
    )
