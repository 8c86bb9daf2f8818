"""The calibrators' minimisers (trustcal.calibration.solver), on problems with a known optimum: SciPy's root
finder, its bounded least squares (BVLS) and its L-BFGS-B as oracles."""

import numpy as np
import pytest
from scipy import optimize

from trustcal.calibration.solver import (
    MAX_WORK,
    NEWTON_MAX_ITER,
    Box,
    armijo,
    bracketed_newton,
    iteration_plan,
    minimize_box,
)


def cubic_slope(beta):
    """g(β) = β³ + β − 2 (increasing, its root β = 1) and g'(β)."""
    return beta**3 + beta - 2.0, 3 * beta**2 + 1.0


def test_bracketed_newton_finds_the_root_as_brentq_does():
    root = bracketed_newton(cubic_slope, 4.0, 0.0, 5.0, 1e-12, 100)
    oracle = optimize.brentq(lambda b: cubic_slope(b)[0], 0.0, 5.0, xtol=1e-14)
    assert root.converged
    assert root.beta == pytest.approx(oracle, abs=1e-12) and oracle == pytest.approx(1.0, abs=1e-13)
    assert abs(root.slope) <= 1e-12
    # Newton's quadratic convergence: bisection alone would need log2(5 / 1e-12) ≈ 42 halvings.
    assert root.iterations <= 10


def test_bracketed_newton_bisects_a_step_that_leaves_the_bracket():
    """g(β) = arctan(β − 3): from β = 0.1 the Newton step overshoots far past hi = 4; bisection keeps β inside."""
    seen = []

    def slope(beta):
        seen.append(beta)
        return np.arctan(beta - 3.0), 1.0 / (1.0 + (beta - 3.0) ** 2)

    root = bracketed_newton(slope, 0.1, 0.0, 4.0, 1e-12, 100)
    assert root.converged and root.beta == pytest.approx(3.0, abs=1e-12)
    assert all(0.0 < b < 4.0 for b in seen)
    assert seen[1] == pytest.approx(0.5 * (0.1 + 4.0))  # the first step, 0.1 + 1.24 × 9.41 ≈ 11.8 > 4, bisected


def test_bracketed_newton_root_beyond_the_bracket_ends_at_its_bound():
    root = bracketed_newton(lambda b: (b - 10.0, 1.0), 0.5, 0.0, 1.0, 1e-10, 200)
    assert root.converged and root.slope < 0
    assert 1.0 - 1e-10 <= root.beta < 1.0


def test_bracketed_newton_stops_after_max_iter():
    root = bracketed_newton(cubic_slope, 4.0, 0.0, 5.0, 1e-12, 2)
    assert not root.converged and root.iterations == 2
    nothing = bracketed_newton(cubic_slope, 4.0, 0.0, 5.0, 1e-12, 0)
    assert (nothing.beta, nothing.iterations, nothing.converged) == (4.0, 0, False) and np.isnan(nothing.slope)


def quadratic(seed, n=6):
    """f(θ) = ½ θᵀAθ − bᵀθ with A symmetric positive definite: (loss_grad, hessian maker, A, b)."""
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, n))
    a = m @ m.T + 0.5 * np.eye(n)
    b = rng.normal(size=n) * 3

    def loss_grad(theta):
        return 0.5 * theta @ a @ theta - b @ theta, a @ theta - b

    return loss_grad, lambda: lambda theta: a, a, b


def bvls(a, b, box):
    """argmin of ½ θᵀAθ − bᵀθ in the box, as bounded least squares ½|Rθ − c|², A = RᵀR, c = R⁻ᵀb (SciPy's BVLS)."""
    r = np.linalg.cholesky(a).T
    c = np.linalg.solve(r.T, b)
    return optimize.lsq_linear(r, c, bounds=(box.lo, box.hi), method="bvls", tol=1e-14).x


