"""ODIR's weights λ and μ chosen by cross-validation on the fit split (docs/method.md §2.7, §2.9).

Matrix scaling and Dirichlet calibration choose λ and μ (μ = λ) by stratified cross-validation along a grid of
powers of ten, from strong to weak; a fixed ``odir_lambda`` gives the fit of earlier versions, bit for bit. The
truncated Newton steps the folds take past K = 20 are checked against finite differences and dense Newton, their
conjugate gradients' stopping rules and refined preconditioner against hand-computed cases.
"""

import numpy as np
import pytest
from helpers import corpus
from helpers.synthetic import calibrated, many_class_logits

from trustcal.calibration import calibrator_from_state, fit_calibrator, log_softmax
from trustcal.calibration.scaling import (
    CV_TOL,
    ODIR_FOLDS,
    ODIR_GRID,
    _ScalingLoss,
    odir_grid,
    stratified_folds,
)
from trustcal.calibration.solver import Box, HessianOperator, conjugate_gradient_step, minimize_box
from trustcal.numerics import floored_log, logits_nll

FULL = ("matrix", "dirichlet")


@pytest.mark.parametrize("method", FULL)
def test_cv_picks_a_strong_penalty_on_100_classes_and_matches_temperature_scaling(method):
    """5,000 × 100 logits of a network-like model (50 samples a class), tested on 5,000 more of the same model:
    with λ = μ = 0.01 matrix and Dirichlet scaling memorised the fit split (test NLL 15.3 and 66.8 against the
    raw model's 2.95); cross-validation picks λ ≥ 10⁴ and brings the test NLL within 0.01 of temperature
    scaling's, below the raw model's."""
    z, y = many_class_logits(5000, 100, seed=1)
    z_test, y_test = many_class_logits(5000, 100, seed=2)
    cal = fit_calibrator(method, z, y)
    temperature = fit_calibrator("temperature", z, y).nll(z_test, y_test)
    assert cal.odir_lambda >= 1e4 and cal.odir_mu == cal.odir_lambda
    assert cal.converged and not cal.identity_fallback
    assert cal.nll(z_test, y_test) <= temperature + 0.01
    assert cal.nll(z_test, y_test) < logits_nll(z_test, y_test)
    # the path: from the grid's first point for these N and K, strong to weak, each point once, stopped early
    assert (
        cal.odir_grid[0] == odir_grid(5000, 100)[0]
        and list(cal.odir_grid) == list(odir_grid(5000, 100))[: len(cal.odir_grid)]
    )
    assert cal.odir_lambda in cal.odir_grid and len(cal.odir_grid) < len(odir_grid(5000, 100))
    assert cal.odir_cv_nll[list(cal.odir_grid).index(cal.odir_lambda)] == cal.odir_cv_nll.min()


# Fits with a fixed λ, recorded before cross-validation became the default: (n, k, options) → (iterations, fit
# NLL, ΣW, b_0, W_10). K = 5 takes Newton steps with the exact Hessian, K = 25 L-BFGS-B alone.
GOLDEN = {
    ("matrix", 600, 5, 0.01, 0.01): (6, 1.148911094471867, 2.3309097268671306, -0.13665888446601926, 0.10101594457741858),
    ("matrix", 600, 5, 1.0, 0.1): (6, 1.149972671096505, 2.312535007348859, -0.02627030377988815, 0.08114506596323488),
    ("matrix", 800, 25, 0.01, 0.01): (141, 0.9988012841496786, 19.902252785410116, 0.32351064644483496, 0.21746900030559524),
    ("dirichlet", 600, 5, 0.01, 0.01): (6, 1.1540241079310538, 2.319626406024875, 0.5558555226258548, 0.020429946451790453),
    ("dirichlet", 600, 5, 1.0, 0.1): (6, 1.1565950873204773, 2.320318016742752, 0.17313682857442347, 0.01714197363157827),
    ("dirichlet", 800, 25, 0.01, 0.01): (282, 1.0051899132779132, 20.58726878054012, 0.30510206574441656, 0.18588274877400798),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(GOLDEN))
