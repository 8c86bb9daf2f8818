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


# --- calibrators that make the test split worse -------------------------------------------------------


def digits_forest_split(seed: int = 1):
    """A 10-tree random forest on scikit-learn's digits: (test probabilities, labels), (validation probabilities,
    labels). 80 % for training and validation (3:1), 20 % for test, stratified; test accuracy 0.969."""
    datasets = pytest.importorskip("sklearn.datasets")
    ensemble = pytest.importorskip("sklearn.ensemble")
    model_selection = pytest.importorskip("sklearn.model_selection")
    x, y = datasets.load_digits(return_X_y=True)
    split = model_selection.train_test_split
    x_rest, x_test, y_rest, y_test = split(x, y, test_size=0.2, random_state=seed, stratify=y)
    x_train, x_val, y_train, y_val = split(x_rest, y_rest, test_size=0.25, random_state=seed, stratify=y_rest)
    forest = ensemble.RandomForestClassifier(n_estimators=10, random_state=seed).fit(x_train, y_train)
    return (forest.predict_proba(x_test), y_test), (forest.predict_proba(x_val), y_val)


def test_calibrators_that_make_the_test_split_worse_are_named_with_their_numbers():
    """On a random forest's digits votes, isotonic regression and histogram binning, fitted on 360 validation
    samples, lower the test accuracy and raise the test NLL (the summary said "0 warnings" and showed no NLL):
    one calibrator_worse_on_test warning names both, with the raw and calibrated numbers of scores.csv;
    temperature scaling, which lowers the NLL here, is not named; the summary shows every calibrator's NLL."""
    import trustcal

    (p, y), validation = digits_forest_split()
    with pytest.warns(trustcal.AssessmentWarning):
        result = trustcal.assess(
            p, y, validation=validation, calibrators=["temperature", "isotonic", "histogram"], bootstrap=None
        )
    scores = result.scores[result.scores["split"] == "test"].set_index("calibrator")
    assert scores.loc["none", "accuracy"] == pytest.approx(0.969, abs=5e-4)
    assert scores.loc["temperature", "nll"] < scores.loc["none", "nll"]
    (warning,) = [w for w in result.warnings if w.code == "calibrator_worse_on_test"]
    text = warning.message.replace("Calibrator '", "calibrator '")  # each calibrator's sentence, the first lower-case
    assert "'temperature'" not in text
    for name, words in (("isotonic", "isotonic regression"), ("histogram", "histogram binning")):
        raw, cal = scores.loc["none"], scores.loc[name]
        assert cal["accuracy"] < raw["accuracy"] and cal["nll"] > raw["nll"] + 0.05
        assert (
            f"calibrator '{name}' ({words}) made the test predictions worse than the uncalibrated model's: "
            f"accuracy {raw['accuracy']:.4f} → {cal['accuracy']:.4f}, NLL {raw['nll']:.4f} → {cal['nll']:.4f}"
        ) in text, text
    summary = result.summary()
    assert "1 warning" in summary
    for name in ("none", "temperature", "isotonic", "histogram"):
        assert f"NLL {scores.loc[name, 'nll']:.4f}" in summary, summary


def test_a_calibrator_that_helps_gets_no_warning():
    """Overconfident logits (labels drawn from softmax(z / 2)): temperature scaling keeps the accuracy and lowers
    the test NLL, so no calibrator_worse_on_test warning."""
    import trustcal

    rng = np.random.default_rng(3)
    z = rng.normal(0, 3, (4000, 5))
    y = draw_labels(softmax(z / 2), rng)
    result = trustcal.assess(
        z[:2000], y[:2000], kind="logits", validation=(z[2000:], y[2000:]), calibrators=["temperature"], bootstrap=None
    )
    scores = result.scores[result.scores["split"] == "test"].set_index("calibrator")
    assert scores.loc["temperature", "nll"] < scores.loc["none", "nll"] - 0.05
    assert not [w for w in result.warnings if w.code == "calibrator_worse_on_test"]


def test_over_a_series_the_warning_counts_the_epochs_and_gives_the_worst(tmp_path):
    """A series of three epochs (forests of three seeds, as .npz with validation probabilities): one warning,
    per calibrator how many of the epochs it made worse and the epoch and numbers of the worst drop and rise."""
    from trustcal.assessment import assess_files
    from trustcal.calibration.table import worse_on_test
    from trustcal.settings import CalibrationSettings, Settings

    for epoch, seed in enumerate((1, 2, 3), start=1):
        (p, y), (pv, yv) = digits_forest_split(seed)
        np.savez(tmp_path / f"epoch{epoch:03d}.npz", probs=p, labels=y, val_probs=pv, val_labels=yv)
    settings = Settings(calibration=CalibrationSettings(methods=("isotonic", "histogram")), bootstrap=None, sweep=None)
    a = assess_files([tmp_path], settings=settings)
    (warning,) = [w for w in a.warnings if w.code == "calibrator_worse_on_test"]
    found = worse_on_test(a.tables["scores"], ["isotonic", "histogram"], samples=360, classes=10)
    assert set(found) == {"isotonic", "histogram"}
    for name, f in found.items():
        assert f["epochs"] == 3 and 1 <= f["worse"] <= 3
        head = f"alibrator '{name}' "
        assert head in warning.message and f"in {f['worse']} of 3 epochs; worst: " in warning.message
        epoch, before, after = f["nll"]
        assert f"NLL {before:.4f} → {after:.4f} (epoch {epoch})" in warning.message
        test = a.tables["scores"].query("split == 'test'").pivot(index="epoch", columns="calibrator", values="nll")
        assert after - before == pytest.approx((test[name] - test["none"]).max(), rel=0, abs=1e-12)
