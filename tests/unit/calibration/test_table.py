"""The calibrators' bookkeeping by value: which calibrator made the test split worse (worse_on_test, the
scores stage's warning) on a hand-built scores table, and the states' own checks with their messages."""

import numpy as np
import pandas as pd
import pytest

from trustcal.calibration.binning import HistogramBinning, IsotonicCalibration
from trustcal.calibration.table import worse_on_test, worse_on_test_sentence

EPS = float(np.finfo(float).eps)


def test_worse_on_test_finds_the_largest_drop_and_rise_of_each_calibrator():
    """By hand: ``iso`` loses accuracy at epochs 1 (0.80 → 0.78) and 2 (0.85 → 0.80, the larger) and raises
    the NLL at epoch 2 (0.50 → 0.70); its NLL at epoch 1 rises by 1e-15, within the rounding bound
    (K + N + 2)·eps·(2 + a + c) ≈ 2.6e-11 for K = 3, N = 100, so it does not count. ``temperature`` is never
    worse; validation rows (worse everywhere) are not read; the raw model is never compared with itself."""
    rows = [
        (1, "none", "test", 0.80, 0.50),
        (1, "iso", "test", 0.78, 0.50 + 1e-15),
        (1, "temperature", "test", 0.80, 0.45),
        (2, "none", "test", 0.85, 0.50),
        (2, "iso", "test", 0.80, 0.70),
        (2, "temperature", "test", 0.86, 0.40),
        (1, "temperature", "val", 0.10, 9.0),
        (2, "temperature", "val", 0.10, 9.0),
    ]
    scores = pd.DataFrame(rows, columns=["epoch", "calibrator", "split", "accuracy", "nll"])
    found = worse_on_test(scores, ["none", "temperature", "iso"], samples=100, classes=3)
    assert found == {"iso": dict(epochs=2, worse=2, accuracy=(2, 0.85, 0.80), nll=(2, 0.50, 0.70))}
    sentence = worse_on_test_sentence("iso", found["iso"])
    assert sentence.endswith(
        "in 2 of 2 epochs; worst: accuracy 0.8500 → 0.8000 (epoch 2), NLL 0.5000 → 0.7000 (epoch 2)"
    )
    only_nll = worse_on_test(scores[scores["epoch"] == 1].replace({0.78: 0.80}), ["iso"], samples=100, classes=3)
    assert only_nll == {}  # the 1e-15 rise alone is rounding
    rise = scores.copy()
    rise.loc[1, "nll"] = 0.55  # epoch 1 now also a rise, smaller than epoch 2's
    assert worse_on_test(rise, ["iso"], samples=100, classes=3)["iso"]["nll"] == (2, 0.50, 0.70)


def test_states_that_do_not_fit_together_are_refused_with_their_message():
    with pytest.raises(ValueError, match="'histogram' needs K×bins values, got shape"):
        HistogramBinning(3, np.zeros((2, 5)))
    x, y = np.array([0.0, 0.5, 0.2]), np.array([0.1, 0.9, 0.3])
    fitted = IsotonicCalibration(2, x, y, [0, 2, 3], converged=False, iterations=4)
    assert (fitted.converged, fitted.iterations) == (False, 4)  # the fit's flags are kept
    for offsets in ([0, 2, 4], [1, 2, 3], [0, 3, 3], [0, 3]):
        with pytest.raises(ValueError, match="'isotonic' state: x, y and offsets do not fit together"):
            IsotonicCalibration(2, x, y, offsets)
    with pytest.raises(ValueError, match="not a 'isotonic' calibrator's state: offsets missing"):
        IsotonicCalibration.from_state(dict(n_classes=2, converged=True, at_bound=False, iterations=0, x=x, y=y))
    with pytest.raises(ValueError, match="not a 'histogram' calibrator's state: iterations missing"):
        HistogramBinning.from_state(dict(n_classes=2, converged=True, at_bound=False, values=np.zeros((2, 3))))


def test_the_identity_fallback_says_whether_the_fit_had_converged():
    from trustcal.calibration.scaling import TemperatureScaling

    for converged, said in ((False, "(after 7 iterations, not converged), so"), (True, "(after 7 iterations), so")):
        cal = TemperatureScaling(3, 1.0, converged=converged, iterations=7, identity_fallback=True)
        assert said in dict(cal.diagnostics())["calibrator_identity_fallback"]
