"""A calibrator of the user's own by its import path (trustcal.calibration.user, docs/method.md §2.15): written
outside the package, fitted through the interface, `trustcal assess` and the configuration check, and each way
it can be wrong said in one line with the fix."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.synthetic import many_class_logits

from trustcal.calibration import calibrator_from_state, fit_calibrator, softmax
from trustcal.calibration.user import UserCalibratorError, user_class_problem
from trustcal.config import ConfigError, validate_config

MODULE = textwrap.dedent(
    '''
    import numpy as np


    class GridTemperature:
        """Temperature scaling by a grid search: a user's calibrator."""

        def __init__(self, points=40):
            self.points = points

        def fit(self, x, labels):
            grid = np.exp(np.linspace(-2, 2, self.points))
            self.t = min(grid, key=lambda t: self._nll(x / t, labels))

        @staticmethod
        def _nll(z, labels):
            z = z - z.max(axis=1, keepdims=True)
            return -(z[np.arange(len(labels)), labels] - np.log(np.exp(z).sum(axis=1))).mean()

        def predict_proba(self, x):
            z = np.exp(x / self.t - (x / self.t).max(axis=1, keepdims=True))
            return z / z.sum(axis=1, keepdims=True)


    class Sharpen:
        inputs = "probabilities"

        def fit(self, p, labels):
            pass

        def predict_proba(self, p):
            return p * 2  # rows sum to 2


    class NoPredict:
        def fit(self, x, labels):
            pass

    class RaisingFit:
        def fit(self, x, labels):
            raise RuntimeError("no  data")

        def predict_proba(self, x):
            return x


    class RaisingPredict:
        def fit(self, x, labels):
            pass

        def predict_proba(self, x):
            raise ValueError("shape   mismatch")


    class Identity:
        """Takes probabilities and gives them back; refuses anything else."""

        inputs = "probabilities"

        def fit(self, p, labels):
            self.check(p)

        def predict_proba(self, p):
            return self.check(p)

        @staticmethod
        def check(p):
            if not (np.all(p >= 0) and np.allclose(p.sum(axis=1), 1)):
                raise ValueError("not probabilities")
            return p


    def helper():
        pass
    '''
)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "usercal.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("usercal", None)


@pytest.fixture
def paper():
    return yaml.safe_load((Path(__file__).resolve().parents[3] / "config.yaml").read_text())


@pytest.fixture(scope="module")
def split():
    return many_class_logits(600, 5, seed=1), many_class_logits(600, 5, seed=2)


def test_a_users_calibrator_fits_predicts_and_is_rebuilt_from_its_state(user_module, split):
    (zf, yf), (zt, _) = split
    cal = fit_calibrator("usercal:GridTemperature", zf, yf, points=30)
    assert cal.method == "usercal:GridTemperature" and cal.user_options == {"points": 30}
    p = cal.predict_proba(zt)
    grid = np.exp(np.linspace(-2, 2, 30))
    t = grid[np.argmin([-np.log(softmax(zf / g)[np.arange(len(yf)), yf]).mean() for g in grid])]
    np.testing.assert_allclose(p, softmax(zt / t), rtol=1e-12)
    state = {k: np.asarray(v) for k, v in cal.state().items()}
    assert state["import_path"].dtype.kind == "U" and not any(v.dtype == object for v in state.values())  # no pickle
    np.testing.assert_array_equal(calibrator_from_state("usercal:GridTemperature", state).predict_proba(zt), p)


@pytest.mark.parametrize(
    "path, options, line",
    [
        (
            "usercal:NoPredict",
            None,
            "calibrator 'usercal:NoPredict': NoPredict has no predict_proba. Fix: give the class fit(x, labels) and "
            "predict_proba(x) (docs/method.md §2.15)",
        ),
        (
            "usercal:GridTemp",
            None,
            "calibrator 'usercal:GridTemp': module usercal ({file}) has no GridTemp (did you mean 'GridTemperature'?) "
            "(its calibrator classes: GridTemperature, Identity, RaisingFit, RaisingPredict, Sharpen); fix the import "
            "path (package.module:Class)",
        ),
        (
            "nosuchmodule:Cal",
            None,
            "calibrator 'nosuchmodule:Cal': no module nosuchmodule on Python's path; put the folder holding "
            "nosuchmodule.py or nosuchmodule/ on PYTHONPATH (or install the package), or fix the import path "
            "(package.module:Class)",
        ),
        (
            "usercal:helper",
            None,
            "calibrator 'usercal:helper': helper is a function, not a class. Fix: name a class with fit(x, labels) and "
            "predict_proba(x) (docs/method.md §2.15)",
        ),
        (
            "usercal:GridTemperature",
            {"pionts": 3},
            "calibrator 'usercal:GridTemperature': GridTemperature(pionts=3) does not match its constructor (got an "
            "unexpected keyword argument 'pionts'). Fix: correct calibration.options of 'usercal:GridTemperature'",
        ),
    ],
)
def test_each_way_a_users_calibrator_is_wrong_is_one_line_with_the_fix(user_module, path, options, line):
    expected = line.format(file=user_module / "usercal.py")
    assert user_class_problem(path, options) == expected
    with pytest.raises(UserCalibratorError) as err:
        fit_calibrator(path, *many_class_logits(50, 3, seed=0), **(options or {}))
    assert str(err.value) == expected


def test_a_fit_or_prediction_that_raises_is_one_line_with_its_error_and_the_fix(user_module):
    z, y = many_class_logits(50, 3, seed=0)
    for path, line in (
        (
            "usercal:RaisingFit",
            "calibrator 'usercal:RaisingFit': fit on the 50 × 3 fit split failed (RuntimeError: no data). "
            "Fix: correct its fit(x, labels)",
        ),
        (
            "usercal:RaisingPredict",
            "calibrator 'usercal:RaisingPredict': predict_proba on 50 × 3 failed (ValueError: shape mismatch). "
            "Fix: correct its predict_proba(x)",
        ),
    ):
        with pytest.raises(UserCalibratorError) as err:
            fit_calibrator(path, z, y)
        assert str(err.value) == line


def test_a_calibrator_that_takes_probabilities_is_given_probabilities(user_module, split):
    """``inputs = "probabilities"``: fit and predict_proba get the softmax of the logits (Identity refuses
    anything else), so the calibrated probabilities are the raw ones."""
    (zf, yf), (zt, _) = split
    cal = fit_calibrator("usercal:Identity", zf, yf)
    np.testing.assert_allclose(cal.predict_proba(zt), softmax(zt), rtol=1e-12)


def test_rows_that_do_not_sum_to_one_stop_the_first_fit(user_module):
    with pytest.raises(UserCalibratorError) as err:
        fit_calibrator("usercal:Sharpen", *many_class_logits(50, 3, seed=0))
    assert str(err.value).startswith("calibrator 'usercal:Sharpen': predict_proba returned values from ")
    assert str(err.value).endswith(
        "outside [0, 1]. Fix: return an N × K array of probabilities, each row summing to 1 "
        "(e.g. p / p.sum(axis=1, keepdims=True))"
    )


def test_the_configuration_check_names_a_broken_users_calibrator_before_any_job(user_module, paper):
    config = {**paper, "calibration": {"methods": ["temperature", "usercal:NoPredict"]}}
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    assert "calibration.methods: calibrator 'usercal:NoPredict': NoPredict has no predict_proba. Fix:" in str(err.value)
    validate_config(
        {
            **paper,
            "calibration": {
                "methods": ["usercal:GridTemperature"],
                "options": {"usercal:GridTemperature": {"points": 9}},
            },
        }
    )
    with pytest.raises(ConfigError, match=r"allowed values: temperature, vector, .*, or a calibrator of your own"):
        validate_config({**paper, "calibration": {"methods": ["usercal.GridTemperature"]}})


def test_trustcal_assess_judges_a_users_calibrator_beside_the_others(user_module, tmp_path):
    (zf, yf), (zt, yt) = many_class_logits(400, 4, seed=1), many_class_logits(400, 4, seed=2)
    for name, z, y in (("val.csv", zf, yf), ("test.csv", zt, yt)):
        frame = pd.DataFrame(softmax(z), columns=[f"p{k}" for k in range(4)]).assign(label=y)
        frame.to_csv(tmp_path / name, index=False)
    cmd = [sys.executable, "-m", "trustcal", "assess", "test.csv", "--validation", "val.csv", "--out", "out"]
    cmd += ["--calibrators", "temperature,usercal:GridTemperature", "--bootstrap", "0"]
    env = {"PYTHONPATH": str(user_module), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert set(scores["calibrator"]) == {"none", "temperature", "usercal:GridTemperature"}
    mine = scores.query("calibrator == 'usercal:GridTemperature' and split == 'test'")["nll"].item()
    raw = scores.query("calibrator == 'none' and split == 'test'")["nll"].item()
    assert mine < raw
