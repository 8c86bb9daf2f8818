"""Multiclass isotonic regression, IRM (docs/method.md §2.16), against the authors' own function, and the
steer away from one-vs-rest binning at many classes (§2.10)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.synthetic import calibrated, many_class_logits

from trustcal.calibration import fit_calibrator, softmax
from trustcal.calibration.methods import MANY_CLASSES, many_classes_advice

pytest.importorskip("sklearn.isotonic")

# Golden values: zhang64-llnl/Mix-n-Match-Calibration util_calibration.py `mir_calibrate` (commit e41afba),
# run on these inputs with scikit-learn 1.x: fit on many_class_logits(n, k, seed=1) with one-hot labels,
# evaluated on many_class_logits(n, k, seed=2); its output g(p) + 1e-9 p divided by its row sums, then the
# mean -log of the true class, and the sum of its unnormalised output.
GOLDEN = {  # (k, n): (test NLL normalised, sum of the authors' unnormalised output)
    (10, 2000): (1.3025604865543041, 2001.7360667496905),
    (100, 5000): (1.9835759868546323, 4980.853864324421),
}


@pytest.mark.parametrize("k, n", list(GOLDEN))
def test_test_nll_equals_the_authors_function(k, n):
    (zf, yf), (zt, yt) = many_class_logits(n, k, seed=1), many_class_logits(n, k, seed=2)
    cal = fit_calibrator("irm", zf, yf)
    q = cal.predict_proba(zt)
    nll, total = GOLDEN[k, n]
    # The same float64 PAV and interpolation; the normalisation sums K terms in another order: a few ulp.
    assert -np.log(q[np.arange(n), yt]).mean() == pytest.approx(nll, rel=1e-12)
    g = np.interp(np.clip(softmax(zt), cal.x[0], cal.x[-1]), cal.x, cal.y) + 1e-9 * softmax(zt)
    assert g.sum() == pytest.approx(total, rel=1e-12)


def test_one_map_keeps_each_rows_order_of_classes():
    """g is non-decreasing and ε p strictly increasing, so a row's classes keep their softmax order: the
    argmax, and with it the accuracy, never changes (one-vs-rest isotonic regression changes both)."""
    (zf, yf), (zt, _) = many_class_logits(3000, 20, seed=3), many_class_logits(3000, 20, seed=4)
    p, q = softmax(zt), fit_calibrator("irm", zf, yf).predict_proba(zt)
    order = np.argsort(p, axis=1, kind="stable")
    assert (np.diff(np.take_along_axis(q, order, axis=1), axis=1) >= 0).all()
    assert np.array_equal(q.argmax(axis=1), p.argmax(axis=1))


def test_many_classes_irm_does_not_raise_the_test_nll_where_one_vs_rest_does():
    (zf, yf), (zt, yt) = many_class_logits(5000, 100, seed=1), many_class_logits(5000, 100, seed=2)
    nll = {m: fit_calibrator(m, zf, yf).nll(zt, yt) for m in ("none", "temperature", "irm", "histogram")}
    assert nll["irm"] < nll["none"] and nll["irm"] - nll["temperature"] < 0.02
    assert nll["histogram"] > nll["none"]  # what the steer is for


def test_a_calibrated_input_stays_nearly_put():
    z, y = calibrated(20000, 5, seed=5)
    q, p = fit_calibrator("irm", z, y).predict_proba(z), softmax(z)
    assert np.abs(q - p).mean() < 0.02


def test_the_steer_names_the_method_the_count_and_the_fix():
    assert many_classes_advice("histogram", MANY_CLASSES) is None
    assert many_classes_advice("temperature", 1000) is None and many_classes_advice("isotonic", None) is None
    line = many_classes_advice("isotonic", 100)
    assert line.startswith("isotonic regression at 100 classes:") and "Fix: use irm" in line and "\n" not in line