def test_a_fixed_lambda_gives_the_fit_of_earlier_versions(case):
    """The same iterations and the same numbers (to float64 rounding across BLAS builds; on the machine that
    recorded them, bit for bit); λ and μ recorded in the state, the cross-validation's path empty."""
    method, n, k, lam, mu = case
    iterations, nll, total, b0, w10 = GOLDEN[case]
    z, y = many_class_logits(n, k, seed=3)
    cal = fit_calibrator(method, z, y, odir_lambda=lam, odir_mu=mu)
    if k <= 20:  # Newton's few steps: the count does not depend on rounding
        assert cal.iterations == iterations
    assert cal.converged
    found = (cal.nll(z, y), cal.weights.sum(), cal.bias[0], cal.weights[1, 0])
    np.testing.assert_allclose(found, (nll, total, b0, w10), rtol=1e-9, atol=1e-11)
    assert (cal.odir_lambda, cal.odir_mu) == (lam, mu) and cal.odir_grid.size == cal.odir_cv_nll.size == 0


@pytest.mark.parametrize("method", FULL)
def test_a_fixed_lambda_alone_keeps_mu_at_its_earlier_default(method):
    z, y = many_class_logits(600, 5, seed=3)
    alone = fit_calibrator(method, z, y, odir_lambda=0.01)
    both = fit_calibrator(method, z, y, odir_lambda=0.01, odir_mu=0.01)
    assert alone.odir_mu == 0.01
    assert np.array_equal(alone.weights, both.weights) and np.array_equal(alone.bias, both.bias)


@pytest.mark.parametrize("method", FULL)
def test_below_the_newton_limit_the_cv_fit_is_the_fixed_fit_at_the_chosen_weights(method):
    """Up to K = 20 the final fit takes the fixed-λ path: the same map, bit for bit, as a fit given the chosen
    λ and μ."""
    z, y = many_class_logits(1500, 6, seed=4)
    cv = fit_calibrator(method, z, y)
    fixed = fit_calibrator(method, z, y, odir_lambda=cv.odir_lambda, odir_mu=cv.odir_mu)
    assert np.array_equal(cv.weights, fixed.weights) and np.array_equal(cv.bias, fixed.bias)
    assert cv.iterations == fixed.iterations and cv.odir_grid.size > 0


@pytest.mark.parametrize(("method", "k"), [("matrix", 8), ("dirichlet", 8), ("matrix", 30), ("dirichlet", 30)])
def test_cross_validation_is_deterministic(method, k, tmp_path):
    """Two fits of the same split agree to the bit (the folds are drawn with a fixed seed), and the saved
    state rebuilds the calibrator with its choice."""
    z, y = many_class_logits(1200, k, seed=5)
    first, second = fit_calibrator(method, z, y), fit_calibrator(method, z, y)
    for name in ("weights", "bias", "odir_grid", "odir_cv_nll"):
        assert np.array_equal(getattr(first, name), getattr(second, name)), name
    assert first.odir_lambda == second.odir_lambda
    np.savez(tmp_path / "state.npz", **first.state())
    with np.load(tmp_path / "state.npz") as state:
        loaded = calibrator_from_state(method, state)
    assert (loaded.odir_lambda, loaded.odir_mu) == (first.odir_lambda, first.odir_mu)
    assert np.array_equal(loaded.odir_grid, first.odir_grid) and np.array_equal(loaded.odir_cv_nll, first.odir_cv_nll)
    assert np.array_equal(loaded.predict_proba(z), first.predict_proba(z))


def test_states_saved_before_odir_was_recorded_still_load():
    z, y = many_class_logits(600, 5, seed=3)
    cal = fit_calibrator("matrix", z, y)
    old = {name: value for name, value in cal.state().items() if not name.startswith("odir_")}
    loaded = calibrator_from_state("matrix", old)
    assert np.isnan(loaded.odir_lambda) and np.isnan(loaded.odir_mu) and loaded.odir_grid.size == 0
    assert np.array_equal(loaded.predict_proba(z), cal.predict_proba(z))


