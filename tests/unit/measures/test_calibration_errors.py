"""Tests of the smooth ECE, L2 ECE, Brier decomposition, KS error and selective-prediction
risk (trustcal.measures.calibration_errors; docs/method.md §5.4–5.8).

Oracles: relplot 1.0.3 (smooth ECE), uncertainty-calibration 0.1.4 (`calibration`: L2 ECE,
coverage–accuracy area), hand-computed values, and inputs whose answer is known by construction.
"""

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trustcal.measures import calibration_errors as CE
from trustcal.measures import metrics as M

EPS = float(np.finfo(float).eps)
SETTINGS = settings(max_examples=30, deadline=None)


def sample_labels(probs, rng):
    """One label per row drawn from the row's distribution (so `probs` is calibrated by construction)."""
    k = probs.shape[1]
    return (rng.random(len(probs))[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, k - 1)


def sharpen(probs, temperature):
    """softmax(log p / T): T < 1 sharpens (overconfident), T > 1 flattens (underconfident)."""
    z = probs ** (1.0 / temperature)
    return z / z.sum(axis=1, keepdims=True)


def top_label(probs, labels):
    return probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)


def cases(n, seed):
    """(name, probs, labels): independent labels, calibrated by construction, over- and underconfident."""
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.full(10, 0.4), size=n)
    y = sample_labels(truth, rng)
    return [
        ("random", truth, rng.integers(0, 10, n)),
        ("calibrated", truth, y),
        ("overconfident", sharpen(truth, 0.5), y),
        ("underconfident", sharpen(truth, 2.0), y),
    ]


def load_mnist(author_predictions, name):
    df = pd.read_csv(author_predictions / "MNIST_PRED" / f"{name}.csv.gz")
    return df[[f"Class_{k}_Probability" for k in range(10)]].to_numpy(), df["True Label"].to_numpy()


# --- §5.4 smooth ECE against relplot ----------------------------------------------------


def smece_tolerance(sigma):
    # relplot convolves by direct summation: each smoothed value is a sum of ≤ 3E products
    # (E = ⌊max(2000, round(20/σ))/2⌋ + 1 grid points), so its relative round-off is ≤ 3E·ε; our FFT
    # convolution is within log2(n_fft)·ε. smECE = Σ|num|/Σ density inherits that relative error.
    e = max(2000, round(20 / sigma)) // 2 + 1
    return 3 * e * EPS


@pytest.mark.parametrize("n,seed", [(300, 1), (5000, 2)])
def test_smece_matches_relplot(n, seed):
    import relplot

    for name, probs, labels in cases(n, seed):
        conf, hit = top_label(probs, labels)
        ref, ref_sigma = relplot.smECE(conf, hit, return_width=True)
        ours, sigma = M.smece(probs, labels, return_sigma=True)
        assert sigma == ref_sigma, name  # same bisection path (bandwidth to within 2^-10)
        assert ours == pytest.approx(ref, rel=smece_tolerance(sigma), abs=1e-300), name
        assert M.smece(probs, labels) == ours


def test_smece_matches_relplot_on_author_mnist_file(author_predictions):
    import relplot

    probs, labels = load_mnist(author_predictions, "bef_10")  # float32 values, many confidences of exactly 1.0
    conf, hit = top_label(probs, labels)
    ref, ref_sigma = relplot.smECE(conf, hit, return_width=True)
    ours, sigma = M.smece(probs, labels, return_sigma=True)
    assert sigma == ref_sigma
    assert ours == pytest.approx(ref, rel=smece_tolerance(sigma))


@pytest.mark.parametrize("sigma", [0.5, 0.05, 0.004])  # 0.004 < 0.01: a finer grid (E = 2501)
def test_smooth_ece_at_fixed_bandwidth_matches_relplot(sigma):
    import relplot

    _, probs, labels = cases(2000, 3)[2]
    conf, hit = top_label(probs, labels)
    assert CE.smooth_ece(conf, hit, sigma) == pytest.approx(
        relplot.smECE_sigma(conf, hit, sigma), rel=smece_tolerance(sigma)
    )


