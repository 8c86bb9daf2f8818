"""Tests of the top-label calibration tests with p-values (trustcal.measures.calibration_errors;
docs/method.md §5.9): Spiegelhalter's z and the Kolmogorov–Smirnov test of Arrieta-Ibarra et al. 2022.

Oracles: MAPIE (``mapie.metrics.calibration``) on real scikit-learn predictions (tests/helpers/corpus.py), the
two series of the Brownian-maximum distribution against each other, and simulations: p-values uniform
when the labels are drawn from the predicted probabilities (calibrated by construction), tiny when the
probabilities are sharpened after the draw (overconfident).
"""

import math

import numpy as np
import pytest

from trustcal.measures import metrics as M
from trustcal.measures.calibration_errors import brownian_max_abs_sf

EPS = float(np.finfo(float).eps)


def top_label(probs, labels):
    return probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)


def sample_labels(probs, rng):
    """One label per row drawn from the row's distribution (so `probs` is calibrated by construction)."""
    k = probs.shape[1]
    return (rng.random(len(probs))[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, k - 1)


def test_spiegelhalter_by_hand():
    # C = .9, .8 right/wrong: numerator (1 − .9)(1 − 1.8) + (0 − .8)(1 − 1.6) = −.08 + .48 = .4;
    # variance (.8)²·.09 + (.6)²·.16 = .0576 + .0576 = .1152 → z = .4/√.1152, p = erfc(|z|/√2)
    probs = np.array([[0.9, 0.1], [0.8, 0.2]])
    z, p = M.spiegelhalter_test(probs, np.array([0, 1]))
    assert z == pytest.approx(0.4 / math.sqrt(0.1152), rel=8 * EPS)
    assert p == pytest.approx(math.erfc(abs(z) / math.sqrt(2)), rel=8 * EPS)
    # no spread under the null (every C = 1): p = 0 with an error, undefined without
    sure = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert M.spiegelhalter_test(sure, np.array([0, 0])) == (math.inf, 0.0)
    assert all(math.isnan(v) for v in M.spiegelhalter_test(sure, np.array([0, 1])))
    assert M.ks_test(sure, np.array([0, 0])) == (math.inf, 0.0)
    assert all(math.isnan(v) for v in M.ks_test(sure, np.array([0, 1])))


def test_brownian_maximum_distribution():
    """Both series (theta series for x < 1, reflection series for x ≥ 1) summed to 400 terms agree with
    the 40-term function on either side of the switch; MAPIE's CDF (truncated at its EPSILON = 1e-8)
    agrees within 1e-8; the tail tends to 4·P(N(0,1) ≥ x) (the first reflection term, x → ∞)."""
    from mapie.metrics.calibration import kolmogorov_smirnov_cdf

    for x in (0.2, 0.5, 0.9, 1.0, 1.3, 2.0, 3.5):
        theta = 1 - 4 / math.pi * sum(
            (-1) ** k / (2 * k + 1) * math.exp(-((2 * k + 1) ** 2) * math.pi**2 / (8 * x * x)) for k in range(400)
        )
        reflection = 2 * sum((-1) ** (k + 1) * math.erfc((2 * k - 1) * x / math.sqrt(2)) for k in range(1, 400))
        # 1 − (a sum of terms ≤ 1) and a sum of erfc values ≤ 2: a few ε apart at most
        assert brownian_max_abs_sf(x) == pytest.approx(theta, abs=16 * EPS)
        assert brownian_max_abs_sf(x) == pytest.approx(reflection, abs=16 * EPS)
        assert brownian_max_abs_sf(x) == pytest.approx(1 - kolmogorov_smirnov_cdf(x), abs=1e-8)
    assert brownian_max_abs_sf(0.0) == 1.0
    assert brownian_max_abs_sf(10.0) == pytest.approx(2 * math.erfc(10 / math.sqrt(2)), rel=1e-12)
    assert brownian_max_abs_sf(10.0) > 0  # no cancellation to 0 in the far tail


def test_against_mapie_on_real_scikit_learn_predictions(corpus_members):
    """Top-label hit and confidence fed to MAPIE. Spiegelhalter's z on every member (its sums do not depend
    on the order); MAPIE's p is one-sided 1 − Φ(z), ours two-sided 2·min(Φ, 1 − Φ). The KS statistic and
    p where the test confidences are distinct: MAPIE breaks ties by a random jitter of relative size 1e-8,
    which also moves each cumulative term by ≤ 6e-8 (6 sd of its normal noise), so its walk is within
    N·6e-8 of ours."""
    from mapie.metrics import calibration as mapie

    compared = 0
    for member in corpus_members:
        conf, hit = top_label(member.p_test, member.y_test)
        z, p = M.spiegelhalter_test(member.p_test, member.y_test)
        variance = np.sum((1 - 2 * conf) ** 2 * conf * (1 - conf))
        if variance > 0:
            n = len(conf)
            ref = mapie.spiegelhalter_statistic(hit, conf)
            assert z == pytest.approx(ref, rel=4 * n * EPS, abs=4 * n * EPS / math.sqrt(variance)), member.name
            one_sided = mapie.spiegelhalter_p_value(hit, conf)
            assert p == pytest.approx(2 * min(one_sided, 1 - one_sided), abs=1e-13), member.name
        gaps = np.diff(np.sort(conf))
        if gaps.size and gaps.min() > 1e-6 and np.sum(conf * (1 - conf)) > 0:
            n, sigma = len(conf), math.sqrt(np.sum(conf * (1 - conf)))
            statistic, ks_p = M.ks_test(member.p_test, member.y_test)
            tol = n * 6e-8 / sigma
            assert statistic == pytest.approx(mapie.kolmogorov_smirnov_statistic(hit, conf), abs=tol), member.name
            # p moves by ≤ density·tol (the density of max |B| is < 1.2) plus MAPIE's 1e-8 truncation
            assert ks_p == pytest.approx(mapie.kolmogorov_smirnov_p_value(hit, conf), abs=1.2 * tol + 1e-8)
            compared += 1
    assert compared >= 5  # the KS comparison ran on enough members to mean something


def test_p_values_uniform_when_calibrated_by_construction():
    """200 data sets of N = 1000 with labels drawn from the probabilities: both p-values should be
    Uniform(0, 1). scipy's one-sample KS test of the 200 p-values against the uniform must not reject
    at level 1e-3 (fixed seed: deterministic; the asymptotic nulls' error at N = 1000 — the discrete walk's
    maximum sits slightly below the Brownian one — is far below the 0.14 distance that level needs)."""
    from scipy import stats

    rng = np.random.default_rng(2022)
    sp, ks = [], []
    for _ in range(200):
        probs = rng.dirichlet(np.full(4, 0.5), size=1000)
        labels = sample_labels(probs, rng)
        sp.append(M.spiegelhalter_test(probs, labels)[1])
        ks.append(M.ks_test(probs, labels)[1])
    assert stats.kstest(sp, "uniform").pvalue > 1e-3
    assert stats.kstest(ks, "uniform").pvalue > 1e-3


def test_p_values_tiny_when_overconfident():
    """Labels drawn from p, then p sharpened (softmax(log p / 0.5)): confidence above accuracy, so z > 0
    and both tests reject overwhelmingly at N = 2000 (the gap is ~0.1 with a standard error ~0.01)."""
    rng = np.random.default_rng(7)
    probs = rng.dirichlet(np.full(4, 0.5), size=2000)
    labels = sample_labels(probs, rng)
    sharp = probs**2 / np.sum(probs**2, axis=1, keepdims=True)
    z, p = M.spiegelhalter_test(sharp, labels)
    assert z > 0 and p < 1e-6
    assert M.ks_test(sharp, labels)[1] < 1e-6


def test_scalar_metrics_carries_the_tests():
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.full(3, 0.7), size=500)
    labels = sample_labels(probs, rng)
    out = M.scalar_metrics(probs, labels)
    assert (out["spiegelhalter_z"], out["spiegelhalter_p"]) == M.spiegelhalter_test(probs, labels)
    assert out["ks_p"] == M.ks_test(probs, labels)[1]
    conf, _ = top_label(probs, labels)
    # the statistic is N·ks_error / √(Σ C(1 − C))
    statistic = M.ks_test(probs, labels)[0]
    assert statistic == pytest.approx(len(labels) * out["ks_error"] / math.sqrt(np.sum(conf * (1 - conf))), rel=8 * EPS)


