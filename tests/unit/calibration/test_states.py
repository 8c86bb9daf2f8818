"""The calibration states of the result tables (trustcal.calibration.states): the raw model and the paper's
temperature scaling, and the rows of a table that are theirs."""

import pandas as pd

from trustcal.calibration.states import PAPER_CALIBRATOR, PAPER_STATES, RAW, paper_states, temperature_rows


def test_paper_states_are_the_raw_model_and_temperature_scaling():
    table = pd.DataFrame(
        {"epoch": [1, 1, 1, 2], "calibrator": ["none", "temperature", "isotonic", "none"], "x": range(4)}
    )
    got = paper_states(table)
    assert got["calibrator"].tolist() == ["none", "temperature", "none"]
    assert got["calibrated"].tolist() == [False, True, False] and got["x"].tolist() == [0, 1, 3]
    assert list(got.columns) == ["epoch", "calibrator", "calibrated", "x"]
    old = pd.DataFrame({"epoch": [1, 1], "calibrated": ["True", "false"]})  # a table from before the column
    assert paper_states(old)["calibrated"].tolist() == [True, False]


def test_the_paper_calibrator_is_temperature_scaling_and_its_rows_are_calibration_csvs():
    assert PAPER_STATES == (RAW, PAPER_CALIBRATOR) == ("none", "temperature")
    calibration = pd.DataFrame({"epoch": [1, 1], "calibrator": ["temperature", "vector"], "temperature": [1.5, 1.0]})
    assert temperature_rows(calibration)["calibrator"].tolist() == ["temperature"]
    old = calibration.drop(columns="calibrator")  # a table from before the column: every row
    assert temperature_rows(old) is old
