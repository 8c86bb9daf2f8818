"""Structured matrix and vector scaling (docs/method.md §2.13) against probmetrics' SMSCalibrator and
SVSCalibrator, the reference implementation, and on the cases the penalty exists for."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers.synthetic import many_class_logits

from trustcal.calibration import calibrator_from_state, fit_calibrator, softmax
from trustcal.calibration.structured import mixed_log_proba
from trustcal.numerics import logits_nll


def _nll(probs: np.ndarray, labels: np.ndarray) -> float:
    return float(-np.mean(np.log(probs[np.arange(len(labels)), labels])))


@pytest.fixture(scope="module")
def ten_classes():
    return many_class_logits(3000, 10, seed=1), many_class_logits(3000, 10, seed=2)


@pytest.mark.parametrize("method", ["sms", "svs"])
def test_test_nll_equals_the_reference_implementations(method, ten_classes):
    """probmetrics fits the same loss from float32 features with torchmin's BFGS: the test NLLs agree within
    1e-3 nats (the issue's bound; measured 2e-5 at K = 10 and 100)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from probmetrics.calibrators import get_calibrator
    (zf, yf), (zt, yt) = ten_classes
    ours = _nll(fit_calibrator(method, zf, yf).predict_proba(zt), yt)
    reference = get_calibrator(method)
    reference.fit(softmax(zf).astype(np.float32), yf)
    theirs = _nll(reference.predict_proba(softmax(zt).astype(np.float32)).astype(np.float64), yt)
    assert abs(ours - theirs) < 1e-3
    assert ours < logits_nll(zt, yt)  # the synthetic model is overconfident: calibration helps


def test_mixture_is_laplace_smoothing_of_the_tempered_softmax():
    z = np.array([[0.0, 1.0, -2.0], [3.0, 0.0, 0.0]])
    eps, t = 0.25, 2.0
    expected = np.log((1 - eps) * softmax(z / t) + eps / 3)
    np.testing.assert_allclose(mixed_log_proba(z, t, eps), expected, rtol=1e-15)
    np.testing.assert_allclose(mixed_log_proba(z, t, 0.0), np.log(softmax(z / t)), rtol=4 * np.finfo(float).eps)


def test_sms_at_100_classes_stays_near_temperature_scaling():
    """Where ODIR's fixed λ lets 9,900 off-diagonal weights overfit 5,000 samples (docs/method.md §2.7),
    the structured penalty keeps the test NLL within 0.01 nats of temperature scaling's."""
    (zf, yf), (zt, yt) = many_class_logits(5000, 100, seed=1), many_class_logits(5000, 100, seed=2)
    temperature = _nll(fit_calibrator("temperature", zf, yf).predict_proba(zt), yt)
    for method in ("sms", "svs"):
        cal = fit_calibrator(method, zf, yf)
        assert cal.converged
        assert _nll(cal.predict_proba(zt), yt) < temperature + 0.01


def test_the_penalty_shrinks_towards_the_identity(ten_classes):
    (zf, yf), _ = ten_classes
    weak, strong = (fit_calibrator("sms", zf, yf, lambda_off_diagonal=lam) for lam in (1e-3, 1e3))
    off = ~np.eye(10, dtype=bool)
    assert np.abs(strong.weights[off]).max() < 0.1 * np.abs(weak.weights[off]).max()


@pytest.mark.parametrize("method", ["sms", "svs"])
def test_state_rebuilds_the_same_map(method, ten_classes):
    (zf, yf), (zt, _) = ten_classes
    cal = fit_calibrator(method, zf[:500], yf[:500])
    again = calibrator_from_state(method, {k: np.asarray(v) for k, v in cal.state().items()})
    np.testing.assert_array_equal(again.predict_proba(zt), cal.predict_proba(zt))
    assert cal.n_parameters == 1 + (110 if method == "sms" else 20)


def test_svs_refuses_the_off_diagonal_option():
    z, y = many_class_logits(200, 4, seed=0)
    with pytest.raises(ValueError, match="lambda_off_diagonal"):
        fit_calibrator("svs", z, y, lambda_off_diagonal=1.0)


@pytest.mark.parametrize("float32_classes", [200, 20])
def test_past_the_operator_limit_sms_takes_truncated_newton_steps_to_the_same_minimum(float32_classes, monkeypatch):
    """sms past OPERATOR_CLASSES classes: the operator's product is the gradient's derivative (central
    differences), and the fit it reaches is L-BFGS's at a tight tolerance (the objective is strictly convex:
    one minimum); with its products in float32 (past FLOAT32_CLASSES classes) or float64, the same minimum."""
    from trustcal.calibration import structured
    from trustcal.calibration.structured import _StructuredLoss

    monkeypatch.setattr("trustcal.calibration.solver.FLOAT32_CLASSES", 200)  # the derivative check in float64
    z, y = many_class_logits(1200, 25, seed=5)
    loss = _StructuredLoss(mixed_log_proba(z, 1.3, 1 / 1201), y, True, 1.0, 1.0, 1.0)
    rng = np.random.default_rng(6)
    theta, v = 0.05 * rng.normal(size=(2, 25 * 26))
    h = 1e-5
    numeric = (loss.loss_grad(theta + h * v)[1] - loss.loss_grad(theta - h * v)[1]) / (2 * h)
    op = loss.hessian_operator(theta)
    np.testing.assert_allclose(op.product(v), numeric, rtol=0, atol=1e-7 * np.abs(numeric).max())
    assert (op.diagonal > 0).all()
    lbfgs = fit_calibrator("sms", z, y, tol=1e-10)
    monkeypatch.setattr(structured, "OPERATOR_CLASSES", 20)
    monkeypatch.setattr("trustcal.calibration.solver.FLOAT32_CLASSES", float32_classes)
    newton = fit_calibrator("sms", z, y, tol=1e-10)
    assert newton.converged and newton.iterations < lbfgs.iterations
    # both stop at a projected gradient ≤ 1e-10 per component, ~1e-8 in NLL for a curvature ~1e-4 (the weakest)
    assert newton.nll(z, y) == pytest.approx(lbfgs.nll(z, y), rel=0, abs=1e-7)
    np.testing.assert_allclose(newton.weights, lbfgs.weights, rtol=0, atol=1e-5)
