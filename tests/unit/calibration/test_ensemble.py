"""Ensemble temperature scaling (docs/method.md §2.14) against probmetrics' ETSCalibrator (the authors'
Mix-n-Match code carried into the reference library), and its simplex programme against brute force."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
from helpers.synthetic import many_class_logits

from trustcal.calibration import fit_calibrator, softmax
from trustcal.calibration.ensemble import _brier, simplex_quadratic


def test_test_scores_equal_the_reference_implementations():
    """The reference fits T in [0.05, 5] by L-BFGS-B and w by SLSQP, from float32 log-probabilities: the test
    Brier scores and NLLs agree within 1e-3 (the issue's bound)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from probmetrics.calibrators.temperature_scaling import ETSCalibrator
    (zf, yf), (zt, yt) = many_class_logits(3000, 10, seed=1), many_class_logits(3000, 10, seed=2)
    ours = fit_calibrator("ets", zf, yf)
    reference = ETSCalibrator()
    reference.fit(softmax(zf), yf)
    theirs = reference.predict_proba(softmax(zt))
    mine = ours.predict_proba(zt)
    assert abs(_brier(mine, yt) - _brier(theirs, yt)) < 1e-3
    rows = np.arange(len(yt))
    assert abs(np.log(mine[rows, yt]).mean() - np.log(theirs[rows, yt]).mean()) < 1e-3
    assert 0.05 < ours.temperature < 5  # inside the reference's bounds, so both search the same minimum


def test_simplex_programme_is_the_minimum_over_a_fine_grid():
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = rng.normal(size=(3, 5))
        a, c = m @ m.T, rng.normal(size=3)
        w = simplex_quadratic(a, c)
        assert w.min() >= 0 and np.isclose(w.sum(), 1.0)
        grid = [np.array([i, j, 200 - i - j]) / 200 for i, j in itertools.product(range(201), repeat=2) if i + j <= 200]
        best = min(g @ a @ g - 2 * c @ g for g in grid)
        assert w @ a @ w - 2 * c @ w <= best + 1e-12


def test_the_fit_never_raises_the_brier_score_and_gives_exact_log_probabilities():
    z, y = many_class_logits(800, 6, seed=3, overconfidence=0.5)  # underconfident: w leans on T
    cal = fit_calibrator("ets", z, y)
    p, log_p = cal.predict(z)
    assert _brier(p, y) <= _brier(softmax(z), y) + 1e-15
    np.testing.assert_allclose(np.exp(log_p), p, rtol=1e-15)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-14)
    assert np.isclose(cal.weights.sum(), 1.0) and cal.weights.min() >= 0