@pytest.mark.parametrize("method", FULL)
@pytest.mark.parametrize("n", [4, 13, 60])
def test_a_class_absent_from_folds_does_not_stop_the_fit(method, n):
    """K = 3 with class 2 seen once or twice: some folds' fit parts lack it, and with 4 samples there are
    4 folds of one sample. The fit finishes with finite, valid probabilities; a class absent from the fit
    labels keeps a finite bias (μ > 0)."""
    z, y = calibrated(n, 3, seed=6)
    y = np.where(y == 2, np.argmax(z[:, :2], axis=1), y)
    y[: 1 + (n > 10)] = 2  # class 2: one or two samples
    cal = fit_calibrator(method, z, y)
    p = cal.predict_proba(z)
    assert np.isfinite(p).all() and np.allclose(p.sum(axis=1), 1.0)
    assert np.isfinite(cal.weights).all() and np.isfinite(cal.bias).all()
    assert cal.odir_grid.size > 0 and np.isfinite(cal.odir_cv_nll).all()
    absent = fit_calibrator(method, z[y != 2], y[y != 2])
    assert np.isfinite(absent.bias).all() and np.isfinite(absent.predict_proba(z)).all()


def test_one_sample_takes_the_fixed_weights():
    z, y = np.array([[1.0, 0.0, -1.0]]), np.array([0])
    cal = fit_calibrator("matrix", z, y)
    assert (cal.odir_lambda, cal.odir_mu) == (0.01, 0.01) and cal.odir_grid.size == 0


def test_the_options():
    z, y = many_class_logits(800, 5, seed=7)
    cv = fit_calibrator("matrix", z, y, odir_lambda="cv", odir_mu="cv")
    default = fit_calibrator("matrix", z, y)
    assert np.array_equal(cv.weights, default.weights) and cv.odir_mu == cv.odir_lambda
    mu_only = fit_calibrator("matrix", z, y, odir_lambda=0.5, odir_mu="cv")  # the path moves μ alone
    assert mu_only.odir_lambda == 0.5 and mu_only.odir_mu in mu_only.odir_grid
    lam_only = fit_calibrator("matrix", z, y, odir_mu=0.2)  # λ cross-validated, μ fixed
    assert lam_only.odir_mu == 0.2 and lam_only.odir_lambda in lam_only.odir_grid
    with pytest.raises(ValueError, match=r"odir_lambda must be a number or 'cv' \(got 'CV'\)"):
        fit_calibrator("matrix", z, y, odir_lambda="CV")
    with pytest.raises(ValueError, match="odir_mu must be a finite number ≥ 0"):
        fit_calibrator("dirichlet", z, y, odir_mu=-1.0)


def test_folds_are_stratified_and_fixed():
    rng = np.random.default_rng(8)
    y = rng.integers(0, 7, 503)
    fold = stratified_folds(y, ODIR_FOLDS)
    assert np.array_equal(fold, stratified_folds(y.copy(), ODIR_FOLDS))
    counts = np.array([[np.sum((fold == f) & (y == c)) for f in range(ODIR_FOLDS)] for c in range(7)])
    assert (counts.max(axis=1) - counts.min(axis=1) <= 1).all()
    sizes = np.bincount(fold)
    assert sizes.max() - sizes.min() <= 1


def test_the_grid_starts_where_the_prior_pins_the_off_diagonal_weights():
    """The first point is the smallest power of ten at which ODIR's prior has standard deviation ≤ 1e-3."""
    for n, k in ((6000, 10), (5000, 100), (25_000, 1000), (449, 10), (3, 3)):
        grid = odir_grid(n, k)
        sd = np.sqrt(k * (k - 1) / (2 * n * np.array(grid)))
        assert sd[0] <= 1e-3 * (1 + 1e-12) and (len(grid) == len(ODIR_GRID) or sd[0] * np.sqrt(10) > 1e-3)
        assert grid == ODIR_GRID[ODIR_GRID.index(grid[0]) :]


@pytest.mark.parametrize("classifier", ["logistic", "mlp", "forest", "naive_bayes"])
def test_cv_is_no_worse_on_the_corpus_test_split_than_the_fixed_weights(classifier):
    """The conformance corpus's 10-class digits models (449 validation, 450 test rows; probabilities as
    log-probabilities): the cross-validated fit's test NLL is at most the fixed λ = μ = 0.01 fit's + 0.002."""
    m = corpus.train("digits", classifier)
    fit_on, test_on = (
        (m.s_val, m.s_test) if classifier in ("logistic", "mlp") else (floored_log(m.p_val), floored_log(m.p_test))
    )
    for method in FULL:
        cv = fit_calibrator(method, fit_on, m.y_val)
        fixed = fit_calibrator(method, fit_on, m.y_val, odir_lambda=0.01, odir_mu=0.01)
        assert cv.nll(test_on, m.y_test) <= fixed.nll(test_on, m.y_test) + 0.002, method