def test_smece_zero_when_every_group_is_exactly_calibrated():
    # confidence 3/4 on every row and exactly 3 of each 4 rows right: the residuals conf − hit
    # (−1/4 ×3, +3/4 ×1, all dyadic) sit on the same grid point and cancel exactly.
    probs = np.tile([0.75, 0.125, 0.125], (40, 1))
    labels = np.tile([0, 0, 0, 1], 10)
    value, sigma = M.smece(probs, labels, return_sigma=True)
    assert value == 0.0
    assert sigma < 2e-3  # the search ran down to its floor (σ < eps = 1e-3 ends it)


def test_smece_bandwidth_is_the_fixed_point():
    # relplot's search keeps the smallest tested σ with σ ≥ smECE_σ; the bisection interval is 2^-10,
    # so smECE_σ ≤ σ and, at the neighbour σ − 2^-10 that failed, smECE > σ − 2^-10.
    _, probs, labels = cases(3000, 4)[2]
    value, sigma = M.smece(probs, labels, return_sigma=True)
    conf, hit = top_label(probs, labels)
    assert value <= sigma
    assert CE.smooth_ece(conf, hit, sigma - 2**-10) > sigma - 2**-10


# --- §5.5 L2 ECE against `calibration` ------------------------------------------------


def test_l2_ece_by_hand():
    # metrics' hand case (tests/unit/measures/test_metrics.py HAND_P): width bins of 10 with
    #   (0.2, 0.3]: conf .30 (right), .25 (wrong) → gap² = (.275 − .5)² = .050625, n = 2
    #   (0.4, 0.5]: conf .50 (wrong)              → gap² = .25,                    n = 1
    #   (0.9, 1.0]: conf 1.0 (right), .95 (wrong) → gap² = (.975 − .5)² = .225625, n = 2
    # plug-in = sqrt((2·.050625 + .25 + 2·.225625)/5) = sqrt(.1605)
    # debiased: n ≥ 2 bins lose acc(1 − acc)/(n − 1) = .25 → .050625 − .25 < 0 and .225625 − .25 < 0,
    # the single-sample bin counts 0 → negative total → clamped to 0
    probs = np.array(
        [[0.30, 0.25, 0.25, 0.20], [0.50, 0.50, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.05, 0.95, 0.0, 0.0], [0.25] * 4]
    )
    labels = np.array([0, 1, 0, 0, 3])
    assert M.l2_ece(probs, labels, 10, binning="width") == pytest.approx(math.sqrt(0.1605))
    assert M.l2_ece(probs, labels, 10, binning="width", debias=True) == 0.0
    # one bin: |mean conf − accuracy| = |.6 − .4|; debiased: .04 − .4·.6/4 = −.02 → 0
    assert M.l2_ece(probs, labels, 1) == pytest.approx(0.2)
    assert M.l2_ece(probs, labels, 1, debias=True) == 0.0


