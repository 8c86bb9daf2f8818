"""``calibration/{calibrator}.npz`` and the rows of ``calibration.csv``: one calibrator fitted per epoch.

Every epoch's calibrator is fitted on one split's logits (the validation split, or the test split
as the author did) and its state saved, so the trust, score and bootstrap stages apply exactly
the fitted map (docs/method.md §2). The NLL before and after is reported on the fit split and
on the validation split.
"""

from __future__ import annotations

import numpy as np

from trustcal.calibration.base import Calibrator
from trustcal.calibration.methods import calibrator_from_state, fit_calibrator
from trustcal.calibration.temperature import T_MAX, T_MIN
from trustcal.numerics import logits_nll

CALIBRATION_COLUMNS = (
    "epoch",
    "calibrator",
    "temperature",
    "val_nll_before",
    "val_nll_after",
    "converged",
    "at_bound",
    "fit_split",
    "fit_nll_before",
    "fit_nll_after",
    "iterations",
    "parameters",
    "identity_fallback",  # the fit raised the fit split's NLL, so the identity map is used (docs/method.md §2.12)
)
SPLITS = {"validation": "val", "test": "test"}  # config calibration.fit_on → the logits' key prefix


def calibration_row(
    epoch: int,
    d: dict[str, np.ndarray],
    method: str = "temperature",
    split: str = "val",
    *,
    t_min: float = T_MIN,
    t_max: float = T_MAX,
    options: dict | None = None,
) -> tuple[dict, Calibrator]:
    """``method`` fitted on ``d[f"{split}_logits"]``: the row of calibration.csv and the calibrator."""
    cal = fit_calibrator(
        method, d[f"{split}_logits"], d[f"{split}_labels"], t_min=t_min, t_max=t_max, **(options or {})
    )

    def nlls(s):
        logits, labels = d[f"{s}_logits"], d[f"{s}_labels"]
        return logits_nll(logits, labels), cal.nll(logits, labels)

    fit_before, fit_after = nlls(split)
    val_before, val_after = nlls("val")
    summary = cal.summary()
    row = dict(
        epoch=epoch,
        calibrator=method,
        temperature=float(summary["temperature"]),
        val_nll_before=val_before,
        val_nll_after=val_after,
        converged=bool(summary["converged"]),
        at_bound=bool(summary["at_bound"]),
        fit_split=split,
        fit_nll_before=fit_before,
        fit_nll_after=fit_after,
        iterations=int(summary["iterations"]),
        parameters=int(summary["parameters"]),
        identity_fallback=bool(summary["identity_fallback"]),
    )
    return row, cal


def save_states(states: dict[int, Calibrator]) -> dict[str, np.ndarray]:
    """The arrays of ``calibration/{method}.npz``: each epoch's state under ``epochNNN/<name>``.

    The stage writes them with :func:`trustcal.files.write_npz` (sealed with a content digest) and
    reads them back with :func:`trustcal.files.read_npz` (checked against it) before :func:`load_states`.
    """
    arrays = {}
    for epoch, cal in states.items():
        arrays[f"epoch{epoch:03d}/method"] = np.array(cal.method)
        for name, value in cal.state().items():
            arrays[f"epoch{epoch:03d}/{name}"] = np.asarray(value)
    return arrays


def load_states(arrays) -> dict[int, Calibrator]:
    """Epoch → calibrator, from the arrays :func:`save_states` wrote (an open npz or a dict)."""
    by_epoch: dict[int, dict[str, np.ndarray]] = {}
    for key in arrays.keys():
        prefix, _, name = key.partition("/")
        by_epoch.setdefault(int(prefix.removeprefix("epoch")), {})[name] = np.asarray(arrays[key])
    return {epoch: calibrator_from_state(str(state.pop("method")), state) for epoch, state in sorted(by_epoch.items())}