# --- the truncated Newton steps of the folds (K > 20) ------------------------------------------------------


@pytest.mark.parametrize("method", FULL)
def test_the_hessian_operator_is_the_gradients_derivative(method, monkeypatch):
    """In float64 (its float32 products: test_economy.py), within central differences' error."""
    monkeypatch.setattr("trustcal.calibration.solver.FLOAT32_CLASSES", 200)
    z, y = many_class_logits(800, 25, seed=9)
    x = z if method == "matrix" else log_softmax(z)
    loss = _ScalingLoss(x, y, True, 30.0, 3.0, centred=False)
    rng = np.random.default_rng(10)
    theta = loss.identity() + 0.05 * rng.normal(size=loss.identity().size)
    op = loss.hessian_operator_function()(theta)
    v = rng.normal(size=theta.size)
    h = 1e-5
    numeric = (loss.loss_grad(theta + h * v)[1] - loss.loss_grad(theta - h * v)[1]) / (2 * h)
    np.testing.assert_allclose(op.product(v), numeric, rtol=0, atol=1e-7 * np.abs(numeric).max())
    r = rng.normal(size=theta.size)
    m_r = op.precondition(r)
    assert r @ m_r > 0 and np.isfinite(m_r).all()  # M⁻¹ positive definite


def test_vector_scalings_operator_is_its_dense_hessian_and_reaches_its_optimum(monkeypatch):
    """Vector scaling past its Newton limit (K > 100) takes truncated Newton steps with
    :meth:`_ScalingLoss.scales_operator`: its product is the dense Hessian's, its preconditioner the exact 2×2
    block of each class, and the fit it reaches is the dense Newton fit's (fit NLL within float64 rounding of
    a sum over N samples)."""
    from trustcal.calibration.scaling import VectorScaling

    z, y = many_class_logits(1500, 30, seed=12)
    loss = _ScalingLoss(z, y, False, 0.0, 0.0)
    rng = np.random.default_rng(13)
    theta = loss.identity() + 0.05 * rng.normal(size=60)
    op, dense = loss.scales_operator(theta), loss.hessian_function()(theta)
    v = rng.normal(size=60)
    np.testing.assert_allclose(op.product(v), dense @ v, rtol=0, atol=1e-12 * np.abs(dense @ v).max())
    blocks = [dense[np.ix_([a, 30 + a], [a, 30 + a])] for a in range(30)]
    r = rng.normal(size=60)
    expected = [np.linalg.solve(b, [r[a], r[30 + a]]) for a, b in enumerate(blocks)]
    np.testing.assert_allclose(op.precondition(r), np.concatenate(np.array(expected).T), rtol=1e-10)
    fits = {}
    for limit in (10**6, 0):
        monkeypatch.setattr(VectorScaling, "newton_max_parameters", limit)
        fits[limit] = fit_calibrator("vector", z, y)
    assert fits[0].converged and fits[0].nll(z, y) == pytest.approx(fits[10**6].nll(z, y), rel=0, abs=1e-13)


def test_truncated_newton_reaches_the_dense_newton_optimum_on_a_box():
    """A convex quadratic with a box on two components, by conjugate-gradient Newton steps (a diagonal
    preconditioner) and by Newton's steps with the dense Hessian: the same optimum."""
    rng = np.random.default_rng(11)
    a = rng.normal(size=(40, 12))
    h = a.T @ a / 40 + 0.1 * np.eye(12)
    g0 = rng.normal(size=12)

    def loss_grad(theta):
        return 0.5 * theta @ h @ theta + g0 @ theta, h @ theta + g0

    lo, hi = np.full(12, -np.inf), np.full(12, np.inf)
    lo[:2], hi[:2] = -0.05, 0.05
    box = Box(lo, hi)
    # tol 1e-7: the Armijo test cannot see the loss fall by |g|²/λ_min(H) < 1e-16 of a loss of size 1
    dense = minimize_box(loss_grad, lambda: lambda t: h, np.zeros(12), box, tol=1e-7, max_iter=50, newton_steps=50)
    op = HessianOperator(lambda v: h @ v, lambda r: r / np.diag(h), np.diag(h))
    cg = minimize_box(loss_grad, lambda: lambda t: op, np.zeros(12), box, tol=1e-7, max_iter=50, newton_steps=50)
    assert dense.converged and cg.converged and cg.iterations <= 10
    assert (cg.theta[:2] == dense.theta[:2]).all() and np.abs(cg.theta[:2]).max() == 0.05  # on the box
    np.testing.assert_allclose(cg.theta, dense.theta, rtol=0, atol=1e-7 / 0.1)  # |Δθ| ≤ |g| / λ_min(H)