def test_minimize_box_bounds_inactive_one_newton_step_to_the_solution():
    loss_grad, make_hessian, a, b = quadratic(0)
    box = Box(np.full(6, -1e3), np.full(6, 1e3))
    found = minimize_box(loss_grad, make_hessian, np.zeros(6), box, tol=1e-10, max_iter=100, newton_steps=50)
    assert found.converged and found.iterations == 1  # the Newton step of a quadratic is its minimum
    np.testing.assert_allclose(found.theta, np.linalg.solve(a, b), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_minimize_box_bounds_active_matches_bvls(seed):
    loss_grad, make_hessian, a, b = quadratic(seed)
    free = np.linalg.solve(a, b)
    # Box the first three components to a band that excludes the free optimum; the others unbounded.
    lo = np.concatenate([np.minimum(free[:3], 0) * 0.3 - 0.1, np.full(3, -np.inf)])
    hi = np.concatenate([np.maximum(free[:3], 0) * 0.3 + 0.1, np.full(3, np.inf)])
    box = Box(lo, hi)
    oracle = bvls(a, b, Box(np.where(np.isinf(lo), -1e9, lo), np.where(np.isinf(hi), 1e9, hi)))
    found = minimize_box(loss_grad, make_hessian, np.zeros(6), box, tol=1e-10, max_iter=100, newton_steps=50)
    assert found.converged and found.iterations < NEWTON_MAX_ITER
    np.testing.assert_allclose(found.theta, oracle, atol=1e-8)
    at_bound = (found.theta == lo) | (found.theta == hi)
    assert at_bound[:3].any() and not at_bound[3:].any()
    # KKT: the gradient vanishes on the free components and pushes outwards at a bound.
    _, grad = loss_grad(found.theta)
    assert np.abs(grad[~at_bound]).max() <= 1e-10
    assert np.all(np.where(found.theta == lo, grad >= 0, True)) and np.all(np.where(found.theta == hi, grad <= 0, True))


def test_minimize_box_lbfgsb_alone_reaches_the_same_optimum():
    loss_grad, make_hessian, a, b = quadratic(4)
    box = Box(
        np.concatenate([np.full(2, -0.2), np.full(4, -np.inf)]), np.concatenate([np.full(2, 0.2), np.full(4, np.inf)])
    )
    newton = minimize_box(loss_grad, make_hessian, np.zeros(6), box, tol=1e-9, max_iter=500, newton_steps=50)

    def never():
        raise AssertionError("L-BFGS-B alone builds no Hessian")

    alone = minimize_box(loss_grad, never, np.zeros(6), box, tol=1e-9, max_iter=500, newton_steps=0)
    assert newton.converged and alone.converged and alone.iterations > newton.iterations
    np.testing.assert_allclose(alone.theta, newton.theta, atol=1e-7)
    np.testing.assert_allclose(
        newton.theta, bvls(a, b, Box(np.maximum(box.lo, -1e9), np.minimum(box.hi, 1e9))), atol=1e-8
    )


def logistic(seed, n=200, d=4):
    """Mean logistic loss + ½·0.01|θ|² of a separable-ish problem (no closed form): loss_grad and hessian maker."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = (x @ np.array([3.0, -2.0, 1.0, 0.5]) + rng.normal(size=n) > 0).astype(float)

    def loss_grad(theta):
        s = x @ theta
        p = 1 / (1 + np.exp(-s))
        return np.mean(np.logaddexp(0, s) - y * s) + 0.005 * theta @ theta, x.T @ (p - y) / n + 0.01 * theta

    def hessian(theta):
        p = 1 / (1 + np.exp(-(x @ theta)))
        return (x.T * (p * (1 - p))) @ x / n + 0.01 * np.eye(d)

    return loss_grad, lambda: hessian


@pytest.mark.parametrize("upper", [np.inf, 1.0], ids=["bounds inactive", "bound active"])
def test_minimize_box_convex_loss_matches_scipy_lbfgsb(upper):
    loss_grad, make_hessian = logistic(5)
    box = Box(np.full(4, -np.inf), np.array([upper, np.inf, np.inf, np.inf]))
    found = minimize_box(loss_grad, make_hessian, np.zeros(4), box, tol=1e-10, max_iter=200, newton_steps=50)
    oracle = optimize.minimize(
        loss_grad,
        np.zeros(4),
        jac=True,
        method="L-BFGS-B",
        bounds=[(None, None if np.isinf(upper) else upper)] + [(None, None)] * 3,
        options=dict(gtol=1e-12, ftol=1e-15, maxiter=10_000),
    )
    assert found.converged and found.iterations < 20
    np.testing.assert_allclose(found.theta, oracle.x, atol=1e-6)
    assert loss_grad(found.theta)[0] <= oracle.fun + 1e-14
    assert (found.theta[0] == 1.0) == (upper == 1.0)  # the bound holds the first weight when it binds


def test_minimize_box_stops_at_max_iter_unconverged():
    loss_grad, make_hessian = logistic(6)
    box = Box(np.full(4, -np.inf), np.full(4, np.inf))
    found = minimize_box(loss_grad, make_hessian, np.zeros(4), box, tol=1e-14, max_iter=1, newton_steps=1)
    assert not found.converged and found.iterations == 1


def test_minimize_box_stationary_start_builds_no_hessian():
    def loss_grad(theta):
        return float(theta @ theta), 2 * theta

    def never():
        raise AssertionError("no Newton step is taken from a stationary point")

    found = minimize_box(
        loss_grad, never, np.zeros(3), Box(np.full(3, -1.0), np.full(3, 1.0)), tol=1e-8, max_iter=10, newton_steps=5
    )
    assert found.converged and found.iterations == 0 and np.array_equal(found.theta, np.zeros(3))


def test_box_held_and_stationary_by_hand():
    box = Box(np.array([0.0, 0.0, -np.inf]), np.array([1.0, 1.0, np.inf]))
    theta = np.array([0.0, 0.5, 3.0])
    # At its lower bound with a gradient pushing below it: held; inside the box or free: not held.
    assert box.held(theta, np.array([2.0, 2.0, 2.0])).tolist() == [True, False, False]
    assert box.held(theta, np.array([-2.0, 2.0, 2.0])).tolist() == [False, False, False]
    # The projected gradient drops the outward component at a bound only.
    assert box.stationary(theta, np.array([5.0, 1e-9, -1e-9]), 1e-8)
    assert not box.stationary(theta, np.array([-5.0, 1e-9, -1e-9]), 1e-8)
    assert not box.stationary(theta, np.array([0.0, 0.0, 2e-8]), 1e-8)


def test_armijo_halves_until_the_loss_falls_enough_and_gives_up_uphill():
    def loss_grad(theta):
        return float(theta @ theta), 2 * theta

    box = Box(np.full(1, -np.inf), np.full(1, np.inf))
    theta = np.array([1.0])
    loss, grad = loss_grad(theta)
    # Step −4 overshoots to θ = −3 (loss 9 > 1); halved once, θ = −1 (loss 1, not below 1 − 1e-4·4): halved
    # again, θ = 0 (loss 0).
    trial, trial_loss, _ = armijo(loss_grad, box, theta, loss, grad, np.array([-4.0]))
    assert trial.tolist() == [0.0] and trial_loss == 0.0
    assert armijo(loss_grad, box, theta, loss, grad, np.array([1.0])) is None  # uphill: no t lowers the loss


def test_iteration_plan_newton_up_to_its_limit_then_lbfgsb_within_max_work():
    assert iteration_plan(110, 420, 1000, False, 4 * 5000 * 110) == (NEWTON_MAX_ITER, 1000)
    assert iteration_plan(110, 420, 7, True, 4 * 5000 * 110) == (7, 7)
    # Matrix scaling at K = 1000, N = 25,000: 1,001,000 parameters, 4·N·(K² + K) = 1.001e11 operations an
    # iteration, so MAX_WORK = 5e12 allows 49 (docs/method.md §2.9); an explicit max_iter lifts the bound.
    assert MAX_WORK == 5e12
    assert iteration_plan(1_001_000, 420, 1000, False, 4 * 25_000 * 1_001_000) == (0, 49)
    assert iteration_plan(1_001_000, 420, 1000, True, 4 * 25_000 * 1_001_000) == (0, 1000)
    assert iteration_plan(10_100, 420, 1000, False, 4 * 5000 * 10_100) == (0, 1000)  # K = 100: 24,752 allowed
    assert iteration_plan(10**9, 420, 1000, False, 10**14) == (0, 1)  # never fewer than one
