"""The post-hoc calibrators behind one interface (docs/method.md §2, §2.5–2.9).

Oracles: netcal 1.4 (temperature, vector scaling, histogram binning, isotonic regression),
scikit-learn (unregularised matrix and Dirichlet scaling are multinomial logistic regression;
isotonic regression itself), torch autograd + L-BFGS on Kull et al.'s ODIR loss written
out, and known answers (calibrated inputs stay put, known maps are recovered) with
tolerances from the sampling error (Fisher information, binomial counts).
"""

import subprocess
import sys

import numpy as np
import pytest
from helpers.corpus import vote_fractions
from helpers.synthetic import calibrated, draw_labels, many_class_logits
from hypothesis import given, settings
from hypothesis import strategies as st

from trustcal.calibration import (
    METHODS,
    Calibrator,
    calibrator_from_state,
    fit_calibrator,
    log_softmax,
    softmax,
)
from trustcal.calibration.base import MissingDependencyError
from trustcal.calibration.methods import calibrator_class
from trustcal.errors import TrustcalError
from trustcal.numerics import logits_nll

EPS = np.finfo(np.float64).eps
LINEAR = ("vector", "matrix", "dirichlet")


def nll(p, y):
    return float(-np.mean(np.log(p[np.arange(len(y)), y])))


def odir_loss(cal, z, y, lam, mu):
    """Kull et al.'s objective: mean NLL + λ·Σ_{i≠j} W_ij²/(K(K−1)) + μ·Σ b_j²/K."""
    k = z.shape[1]
    off = cal.weights[~np.eye(k, dtype=bool)]
    return nll(cal.predict_proba(z), y) + lam * (off @ off) / (k * (k - 1)) + mu * (cal.bias @ cal.bias) / k


def rms_diff(p, q):
    """Root mean square over rows of the Euclidean distance between two N×K probability arrays."""
    return float(np.sqrt(np.mean(np.sum((p - q) ** 2, axis=1))))


ROUND_OFF = 1e-12  # float64 round-off of a mean NLL over N ≤ 4000 rows: N·eps·NLL ≈ 4000 × 2.2e-16 × 1


def prediction_bound(excess):
    """How far predictions of a fit whose loss exceeds the optimum's by ``excess`` can be.

    Around the optimum of a softmax-linear model the mean loss rises by ½·mean_i Δs_iᵀ A_i Δs_i
    (Δs the scores' change, A = diag p − ppᵀ; a convex penalty only adds), and Δp_i = A_i Δs_i
    with A's eigenvalues ≤ 1, so mean_i |Δp_i|² ≤ 2·excess to second order; ×2 covers the
    third-order terms, and ROUND_OFF what the measured excess may miss.
    """
    return np.sqrt(4 * (max(excess, 0.0) + ROUND_OFF))


# --- the interface ------------------------------------------------------------------------


def test_the_family_and_its_names():
    assert METHODS == (
        "none",
        "temperature",
        "vector",
        "matrix",
        "dirichlet",
        "histogram",
        "isotonic",
        "sms",
        "svs",
        "ets",
        "irm",
    )
    z, y = calibrated(500, 4, seed=0)
    for method in METHODS:
        cal = fit_calibrator(method, z, y)
        assert isinstance(cal, Calibrator) and cal.method == method
        s = cal.summary()
        assert set(s) == {"temperature", "converged", "at_bound", "iterations", "parameters", "identity_fallback"}
        assert np.isnan(s["temperature"]) == (method != "temperature")
        assert type(s["converged"]) is bool and type(s["at_bound"]) is bool
        assert s["identity_fallback"] is False  # calibrated inputs: no fit is worse than the identity
        assert type(s["iterations"]) is int and type(s["parameters"]) is int
    k = 4
    params = {
        "none": 0,
        "temperature": 1,
        "vector": 2 * k,
        "matrix": k * k + k,
        "dirichlet": k * k + k,
        "histogram": k * 15,
    }
    for method, n in params.items():
        assert fit_calibrator(method, z, y).summary()["parameters"] == n, method
    assert fit_calibrator("histogram", z, y, bins=7).summary()["parameters"] == k * 7


def test_isotonic_parameters_are_its_constant_pieces():
    """An isotonic fit's degrees of freedom: the distinct fitted levels, summed over the classes."""
    sklearn_isotonic = pytest.importorskip("sklearn.isotonic")
    z, y = calibrated(800, 3, seed=1)
    p = softmax(z)
    levels = 0
    for c in range(3):
        iso = sklearn_isotonic.IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(p[:, c], y == c)
        levels += len(np.unique(iso.predict(p[:, c])))
    assert fit_calibrator("isotonic", z, y).summary()["parameters"] == levels


def test_temperature_wraps_fit_temperature():
    from trustcal.calibration import fit_temperature

    z, y = calibrated(3000, 5, seed=2)
    z = 2.5 * z
    fit = fit_temperature(z, y, t_min=0.05, t_max=20)
    cal = fit_calibrator("temperature", z, y, t_min=0.05, t_max=20)
    assert cal.summary() == dict(
        temperature=fit.temperature,
        converged=fit.converged,
        at_bound=fit.at_bound,
        iterations=fit.iterations,
        parameters=1,
        identity_fallback=False,
    )
    assert np.array_equal(cal.predict_proba(z), softmax(z, fit.temperature))
    # Perfectly separated with a margin: the bound is hit and reported (as fit_temperature does).
    zs, ys = np.array([[5.0, 0.0], [0.0, 5.0]] * 10), np.array([0, 1] * 10)
    s = fit_calibrator("temperature", zs, ys, t_min=0.05, t_max=20).summary()
    assert s["temperature"] == 0.05 and s["at_bound"]


def test_none_is_the_softmax():
    z, y = calibrated(300, 6, seed=3)
    assert np.array_equal(fit_calibrator("none", z, y).predict_proba(z), softmax(z))


def test_scales_are_bounded_by_the_temperature_interval_and_flagged():
    """Separable data push the scales up until the gradient falls below tol (here near 4 for vector
    scaling, 5 for matrix and Dirichlet); [1/t_max, 1/t_min] = [0.5, 2] stops them at 2, and at_bound says so."""
    z = np.array([[5.0, 0.0, 0.0], [0.0, 5.0, 0.0], [0.0, 0.0, 5.0]] * 20)
    y = np.array([0, 1, 2] * 20)
    for method in LINEAR:
        free = fit_calibrator(method, z, y)
        scales = free.weights if method == "vector" else np.diag(free.weights)
        assert scales.min() > 3 and not free.summary()["at_bound"], method
        cal = fit_calibrator(method, z, y, t_min=0.5, t_max=2)
        s = cal.summary()
        scales = cal.weights if method == "vector" else np.diag(cal.weights)
        assert s["at_bound"] and s["converged"], (method, s)
        np.testing.assert_allclose(scales, 2.0, rtol=4 * EPS)  # the bound, divided and multiplied by σ once