U32 = np.finfo(np.float32).eps / 2  # float32's unit round-off


@pytest.mark.parametrize("method", FULL)
def test_the_refined_preconditioner_solves_each_classs_row_block(method):
    """The M⁻¹ that a step's conjugate gradients refine to (_class_rows) solves, for each class a, the block of
    its row (W'_a1 … W'_aK, c_a) written out here from the loss: (1/N) Σ_n p_na (1 − p_na) [x_n; 1][x_n; 1]ᵀ,
    plus ODIR's 2λ/(K(K−1)σ_j²) on each off-diagonal W'_aj (W_aj = W'_aj/σ_j) and (2μ/K)(1 − 1/K) on c_a (the
    intercept penalty μ/K·|b|², b = c − mean c); the operator's diagonal is then those blocks'. The blocks'
    Gram matrices are summed in float32: within cond(B) times a probabilistic rounding bound of a sum of N terms
    (Higham & Mary 2019, λ = 6)."""
    n, k, lam, mu = 800, 25, 30.0, 3.0
    z, y = many_class_logits(n, k, seed=9)
    x = z if method == "matrix" else log_softmax(z)
    loss = _ScalingLoss(x, y, True, lam, mu, centred=False)
    rng = np.random.default_rng(10)
    theta = loss.identity() + 0.05 * rng.normal(size=loss.identity().size)
    refine = loss.hessian_operator_function()(theta).refine
    fine = refine()
    diagonal = loss.hessian_operator(theta).diagonal  # the later steps take the refined M from the start
    p = np.exp(log_softmax((x / x.std(axis=0)) @ loss.unpack(theta)[0].T + loss.unpack(theta)[1]))
    feat = np.column_stack([x / x.std(axis=0), np.ones(n)])
    off = ~np.eye(k, dtype=bool)

    def rows(v):  # θ = (W's diagonal, its off-diagonal entries row by row, c) as K rows of K + 1
        out = np.zeros((k, k + 1))
        out[:, :k][off] = v[k:-k]
        out[np.arange(k), np.arange(k)] = v[:k]
        out[:, k] = v[-k:]
        return out

    r = rng.normal(size=theta.size)
    solved, diag = rows(fine(r)), rows(diagonal)
    for a in range(k):
        terms = (feat.T * (p[:, a] * (1 - p[:, a]))) @ feat / n
        penalty = np.append(
            np.where(off[a], 2 * lam / (k * (k - 1)) / x.std(axis=0) ** 2, 0.0), 2 * mu / k * (1 - 1 / k)
        )
        block = terms + np.diag(penalty)
        expected = np.linalg.solve(block, rows(r)[a])
        magnitude = np.abs(feat).T @ (np.abs(feat) * (p[:, a] * (1 - p[:, a]))[:, None]) / n
        bound = 6 * np.sqrt(n) * U32 * np.linalg.norm(magnitude, 2) / np.linalg.norm(block, 2)  # |δB| / |B|
        assert np.linalg.norm(solved[a] - expected) <= 2 * np.linalg.cond(block) * bound * np.linalg.norm(expected)
        np.testing.assert_allclose(diag[a], np.diag(block), rtol=6 * np.sqrt(n) * U32 * 10)


