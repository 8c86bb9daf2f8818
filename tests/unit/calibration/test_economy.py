"""The economies of the truncated Newton operators (solver.economy; docs/method.md §2.9): products H v in float32
past FLOAT32_CLASSES classes, the ODIR preconditioner's off-diagonal curvatures from a sample past ECONOMY_CLASSES,
and the probabilities of the step's point taken from the loss's last gradient. Checked at K = 25 against float64
on every sample (both limits raised) with the sampling limit lowered.
That the fits still reach their optimum is checked by the KKT test of test_odir_cv.py and the sms test of
test_structured.py, each run with and without the economies."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.synthetic import many_class_logits

from trustcal.calibration import log_softmax, solver
from trustcal.calibration.scaling_loss import _ScalingLoss
from trustcal.calibration.structured import _StructuredLoss, mixed_log_proba

N, K = 1200, 25
U32 = np.finfo(np.float32).eps / 2  # float32's unit round-off
# A sum of m terms in floating point is off by at most λ√m·u times the sum of its terms' magnitudes, except with
# probability below 2·exp(−λ²(1 − u)²/2) (Higham & Mary 2019, Theorem 3.1, rounding errors as independent
# random variables); λ = 6: below 3e-8 per output
LAMBDA = 6


def rounding_bound(m: int, magnitude: float) -> float:
    return LAMBDA * np.sqrt(m) * U32 * magnitude


def odir_loss(method: str) -> _ScalingLoss:
    z, y = many_class_logits(N, K, seed=9)
    return _ScalingLoss(z if method == "matrix" else log_softmax(z), y, True, 30.0, 3.0, centred=False)


def odir_bound(loss: _ScalingLoss, theta: np.ndarray, v: np.ndarray) -> float:
    """A bound on |H v − fl32(H v)|: each output of the product is a sum of K terms (W x), of K (the softmax's
    centring) and of N (the sum over samples), m = 2K + N roundings in a chain with a few more for the inputs'
    conversion to float32 and the elementwise steps (:func:`rounding_bound`). The magnitudes: the same products
    with every quantity replaced by its absolute value; the centring of W's columns at most doubles them."""
    p = loss.probabilities(theta)
    dw, dc, _ = loss.unpack(v)
    ds = np.abs(dw) @ np.abs(loss.xt) + np.abs(dc)[:, None]
    r = p * ds + p * (p * ds).sum(axis=0)
    magnitude = max((r @ np.abs(loss.xs)).max(), r.sum(axis=1).max()) / loss.n
    return 2 * rounding_bound(2 * K + N + 8, magnitude)


@pytest.mark.parametrize("method", ["matrix", "dirichlet"])
def test_the_odir_operators_float32_product_is_the_float64_one_within_float32_rounding(method, monkeypatch):
    rng = np.random.default_rng(10)
    monkeypatch.setattr(solver, "FLOAT32_CLASSES", 200)
    exact = odir_loss(method)
    theta = exact.identity() + 0.05 * rng.normal(size=exact.identity().size)
    v = rng.normal(size=theta.size)
    h64 = exact.hessian_operator_function()(theta)
    assert exact._operand["xt"].dtype == np.float64
    monkeypatch.undo()
    monkeypatch.setattr(solver, "ECONOMY_CLASSES", 10)
    monkeypatch.setattr(solver, "PRECONDITIONER_ROWS", 300)
    cheap = odir_loss(method)
    h32 = cheap.hessian_operator_function()(theta)
    assert cheap._operand["xt"].dtype == np.float32 and cheap._operand["sample"].step == 4  # 300 of 1200
    difference = np.abs(h32.product(v) - h64.product(v)).max()
    assert 0 < difference <= odir_bound(exact, theta, v), difference  # float32 ran, within its rounding
    r = rng.normal(size=theta.size)
    m_r = h32.precondition(r)
    assert np.isfinite(m_r).all() and r @ m_r > 0  # M⁻¹ still positive definite from the sample
    # the 2K×2K block keeps every sample: the diagonal there is float64's to float32 rounding of the Gram
    np.testing.assert_allclose(h32.diagonal[:K], h64.diagonal[:K], rtol=1e-5)