# --------------------------------------------------------------------------- Kuiper (docs/method.md §13.4)


def test_brownian_range_distribution():
    """Both series (theta series for x < 1, Feller's tail series for x ≥ 1) summed to 400 terms agree with the
    40-term function on either side of the switch; MAPIE's CDF (truncated at its EPSILON = 1e-8) agrees
    within 1e-8; the mean of the range, ∫ P(R ≥ x) dx, is 2·√(2/π) (Feller 1951); the tail tends to
    4·erfc(x/√2) = 8·P(N(0,1) ≥ x), the first tail term."""
    from mapie.metrics.calibration import kuiper_cdf

    from trustcal.measures.kuiper import brownian_range_sf

    for x in (0.3, 0.6, 0.9, 1.0, 1.4, 2.0, 3.5):
        theta = 1 - sum(
            (8 / x**2 + 2 / ((k + 0.5) ** 2 * math.pi**2)) * math.exp(-2 * (k + 0.5) ** 2 * math.pi**2 / x**2)
            for k in range(400)
        )
        tail = 4 * sum((-1) ** (k - 1) * k * math.erfc(k * x / math.sqrt(2)) for k in range(1, 400))
        assert brownian_range_sf(x) == pytest.approx(theta, abs=64 * EPS)
        assert brownian_range_sf(x) == pytest.approx(tail, abs=64 * EPS)
        assert brownian_range_sf(x) == pytest.approx(1 - kuiper_cdf(x), abs=1e-8)
    grid = np.linspace(0, 12, 24_001)
    sf = np.array([brownian_range_sf(x) for x in grid])
    mean = float(np.sum((sf[1:] + sf[:-1]) / 2) * (grid[1] - grid[0]))  # trapezoids; the tail beyond 12 is < 1e-30
    assert mean == pytest.approx(2 * math.sqrt(2 / math.pi), abs=1e-7)
    assert brownian_range_sf(0.0) == 1.0 and math.isnan(brownian_range_sf(math.nan))
    assert brownian_range_sf(10.0) == pytest.approx(4 * math.erfc(10 / math.sqrt(2)), rel=1e-12)
    assert brownian_range_sf(10.0) > 0  # no cancellation to 0 in the far tail