def test_the_refined_preconditioner_falls_back_to_float64_where_a_float32_block_is_not_positive_definite():
    """A float32 Gram matrix whose Cholesky fails (one block made indefinite here) is summed again in float64,
    and M⁻¹ is then that of the float64 blocks; a float64 one that fails is an error."""
    z, y = many_class_logits(800, 25, seed=9)
    theta = None
    refined = {}
    for broken in (False, True):
        loss = _ScalingLoss(z, y, True, 30.0, 3.0, centred=False)
        theta = loss.identity() if theta is None else theta
        exact = loss._row_gram

        def row_gram(p, dtype, exact=exact, broken=broken):
            gram = exact(p, np.float64 if not broken else dtype)
            if broken and dtype == np.float32:
                gram[3, 0, 0] = -1.0
            return gram

        loss._row_gram = row_gram
        refined[broken] = (loss.hessian_operator_function()(theta).refine(), loss)
    r = np.random.default_rng(3).normal(size=theta.size)
    assert refined[True][1]._gram.dtype == np.float64
    np.testing.assert_array_equal(refined[True][0](r), refined[False][0](r))
    loss = refined[True][1]
    loss._gram[3, 0, 0] = -1.0
    loss.set_penalty(30.0, 3.0)  # the blocks are factorised again, from the float64 Gram matrix kept
    with pytest.raises(np.linalg.LinAlgError):
        loss.hessian_operator(theta)


def test_the_conjugate_gradients_stop_once_the_models_gradient_is_below_half_the_tolerance():
    """H s = −g on an ill-conditioned quadratic: with a tolerance, the step's residual −g − H s (the gradient the
    quadratic model predicts after the step) has every component below half of it, in fewer products than the
    relative rule alone (‖r‖ ≤ min(½, √‖g‖)·‖g‖), which holds without one."""
    rng = np.random.default_rng(14)
    a = rng.normal(size=(60, 30)) * np.geomspace(1, 30, 30)
    h = a.T @ a / 60 + 1e-3 * np.eye(30)
    g = 1e-3 * rng.normal(size=30)
    products = []

    def counted(v):
        products.append(1)
        return h @ v

    op = HessianOperator(counted, lambda r: r / np.diag(h), np.diag(h))
    fixed = np.zeros(30, dtype=bool)
    taken = {}
    for tol in (0.0, 2e-3):
        products.clear()
        step = conjugate_gradient_step(op, g, fixed, tol)
        taken[tol], residual = len(products), -g - h @ step
        if tol:
            assert np.abs(residual).max() <= tol / 2
        else:
            assert np.linalg.norm(residual) <= min(0.5, np.sqrt(np.linalg.norm(g))) * np.linalg.norm(g)
    assert taken[2e-3] < taken[0.0]


def test_a_step_not_converged_after_refine_after_products_restarts_with_the_refined_preconditioner():
    """The identity as M: after ``refine_after`` = 3 products the conjugate gradients restart from the step so
    far with M = H, whose first direction solves the system (α = 1): 4 products, refine built once; a system
    that converges before then never builds it."""
    rng = np.random.default_rng(15)
    a = rng.normal(size=(60, 30)) * np.geomspace(1, 100, 30)
    h = a.T @ a / 60 + 1e-3 * np.eye(30)
    g = rng.normal(size=30)
    products, built = [], []

    def refine():
        built.append(1)
        return lambda r: np.linalg.solve(h, r)

    def operator(matrix):
        def product(v):
            products.append(1)
            return matrix @ v

        return HessianOperator(product, lambda r: r, np.diag(matrix), refine, 3)

    step = conjugate_gradient_step(operator(h), g, np.zeros(30, dtype=bool))
    assert (len(products), len(built)) == (4, 1)
    np.testing.assert_allclose(h @ step, -g, rtol=0, atol=1e-9 * np.abs(g).max() * np.linalg.cond(h))
    products.clear(), built.clear()
    conjugate_gradient_step(operator(2 * np.eye(30)), g, np.zeros(30, dtype=bool))  # M = H / 2: one product
    assert (len(products), len(built)) == (1, 0)