# --- validation -----------------------------------------------------------------------------


def test_unknown_method_names_the_valid_ones():
    z, y = calibrated(50, 3, seed=5)
    for bad in ("platt", "Temperature", None):
        with pytest.raises(ValueError, match="unknown calibration method") as e:
            fit_calibrator(bad, z, y)
        assert all(m in str(e.value) for m in METHODS)
    with pytest.raises(ValueError, match="unknown calibration method"):
        calibrator_from_state("bbq", {})


@pytest.mark.parametrize(
    "method, options, message",
    [
        ("none", dict(bins=10), r"unknown option\(s\) for calibration method 'none': bins \(valid: none\)"),
        ("temperature", dict(odir_lambda=1.0), r"odir_lambda \(valid: tol, max_iter\)"),
        ("vector", dict(odir_mu=1.0), r"odir_mu \(valid: max_iter, tol\)"),
        ("matrix", dict(odir_lambda=-1.0), r"odir_lambda must be a finite number ≥ 0"),
        ("dirichlet", dict(odir_mu=float("nan")), r"odir_mu must be a finite number ≥ 0"),
        ("dirichlet", dict(odir_mu="0.1"), r"odir_mu must be a number"),
        ("matrix", dict(tol=0.0), r"tol must be a finite number > 0"),
        ("vector", dict(max_iter=0), r"max_iter must be an integer ≥ 1"),
        ("histogram", dict(bins=0), r"bins must be an integer ≥ 1"),
        ("histogram", dict(bins=2.5), r"bins must be an integer ≥ 1"),
        ("histogram", dict(bins=True), r"bins must be an integer ≥ 1"),
        ("isotonic", dict(bins=10), r"'isotonic': bins \(valid: none\)"),
    ],
)
def test_options_are_checked(method, options, message):
    z, y = calibrated(100, 3, seed=6)
    with pytest.raises(ValueError, match=message):
        fit_calibrator(method, z, y, **options)


@pytest.mark.parametrize("method", METHODS)
def test_inputs_are_checked(method):
    z, y = calibrated(100, 3, seed=7)
    bad = [
        ((z[:, :1], y), "N×K"),
        ((z[0], y), "N×K"),
        ((z, y[:-1]), "vector of 100"),
        ((z, y + 1), r"labels must lie in 0..2"),
        ((z, y - 1), r"labels must lie in 0..2"),
        ((z, y + 0.5), "integer class indices"),
        ((np.where(np.arange(300).reshape(100, 3) == 4, np.nan, z), y), "finite"),
        ((np.where(np.arange(300).reshape(100, 3) == 4, -np.inf, z), y), "finite"),
    ]
    for args, message in bad:
        with pytest.raises(ValueError, match=message):
            fit_calibrator(method, *args)
    with pytest.raises(ValueError, match="t_min < t_max"):
        fit_calibrator(method, z, y, t_min=2.0, t_max=1.0)
    cal = fit_calibrator(method, z, y.astype(np.float64))  # float labels with integer values are fine
    with pytest.raises(ValueError, match="fitted on 3 classes, these logits have 4"):
        cal.predict_proba(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="finite"):
        cal.predict_proba(np.array([[0.0, np.nan, 1.0]]))


@pytest.mark.parametrize(
    "method, module, package",
    [
        ("vector", "scipy.optimize", "scipy"),
        ("matrix", "scipy.optimize", "scipy"),
        ("dirichlet", "scipy.optimize", "scipy"),
        ("isotonic", "sklearn.isotonic", "scikit-learn"),
        ("irm", "sklearn.isotonic", "scikit-learn"),
    ],
)
def test_a_missing_dependency_says_what_to_install(monkeypatch, method, module, package):
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now raises ImportError
    z, y = calibrated(100, 3, seed=8)
    with pytest.raises(MissingDependencyError) as e:
        fit_calibrator(method, z, y)
    assert str(e.value) == f"calibration method '{method}' needs {package}: pip install 'trustcal[calibration]'"
    assert isinstance(e.value, ImportError) and isinstance(e.value, TrustcalError)


def test_importing_and_the_numpy_methods_need_neither_scipy_nor_sklearn():
    code = (
        "import sys, numpy as np\n"
        "import trustcal, trustcal.calibration as c\n"
        "z = np.random.default_rng(0).normal(size=(200, 3)); y = np.arange(200) % 3\n"
        "for m in ('none', 'temperature', 'histogram'): c.fit_calibrator(m, z, y).predict_proba(z)\n"
        "print(sorted(m for m in ('scipy', 'sklearn', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- every method: valid probabilities, exact state round trip ------------------------------


def extreme_logits(k, rng):
    """Rows with ±1e3 entries, ties, a constant row, and ordinary rows."""
    z = rng.normal(0, 3, (40, k))
    z[:10] *= 300.0  # entries of a few hundred to a thousand
    z[10, :] = 1e3
    z[11, :] = -1e3
    z[12] = [1e3] + [-1e3] * (k - 1)
    z[13] = [-1e3] + [1e3] * (k - 1)
    z[14, :] = 0.0
    return z


@pytest.mark.parametrize("method", METHODS)
def test_probabilities_are_valid_with_extreme_logits_and_an_absent_class(method):
    rng = np.random.default_rng(9)
    k = 4
    z, y = calibrated(3000, k, seed=10)
    keep = y != 3  # class 3 never appears in the fit labels
    z, y = z[keep], y[keep]
    z[:30] = extreme_logits(k, rng)[:30]  # and the fit sees extreme rows too
    cal = fit_calibrator(method, z, y)
    for logits in (extreme_logits(k, rng), z):
        p = cal.predict_proba(logits)
        assert p.dtype == np.float64 and p.shape == logits.shape
        assert np.isfinite(p).all() and (p >= 0).all() and (p <= 1).all()
        # A sum of K terms each rounded once, then (binning) one division: within a few K·eps.
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=4 * k * EPS)


@pytest.mark.parametrize("method", METHODS)
def test_state_round_trip_is_exact(method, tmp_path):
    z, y = calibrated(2000, 4, seed=11)
    z_new = calibrated(500, 4, seed=12)[0] * 1.7
    cal = fit_calibrator(method, z, y)
    state = cal.state()
    assert all(isinstance(v, np.ndarray) for v in state.values())
    rebuilt = calibrator_from_state(method, state)
    assert np.array_equal(rebuilt.predict_proba(z_new), cal.predict_proba(z_new))
    np.savez(tmp_path / "cal.npz", **state)
    with np.load(tmp_path / "cal.npz") as saved:  # no pickles: plain arrays only
        loaded = calibrator_from_state(method, saved)
    assert np.array_equal(loaded.predict_proba(z_new), cal.predict_proba(z_new))
    assert np.array_equal(loaded.predict_proba(z), cal.predict_proba(z))
    assert str(loaded.summary()) == str(cal.summary())  # str: NaN == NaN
    with pytest.raises(ValueError, match="missing"):
        calibrator_from_state(method, {k: v for k, v in state.items() if k != "iterations"})