def test_kuiper_by_hand():
    # C = .6, .7, .8 (increasing) with hits 1, 0, 1: walk .4, −.3, −.1 → with S_0 = 0 the range is .4 − (−.3) = .7;
    # σ² = .24 + .21 + .16 = .61
    probs = np.array([[0.6, 0.4], [0.7, 0.3], [0.8, 0.2]])
    statistic, p = M.kuiper_test(probs, np.array([0, 1, 0]))
    assert statistic == pytest.approx(0.7 / math.sqrt(0.61), rel=8 * EPS)
    assert p == M.brownian_range_sf(statistic)
    # a walk on one side of 0: the range reaches back to S_0 = 0 (MAPIE's would not), so it equals the KS maximum
    statistic, _ = M.kuiper_test(probs, np.array([1, 1, 1]))
    assert statistic == pytest.approx(M.ks_test(probs, np.array([1, 1, 1]))[0], rel=8 * EPS)
    sure = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert M.kuiper_test(sure, np.array([0, 0])) == (math.inf, 0.0)
    assert all(math.isnan(v) for v in M.kuiper_test(sure, np.array([0, 1])))


def test_kuiper_against_mapie_on_real_scikit_learn_predictions(corpus_members):
    """Where the test confidences are distinct (MAPIE jitters ties), the statistic equals MAPIE's range of its
    cumulative differences extended to include S_0 = 0 (MAPIE's ``kuiper_statistic`` leaves it out), within
    MAPIE's jitter (as for the KS test above: N·6e-8 on the walk); the p-value is MAPIE's CDF at our statistic."""
    from mapie.metrics import calibration as mapie

    compared = 0
    for member in corpus_members:
        conf, hit = top_label(member.p_test, member.y_test)
        gaps = np.diff(np.sort(conf))
        if not (gaps.size and gaps.min() > 1e-6 and np.sum(conf * (1 - conf)) > 0):
            continue
        n, sigma = len(conf), math.sqrt(np.sum(conf * (1 - conf)))
        walk = mapie.cumulative_differences(hit, conf) * n  # Σ_{j≤i} (hit_j − C_j), i = 1 … N
        want = (max(walk.max(), 0.0) - min(walk.min(), 0.0)) / sigma
        assert mapie.kuiper_statistic(hit, conf) == pytest.approx((walk.max() - walk.min()) / sigma, rel=1e-12)
        statistic, p = M.kuiper_test(member.p_test, member.y_test)
        tol = 2 * n * 6e-8 / sigma  # two ends of the range, each moved by the jitter
        assert statistic == pytest.approx(want, abs=tol), member.name
        assert p == pytest.approx(1 - mapie.kuiper_cdf(statistic), abs=1e-8), member.name
        compared += 1
    assert compared >= 5


def test_kuiper_p_values_uniform_when_calibrated_and_tiny_when_overconfident():
    """As the KS test above: 200 data sets of N = 1000 calibrated by construction give p-values that scipy's
    one-sample KS test does not reject as Uniform(0, 1) at level 1e-3; sharpened probabilities reject."""
    from scipy import stats

    rng = np.random.default_rng(1951)
    ps = []
    for _ in range(200):
        probs = rng.dirichlet(np.full(4, 0.5), size=1000)
        ps.append(M.kuiper_test(probs, sample_labels(probs, rng))[1])
    assert stats.kstest(ps, "uniform").pvalue > 1e-3
    probs = rng.dirichlet(np.full(4, 0.5), size=2000)
    labels = sample_labels(probs, rng)
    sharp = probs**2 / np.sum(probs**2, axis=1, keepdims=True)
    assert M.kuiper_test(sharp, labels)[1] < 1e-6


def test_scalar_metrics_carries_kuiper():
    rng = np.random.default_rng(6)
    probs = rng.dirichlet(np.full(3, 0.7), size=500)
    labels = sample_labels(probs, rng)
    assert M.scalar_metrics(probs, labels)["kuiper_p"] == M.kuiper_test(probs, labels)[1]
    # with ties in the confidences the walk is read at the end of each group: the order of tied rows is irrelevant
    probs[:100] = probs[0]
    perm = rng.permutation(500)
    assert M.kuiper_test(probs[perm], labels[perm]) == pytest.approx(M.kuiper_test(probs, labels), rel=64 * EPS)