def test_l2_ece_matches_calibration_package():
    """`calibration.get_calibration_error(..., p=2, mode="top-label")` on continuous confidences uses
    15 equal-mass bins: `np.array_split` of the sorted confidences (the first N mod 15 bins one larger)
    with edges at midpoints between neighbours. Ours gives rank r the bin ⌊15r/N⌋. With N a multiple
    of 15 and distinct confidences (asserted) both make the same bins. Its equal-width scheme
    (`get_equal_prob_bins` + `searchsorted`) is right-closed (i/M, (i+1)/M], as ours.
    """
    import calibration

    for name, probs, labels in cases(1500, 5):
        conf, _ = top_label(probs, labels)
        assert np.unique(conf).size == conf.size
        assert not calibration.is_discrete(probs)  # else it would bin by distinct values
        for debias in (False, True):
            ours = M.l2_ece(probs, labels, 15, binning="mass", debias=debias)
            ref = calibration.get_calibration_error(probs, labels, p=2, debias=debias, mode="top-label")
            # compared squared (the root amplifies round-off near 0): each bin mean carries ≤ n·ε relative
            # round-off from its sum, a squared gap minus a variance ≤ 4 such errors → |Δ| ≤ 4·N·ε
            assert ours**2 == pytest.approx(ref**2, abs=4 * len(labels) * EPS), (name, debias)
            ours_w = M.l2_ece(probs, labels, 10, binning="width", debias=debias)
            ref_w = calibration.lower_bound_scaling_ce(
                probs,
                labels,
                p=2,
                debias=debias,
                num_bins=10,
                binning_scheme=calibration.get_equal_prob_bins,
                mode="top-label",
            )
            assert ours_w**2 == pytest.approx(ref_w**2, abs=4 * len(labels) * EPS), (name, debias)
        if name == "overconfident":  # the debiased estimate is not trivially clamped to 0 here
            assert M.l2_ece(probs, labels, 15, debias=True) > 0.05


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(2, 300), st.integers(1, 20))
def test_l2_ece_properties(seed, n, n_bins):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(4, 0.5), size=n)
    labels = rng.integers(0, 4, n)
    for binning in ("width", "mass"):
        plug = M.l2_ece(probs, labels, n_bins, binning)
        deb = M.l2_ece(probs, labels, n_bins, binning, debias=True)
        # Jensen over the bin weights: L1 ECE ≤ L2 ECE on the same bins; the debiased estimate
        # subtracts non-negative variances, so it is ≤ the plug-in (round-off: a few ε)
        assert M.ece(probs, labels, n_bins, binning) <= plug + 1e-12
        assert 0 <= deb <= plug + 1e-12


# --- §5.6 Brier decomposition ----------------------------------------------------------


def test_brier_decomposition_by_hand():
    # K = 2, bins (0, .5], (.5, 1]. Class 1 column f = [.1, .3, .6, .9], o = [0, 1, 1, 1], ō = 3/4:
    #   bin A {.1, .3}: f̄ = .2, ō = .5;  bin B {.6, .9}: f̄ = .75, ō = 1
    #   REL = (2·.3² + 2·.25²)/4 = .07625; RES = (2·.25² + 2·.25²)/4 = .0625; UNC = .1875
    #   WB  = [(.01 + .01 − 2(.05 + .05)) + (.0225 + .0225 − 0)]/4 = (−.18 + .045)/4 = −.03375
    # Class 0 is the mirror image (f → 1 − f, o → 1 − o): the same four numbers. Totals:
    #   .1525, .125, .375, −.0675; Brier = 2·(.01 + .49 + .16 + .01)/4 = .335 = .1525 − .125 + .375 − .0675
    probs = np.array([[0.9, 0.1], [0.7, 0.3], [0.4, 0.6], [0.1, 0.9]])
    labels = np.array([0, 1, 1, 1])
    got = M.brier_decomposition(probs, labels, n_bins=2)
    assert got == pytest.approx(
        {
            "brier_reliability": 0.1525,
            "brier_resolution": 0.125,
            "brier_uncertainty": 0.375,
            "brier_within_bin": -0.0675,
        }
    )
    assert M.brier(probs, labels) == pytest.approx(0.335)


def decomposition_sum(d):
    return d["brier_reliability"] - d["brier_resolution"] + d["brier_uncertainty"] + d["brier_within_bin"]


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.integers(2, 8), st.integers(1, 20))
def test_brier_decomposition_is_exact(seed, n, k, n_bins):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.4), size=n)
    labels = rng.integers(0, k, n)
    d = M.brier_decomposition(probs, labels, n_bins)
    # each term is (1/N)·Σ of ≤ N·K products of magnitude ≤ 4; float64 summation error ≤ N·K·ε per
    # unit of magnitude, summed over the five quantities compared
    assert decomposition_sum(d) == pytest.approx(M.brier(probs, labels), abs=4 * n * k * EPS)
    ybar = np.bincount(labels, minlength=k) / n
    assert d["brier_uncertainty"] == pytest.approx(float(np.sum(ybar * (1 - ybar))), abs=k * EPS)
    assert d["brier_reliability"] >= 0 and d["brier_resolution"] >= 0


