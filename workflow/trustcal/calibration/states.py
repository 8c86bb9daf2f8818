"""The calibration states of the result tables: the raw model (:data:`RAW`) and the paper's method
(:data:`PAPER_CALIBRATOR`), the two the paper compares, and the rows of a table that are theirs.

Every table of an epoch's predictions has a ``calibrator`` column: ``none`` for the raw model, a method of
:data:`trustcal.calibration.METHODS` (or a user's calibrator) for each fitted one.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["PAPER_CALIBRATOR", "PAPER_STATES", "RAW", "calibrated_flag", "paper_states", "temperature_rows"]

RAW, PAPER_CALIBRATOR = "none", "temperature"  # the `calibrator` of the raw model and of the paper's method
PAPER_STATES = (RAW, PAPER_CALIBRATOR)  # the paper's before and after calibration


def calibrated_flag(column: pd.Series) -> pd.Series:
    """The ``calibrated`` column as booleans, however a CSV round trip spelled them (True, true, 1, 1.0)."""
    return column.astype(str).str.lower().isin(("true", "1", "1.0"))


def temperature_rows(calibration: pd.DataFrame) -> pd.DataFrame:
    """calibration.csv's rows of temperature scaling (a table from before the ``calibrator`` column: all)."""
    if "calibrator" not in calibration:
        return calibration
    return calibration[calibration["calibrator"] == PAPER_CALIBRATOR]


def paper_states(df: pd.DataFrame) -> pd.DataFrame:
    """The paper's two states of a result table: the raw model's rows (before calibration) and
    temperature scaling's (after), with a boolean ``calibrated`` column beside ``calibrator``.

    A table written before the ``calibrator`` column existed (``calibrated`` only) is read as it is.
    """
    if "calibrator" not in df.columns:
        return df.assign(calibrated=calibrated_flag(df["calibrated"]))
    out = df[df["calibrator"].isin(PAPER_STATES)].copy()
    out.insert(int(out.columns.get_loc("calibrator")) + 1, "calibrated", out["calibrator"] == PAPER_CALIBRATOR)
    return out.reset_index(drop=True)
