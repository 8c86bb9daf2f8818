"""Temperature scaling (docs/method.md §2)."""

import numpy as np
import pytest

from trustcal.calibration.temperature import fit_temperature, log_softmax, nll_from_logits, softmax


def sample_logits(t_true, n=20000, k=10, seed=0):
    """Labels drawn from softmax(z / t_true): the NLL-optimal temperature is t_true."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 3, size=(n, k))
    p = softmax(z, t_true)
    labels = (p.cumsum(1) > rng.random((n, 1))).argmax(1)
    return z, labels


@pytest.mark.parametrize("t_true", [0.5, 1.0, 2.5])
def test_recovers_known_temperature(t_true):
    z, y = sample_logits(t_true)
    fit = fit_temperature(z, y)
    assert fit.converged and not fit.at_bound
    assert fit.temperature == pytest.approx(t_true, rel=0.05)
    assert fit.nll_after <= fit.nll_before + 1e-12


def test_optimum_has_zero_derivative():
    z, y = sample_logits(1.7, n=3000, seed=4)
    t = fit_temperature(z, y).temperature
    h = 1e-4
    assert nll_from_logits(z, y, t) <= nll_from_logits(z, y, t * (1 + h))
    assert nll_from_logits(z, y, t) <= nll_from_logits(z, y, t * (1 - h))


def test_stays_in_bounds_and_reports_it():
    # Perfectly separated with a margin: NLL keeps falling as T → 0.
    z = np.array([[5.0, 0.0], [0.0, 5.0]] * 10)
    y = np.array([0, 1] * 10)
    fit = fit_temperature(z, y, t_min=0.05, t_max=20)
    assert fit.temperature == 0.05 and fit.at_bound
    # Every prediction wrong: NLL falls as T → ∞ (towards uniform).
    fit = fit_temperature(z, 1 - y, t_min=0.05, t_max=20)
    assert fit.temperature == 20 and fit.at_bound
    assert 0 < fit.temperature < np.inf


def test_constant_logits_keep_t_one():
    fit = fit_temperature(np.zeros((5, 3)), np.array([0, 1, 2, 0, 1]))
    assert fit.temperature == 1.0 and fit.converged


def test_accuracy_unchanged_by_temperature():
    z, y = sample_logits(2.0, n=2000)
    t = fit_temperature(z, y).temperature
    assert (softmax(z, t).argmax(1) == softmax(z).argmax(1)).all()


def test_softmax_is_stable_for_huge_logits():
    z = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [1e4, 1e4, 1e4 - 1]])
    p = softmax(z)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(1), 1.0)
    np.testing.assert_allclose(p[0], [1, 0, 0])
    np.testing.assert_allclose(p[1], [1 / 3] * 3)
    assert np.isfinite(log_softmax(z)).all()
    assert np.isfinite(nll_from_logits(z, np.array([1, 0, 2]))).all()


def test_matches_torch_lbfgs_on_log_t():
    torch = pytest.importorskip("torch")
    z, y = sample_logits(1.8, n=4000, seed=2)
    log_t = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    zt, yt = torch.from_numpy(z), torch.from_numpy(y)
    opt = torch.optim.LBFGS([log_t], lr=0.5, max_iter=200, line_search_fn="strong_wolfe", tolerance_grad=1e-12)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(zt / log_t.exp(), yt)
        loss.backward()
        return loss

    opt.step(closure)
    assert fit_temperature(z, y).temperature == pytest.approx(log_t.exp().item(), rel=1e-4)