# --- peers as oracles ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def peer_data():
    """K = 5 logits, labels drawn from softmax(z/2): overconfident by a factor 2."""
    rng = np.random.default_rng(13)
    z = rng.normal(0, 2, (4000, 5))
    y = draw_labels(softmax(z / 2), rng)
    return z, y


@pytest.mark.parametrize("method", ["temperature", "vector"])
def test_scaling_matches_netcal(peer_data, method):
    """netcal's TemperatureScaling / LogisticCalibration (vector scaling for K > 2), fitted on softmax(z).

    netcal works on log(clip(p, eps, 1 − eps)) of the probabilities it is given, so our
    calibrator is fitted on those log-probabilities (as for someone else's probability
    files); softmax(log p / T) is temperature scaling of z. netcal minimises with SciPy's
    L-BFGS-B from the same start (w = 1, b = 0) but with finite-difference gradients and the
    default ftol = 2.2e-9: it stops when a step gains less than ftol·NLL, and a linearly
    converging L-BFGS leaves at most a few hundred such steps' gain, ≤ 100·ftol·NLL.
    """
    pytest.importorskip("netcal")
    from netcal.scaling import LogisticCalibration, TemperatureScaling

    z, y = peer_data
    p, lp = softmax(z), log_softmax(z)
    assert EPS < p.min() and p.max() < 1 - EPS  # netcal's clipping leaves these untouched
    peer = (TemperatureScaling() if method == "temperature" else LogisticCalibration()).fit(p, y)
    q_peer = peer.transform(p)
    ours = fit_calibrator(method, lp, y)
    q_ours = ours.predict_proba(lp)
    excess = nll(q_peer, y) - nll(q_ours, y)
    assert -ROUND_OFF <= excess <= 100 * 2.2e-9 * nll(q_ours, y)  # ours no worse, up to round-off
    assert rms_diff(q_peer, q_ours) <= prediction_bound(excess)
    if method == "temperature":
        # NLL(β = 1/T) has curvature h = mean Var_p[log p]: |Δβ| ≤ √(2·(excess + round-off)/h).
        h = np.mean(np.sum(q_ours * lp**2, axis=1) - np.sum(q_ours * lp, axis=1) ** 2)
        beta = 1 / ours.temperature
        assert abs(peer.weights[0] - beta) <= np.sqrt(2 * (excess + ROUND_OFF) / h)
        assert abs(beta - 0.5) <= 4 / np.sqrt(len(y) * h)  # the labels' own β = 1/2, within 4 sd (Fisher: N·h)


def test_histogram_matches_netcal(peer_data):
    """netcal's HistogramBinning(bins=15): same equal-width bins, same empty-bin rule (the centre),
    same renormalisation, except that netcal returns NaN for a row whose outputs are all 0, where we
    return the uniform row. (They would also differ for a probability exactly on a bin edge: netcal
    fits with bins [a, b) and predicts with (a, b].)"""
    pytest.importorskip("netcal")
    from netcal.binning import HistogramBinning

    z, y = peer_data
    for n in (len(z), 60):  # all bins filled, and most of them empty
        peer = HistogramBinning(bins=15).fit(softmax(z[:n]), y[:n])
        ours = fit_calibrator("histogram", z[:n], y[:n], bins=15)
        for logits in (z, 1.5 * z[::-1]):
            q_ours, q_peer = ours.predict_proba(logits), peer.transform(softmax(logits))
            # netcal divides 0 by 0 where every output of a row is 0 (sparse bins); we give 1/K.
            zero = np.isnan(q_peer).any(axis=1)
            assert zero.any() == (n == 60)
            np.testing.assert_array_equal(q_ours[zero], 1 / 5)
            # Bin values are count ratios computed alike; the renormalisation is a sum of K and a division.
            np.testing.assert_allclose(q_ours[~zero], q_peer[~zero], rtol=0, atol=8 * EPS)


def test_isotonic_matches_sklearn_and_netcal(peer_data):
    """Per class, the stored thresholds reproduce sklearn's IsotonicRegression.predict bit for bit
    (inside and outside the fitted range); the renormalised output matches netcal's IsotonicRegression."""
    pytest.importorskip("netcal")
    from netcal.binning import IsotonicRegression as NetcalIsotonic
    from sklearn.isotonic import IsotonicRegression

    z, y = peer_data
    ours = fit_calibrator("isotonic", z, y)
    z_new = 3.0 * calibrated(3000, 5, seed=14)[0]
    p, p_new = softmax(z), softmax(z_new)
    for c in range(5):
        iso = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(p[:, c], (y == c).astype(float))
        for x in (p[:, c], p_new[:, c], np.array([0.0, iso.X_min_, iso.X_max_, 1.0])):
            assert np.array_equal(ours.class_map(c, x), iso.predict(x))
    peer = NetcalIsotonic().fit(p, y)
    for logits in (z, z_new):
        # The same class maps on the same softmax; the renormalisation is a sum of K and a division.
        np.testing.assert_allclose(ours.predict_proba(logits), peer.transform(softmax(logits)), rtol=0, atol=8 * EPS)