def test_brier_within_bin_vanishes_for_forecasts_constant_in_each_bin():
    # every column takes one value per bin of 10 ((.1, .2], (.4, .5], (.8, .9] and their mirrors):
    # Murphy's three-term decomposition is then exact and the within-bin term is 0
    rng = np.random.default_rng(6)
    p1 = rng.choice([0.15, 0.45, 0.85], size=600)
    probs = np.stack([1 - p1, p1], axis=1)
    labels = sample_labels(probs, rng)
    d = M.brier_decomposition(probs, labels, 10)
    n, k = probs.shape
    # f − f̄ is 0 up to the round-off of f̄ (a mean of ≤ N equal values: ≤ N·ε), times |f − 2o| ≤ 2
    assert abs(d["brier_within_bin"]) <= 2 * n * k * EPS
    assert decomposition_sum(d) == pytest.approx(M.brier(probs, labels), abs=4 * n * k * EPS)
    # and a continuous forecast does have a within-bin term
    probs2 = np.stack([1 - rng.random(600), np.zeros(600)], axis=1)
    probs2[:, 1] = 1 - probs2[:, 0]
    assert abs(M.brier_decomposition(probs2, labels, 10)["brier_within_bin"]) > 1e-4


def test_brier_reliability_zero_for_a_perfect_classifier():
    y = np.array([0, 1, 2, 0, 1, 2])
    d = M.brier_decomposition(np.eye(3)[y], y, 10)
    # f ∈ {0, 1} and outcome = forecast: REL = 0, WB = 0, RES = UNC = 3·(1/3)(2/3) = 2/3, Brier = 0
    assert d == pytest.approx(
        {"brier_reliability": 0.0, "brier_resolution": 2 / 3, "brier_uncertainty": 2 / 3, "brier_within_bin": 0.0}
    )


# --- §5.7 KS calibration error ---------------------------------------------------------


def test_ks_error_by_hand():
    # sorted conf .6 .7 .8 .9, hit 1 0 1 1: hit − conf = .4, −.7, .2, .1;
    # cumulative .4, −.3, −.1, 0 → max |·| = .4 → KS = .4/4
    probs = np.array([[0.9, 0.1], [0.3, 0.7], [0.8, 0.2], [0.6, 0.4]])
    labels = np.array([0, 0, 0, 0])
    assert M.ks_error(probs, labels) == pytest.approx(0.1)


def test_ks_error_zero_when_every_confidence_group_is_calibrated():
    # 4 rows at .75 with 3 right, 2 rows at .5 with 1 right (tie → class 0), 3 rows at 1.0 all right:
    # the cumulative sum of hit − conf is 0 at the end of every group (values dyadic: exact)
    probs = np.array([[0.75, 0.25]] * 4 + [[0.5, 0.5]] * 2 + [[1.0, 0.0]] * 3)
    labels = np.array([0, 0, 0, 1, 0, 1, 0, 0, 0])
    assert M.ks_error(probs, labels) == 0.0
    # tied rows are evaluated as a group: a walk inside the .75 group would reach |−.25 −.25| or more
    assert M.ks_error(probs[::-1], labels[::-1]) == 0.0


def ks_brute_force(probs, labels):
    """Gupta et al.'s KS written as a maximum over distinct confidence values v of
    |Σ_{C_i ≤ v} (hit_i − C_i)| / N (masks, no sorting)."""
    conf, hit = top_label(probs, labels)
    return max(abs(np.sum((hit - conf)[conf <= v])) for v in np.unique(conf)) / len(conf)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 150), st.integers(2, 5), st.booleans())
def test_ks_error_brute_force_and_order_invariance(seed, n, k, coarse):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.5), size=n)
    if coarse:  # many tied confidences
        probs = np.round(probs * 4) / 4 + 1e-3
        probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, n)
    value = M.ks_error(probs, labels)
    # both sum ≤ N terms of magnitude ≤ 1 in different orders: |Δ| ≤ 2·N·ε / N per unit
    assert value == pytest.approx(ks_brute_force(probs, labels), abs=2 * n * EPS)
    perm = rng.permutation(n)
    assert M.ks_error(probs[perm], labels[perm]) == pytest.approx(value, abs=2 * n * EPS)
    assert 0 <= value <= 1


# --- §5.8 selective prediction -----------------------------------------------------------


