"""trustcal.assessment.fit: the calibrators an assessment fits, and what it says when it cannot fit them.

Moved from the calibrators' tests (tests/unit/calibration/test_methods.py); these run ``assess`` on
prediction files, where the assessment chooses which calibrators to fit on which epochs.
"""

import numpy as np
import pytest
from helpers.synthetic import calibrated, draw_labels

from trustcal.calibration import softmax


def csv_predictions(path, seed=0, n=60, k=3):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2, (n, k))
    p = softmax(z)
    y = draw_labels(p, rng)
    import pandas as pd

    pd.DataFrame(p, columns=[f"p{c}" for c in range(k)]).assign(label=y).to_csv(path, index=False)
    return p, y


def test_calibrators_asked_for_without_validation_data_are_an_error(tmp_path):
    """--calibrators isotonic,temperature without validation data used to write results without them and
    without a word: now the CLI stops with one line naming them (no output written), and the API raises
    a PredictionError in its own terms. Without --calibrators, test predictions alone are assessed as before."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    import trustcal
    from trustcal import cli
    from trustcal.predictions import PredictionError

    src = tmp_path / "preds.csv"
    p, y = csv_predictions(src)

    def run(*args):
        err = io.StringIO()
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            try:
                code = cli.main([str(a) for a in args])
            except SystemExit as exc:
                code = exc.code
        return code, err.getvalue()

    code, err = run("assess", src, "--out", tmp_path / "out", "--no-figures", "--calibrators", "isotonic,temperature")
    assert code != 0 and not (tmp_path / "out").exists()
    line = [s for s in err.splitlines() if "isotonic" in s]
    assert len(line) == 1 and "temperature" in line[0] and "no validation predictions" in line[0], err
    assert "Traceback" not in err
    code, err = run("assess", src, "--out", tmp_path / "plain", "--no-figures", "--bootstrap", 0)
    assert code == 0, err
    with pytest.raises(PredictionError, match="isotonic, temperature asked for") as info:
        trustcal.assess(p, y, calibrators=["isotonic", "temperature"], bootstrap=0, sweep=None)
    assert "--" not in str(info.value) and "validation=(" in str(info.value)


def test_a_series_with_some_epochs_without_validation_data_warns_by_name(tmp_path):
    """In a series where only some epochs carry validation predictions, those are calibrated and each
    calibrator asked for gets one warning naming the files it could not be fitted on."""
    from trustcal.assessment import assess_files
    from trustcal.settings import CalibrationSettings, Settings

    rng = np.random.default_rng(4)
    for epoch in (1, 2):
        z = rng.normal(0, 2, (60, 3))
        y = draw_labels(softmax(z), rng)
        arrays = dict(test_logits=z, test_labels=y)
        if epoch == 1:
            arrays.update(val_logits=z, val_labels=y)
        np.savez(tmp_path / f"epoch{epoch:03d}.npz", **arrays)
    calibration = CalibrationSettings(methods=("temperature", "histogram"))
    a = assess_files([tmp_path], settings=Settings(calibration=calibration, bootstrap=None, sweep=None))
    missing = [w for w in a.warnings if w.code == "calibrators_not_fitted"]
    assert [w.message.split("'")[1] for w in missing] == ["temperature", "histogram"]
    assert all("epoch002.npz" in w.message and "epoch001" not in w.message for w in missing)
    assert set(a.tables["calibration"]["epoch"]) == {1}


def test_the_summary_names_each_calibrator_and_gives_t_only_for_temperature_scaling():
    """With calibrators other than temperature scaling, the summary used to say "temperature scaling fitted
    … T = nan … nan" and the JSON listed NaN temperatures; now it names what was fitted."""
    import warnings

    import trustcal

    z, y = calibrated(200, 3, seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        only = trustcal.assess(
            z, y, kind="logits", validation=(z, y), calibrators=["isotonic", "vector"], bootstrap=None
        )
        both = trustcal.assess(
            z, y, kind="logits", validation=(z, y), calibrators=["vector", "temperature"], bootstrap=None
        )
    text = only.summary()
    assert "temperature scaling fitted" not in text and "nan" not in text
    assert "also fitted on the validation data: isotonic, vector" in text
    assert only.to_dict()["temperatures"] == []
    assert "temperature scaling fitted on the validation data: T = " in both.summary()
    assert [r["temperature"] for r in both.to_dict()["temperatures"]] == [pytest.approx(both.temperature)]


def test_where_possible_fits_only_where_there_are_validation_data(tmp_path):
    """The workflow's external rule fits its config's methods where a set has validation predictions and
    nowhere else, without an error or a warning (an author's bef/aft files have none)."""
    from trustcal.assessment import assess_files
    from trustcal.settings import CalibrationSettings, Settings

    rng = np.random.default_rng(7)
    for name in ("bef_1.npz", "aft_1.npz"):
        z = rng.normal(0, 2, (60, 3))
        np.savez(tmp_path / name, logits=z, labels=draw_labels(softmax(z), rng))
    calibration = CalibrationSettings(methods=("temperature", "vector"), required=False)
    a = assess_files([tmp_path], settings=Settings(calibration=calibration, bootstrap=None, sweep=None))
    assert not [w for w in a.warnings if w.code.startswith("calibrator")]
    assert set(a.tables["scores"]["calibrator"]) == {"none", "temperature"}  # aft_1: the paper's calibrated file