@pytest.mark.parametrize(
    ("method", "k"),
    [("matrix", 5), ("dirichlet", 5), ("matrix", 30)],  # Dirichlet at K = 30: labels drawn here miss 11 classes
    ids=["matrix-K=5, Newton", "dirichlet-K=5, Newton", "matrix-K=30, L-BFGS-B alone"],
)
def test_unregularised_matrix_and_dirichlet_match_sklearn(method, k):
    """With λ = μ = 0 they are multinomial logistic regression on z (matrix) or log_softmax(z)
    (Dirichlet): sklearn's LogisticRegression(C=inf) fitted to a tight tol is the oracle. At K = 5 the
    fit takes Newton steps with the exact Hessian; at K = 30 (930 parameters, beyond
    ``newton_max_parameters``) L-BFGS-B alone, and reaches the same optimum. (Dirichlet scaling's two fits at
    K = 30 are compared under ODIR by the next test.)

    netcal 1.4 has no matrix or Dirichlet calibration (its LogisticCalibration is vector scaling).
    The softmax leaves W + 1vᵀ and b + a·1 unchanged, so parameters are compared centred over
    the classes, predictions and NLL as they are.
    """
    from sklearn.linear_model import LogisticRegression

    assert (k * (k + 1) > calibrator_class(method).newton_max_parameters) == (k == 30)
    rng = np.random.default_rng(15)
    z = rng.normal(0, 2, (4000, k))
    a = np.eye(k) + 0.3 * rng.normal(size=(k, k))
    x = z if method == "matrix" else log_softmax(z)
    y = draw_labels(softmax(x @ a.T / 2 + rng.normal(0, 0.5, k)), rng)
    # The peer fits standardised features (unpenalised, the same optimum; lbfgs on raw log-probabilities stopped at
    # its iteration limit at K = 30); its parameters are mapped back to the features' own units.
    m, sd = x.mean(axis=0), x.std(axis=0)
    peer = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit((x - m) / sd, y)
    peer_w, peer_b = peer.coef_ / sd, peer.intercept_ - peer.coef_ @ (m / sd)
    ours = fit_calibrator(method, z, y, odir_lambda=0, odir_mu=0)
    q_peer, q_ours = peer.predict_proba((x - m) / sd), ours.predict_proba(z)
    excess = nll(q_peer, y) - nll(q_ours, y)
    assert abs(excess) <= ROUND_OFF  # both at the optimum
    assert rms_diff(q_peer, q_ours) <= prediction_bound(abs(excess))

    def centred(w):
        return w - w.mean(axis=0)

    # Two points whose losses agree to ROUND_OFF lie within √(2·ROUND_OFF/h) of each other along an
    # eigenvector of the mean NLL's Hessian with eigenvalue h; the smallest non-zero h bounds them all
    # (at K = 5, 3.7e-4 for Dirichlet, 3e-2 for matrix scaling: 7e-5 and 8e-6).
    eig = np.linalg.eigvalsh(fisher(x, q_ours) / len(x))
    atol = np.sqrt(2 * ROUND_OFF / eig[eig > 1e-10].min())
    np.testing.assert_allclose(centred(ours.weights), centred(peer_w), rtol=0, atol=atol)
    np.testing.assert_allclose(centred(ours.bias), centred(peer_b), rtol=0, atol=atol)