def test_risk_coverage_aurc_eaurc_by_hand():
    # conf .9 .8 .7 .6 (already decreasing), right/wrong/right/wrong:
    #   risk_k = 0/1, 1/2, 1/3, 2/4 → AURC = (0 + 1/2 + 1/3 + 1/2)/4 = 1/3
    #   oracle (2 errors last): 0, 0, 1/3, 2/4 → AURC* = 5/24; E-AURC = 1/3 − 5/24 = 1/8
    probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]])
    labels = np.array([0, 1, 0, 1])
    rc = M.risk_coverage(probs, labels)
    assert list(rc.columns) == ["coverage", "risk", "threshold"]
    np.testing.assert_allclose(rc["coverage"], [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(rc["risk"], [0, 1 / 2, 1 / 3, 1 / 2])
    np.testing.assert_allclose(rc["threshold"], [0.9, 0.8, 0.7, 0.6])
    assert M.aurc(probs, labels) == pytest.approx(1 / 3)
    assert M.eaurc(probs, labels) == pytest.approx(1 / 8)
    # any order of the rows gives the same curve
    perm = [2, 0, 3, 1]
    pd.testing.assert_frame_equal(M.risk_coverage(probs[perm], labels[perm]), rc)


def test_risk_coverage_ties_are_one_group():
    # conf .9, .7, .7, .6; the two .7 rows are one right, one wrong. Inside the tie the risk is the
    # expected one under a random order: at k = 2 half an error → 1/4; at k = 3, 1 error → 1/3.
    # AURC = (0 + 1/4 + 1/3 + 1/2)/4 = 13/48, whichever of the tied rows comes first.
    probs = np.array([[0.9, 0.1], [0.7, 0.3], [0.7, 0.3], [0.6, 0.4]])
    for labels in ([0, 1, 0, 1], [0, 0, 1, 1]):
        rc = M.risk_coverage(probs, np.array(labels))
        np.testing.assert_allclose(rc["risk"], [0, 1 / 4, 1 / 3, 1 / 2])
        assert M.aurc(probs, np.array(labels)) == pytest.approx(Fraction(13, 48))
    # points: an int m gives coverages j/m; a coverage is rounded up to the next k/N
    labels = np.array([0, 1, 0, 1])
    np.testing.assert_allclose(M.risk_coverage(probs, labels, points=2)["risk"], [1 / 4, 1 / 2])
    np.testing.assert_allclose(M.risk_coverage(probs, labels, points=[0.3, 1.0])["coverage"], [0.5, 1.0])
    with pytest.raises(ValueError, match="points"):
        M.risk_coverage(probs, labels, points=[0.0])


def test_aurc_matches_calibration_selective_stats():
    """`calibration.get_selective_stats(conf, correct)` returns the mean over k of the accuracy of
    the k most confident, so AURC = 1 − that area (it breaks ties by its sort; none here, asserted)."""
    import calibration

    for name, probs, labels in cases(4000, 7):
        conf, hit = top_label(probs, labels)
        assert np.unique(conf).size == conf.size
        area, _ = calibration.get_selective_stats(conf, hit)
        # both average N running means of 0/1 values; each running mean is exact to ≤ N·ε
        assert M.aurc(probs, labels) == pytest.approx(1 - area, abs=len(labels) * EPS), name


def test_eaurc_zero_for_an_oracle_ranking_and_closed_form_of_the_oracle():
    rng = np.random.default_rng(8)
    n = 1000
    labels = rng.integers(0, 3, n)
    right = rng.random(n) < 0.7
    conf = np.where(right, 0.6 + 0.4 * rng.random(n), 0.4 + 0.19 * rng.random(n))  # every error ranks last
    probs = np.zeros((n, 3))
    pred = np.where(right, labels, (labels + 1) % 3)
    probs[np.arange(n), pred] = conf
    probs[np.arange(n), (pred + 1) % 3] = 1 - conf
    # AURC of this ranking equals the oracle's: E-AURC = 0 (round-off of two means of N terms ≤ 1)
    assert M.eaurc(probs, labels) == pytest.approx(0.0, abs=2 * n * EPS)
    # Geifman et al.: AURC* → r + (1 − r) ln(1 − r) (r the error rate); the discrete sum is the
    # right-endpoint Riemann sum of ∫_0^r x/(1 − r + x) dx with step 1/N, within r/N of it
    r = 1 - right.mean()
    assert M.aurc(probs, labels) == pytest.approx(r + (1 - r) * math.log(1 - r), abs=r / n)


def three_class_predictions(seed: int, n: int, coarse: bool):
    """N random 3-class probability rows, their labels and the generator that drew them (for more draws);
    ``coarse``: rounded to fifths, so confidences tie."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(3, 0.7), size=n)
    if coarse:
        probs = np.round(probs * 5) / 5 + 1e-3
        probs /= probs.sum(axis=1, keepdims=True)
    return probs, rng.integers(0, 3, n), rng


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 200), st.booleans())
def test_selective_properties(seed, n, coarse):
    probs, labels, rng = three_class_predictions(seed, n, coarse)
    rc = M.risk_coverage(probs, labels)
    conf, hit = top_label(probs, labels)
    assert rc["risk"].iloc[-1] == pytest.approx(1 - hit.mean(), abs=n * EPS)
    assert (np.diff(rc["threshold"]) <= 0).all()
    assert M.aurc(probs, labels) == pytest.approx(rc["risk"].mean(), abs=n * EPS)
    assert M.eaurc(probs, labels) >= -n * EPS  # no ranking beats the oracle
    perm = rng.permutation(n)
    assert M.aurc(probs[perm], labels[perm]) == pytest.approx(M.aurc(probs, labels), abs=n * EPS)


def augrc_by_thresholds(probs, labels):
    """AUGRC from its definition: for every threshold t (each distinct confidence, and +∞ for
    coverage 0) the coverage P(C ≥ t) and the generalized risk P(C ≥ t, wrong); the exact area
    under the piecewise-linear curve through those points (trapezoids), in exact fractions."""
    conf, hit = top_label(probs, labels)
    n = len(conf)
    points = [(Fraction(0), Fraction(0))] + [
        (Fraction(int(np.sum(conf >= t)), n), Fraction(int(np.sum((conf >= t) & (hit == 0))), n))
        for t in np.unique(conf)
    ]
    points.sort()
    return sum((c1 - c0) * (g0 + g1) / 2 for (c0, g0), (c1, g1) in zip(points, points[1:]))


def test_augrc_by_hand():
    # conf .9 .8 .7 .6, right/wrong/right/wrong: errors accepted A_k = 0, 1, 1, 2 at k = 1..4, so the
    # generalized risk is 0, 1/4, 1/4, 2/4 at coverage 1/4 … 1 (0 at coverage 0); trapezoids of width
    # 1/4: Σ (g_{k−1} + g_k)/2 · 1/4 = (0 + 1 + 2 + 3)/(2·16) = 3/16
    probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]])
    assert M.augrc(probs, np.array([0, 1, 0, 1])) == pytest.approx(3 / 16, abs=4 * EPS)
    assert M.augrc(probs, np.zeros(4, int)) == 0.0  # all right: nothing accepted is wrong
    # all wrong: g(c) = c, area 1/2 exactly (the curve starts at (0, 0))
    assert M.augrc(probs, np.ones(4, int)) == pytest.approx(1 / 2, abs=4 * EPS)
    # ties: the two .7 rows form one group whatever their order: conf .9 .7 .7 .6 with the tie one
    # right one wrong → A = 0 at 1/4, 1 at 3/4 (linear in between), 2 at 1 → (0 + 2·(0+1) + (1+2))/32
    tied = np.array([[0.9, 0.1], [0.7, 0.3], [0.7, 0.3], [0.6, 0.4]])
    for labels in ([0, 1, 0, 1], [0, 0, 1, 1]):
        assert M.augrc(tied, np.array(labels)) == pytest.approx(5 / 32, abs=4 * EPS)


def test_augrc_uninformative_and_oracle_closed_forms():
    """One tie group (an uninformative score) with error rate r: g(c) = r·c, AUGRC = r/2 exactly;
    the oracle ranking (every error last): g = 0 up to coverage 1 − r, then slope 1: AUGRC = r²/2."""
    rng = np.random.default_rng(3)
    n = 1000
    labels = rng.integers(0, 3, n)
    flat = np.full((n, 3), 1 / 3)  # argmax 0 everywhere, one confidence
    r = float(np.mean(labels != 0))
    assert M.augrc(flat, labels) == pytest.approx(r / 2, abs=4 * n * EPS)
    right = rng.random(n) < 0.7
    conf = np.where(right, 0.6 + 0.4 * rng.random(n), 0.4 + 0.19 * rng.random(n))
    pred = np.where(right, labels, (labels + 1) % 3)
    probs = np.zeros((n, 3))
    probs[np.arange(n), pred] = conf
    probs[np.arange(n), (pred + 1) % 3] = 1 - conf
    r = 1 - right.mean()
    # a sum of N terms ≤ 2N over 2N²: rounding ≤ N·ε relative to values ≤ 1
    assert M.augrc(probs, labels) == pytest.approx(r**2 / 2, abs=4 * n * EPS)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 120), st.booleans())
def test_augrc_equals_its_definition_over_thresholds(seed, n, coarse):
    """Against the brute force over thresholds (exact fractions), with and without ties; invariant
    under a permutation of the rows; equal to the mean of the generalized risk k/N·risk_k of
    :func:`risk_coverage` minus the last half-step (trapezoids vs right endpoints)."""
    probs, labels, rng = three_class_predictions(seed, n, coarse)
    got = M.augrc(probs, labels)
    # N trapezoids, each of a few operations on numbers ≤ 2N, divided by 2N²: 4·N·ε bounds the rounding
    assert got == pytest.approx(float(augrc_by_thresholds(probs, labels)), abs=4 * n * EPS)
    perm = rng.permutation(n)
    assert M.augrc(probs[perm], labels[perm]) == pytest.approx(got, abs=4 * n * EPS)
    rc = M.risk_coverage(probs, labels)
    generalized = rc["coverage"] * rc["risk"]
    assert got == pytest.approx(generalized.mean() - generalized.iloc[-1] / (2 * n), abs=4 * n * EPS)


# --- scalar_metrics carries every new number ---------------------------------------------------


def test_scalar_metrics_new_keys_equal_the_functions():
    _, probs, labels = cases(3000, 9)[2]
    out = M.scalar_metrics(probs, labels)
    assert out["smece"] == M.smece(probs, labels)
    assert out["l2_ece"] == M.l2_ece(probs, labels, 15, "mass")
    assert out["l2_ece_debiased"] == M.l2_ece(probs, labels, 15, "mass", debias=True)
    assert out["ks_error"] == M.ks_error(probs, labels)
    assert out["aurc"] == M.aurc(probs, labels)
    assert out["eaurc"] == M.eaurc(probs, labels)
    assert out["augrc"] == M.augrc(probs, labels)
    for key, value in M.brier_decomposition(probs, labels, 10).items():
        assert out[key] == pytest.approx(value, rel=1e-12, abs=1e-15)
    assert decomposition_sum(out) == pytest.approx(out["brier"], abs=4 * probs.size * EPS)
    # reliability_bins ≠ ece_bins[0]: the decomposition uses the reliability bins
    other = M.scalar_metrics(probs, labels, reliability_bins=7, l2_bins=10)
    assert other["brier_within_bin"] == M.brier_decomposition(probs, labels, 7)["brier_within_bin"]
    assert other["l2_ece"] == M.l2_ece(probs, labels, 10)


def test_smooth_ece_refuses_mismatched_or_empty_inputs_with_its_message():
    with pytest.raises(ValueError, match=r"^conf and hit must be non-empty and of equal length$"):
        M.smooth_ece(np.array([0.5, 0.6]), np.array([1.0]), 0.1)
    with pytest.raises(ValueError, match=r"^conf and hit must be non-empty and of equal length$"):
        M.smooth_ece(np.array([]), np.array([]), 0.1)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        M.smooth_ece(np.array([0.5]), np.array([1.0]), 0.0)