def test_sms_float32_product_is_the_float64_one_within_float32_rounding(monkeypatch):
    z, y = many_class_logits(N, K, seed=5)
    x = mixed_log_proba(z, 1.3, 1 / (N + 1))
    rng = np.random.default_rng(6)
    theta, v = 0.05 * rng.normal(size=(2, K * (K + 1)))
    monkeypatch.setattr(solver, "FLOAT32_CLASSES", 200)
    h64 = _StructuredLoss(x, y, True, 1.0, 1.0, 1.0).hessian_operator(theta)
    monkeypatch.undo()
    h32 = _StructuredLoss(x, y, True, 1.0, 1.0, 1.0).hessian_operator(theta)  # K = 25 > FLOAT32_CLASSES
    # the same chain as odir_bound's, on N×K features, with W = I + Δ
    loss = _StructuredLoss(x, y, True, 1.0, 1.0, 1.0)
    d_delta, d_b = loss.unpack(np.abs(v))
    p = np.exp(log_softmax(loss.scores(*loss.unpack(theta))))
    ds = np.abs(x) @ d_delta.T + d_b
    r = p * ds + p * (p * ds).sum(axis=1, keepdims=True)
    bound = rounding_bound(2 * K + N + 8, max((r.T @ np.abs(x)).max(), r.sum(axis=0).max()) / N)
    difference = np.abs(h32.product(v) - h64.product(v)).max()
    assert 0 < difference <= bound, (difference, bound)
    np.testing.assert_array_equal(h32.diagonal, h64.diagonal)  # the preconditioner stays float64's


@pytest.mark.parametrize("economy", [False, True])
def test_the_step_takes_the_probabilities_of_the_last_gradient_unchanged(economy, monkeypatch):
    """After loss_grad(θ) the operator at θ reuses its probabilities: the same numbers, to the bit, as when they
    are computed afresh (a gradient elsewhere in between must not leak into the step)."""
    monkeypatch.setattr(solver, "FLOAT32_CLASSES", 20 if economy else 200)
    if economy:
        monkeypatch.setattr(solver, "ECONOMY_CLASSES", 10)
    rng = np.random.default_rng(11)
    fresh, reused = odir_loss("dirichlet"), odir_loss("dirichlet")
    theta = fresh.identity() + 0.05 * rng.normal(size=fresh.identity().size)
    v = rng.normal(size=theta.size)
    make = reused.hessian_operator_function()
    fresh.hessian_operator_function()
    reused.loss_grad(theta + 0.1)  # kept, but for another point
    elsewhere = make(theta).product(v)
    reused.loss_grad(theta)
    kept = make(theta).product(v)
    assert np.array_equal(reused._kept[0], theta)
    expected = fresh.hessian_operator(theta).product(v)
    np.testing.assert_array_equal(kept, expected)
    np.testing.assert_array_equal(elsewhere, expected)

    z, y = many_class_logits(N, K, seed=5)
    x = mixed_log_proba(z, 1.3, 1 / (N + 1))
    fresh, reused = _StructuredLoss(x, y, True, 1.0, 1.0, 1.0), _StructuredLoss(x, y, True, 1.0, 1.0, 1.0)
    theta = 0.05 * rng.normal(size=K * (K + 1))
    v = rng.normal(size=theta.size)
    reused.hessian_operator(theta + 0.1)  # the operator is in use from here on: loss_grad keeps
    reused.loss_grad(theta)
    assert np.array_equal(reused._kept[0], theta)
    np.testing.assert_array_equal(reused.hessian_operator(theta).product(v), fresh.hessian_operator(theta).product(v))