@pytest.mark.parametrize("method", ["matrix", "dirichlet"])
def test_odir_optimum_matches_torch(method):
    """The ODIR loss (Kull et al. 2019) at fixed λ = μ = 0.01, written out in torch and minimised with
    autograd and torch's L-BFGS from the identity: the same minimum, our fit no higher."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rng = np.random.default_rng(16)
        k = 5
        z = rng.normal(0, 2, (3000, k))
        x = z if method == "matrix" else log_softmax(z)
        y = draw_labels(softmax(x @ (np.eye(k) + 0.3 * rng.normal(size=(k, k))).T / 2), rng)
        lam = mu = 0.01
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        w = torch.eye(k, dtype=torch.float64, requires_grad=True)
        b = torch.zeros(k, dtype=torch.float64, requires_grad=True)
        off = ~torch.eye(k, dtype=torch.bool)
        opt = torch.optim.LBFGS(
            [w, b], max_iter=300, line_search_fn="strong_wolfe", tolerance_grad=1e-12, tolerance_change=1e-15
        )

        def closure():
            opt.zero_grad()
            loss = (
                torch.nn.functional.cross_entropy(xt @ w.T + b, yt)
                + lam * (w[off] ** 2).sum() / (k * (k - 1))
                + mu * (b**2).sum() / k
            )
            loss.backward()
            return loss

        opt.step(closure)
        peer_loss = closure().item()
        q_peer = torch.softmax(xt @ w.T + b, dim=1).detach().numpy()
    finally:
        torch.set_num_threads(threads)
    ours = fit_calibrator(method, z, y, odir_lambda=lam, odir_mu=mu)
    assert ours.converged
    excess = peer_loss - odir_loss(ours, z, y, lam, mu)
    # Ours no higher beyond round-off; torch's L-BFGS gets within 1e-10 in its 300 iterations.
    assert -ROUND_OFF <= excess <= 1e-10
    assert rms_diff(q_peer, ours.predict_proba(z)) <= prediction_bound(excess)


@pytest.mark.parametrize("method", ["matrix", "dirichlet"])
def test_past_the_newton_limit_lbfgs_reaches_the_newton_optimum(method, monkeypatch):
    """At K = 30 (930 parameters) matrix and Dirichlet scaling are fitted by L-BFGS-B alone; forced to take
    Newton steps with the exact Hessian instead, the fit reaches the same ODIR optimum. By convexity,
    f(a) − f(b) ≤ ∇f(a)·(a − b) for any two points, so the two objectives differ by at most the larger of
    |∇f·(a − b)| at either fit (each gradient within the stopping rule of 0), plus their rounding; and the
    predictions by what :func:`prediction_bound` allows for the Bregman divergence f(a) − f(b) − ∇f(b)·(a − b),
    at most that difference plus that bound (the same second-order argument, about b instead of the optimum)."""
    z, y = many_class_logits(3000, 30, seed=1)
    fixed = dict(odir_lambda=0.01, odir_mu=0.01)
    lbfgs = fit_calibrator(method, z, y, **fixed)
    monkeypatch.setattr(calibrator_class(method), "newton_max_parameters", 10**6)
    newton = fit_calibrator(method, z, y, **fixed)
    assert lbfgs.iterations > 50 > newton.iterations  # L-BFGS-B's tens of iterations; Newton's few
    assert lbfgs.converged and newton.converged and not lbfgs.at_bound and not newton.at_bound
    x = z if method == "matrix" else log_softmax(z)
    lam = mu = 0.01
    k = x.shape[1]
    off = ~np.eye(k, dtype=bool)

    def gradient(cal):
        r = softmax(x @ cal.weights.T + cal.bias)
        r[np.arange(len(y)), y] -= 1.0
        r /= len(y)
        grad_w = r.T @ x + np.where(off, 2 * lam / (k * (k - 1)) * cal.weights, 0.0)
        return grad_w, r.sum(axis=0) + 2 * mu / k * cal.bias

    dw, db = lbfgs.weights - newton.weights, lbfgs.bias - newton.bias
    bound = max(abs(np.sum(gw * dw) + gb @ db) for gw, gb in map(gradient, (lbfgs, newton)))
    excess = odir_loss(lbfgs, z, y, lam, mu) - odir_loss(newton, z, y, lam, mu)
    assert abs(excess) <= bound + 2 * ROUND_OFF, (excess, bound)
    assert rms_diff(lbfgs.predict_proba(z), newton.predict_proba(z)) <= prediction_bound(abs(excess) + bound)


@pytest.mark.parametrize("method", ["matrix", "dirichlet"])
def test_matrix_and_dirichlet_fit_100_classes_without_raising_the_fit_nll(method):
    """2,000 × 100 logits of a network-like model (10,100 parameters; the exact Hessian's Newton steps did not
    finish in minutes at 5,000 × 100): L-BFGS-B alone finishes, within its iteration limit, and the fit split's
    NLL is no higher than the raw model's, without the safeguard's fallback. How long it takes is measured by
    benchmarks/bench_calibrators.py, not asserted here."""
    z, y = many_class_logits(2000, 100, seed=1)
    cal = fit_calibrator(method, z, y)
    assert cal.n_parameters == 100 * 101 and cal.iterations <= 1000
    assert not cal.identity_fallback
    assert cal.nll(z, y) <= logits_nll(z, y) + fit_rounding(z)


# --- known answers ---------------------------------------------------------------------------


def fisher(x, p):
    """Fisher information of the summed NLL of softmax(W x + b) at probabilities p.

    Indexed (k, j, l, m) over W's augmented K×(K+1) matrix [W b]: Σ_i A_i[k,l]·x̃_ij·x̃_im
    with A = diag p − ppᵀ and x̃ = (x, 1).
    """
    n, k = x.shape
    xa = np.hstack([x, np.ones((n, 1))])
    a = -p[:, :, None] * p[:, None, :]
    a[:, np.arange(k), np.arange(k)] += p
    h = a.reshape(n, k * k).T @ (xa[:, :, None] * xa[:, None, :]).reshape(n, -1)
    return h.reshape(k, k, k + 1, k + 1).transpose(0, 2, 1, 3).reshape(k * (k + 1), k * (k + 1))


def z_scores(cal, x, p, w_true, b_true):
    """(estimate − truth)/standard error of [W b], both centred over the classes (the softmax cannot
    see W + 1vᵀ, b + a·1; centring is the projection onto what it sees), with the covariance
    the pseudo-inverse of the Fisher information."""
    k = x.shape[1]
    h = fisher(x, p)
    full = cal.method != "vector"
    if not full:  # vector scaling: only W's diagonal and b
        keep = [i * (k + 1) + i for i in range(k)] + [i * (k + 1) + k for i in range(k)]
        h = h[np.ix_(keep, keep)]
    cov = np.linalg.pinv(h, rcond=1e-10, hermitian=True)
    est = np.column_stack([cal.weights if full else np.diag(cal.weights), cal.bias])
    true = np.column_stack([w_true, b_true])
    diff = est - true
    diff[:, -1] -= diff[:, -1].mean()
    if full:
        diff -= diff.mean(axis=0)
        diff = diff.ravel()
    else:
        diff = np.concatenate([np.diag(diff[:, :k]), diff[:, -1]])
    return diff / np.sqrt(np.diag(cov))


N_KNOWN, K_KNOWN = 20_000, 5


@pytest.mark.parametrize(
    "method, case",
    [
        ("vector", "calibrated"),
        ("matrix", "calibrated"),
        ("dirichlet", "calibrated"),
        ("vector", "per-class scales"),
        ("matrix", "linear map"),
        ("dirichlet", "linear map"),
    ],
)
def test_known_maps_are_recovered(method, case):
    """Labels drawn from softmax(W₀ x + b₀): the unregularised fit (λ = μ = 0, the MLE) finds W₀, b₀
    within 5 standard errors (Fisher information at the truth; ≤ 30 parameters, so any |z| > 5
    has probability < 30 × 5.7e-7 under the estimator's normal law).

    calibrated: W₀ = I, b₀ = 0 on z ~ N(0, 4). per-class scales: the fit sees z∘s, W₀ = diag(1/s).
    linear map: W₀ = I + 0.3·G, b₀ ~ N(0, 0.25) on z (matrix) or log_softmax(z) (Dirichlet).
    """
    k = K_KNOWN
    rng = np.random.default_rng(17)
    z = rng.normal(0, 2, (N_KNOWN, k))
    x_true = log_softmax(z) if method == "dirichlet" else z
    w0, b0 = np.eye(k), np.zeros(k)
    if case == "linear map":
        w0, b0 = np.eye(k) + 0.3 * rng.normal(size=(k, k)), rng.normal(0, 0.5, k)
    p = softmax(x_true @ w0.T + b0)
    y = draw_labels(p, rng)
    fit_on = z
    if case == "per-class scales":
        s = np.linspace(0.4, 2.5, k)
        fit_on, w0 = z * s, np.diag(1 / s)
    cal = fit_calibrator(method, fit_on, y, **({} if method == "vector" else dict(odir_lambda=0, odir_mu=0)))
    assert cal.converged and not cal.at_bound
    x = log_softmax(fit_on) if method == "dirichlet" else fit_on
    z_ = z_scores(cal, x, p, w0, b0)
    assert np.abs(z_).max() < 5, np.round(z_, 2)


@pytest.mark.parametrize("method", LINEAR)
def test_calibrated_input_stays_put_with_the_defaults(method):
    """On perfectly calibrated logits the default fit (ODIR λ = μ = 0.01 for matrix and Dirichlet)
    changes the predictions by no more than sampling explains: mean |Δp| ≤ 3 × its delta-method
    expectation mean √(2/π)·sd(Δp), sd from the MLE's covariance (Fisher⁻¹), which ODIR's shrinkage
    towards the identity only lowers. For N = 20,000 that is 3–5e-3, below 1/√N = 7e-3."""
    k = K_KNOWN
    z, y = calibrated(N_KNOWN, k, seed=18)
    x = log_softmax(z) if method == "dirichlet" else z
    p = softmax(z)
    cal = fit_calibrator(method, z, y)
    assert cal.converged
    h = fisher(x, p)
    xa = np.hstack([x, np.ones((len(x), 1))])
    if method == "vector":  # only W's diagonal and b vary: a covariance without the others
        keep = np.zeros(k * (k + 1), dtype=bool)
        keep[[i * (k + 1) + i for i in range(k)] + [i * (k + 1) + k for i in range(k)]] = True
        cov = np.zeros_like(h)
        cov[np.ix_(keep, keep)] = np.linalg.pinv(h[np.ix_(keep, keep)], rcond=1e-10, hermitian=True)
    else:
        cov = np.linalg.pinv(h, rcond=1e-10, hermitian=True)
    c = cov.reshape(k, k + 1, k, k + 1)
    s_cov = np.einsum("ij,kjlm,im->ikl", xa, c, xa, optimize=True)  # Cov(Δs_i)
    a = -p[:, :, None] * p[:, None, :]
    a[:, np.arange(k), np.arange(k)] += p
    sd = np.sqrt(np.maximum(np.einsum("ikl,ilm,imk->ik", a, s_cov, a, optimize=True), 0))
    expected = np.sqrt(2 / np.pi) * sd.mean()
    change = np.abs(cal.predict_proba(z) - p).mean()
    assert change <= 3 * expected, (change, expected)
    assert expected < 1 / np.sqrt(N_KNOWN)


def test_histogram_of_a_calibrated_input_is_the_input():
    """Each class's bin value is the fraction of its positives, which on calibrated data has mean
    the bin's mean probability and sd √(Σ p(1−p))/n (a sum of Bernoulli draws): |z| < 5 in every bin
    with Σ p(1−p) ≥ 5 (normal enough; 75 bins, so any |z| > 5 has probability < 75 × 5.7e-7)."""
    k, bins = K_KNOWN, 15
    z, y = calibrated(N_KNOWN, k, seed=19)
    p = softmax(z)
    cal = fit_calibrator("histogram", z, y, bins=bins)
    idx = np.minimum((p * bins).astype(int), bins - 1)
    checked = 0
    for c in range(k):
        for b in range(bins):
            in_bin = idx[:, c] == b
            var = np.sum(p[in_bin, c] * (1 - p[in_bin, c]))
            if not in_bin.any():
                assert cal.values[c, b] == (b + 0.5) / bins  # an empty bin keeps its centre
            elif var >= 5:
                checked += 1
                z_ = (cal.values[c, b] - p[in_bin, c].mean()) / (np.sqrt(var) / in_bin.sum())
                assert abs(z_) < 5, (c, b, z_)
    assert checked >= 5 * 10


def test_histogram_by_hand():
    """Three fit samples, K = 3, 10 bins: the bin values, the empty-bin centres, and the rows whose
    outputs are all 0 (uniform) or come from empty bins only, worked out by hand (no probability
    near a bin edge, so the softmax's round-off cannot move one)."""
    p = np.array([[0.45, 0.13, 0.42], [0.13, 0.45, 0.42], [0.72, 0.14, 0.14]])
    cal = fit_calibrator("histogram", np.log(p), np.array([2, 2, 0]), bins=10)
    expected = np.tile((np.arange(10) + 0.5) / 10, (3, 1))
    expected[0, [1, 4, 7]] = [0.0, 0.0, 1.0]  # class 0: bin 1 holds sample 2 (label 2), 4 sample 1, 7 sample 3
    expected[1, [1, 4]] = [0.0, 0.0]  # class 1: bin 1 holds samples 1 and 3 (labels 2, 0), bin 4 sample 2
    expected[2, [1, 4]] = [0.0, 1.0]  # class 2: bin 1 holds sample 3 (label 0), bin 4 samples 1 and 2 (label 2)
    np.testing.assert_array_equal(cal.values, expected)
    q = cal.predict_proba(np.log(np.array([[0.44, 0.44, 0.12], [0.25, 0.23, 0.52], [0.72, 0.14, 0.14]])))
    np.testing.assert_array_equal(q[0], [1 / 3, 1 / 3, 1 / 3])  # bins 4, 4, 1 saw no positive: uniform
    np.testing.assert_allclose(q[1], np.array([0.25, 0.25, 0.55]) / 1.05, rtol=2 * EPS)  # empty bins 2, 2, 5: centres
    np.testing.assert_array_equal(q[2], [1.0, 0.0, 0.0])


def test_isotonic_of_a_calibrated_input_is_the_input():
    """On calibrated data each class's isotonic map, averaged over the samples of one of 10 equal-width
    probability bins, equals the bins' mean probability within 5 binomial sd (√(Σ p(1−p))/n, as for
    histogram binning). A constant piece straddling a bin edge pools labels from both sides and moves
    the two ends of a bin in opposite directions, so the bin mean moves far less than one piece's
    error (here 1–7 pieces per bin in the middle, up to 19 near 0; the largest |z| is 2.7)."""
    k, bins = K_KNOWN, 10
    z, y = calibrated(N_KNOWN, k, seed=20)
    p = softmax(z)
    cal = fit_calibrator("isotonic", z, y)
    idx = np.minimum((p * bins).astype(int), bins - 1)
    checked = 0
    for c in range(k):
        g = cal.class_map(c, p[:, c])
        for b in range(bins):
            in_bin = idx[:, c] == b
            var = np.sum(p[in_bin, c] * (1 - p[in_bin, c]))
            if var >= 5:
                checked += 1
                z_ = (g[in_bin].mean() - p[in_bin, c].mean()) / (np.sqrt(var) / in_bin.sum())
                assert abs(z_) < 5, (c, b, z_)
    assert checked >= 5 * 8


# --- never worse than the raw model on the fit split (issue 19; docs/method.md §2.12) -----------

IDENTITY_FAMILY = ("temperature", "vector", "matrix", "dirichlet")


def fit_rounding(z):
    """What float64 may add to a mean NLL of K-term log-softmaxes of row-centred logits of size ≤ max |z|:
    (K + 2)·eps·(1 + max |z|) (the slack of Calibrator.fit's safeguard)."""
    return (z.shape[1] + 2) * EPS * (1 + np.abs(z - z.max(axis=1, keepdims=True)).max())


def digits_forest():
    """Validation probabilities of a 10-tree random forest on scikit-learn's digits (the measured case of
    issue 19: temperature scaling raised this split's NLL from 0.568 to 0.987, T at its bound)."""
    datasets = pytest.importorskip("sklearn.datasets")
    ensemble = pytest.importorskip("sklearn.ensemble")
    model_selection = pytest.importorskip("sklearn.model_selection")
    x, y = datasets.load_digits(return_X_y=True)
    x_train, x_rest, y_train, y_rest = model_selection.train_test_split(x, y, test_size=0.5, random_state=0, stratify=y)
    x_val, _, y_val, _ = model_selection.train_test_split(
        x_rest, y_rest, test_size=0.5, random_state=0, stratify=y_rest
    )
    forest = ensemble.RandomForestClassifier(n_estimators=10, random_state=0).fit(x_train, y_train)
    return forest.predict_proba(x_val), y_val


@pytest.mark.parametrize("method", IDENTITY_FAMILY)
@pytest.mark.parametrize("case", ["digits_forest", "vote_fractions"])
def test_identity_family_never_raises_the_fit_nll_of_probability_inputs(method, case):
    """Fitted as trustcal assess fits probability files (log p with p floored), temperature, vector, matrix
    and Dirichlet scaling never raise the fit split's NLL as calibration.csv reports it, and need no
    fallback for that: the fit's objective at the identity map is the reported NLL. Before the one floor
    (fit on log max(p, 2.2e-308) = −708, report at 1e-12) temperature scaling raised the digits forest's
    NLL 0.568 → 0.987 (T at its bound, 100), and all four raised the vote fractions' NLL (vector scaling
    0.776 → 0.826)."""
    from trustcal.calibration.table import calibration_row
    from trustcal.numerics import floored_log

    p, y = digits_forest() if case == "digits_forest" else vote_fractions(3000, 10, 5, seed=0)
    z = floored_log(p)
    row, cal = calibration_row(0, {"val_logits": z, "val_labels": y}, method, "val")
    assert row["fit_nll_after"] <= row["fit_nll_before"] + fit_rounding(z), row
    assert not cal.summary().get("identity_fallback"), row


def confidently_wrong_logits():
    """Logits (N = 1000, K = 3, calibrated at scale 6) where 5 rows put their true class 5000 below another:
    the true-class log-probability is −5000, far below any probability floor."""
    rng = np.random.default_rng(0)
    z = rng.normal(0, 6, (1000, 3))
    y = draw_labels(softmax(z), rng)
    z[:5] = 0.0
    z[np.arange(5), (y[:5] + 1) % 3] = 5000.0
    return z, y


@pytest.mark.parametrize("method", IDENTITY_FAMILY)
def test_confidently_wrong_logits_are_fitted_on_the_nll_the_tables_report(method):
    """The NLL of logits is exact (docs/method.md §2.12): a true class 5000 nats below another costs 5000 nats in
    the reported NLL, as in PyTorch's cross-entropy, and the fit, whose objective is that NLL, lowers it with
    no fallback (under a probability floor the reported NLL would count 36 nats, and the fits, softening the
    model to shrink the 5000, would raise it)."""
    from trustcal.calibration.table import calibration_row

    torch = pytest.importorskip("torch")
    z, y = confidently_wrong_logits()
    row, cal = calibration_row(0, {"val_logits": z, "val_labels": y}, method, "val")
    exact = torch.nn.functional.cross_entropy(torch.from_numpy(z), torch.from_numpy(y).long()).item()
    assert row["fit_nll_before"] == pytest.approx(exact, rel=0, abs=fit_rounding(z))
    assert row["fit_nll_before"] > 5 * 5000 / 1000  # the five rows alone add 25 nats a sample
    assert row["fit_nll_after"] < row["fit_nll_before"] and not cal.identity_fallback


def worse_than_identity(method: str, k: int) -> Calibrator:
    """A member of ``method``'s family far from the identity map (T = 50, or scales of 0.02): on calibrated
    logits its NLL is well above the uncalibrated model's."""
    state = calibrator_class(method).identity(k).state()
    if "temperature" in state:
        state["temperature"] = np.array(50.0)
    else:
        state["weights"] = state["weights"] * 0.02
    return calibrator_from_state(method, state)


@pytest.mark.parametrize("method", IDENTITY_FAMILY)
def test_a_fit_worse_than_the_identity_falls_back_and_says_so(method, monkeypatch):
    """The safeguard (docs/method.md §2.12): when the fitted map's reported NLL on its fit split exceeds the
    uncalibrated model's (an optimiser's failure, simulated by a fit that returns a map far from the optimum),
    the identity map is used, flagged in the summary and the saved state, and named in a diagnostic that
    names the calibrator."""
    from trustcal.numerics import logits_nll

    z, y = calibrated(1000, 3, seed=4)
    cls = calibrator_class(method)
    monkeypatch.setattr(cls, "_fit", classmethod(lambda c, z, y, t_min, t_max, options: worse_than_identity(method, 3)))
    cal = fit_calibrator(method, z, y)
    raw = logits_nll(z, y)
    assert worse_than_identity(method, 3).nll(z, y) > raw + 0.1  # the simulated fit is worse
    assert cal.nll(z, y) <= raw + fit_rounding(z)
    assert cal.summary()["identity_fallback"] is True
    np.testing.assert_allclose(cal.predict_proba(z), softmax(z), rtol=0, atol=8 * EPS)
    rebuilt = calibrator_from_state(method, cal.state())
    assert rebuilt.identity_fallback and np.array_equal(rebuilt.predict_proba(z), cal.predict_proba(z))
    ((code, text),) = cal.diagnostics()  # the fallback alone: no "did not converge, the map reached is used"
    assert code == "calibrator_identity_fallback" and f"calibrator '{method}'" in text and "identity map" in text
    from trustcal.calibration.table import calibration_row

    row, _ = calibration_row(0, {"val_logits": z, "val_labels": y}, method, "val")
    assert row["identity_fallback"] is True and row["fit_nll_after"] == pytest.approx(
        row["fit_nll_before"], abs=fit_rounding(z)
    )


def test_states_saved_before_the_safeguard_still_load():
    """A calibration/{method}.npz written before identity_fallback existed loads, with the flag False."""
    z, y = calibrated(300, 3, seed=5)
    state = fit_calibrator("vector", z, y).state()
    del state["identity_fallback"]
    assert calibrator_from_state("vector", state).identity_fallback is False


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 80),
    k=st.integers(2, 5),
    zeros=st.floats(0.0, 0.9),
    method=st.sampled_from(IDENTITY_FAMILY),
)
def test_identity_family_never_raises_its_fit_nll_property(seed, n, k, zeros, method):
    """On any probabilities (a fraction ``zeros`` of the entries set to exactly 0, the true class's too)
    and labels, the identity family's fitted map has a fit-split NLL (floored, as reported) no higher than
    the raw probabilities', without falling back."""
    from trustcal.numerics import floored_log, mean_nll

    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), n) * (rng.random((n, k)) >= zeros)
    p[p.sum(axis=1) == 0, 0] = 1.0
    p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, k, n)
    z = floored_log(p)
    cal = fit_calibrator(method, z, y)
    assert mean_nll(cal.predict_proba(z), y) <= mean_nll(p, y) + fit_rounding(z)
    assert not cal.identity_fallback


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 80), k=st.integers(2, 5), bins=st.integers(1, 20))
def test_histogram_values_are_the_least_squares_per_bin_constants(seed, n, k, bins):
    """Histogram binning's objective, per class c: Σ_i (g_c(p_ic) − 1[y_i = c])² over the fit samples, g_c
    constant on each bin. The fitted values (each bin's fraction of positives, before renormalising) make
    it no larger than any other per-bin constants: the bins' mean probability (the identity map made
    piecewise constant), their centres, or random values. Rounding: each sum of ≤ 80 squares ≤ 1 is
    exact to 80·4 eps."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 3, (n, k))
    y = rng.integers(0, k, n)
    cal = fit_calibrator("histogram", z, y, bins=bins)
    p = softmax(z)
    idx = np.minimum((p * bins).astype(np.intp), bins - 1)
    for c in range(k):
        target = (y == c).astype(float)

        fitted = float(((cal.values[c][idx[:, c]] - target) ** 2).sum())
        count = np.bincount(idx[:, c], minlength=bins)
        mean_p = np.bincount(idx[:, c], weights=p[:, c], minlength=bins) / np.maximum(count, 1)
        for other in (mean_p, (np.arange(bins) + 0.5) / bins, rng.random(bins)):
            assert fitted <= float(((other[idx[:, c]] - target) ** 2).sum()) + 320 * EPS


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 80), k=st.integers(2, 5))
def test_isotonic_never_raises_its_squared_error(seed, n, k):
    """Isotonic regression's objective, per class c: Σ_i (g_c(p_ic) − 1[y_i = c])² over non-decreasing g_c
    with values in [0, 1]. The identity map is one such g_c, and so is any non-decreasing step function; the
    fitted map (before renormalising, as kept and evaluated by the calibrator) is no worse than either.
    Rounding: PAV's block means and the sums of ≤ 80 squares ≤ 1, 80·8 eps."""
    pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 3, (n, k))
    y = rng.integers(0, k, n)
    cal = fit_calibrator("isotonic", z, y)
    p = softmax(z)
    steps = np.sort(rng.random(5))
    for c in range(k):
        target = (y == c).astype(float)
        fitted = float(((cal.class_map(c, p[:, c]) - target) ** 2).sum())
        for other in (p[:, c], steps[np.minimum((p[:, c] * 5).astype(int), 4)]):
            assert fitted <= float(((other - target) ** 2).sum()) + 640 * EPS