@pytest.mark.parametrize("method", FULL)
@pytest.mark.parametrize(
    "float32_classes, economy_classes, refine_after", [(200, 200, 251), (20, 10, 6), (200, 200, 1)]
)
def test_past_the_newton_limit_the_cv_fit_meets_the_kkt_conditions_at_its_weights(
    method, float32_classes, economy_classes, refine_after, monkeypatch
):
    """K = 30: the final fit (truncated Newton steps from the folds' average map) converges, and the gradient of
    Kull et al.'s objective at the chosen λ and μ, written out here, vanishes at the reported W and b up to the
    stopping rule: it bounds the gradient in units x/σ, so component (i, j) of W's is ≤ tol·σ_j, b's ≤ tol.
    Three ways to the same: float64 operators that never refine their preconditioner; the operator's economies
    (float32 products and Gram matrix, curvatures from every third sample), since the gradient and the stopping
    test are float64's; every step's conjugate gradients refining their preconditioner after one product
    (_class_rows)."""
    monkeypatch.setattr("trustcal.calibration.solver.FLOAT32_CLASSES", float32_classes)
    monkeypatch.setattr("trustcal.calibration.solver.ECONOMY_CLASSES", economy_classes)
    monkeypatch.setattr("trustcal.calibration.scaling_loss.REFINE_AFTER", refine_after)
    monkeypatch.setattr("trustcal.calibration.solver.PRECONDITIONER_ROWS", 500)
    z, y = many_class_logits(1500, 30, seed=12)
    cal = fit_calibrator(method, z, y)
    assert cal.converged and cal.odir_grid.size > 0 and not cal.at_bound
    x = z if method == "matrix" else log_softmax(z)
    n, k = x.shape
    lam, mu = cal.odir_lambda, cal.odir_mu
    r = np.exp(log_softmax(x @ cal.weights.T + cal.bias))
    r[np.arange(n), y] -= 1.0
    r /= n
    off = ~np.eye(k, dtype=bool)
    grad_w = r.T @ x + np.where(off, 2 * lam / (k * (k - 1)) * cal.weights, 0.0)
    grad_b = r.sum(axis=0) + 2 * mu / k * cal.bias
    assert (np.abs(grad_w) <= 2e-8 * x.std(axis=0) + 1e-12).all(), np.abs(grad_w).max()
    assert (np.abs(grad_b) <= 2e-8).all(), np.abs(grad_b).max()
    assert CV_TOL > 1e-8  # the folds stop earlier than the final fit


def test_calibrated_logits_stay_put_under_the_default():
    """Perfectly calibrated logits: the cross-validated fit changes the probabilities little (the penalty
    chosen pulls towards the identity)."""
    z, y = calibrated(4000, 6, seed=13)
    for method in FULL:
        cal = fit_calibrator(method, z, y)
        x = z if method == "matrix" else log_softmax(z)
        change = np.abs(cal.predict_proba(z) - np.exp(log_softmax(x))).mean()
        assert change < 1 / np.sqrt(len(z)), (method, change)


@pytest.mark.parametrize("method", FULL)
def test_a_path_dearer_than_the_bound_takes_the_grids_first_point(method, monkeypatch):
    """Where the path would cost more than ODIR_CV_MAX_WORK operations (25,000 × 1,000 logits), λ = μ = the
    grid's first point, recorded with a NaN score; the fit still converges, from the identity map."""
    import trustcal.calibration.scaling as scaling

    monkeypatch.setattr(scaling, "ODIR_CV_MAX_WORK", 0.0)
    z, y = many_class_logits(1500, 30, seed=14)
    cal = fit_calibrator(method, z, y)
    first = odir_grid(1500, 30)[0]
    assert (cal.odir_lambda, cal.odir_mu) == (first, first) and list(cal.odir_grid) == [first]
    assert np.isnan(cal.odir_cv_nll).all() and cal.converged
    assert scaling.ODIR_FOLDS_OPERATOR * scaling.ODIR_CV_GRADIENTS * 4 * 16_667 * 1000**2 > scaling.ODIR_CV_MAX_WORK


def test_calibration_rows_carry_odirs_weights_as_fitted():
    """calibration.csv's odir_lambda and odir_mu: the chosen weights of matrix and Dirichlet scaling (from the
    cross-validation's grid), the given ones when fixed, NaN for a calibrator without them."""
    from trustcal.calibration.table import calibration_row

    z, y = calibrated(600, 4, seed=3)
    d = {"val_logits": z, "val_labels": y}
    row, cal = calibration_row(0, d, "dirichlet")
    assert row["odir_lambda"] == cal.odir_lambda == row["odir_mu"] and row["odir_lambda"] in cal.odir_grid
    row, _ = calibration_row(0, d, "matrix", options={"odir_lambda": 0.5, "odir_mu": 0.25})
    assert (row["odir_lambda"], row["odir_mu"]) == (0.5, 0.25)
    row, _ = calibration_row(0, d, "temperature")
    assert np.isnan(row["odir_lambda"]) and np.isnan(row["odir_mu"])