# --- warnings that name their calibrator; calibrators asked for but not fitted (issue 19) ---------


def separable_logits(n=60):
    """Three classes separated by a margin of 5: every scale rises until it meets a bound of [0.5, 2]."""
    z = np.array([[5.0, 0.0, 0.0], [0.0, 5.0, 0.0], [0.0, 0.0, 5.0]] * (n // 3))
    return z, np.array([0, 1, 2] * (n // 3))


def test_bound_warnings_name_the_calibrator_that_hit_the_bound():
    """Each calibrator at a bound gets its own warning naming it and the bound: T = 0.5 for temperature
    scaling, the classes' scales for the others. trustcal assess used to word all of them as the
    temperature's, with "T = nan" for vector, matrix and Dirichlet scaling."""
    import warnings

    import trustcal

    z, y = separable_logits()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = trustcal.assess(
            z,
            y,
            kind="logits",
            validation=(z, y),
            calibrators=list(IDENTITY_FAMILY),
            t_min=0.5,
            t_max=2.0,
            bootstrap=None,
            sweep=None,
        )
    bound = [w for w in result.warnings if w.code.endswith("at_bound")]
    assert [w.code for w in bound] == ["temperature_at_bound"] + ["calibrator_at_bound"] * 3
    for w, method in zip(bound, IDENTITY_FAMILY, strict=True):
        assert f"calibrator '{method}'" in w.message and "nan" not in w.message, w.message
        assert "--t-min" not in w.message and "widen t_min/t_max" in w.message  # the API's words, not the CLI's
    assert "T = 0.5 is the lower bound t_min" in bound[0].message
    assert "the scale W[k,k] of classes 0, 1, 2 is at its upper bound 1/t_min = 2" in bound[2].message


def test_a_calibrator_that_did_not_converge_is_named_with_its_iterations(tmp_path, caplog):
    """Stopped at max_iter, vector scaling says so by name, in its diagnostics and in the workflow's
    calibrate log (which used to say only "the vector fit did not converge")."""
    import logging

    from trustcal import stages

    p, labels = vote_fractions(600, 10, 5, seed=1)
    logits = np.log(np.maximum(p, EPS))
    cal = fit_calibrator("vector", logits, labels, max_iter=2)
    ((code, text),) = cal.diagnostics()
    assert code == "calibrator_not_converged" and "calibrator 'vector'" in text and "after 2 iterations" in text
    path = tmp_path / "epoch001.npz"
    np.savez(path, val_logits=logits, val_labels=labels, test_logits=logits, test_labels=labels)
    with caplog.at_level(logging.WARNING):
        row = stages.calibrate_stage(
            [str(path)], tmp_path / "vector.npz", tmp_path / "vector.csv", method="vector", options={"max_iter": 2}
        ).iloc[0]
    assert not row["converged"]
    assert "[calibrator_not_converged] calibrator 'vector' (vector scaling) did not converge" in caplog.text
    assert "after 2 iterations" in caplog.text and "validation split" in caplog.text
    assert "separable" not in caplog.text  # 600 vote fractions: no map classifies them all correctly


def test_a_fit_stopped_on_a_split_the_map_separates_says_the_nll_has_no_minimum(tmp_path):
    """Stopped before converging on a fit split that the map reached classifies without error, vector, matrix
    and Dirichlet scaling say why they would not stop: the NLL has no minimum there (it falls towards 0 as the
    map is scaled up). The flag survives the saved state."""
    z, y = separable_logits()
    for method in LINEAR:
        cal = fit_calibrator(method, z, y, max_iter=2)
        assert not cal.converged and cal.separable, method
        ((code, text),) = cal.diagnostics()
        assert code == "calibrator_not_converged" and f"calibrator '{method}'" in text, text
        assert "separable by this map" in text and "NLL has no minimum" in text and "after 2 iterations" in text
        np.savez(tmp_path / "state.npz", **cal.state())
        with np.load(tmp_path / "state.npz") as state:
            assert calibrator_from_state(method, state).diagnostics() == [(code, text)]


@pytest.mark.parametrize("method", LINEAR)
@pytest.mark.parametrize("case", ["digits_forest", "vote_fractions"])
def test_fits_on_probability_files_converge(method, case):
    """On log-probabilities with many entries at the floor (a random forest's votes), where L-BFGS-B stopped at
    its 1,000-iteration limit before issue 23 (digits forest: vector, matrix and Dirichlet; vote fractions: 280–430
    iterations), the fit converges in few iterations, and the KKT conditions of Kull et al.'s objective hold at
    the reported W and b (gradient written out here): every component is 0 up to the stopping rule, except a
    scale at a bound of [1/t_max, 1/t_min], pushed outwards. The fit's tol bounds the gradient in standardised
    units (x − m)/σ: in the original ones, component (i, j) of W is ≤ tol·(σ_j + |m_j|)."""
    from trustcal.numerics import floored_log

    p, y = digits_forest() if case == "digits_forest" else vote_fractions(3000, 10, 5, seed=0)
    z = floored_log(p)
    cal = fit_calibrator(method, z, y)
    assert cal.converged and cal.iterations <= 100, cal.summary()
    x = z if method != "dirichlet" else log_softmax(z)
    n, k = x.shape
    lam, mu = (cal.odir_lambda, cal.odir_mu) if method != "vector" else (0.0, 0.0)  # the weights the fit chose
    w = np.diag(cal.weights) if method == "vector" else cal.weights
    r = softmax(x @ w.T + cal.bias)
    r[np.arange(n), y] -= 1.0
    r /= n  # d(mean NLL)/d(scores)
    off = ~np.eye(k, dtype=bool)
    grad_w = r.T @ x + np.where(off, 2 * lam / (k * (k - 1)) * w, 0.0)
    grad_b = r.sum(axis=0) + 2 * mu / k * cal.bias
    scales, grad_d = np.diag(w), np.diag(grad_w).copy()
    outward = ((scales >= 100 * (1 - 4 * EPS)) & (grad_d < 0)) | ((scales <= 0.01 * (1 + 4 * EPS)) & (grad_d > 0))
    grad_d[outward] = 0.0
    grad_w = grad_w if method != "vector" else np.zeros((k, k))
    grad_w[np.diag_indices(k)] = grad_d
    size = x.std(axis=0) + np.abs(x.mean(axis=0))
    assert (np.abs(grad_w) <= 2e-8 * size + fit_rounding(z) * np.abs(x).max()).all(), np.abs(grad_w).max()
    assert (np.abs(grad_b) <= 2e-8 + fit_rounding(z)).all(), np.abs(grad_b).max()
