"""Tests of the calibration and trust metrics (docs/method.md §5–8)."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trustcal.measures import metrics as M

SETTINGS = settings(max_examples=40, deadline=None)

# --- a five-sample, four-class case worked out by hand ------------------------
#   row                         label  argmax  conf  correct  p_label
#   [0.30, 0.25, 0.25, 0.20]      0      0     0.30    yes     0.30   (conf on edge 0.3, p=0.2 on edge 0.2)
#   [0.50, 0.50, 0.00, 0.00]      1      0     0.50    no      0.50   (tie → class 0; conf on edge 0.5; zeros)
#   [1.00, 0.00, 0.00, 0.00]      0      0     1.00    yes     1.00   (conf on edge 1.0)
#   [0.05, 0.95, 0.00, 0.00]      0      1     0.95    no      0.05
#   [0.25, 0.25, 0.25, 0.25]      3      0     0.25    no      0.25
HAND_P = np.array(
    [
        [0.30, 0.25, 0.25, 0.20],
        [0.50, 0.50, 0.00, 0.00],
        [1.00, 0.00, 0.00, 0.00],
        [0.05, 0.95, 0.00, 0.00],
        [0.25, 0.25, 0.25, 0.25],
    ]
)
HAND_Y = np.array([0, 1, 0, 0, 3])


def random_predictions(n, k, seed, concentration=0.3):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, concentration), size=n)
    # labels drawn from the predictions themselves (calibrated-ish) and all classes present
    labels = (rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, k - 1)
    labels[:k] = np.arange(k)
    return probs, labels


def load_mnist(mnist_pred, name):
    df = pd.read_csv(mnist_pred / f"{name}.csv.gz")
    probs = df[[f"Class_{k}_Probability" for k in range(10)]].to_numpy()
    return probs, df["True Label"].to_numpy()


@pytest.fixture(scope="module")
def mnist(author_predictions):
    names = [f"{w}_{e}" for e in (1, 10, 100) for w in ("bef", "aft")]
    return {name: load_mnist(author_predictions / "MNIST_PRED", name) for name in names}


# --- §5 hand-computed ---------------------------------------------------------


def test_bin_indices_edges():
    # (i/M, (i+1)/M]: 0 → bin 0, 0.1 → bin 0, just above 0.1 → bin 1, 0.3 → bin 2,
    # 0.5 → bin 4, 1.0 → bin 9; a few ulp outside [0, 1] are clamped.
    conf = np.array([0.0, 0.1, np.nextafter(0.1, 1), 0.3, 0.5, 0.7, 1.0, 1 + 1e-7, -1e-9])
    assert M.bin_indices(conf, 10).tolist() == [0, 0, 1, 2, 4, 6, 9, 9, 0]
    # equal mass: rank r → ⌊r·M/N⌋, N = 5, M = 2 → sizes 3 and 2; ties keep sample order
    assert M.bin_indices(np.array([0.9, 0.1, 0.5, 0.5, 0.2]), 2, "mass").tolist() == [1, 0, 0, 1, 0]


def test_accuracy_nll_brier_by_hand():
    assert M.accuracy(HAND_P, HAND_Y) == pytest.approx(2 / 5)
    # −mean log p_label = −(ln .3 + ln .5 + ln 1 + ln .05 + ln .25)/5
    expected_nll = -(math.log(0.3) + math.log(0.5) + 0 + math.log(0.05) + math.log(0.25)) / 5
    assert M.nll(HAND_P, HAND_Y) == pytest.approx(expected_nll)
    # Brier per row: .49+.0625+.0625+.04 = .655; .25+.25 = .5; 0; .9025+.9025 = 1.805;
    # 3·.0625 + .5625 = .75 → 3.71/5
    assert M.brier(HAND_P, HAND_Y) == pytest.approx(3.71 / 5)
    # p_label = 0 is floored at PROB_FLOOR = float64 eps = 2⁻⁵² (docs/method.md §2.12): −ln 2⁻⁵² = 52 ln 2
    assert M.nll(np.array([[1.0, 0.0]]), np.array([1])) == pytest.approx(52 * math.log(2), rel=4 * np.finfo(float).eps)


def test_nll_with_zero_probabilities_is_scikit_learns_log_loss():
    """The reported NLL floors as scikit-learn's log_loss does (clip to [eps, 1 − eps]): on rows whose true class
    has probability 0 they agree to rounding, where the former floor 1e-12 gave 27.6 nats per such row, not 36.0."""
    log_loss = pytest.importorskip("sklearn.metrics").log_loss
    p = np.array([[1.0, 0.0, 0.0], [0.0, 0.25, 0.75], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    y = np.array([1, 0, 2, 2])
    # Clipping at 1 − eps moves the p = 1 entries' −log by ≤ eps each; four rows of values ≤ 37: rounding ≤ 64 eps.
    assert M.nll(p, y) == pytest.approx(log_loss(y, p, labels=[0, 1, 2]), rel=0, abs=64 * np.finfo(float).eps)


def test_ece_mce_by_hand_with_edge_ties():
    # Bins (i/10, (i+1)/10]:
    #   bin 2 = (0.2, 0.3]: conf .30 (right), .25 (wrong) → conf .275, acc .5, gap .225
    #   bin 4 = (0.4, 0.5]: conf .50 (wrong)              → gap .5
    #   bin 9 = (0.9, 1.0]: conf 1.0 (right), .95 (wrong) → conf .975, acc .5, gap .475
    # ECE = (2·.225 + 1·.5 + 2·.475)/5 = 1.9/5 = .38; MCE = .5
    # (left-closed bins [i/M, (i+1)/M) would give (.25 + .7 + .5 + .95)/5 = .48)
    assert M.ece(HAND_P, HAND_Y, 10) == pytest.approx(0.38)
    assert M.mce(HAND_P, HAND_Y, 10) == pytest.approx(0.5)
    # Equal mass, M = 2: sorted conf .25(w) .30(r) .50(w) | .95(w) 1.0(r)
    #   bin 0: conf .35, acc 1/3, gap 1/60; bin 1: conf .975, acc .5, gap .475
    #   ECE = (3/60 + 2·.475)/5 = .2; MCE = .475
    assert M.ece(HAND_P, HAND_Y, 2, binning="mass") == pytest.approx(0.2)
    assert M.mce(HAND_P, HAND_Y, 2, binning="mass") == pytest.approx(0.475)
    # One bin: ECE = |acc − mean conf| = |.4 − 3/5| = .2, whatever the binning
    for binning in ("width", "mass"):
        assert M.ece(HAND_P, HAND_Y, 1, binning=binning) == pytest.approx(0.2)


def test_classwise_ece_by_hand():
    # one-vs-rest per class, bins (i/10, (i+1)/10], Σ_bins n·gap / N:
    # class 0: p=[.3,.5,1,.05,.25] hit=[1,0,1,1,0]: bin2 {.3,.25} gap .225·2, bin4 .5, bin9 0, bin0 .95 → 1.9/5
    # class 1: p=[.25,.5,0,.95,.25] hit=[0,1,0,0,0]: bin2 .25·2, bin4 .5, bin0 0, bin9 .95 → 1.95/5
    # class 2: p=[.25,0,0,0,.25] hit=0: bin2 .25·2, bin0 0 → .5/5
    # class 3: p=[.2,0,0,0,.25] hit=[0,0,0,0,1]: .2 on the edge → bin1 gap .2, bin2 .75 → .95/5
    expected = (1.9 + 1.95 + 0.5 + 0.95) / 5 / 4
    assert M.classwise_ece(HAND_P, HAND_Y, 10) == pytest.approx(expected)


def test_perfect_and_constant_classifiers():
    y = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    perfect = np.eye(4)[y]
    assert M.accuracy(perfect, y) == 1.0
    assert M.nll(perfect, y) == pytest.approx(0.0, abs=1e-12)
    assert M.brier(perfect, y) == 0.0
    assert M.ece(perfect, y) == 0.0 and M.mce(perfect, y) == 0.0
    assert M.classwise_ece(perfect, y) == 0.0
    assert M.net_trust_score(perfect, y) == 1.0
    c_right, c_wrong = M.expected_confidence(perfect, y)
    assert c_right == 1.0 and math.isnan(c_wrong)
    # constant p = 1/4, balanced labels: argmax is class 0, right 1/4 of the time with
    # confidence 1/4 → ECE = 0; NTS = ¼·¼ + ¾·¾ = .625; Brier = .75² + 3/16 = .75; NLL = ln 4
    const = np.full((8, 4), 0.25)
    assert M.accuracy(const, y) == 0.25
    assert M.ece(const, y) == pytest.approx(0.0, abs=1e-15)
    assert M.net_trust_score(const, y) == pytest.approx(0.625)
    assert M.brier(const, y) == pytest.approx(0.75)
    assert M.nll(const, y) == pytest.approx(math.log(4))


def test_validation_errors():
    with pytest.raises(ValueError, match="rows"):
        M.ece(HAND_P, HAND_Y[:3])
    with pytest.raises(ValueError, match="2-D"):
        M.accuracy(HAND_P[0], HAND_Y[:1])
    with pytest.raises(ValueError, match="labels must lie"):
        M.brier(HAND_P, np.array([0, 1, 2, 3, 4]))
    with pytest.raises(ValueError, match="binning"):
        M.ece(HAND_P, HAND_Y, binning="quantile")


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 200), st.integers(2, 6), st.integers(1, 20))
def test_ece_properties(seed, n, k, n_bins):
    probs, labels = random_predictions(n + k, k, seed)
    for binning in ("width", "mass"):
        e, m = M.ece(probs, labels, n_bins, binning), M.mce(probs, labels, n_bins, binning)
        assert 0 <= e <= m + 1e-12 <= 1 + 1e-12
    # ECE ≥ |accuracy − mean confidence| (triangle inequality over bins)
    gap = abs(M.accuracy(probs, labels) - probs.max(axis=1).mean())
    assert M.ece(probs, labels, n_bins) >= gap - 1e-12
    assert 0 <= M.brier(probs, labels) <= 2


# --- §5 peer libraries as oracles ----------------------------------------------


def _netcal_ece(probs, labels, n_bins):
    from netcal.metrics import ECE

    return float(ECE(bins=n_bins).measure(probs, labels))


def _torch_ce(probs, labels, n_bins, norm, float64=False):
    """torchmetrics' calibration error. The public function casts the confidences
    to float32; ``float64=True`` calls its internal ``_ce_compute`` (same binning
    and formula) on float64 tensors instead, for a tight comparison."""
    import torch
    from torchmetrics.functional.classification import multiclass_calibration_error
    from torchmetrics.functional.classification.calibration_error import _ce_compute

    if float64:
        conf = torch.from_numpy(probs.max(axis=1))
        acc = torch.from_numpy((probs.argmax(axis=1) == labels).astype(np.float64))
        return float(_ce_compute(conf, acc, n_bins, norm=norm))
    return float(
        multiclass_calibration_error(
            torch.from_numpy(probs), torch.from_numpy(labels), num_classes=probs.shape[1], n_bins=n_bins, norm=norm
        )
    )


def test_ece_matches_netcal_and_torchmetrics_on_random_predictions():
    """Top-label ECE/MCE against netcal 1.4 and torchmetrics 1.9.

    Conventions: ours (i/M, (i+1)/M] with 0 in the first bin; netcal
    ``np.histogramdd`` bins [i/M, (i+1)/M) with the last closed, after clipping
    to [eps, 1 − eps]; torchmetrics ``bucketize(right=True)`` bins
    [i/M, (i+1)/M) plus a separate bin for exactly 1.0. The three differ only
    for confidences exactly on an edge i/M; continuous Dirichlet draws hit an
    edge with probability 0, so netcal (float64) must agree to 1e-9.
    torchmetrics casts confidences to float32, so it agrees to ~1e-6 provided
    no confidence lies within float32 rounding of an edge (asserted).
    """
    # torchmetrics: each confidence rounded to float32 (ε/2), per-bin means of n ≤ 3000 float32 values summed
    # pairwise (≤ log2(n)·ε relative each, for confidence and accuracy): |Δ| ≤ (2·log2(n) + 1)·ε
    float32_sums = (2 * math.log2(3000) + 1) * float(np.finfo(np.float32).eps)
    for seed, n_bins in [(1, 10), (2, 15), (3, 7)]:
        probs, labels = random_predictions(3000, 10, seed)
        edges = np.arange(n_bins + 1) / n_bins
        assert np.min(np.abs(probs.max(axis=1)[:, None] - edges[None, :])) > 1e-6
        ours = M.ece(probs, labels, n_bins)
        assert ours == pytest.approx(_netcal_ece(probs, labels, n_bins), abs=1e-9)
        assert ours == pytest.approx(_torch_ce(probs, labels, n_bins, "l1"), abs=float32_sums)
        assert ours == pytest.approx(_torch_ce(probs, labels, n_bins, "l1", float64=True), abs=1e-9)
        assert M.mce(probs, labels, n_bins) == pytest.approx(_torch_ce(probs, labels, n_bins, "max"), abs=float32_sums)


def test_ece_matches_peers_on_author_mnist_files(mnist):
    """The author's MNIST predictions (float32 values, many confidences of exactly 1.0,
    none exactly on an inner edge i/10 or i/15 — asserted).

    netcal clips 1.0 to 1 − eps and keeps it in the last bin, as we do, so it is
    compared on all rows. torchmetrics gives 1.0 a bin of its own, so it is
    compared on the rows with confidence < 1 (same data for both sides): its
    public function sums ~10^4 float32 confidences per bin (agreement ~1e-5), its
    internal float64 path agrees to 1e-9. No confidence lies within 5e-8 of an
    edge, so float32 rounding moves no sample across an edge.
    """
    # torchmetrics sums up to 10^4 float32 values per bin in no fixed order: λ·√n·ε (λ = 7.8, as in
    # tests/unit/training/test_engine.py) for the confidences and again for the accuracies
    float32_sums = 2 * 7.8 * math.sqrt(10_000) * float(np.finfo(np.float32).eps)
    for name in ("bef_1", "aft_10", "bef_100"):
        probs, labels = mnist[name]
        conf = probs.max(axis=1)
        for n_bins in (10, 15):
            inner = np.arange(1, n_bins) / n_bins
            assert not np.isin(conf, inner).any()
            assert M.ece(probs, labels, n_bins) == pytest.approx(_netcal_ece(probs, labels, n_bins), abs=1e-9)
            keep = conf < 1.0
            p, y = probs[keep], labels[keep]
            for norm, ours in (("l1", M.ece(p, y, n_bins)), ("max", M.mce(p, y, n_bins))):
                assert ours == pytest.approx(_torch_ce(p, y, n_bins, norm, float64=True), abs=1e-9)
                assert ours == pytest.approx(_torch_ce(p, y, n_bins, norm), abs=float32_sums)


# --- §6 NetTrustScore family ---------------------------------------------------


def test_nts_family_by_hand():
    # Q = C if right else 1 − C: [.3, .5, 1, .05, .75]
    np.testing.assert_allclose(M.question_answer_trust(HAND_P, HAND_Y), [0.3, 0.5, 1.0, 0.05, 0.75])
    # T(0) = (.3 + 1 + .05)/3 = .45, T(1) = .5, T(2) absent, T(3) = .75
    spectrum = M.trust_spectrum(HAND_P, HAND_Y)
    np.testing.assert_allclose(spectrum[[0, 1, 3]], [0.45, 0.5, 0.75])
    assert math.isnan(spectrum[2])
    # NTS = 3/5·.45 + 1/5·.5 + 1/5·.75 = .52 (= mean Q)
    assert M.net_trust_score(HAND_P, HAND_Y) == pytest.approx(0.52)
    # C̄ right = (.3 + 1)/2, C̄ wrong = (.5 + .95 + .25)/3
    assert M.expected_confidence(HAND_P, HAND_Y) == pytest.approx((0.65, 1.7 / 3))
    # α = 2, β = 3: Q = [.09, .125, 1, .05³, .75³]
    np.testing.assert_allclose(
        M.question_answer_trust(HAND_P, HAND_Y, alpha=2, beta=3), [0.09, 0.125, 1.0, 0.05**3, 0.75**3]
    )
    # n_classes larger than K: extra labels absent → NaN
    assert np.isnan(M.trust_spectrum(HAND_P, HAND_Y, n_classes=6)[4:]).all()


def _closed_form_spectrum(probs, labels, alpha, beta):
    """Wong et al. Eq. 3 and 5 written sample by sample (independent of the module)."""
    per_label = {}
    for p, z in zip(probs.tolist(), labels.tolist()):
        c = max(p)
        right = p.index(c) == z
        per_label.setdefault(z, []).append(c**alpha if right else (1 - c) ** beta)
    spectrum = np.array([np.mean(per_label[z]) if z in per_label else np.nan for z in range(probs.shape[1])])
    nts = sum(len(v) * np.mean(v) for v in per_label.values()) / len(labels)
    return spectrum, nts


def test_nts_against_closed_form_and_trustpy(mnist):
    """Spectrum and NTS against a sample-by-sample closed form (α, β ≠ 1 included), and
    against ``trustpy-tools`` 2.0 (``trustpy.NTS``; it installs and works here; it
    rounds to 3 decimals and supports the default α = β = 1 only in this comparison's
    tolerance, so we compare with atol 5e-4)."""
    probs, labels = random_predictions(2000, 10, 7)
    for alpha, beta in [(1, 1), (2, 0.5)]:
        spectrum, nts = _closed_form_spectrum(probs, labels, alpha, beta)
        np.testing.assert_allclose(M.trust_spectrum(probs, labels, alpha=alpha, beta=beta), spectrum, rtol=1e-12)
        assert M.net_trust_score(probs, labels, alpha, beta) == pytest.approx(nts, rel=1e-12)
    trustpy = pytest.importorskip("trustpy")
    for p, y in [(probs, labels), mnist["bef_10"]]:
        ref = trustpy.NTS(y, p, show_summary=False, export_summary=False).compute()
        np.testing.assert_allclose(M.trust_spectrum(p, y), [ref[f"class_{k}"] for k in range(10)], atol=5e-4 + 1e-12)
        assert M.net_trust_score(p, y) == pytest.approx(ref["overall"], abs=5e-4 + 1e-12)


def test_trust_density_matches_scipy_kde_plus_reflections():
    """Unreflected part = scipy.stats.gaussian_kde with the same bandwidth.

    gaussian_kde's scalar ``bw_method`` multiplies the sample standard deviation
    (ddof = 1), so the factor giving bandwidth h = γ/√N is h / std(q, ddof=1).
    Our density is Σ_k kde(x − 2k) + kde(2k − x) (mirror images in 0 and 1).
    """
    from scipy.stats import gaussian_kde

    rng = np.random.default_rng(11)
    grid = np.linspace(0, 1, 101)
    for n in (500, 3):  # narrow kernel (only first images matter) and wide kernel (h ≈ 0.29)
        q = rng.beta(5, 1.5, size=n)
        h = 0.5 / math.sqrt(n)
        kde = gaussian_kde(q, bw_method=h / np.std(q, ddof=1))
        expected = sum(kde(grid - 2 * k) + kde(2 * k - grid) for k in range(-6, 7))
        x, f = M.trust_density(q, gamma=0.5, grid=grid)
        np.testing.assert_allclose(f, expected, rtol=1e-10, atol=1e-15)
        if n == 500:  # first reflection only: kde(x) + kde(−x) + kde(2 − x)
            np.testing.assert_allclose(f, kde(grid) + kde(-grid) + kde(2 - grid), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("q", [[0.5], [0.0, 1.0], [1.0] * 40, list(np.linspace(0, 1, 300))])
def test_trust_density_integrates_to_one(q):
    x, f = M.trust_density(np.array(q), grid=np.linspace(0, 1, 20001))
    assert np.trapezoid(f, x) == pytest.approx(1.0, abs=1e-6)
    assert np.all(f >= 0)


def test_trust_density_table():
    table = M.trust_density_table(HAND_P, HAND_Y, grid=np.linspace(0, 1, 11))
    assert list(table.columns) == ["label", "trust", "density"]
    assert sorted(table["label"].unique()) == [0, 1, 3]  # label 2 absent
    # label 1 has one sample, Q = 0.5: its density equals trust_density([0.5])
    np.testing.assert_allclose(
        table.loc[table.label == 1, "density"], M.trust_density([0.5], grid=np.linspace(0, 1, 11))[1]
    )


# --- §7 geometric family ---------------------------------------------------------


def pmean(x, rho, w=None):
    x, w = np.asarray(x, float), np.ones(len(x)) if w is None else np.asarray(w, float)
    if rho == 0:
        return math.exp(sum(wi * math.log(xi) for xi, wi in zip(x, w)) / sum(w))
    return (sum(wi * xi**rho for xi, wi in zip(x, w)) / sum(w)) ** (1 / rho)


def test_generalized_mean():
    x = [0.2, 0.5, 0.8]
    assert M.generalized_mean(x, 1) == pytest.approx(0.5)
    assert M.generalized_mean(x, 0) == pytest.approx((0.2 * 0.5 * 0.8) ** (1 / 3))
    assert M.generalized_mean(x, -2 / 3) == pytest.approx(
        ((0.2 ** (-2 / 3) + 0.5 ** (-2 / 3) + 0.8 ** (-2 / 3)) / 3) ** -1.5
    )
    assert M.generalized_mean([0.0, 1.0], 0) == 0.0 and M.generalized_mean([0.0, 1.0], -2 / 3) == 0.0
    assert M.generalized_mean([0.2, 0.8], 1, weights=[3, 1]) == pytest.approx(0.35)


def test_geometric_metrics_by_hand():
    # q = p_label = [.3, .5, 1, .05, .25], all ≥ ε = .01 → reported means of q.
    q = [0.3, 0.5, 1.0, 0.05, 0.25]
    # Measured, B = 2, N = 5: no value occurs ≥ N/B = 2.5 times → no singularity.
    # Sorted q [.05, .25 | .3, .5, 1], rank r → ⌊2r/5⌋: bin 0 = [0, .3) holds .05, .25 (c = 2),
    # bin 1 = [.3, 1] holds .3, .5, 1 (c = 3).
    # Wrong-class probs: row0 .25 .25 .2; row1 .5 0 0; row2 0 0 0; row3 .95 0 0; row4 .25 .25 .25
    #   → bin 1 gets .5 and .95 (w = 2), bin 0 the other 13 (w = 13).
    # Sums of all probabilities in each bin: S0 = (.05 + .25) + (.7 + .75) = 1.75,
    #   S1 = (.3 + .5 + 1) + (.5 + .95) = 3.25 → observed/expected c/S = 8/7 and 12/13.
    # Measured m_i = q_i · c/S: [.3·12/13, .5·12/13, 12/13, .05·8/7, .25·8/7] (all within [ε, 1]).
    m = [0.3 * 12 / 13, 0.5 * 12 / 13, 12 / 13, 0.05 * 8 / 7, 0.25 * 8 / 7]
    got = M.geometric_metrics(HAND_P, HAND_Y, eps=0.01, n_bins=2)
    expected = {
        "geometric_accuracy": pmean(q, 0),
        "decisiveness": pmean(q, 1),
        "robustness": pmean(q, -2 / 3),
        "geometric_accuracy_measured": pmean(m, 0),
        "decisiveness_measured": pmean(m, 1),
        "robustness_measured": pmean(m, -2 / 3),
    }
    expected["confidence_slope"] = (expected["decisiveness_measured"] - expected["robustness_measured"]) / (
        expected["decisiveness"] - expected["robustness"]
    )
    assert got == pytest.approx(expected)
    table = M.geometric_bins(HAND_P, HAND_Y, eps=0.01, n_bins=2)
    assert table[["n_correct", "n_wrong"]].to_numpy().tolist() == [[2, 13], [3, 2]]
    assert table["lower"].tolist() == [0.0, 0.3] and table["upper"].tolist() == [0.3, 1.0]
    # histogram: reported = S/(c + w), measured = c/(c + w), ratio = c/S, mean_correct = mean q
    np.testing.assert_allclose(table["reported"], [1.75 / 15, 3.25 / 5])
    np.testing.assert_allclose(table["measured"], [2 / 15, 3 / 5])
    np.testing.assert_allclose(table["ratio"], [8 / 7, 12 / 13])
    np.testing.assert_allclose(table["mean_correct"], [0.15, 0.6])


def test_geometric_singularity_and_epsilon_floor():
    # rows (K = 2): [1,0] y0, [0,1] y1, [0,1] y0, [.5,.5] y1 → q = [1, 1, 0, .5]
    # 1.0 occurs 2 ≥ N/B = 4/2 times → its own point bin; the rest (0, .5) → B − 1 = 1 bin [0, 1).
    # Wrong-class probs: 0, 0, 1.0 (row 2: lands in the 1.0 bin), .5.
    #   point bin {1}: c = 2, w = 1, S = 3 → m = 1·2/3 = the fraction c/(c + w)
    #   regular bin: c = 2 (0, .5), w = 3 (0, 0, .5), S = 1 → c/S = 2 → m = 0·2 → ε, .5·2 = 1
    # Reported q with ε = .01: [1, 1, .01, .5] (the 0 is floored).
    p = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.5, 0.5]])
    y = np.array([0, 1, 0, 1])
    got = M.geometric_metrics(p, y, eps=0.01, n_bins=2)
    q, m = [1, 1, 0.01, 0.5], [2 / 3, 2 / 3, 0.01, 1.0]
    assert got["geometric_accuracy"] == pytest.approx(pmean(q, 0))
    assert got["robustness"] == pytest.approx(pmean(q, -2 / 3))
    assert got["decisiveness_measured"] == pytest.approx(pmean(m, 1))
    assert got["robustness_measured"] == pytest.approx(pmean(m, -2 / 3))
    table = M.geometric_bins(p, y, eps=0.01, n_bins=2)
    assert table["singular"].tolist() == [False, True]
    assert table[["n_correct", "n_wrong"]].to_numpy().tolist() == [[2, 3], [2, 1]]
    np.testing.assert_allclose(table["ratio"], [2.0, 2 / 3])
    # ε matters for the reported robustness: a smaller floor lowers it
    assert M.geometric_metrics(p, y, eps=0.001)["robustness"] < got["robustness"]


def test_geometric_measured_is_clipped_at_one():
    # K = 3, q = [.1, .2, .7, .8] (label 0 everywhere), B = 2: bin 0 = [0, .7) holds .1, .2 and all
    # eight wrong-class probabilities (.45 .45 .4 .4 .15 .15 .1 .1): c = 2, S = .3 + 2.2 = 2.5 → c/S = .8;
    # bin 1 = [.7, 1] holds .7, .8 only: c = 2, S = 1.5 → c/S = 4/3, so .8·4/3 > 1 is clipped to 1.
    p = np.array([[0.1, 0.45, 0.45], [0.2, 0.4, 0.4], [0.7, 0.15, 0.15], [0.8, 0.1, 0.1]])
    y = np.zeros(4, dtype=int)
    m = [0.08, 0.16, 0.7 * 4 / 3, 1.0]
    got = M.geometric_metrics(p, y, eps=0.01, n_bins=2)
    assert got["decisiveness_measured"] == pytest.approx(pmean(m, 1))
    assert got["geometric_accuracy_measured"] == pytest.approx(pmean(m, 0))


def test_geometric_perfect_and_constant():
    y = np.array([0, 1, 2, 3] * 5)
    perfect = M.geometric_metrics(np.eye(4)[y], y)
    for key in (
        "geometric_accuracy",
        "decisiveness",
        "robustness",
        "geometric_accuracy_measured",
        "decisiveness_measured",
        "robustness_measured",
    ):
        assert perfect[key] == pytest.approx(1.0)
    assert math.isnan(perfect["confidence_slope"])  # D_rep − R_rep = 0
    # constant 1/4: q = .25 everywhere is one singular bin, every wrong prob .25 joins it:
    # m = N/(N + 3N) = .25 — measured = reported = .25
    const = M.geometric_metrics(np.full((20, 4), 0.25), y)
    assert all(v == pytest.approx(0.25) for k, v in const.items() if k != "confidence_slope")


def geometric_replicates(temperatures, n=20_000, k=10, draws=20, seed=12):
    """geometric_metrics on `draws` label samples from one set of generating probabilities P
    (softmax of N(0, 2.5²) logits), reported as P sharpened by each temperature (T = 1: calibrated)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 2.5, size=(n, k))
    truth = np.exp(logits - logits.max(axis=1, keepdims=True))
    truth /= truth.sum(axis=1, keepdims=True)
    reported = {}
    for t in temperatures:
        z = truth ** (1.0 / t)
        reported[t] = z / z.sum(axis=1, keepdims=True)
    out = {t: [] for t in temperatures}
    cum = np.cumsum(truth, axis=1)
    for _ in range(draws):
        labels = (rng.random(n)[:, None] > cum).sum(axis=1).clip(0, k - 1)
        for t in temperatures:
            out[t].append(M.geometric_metrics(reported[t], labels))
    return {t: pd.DataFrame(rows) for t, rows in out.items()}


@pytest.fixture(scope="module")
def geometric_runs():
    return geometric_replicates((1.0, 0.5, 2.0))


def test_geometric_measured_equals_reported_for_a_calibrated_model(geometric_runs):
    # Labels drawn from the reported probabilities: the measured and reported means estimate the same
    # numbers. sd = the sampling sd of (measured − reported) over the label draws; the systematic
    # difference (their mean) must be below one draw's sd. (The old per-bin fraction c/(c + w) gave
    # robustness 0.15 against 0.20 reported here, 40 sd apart.)
    runs = geometric_runs[1.0]
    for name in ("geometric_accuracy", "decisiveness", "robustness"):
        diff = runs[f"{name}_measured"] - runs[name]
        assert abs(diff.mean()) < diff.std(ddof=1), name
    slope = runs["confidence_slope"]
    assert abs(slope.mean() - 1.0) < slope.std(ddof=1)


def test_geometric_slope_detects_over_and_underconfidence(geometric_runs):
    # Same labels; probabilities sharpened (T = 0.5) or flattened (T = 2) relative to the truth.
    # Each mean slope must lie more than 4 sampling sd (of its own draws) on its side of 1.
    over, under = geometric_runs[0.5]["confidence_slope"], geometric_runs[2.0]["confidence_slope"]
    assert over.mean() + 4 * over.std(ddof=1) < 1.0
    assert under.mean() - 4 * under.std(ddof=1) > 1.0
    # overconfidence: decisiveness overstated, robustness understated by the reported numbers
    runs = geometric_runs[0.5]
    assert (runs["decisiveness_measured"] < runs["decisiveness"]).all()
    assert (runs["robustness_measured"] > runs["robustness"]).all()


# --- §8 reliability curves ------------------------------------------------------


def test_reliability_curve_and_summary_by_hand():
    curve = M.reliability_curve(HAND_P, HAND_Y, n_bins=10)
    assert list(curve.columns) == [
        "bin",
        "bin_lower",
        "bin_upper",
        "bin_centre",
        "mean_predicted",
        "observed_frequency",
        "count",
    ]
    assert curve["count"].tolist() == [0, 0, 2, 0, 1, 0, 0, 0, 0, 2]
    nonempty = curve[curve["count"] > 0]
    np.testing.assert_allclose(nonempty["mean_predicted"], [0.275, 0.5, 0.975])
    np.testing.assert_allclose(nonempty["observed_frequency"], [0.5, 0.0, 0.5])
    assert curve.loc[curve["count"] == 0, ["mean_predicted", "observed_frequency"]].isna().all().all()
    np.testing.assert_allclose(curve["bin_centre"], np.arange(10) / 10 + 0.05)
    s = M.reliability_summary(curve)
    assert set(s) == {"squared_distance", "mean_abs_gap"}
    # squared distance: (2·.225² + 1·.5² + 2·.475²)/5 = .8025/5
    assert s["squared_distance"] == pytest.approx(0.8025 / 5)
    # gaps d = obs − pred at x = .275, .5, .975: +.225, −.5, −.475.
    # [.275, .5]: d changes sign → ∫|d| = h(d0² + d1²)/(2(|d0| + |d1|)) = .225·(.225² + .5²)/(2·.725)
    # [.5, .975]: same sign → h(|d0| + |d1|)/2 = .475·.975/2; mean over the covered width .7
    area = 0.225 * (0.225**2 + 0.5**2) / (2 * 0.725) + 0.475 * 0.975 / 2
    assert s["mean_abs_gap"] == pytest.approx(area / 0.7)
    # one-vs-rest class 3: p = [.2, 0, 0, 0, .25]; .2 → bin 1, three zeros → bin 0, .25 → bin 2
    c3 = M.reliability_curve(HAND_P, HAND_Y, n_bins=10, class_index=3)
    assert c3["count"].tolist()[:3] == [3, 1, 1]
    assert c3["observed_frequency"].tolist()[:3] == [0.0, 0.0, 1.0]


def test_reliability_summary_diagonal_single_point_and_empty():
    x = np.arange(10) / 10 + 0.05
    diagonal = pd.DataFrame({"mean_predicted": x, "observed_frequency": x, "count": np.full(10, 7)})
    assert M.reliability_summary(diagonal) == {"squared_distance": 0.0, "mean_abs_gap": 0.0}
    # a diagonal over a range not symmetric about 1/2 (the top-label case): still 0
    assert M.reliability_summary(diagonal.iloc[5:])["mean_abs_gap"] == 0.0
    # a constant offset of .1 over any range: mean gap .1
    shifted = diagonal.iloc[3:].assign(observed_frequency=lambda d: d["mean_predicted"] - 0.1)
    assert M.reliability_summary(shifted)["mean_abs_gap"] == pytest.approx(0.1)
    # one non-empty bin (zero width): its |gap|
    single = diagonal.assign(count=[0] * 9 + [3], observed_frequency=0.5)
    assert M.reliability_summary(single)["mean_abs_gap"] == pytest.approx(0.45)
    empty = diagonal.assign(count=0)
    assert all(math.isnan(v) for v in M.reliability_summary(empty).values())


def test_reliability_mean_abs_gap_of_a_calibrated_sample():
    # Labels drawn from the predictions (large N): in bin m the observed frequency minus the mean
    # confidence has mean 0 and sd_m = sqrt(Σ_i C_i(1 − C_i))/n_m (a binomial sum, given the
    # confidences). Allow |gap_m| ≤ 4·sd_m at every knot (all hold with probability > 1 − 10·6.3e-5);
    # on a segment the polyline's |gap| is then ≤ the larger allowance of its two ends, so the mean
    # over the covered range is ≤ Σ_s h_s·max(a_s0, a_s1) / (x_last − x_first).
    probs, labels = random_predictions(50_000, 10, 13, concentration=0.2)
    curve = M.reliability_curve(probs, labels, n_bins=10)
    conf = probs.max(axis=1)
    count = curve["count"].to_numpy()
    sd = np.sqrt(np.bincount(M.bin_indices(conf, 10), weights=conf * (1 - conf), minlength=10)) / np.maximum(count, 1)
    x, allowance = curve["mean_predicted"].to_numpy()[count > 0], 4 * sd[count > 0]
    bound = np.sum(np.diff(x) * np.maximum(allowance[:-1], allowance[1:])) / (x[-1] - x[0])
    assert M.reliability_summary(curve)["mean_abs_gap"] <= bound
    # the same predictions sharpened (T = 0.5, overconfident) are well outside that bound
    sharp = probs**2 / (probs**2).sum(axis=1, keepdims=True)
    assert M.reliability_summary(M.reliability_curve(sharp, labels, 10))["mean_abs_gap"] > 2 * bound


def test_reliability_table_shape():
    table = M.reliability_table(HAND_P, HAND_Y, n_bins=5)
    assert len(table) == 5 * (1 + 4)
    assert table["class_index"].isna().sum() == 5
    assert set(table["curve"]) == {"top_label", "one_vs_rest"}
    # every one-vs-rest curve sees every sample once
    assert (table.groupby("class_index")["count"].sum() == 5).all()


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(2, 6), st.integers(1, 12))
def test_reliability_table_is_each_curve_binned_at_once(seed, n, k, n_bins):
    """The table bins all K + 1 curves in one pass; the oracle is :func:`reliability_curve` per curve,
    row for row and bit for bit (each bin sums the same samples in the same order), with the
    table's ``curve``/``class_index`` labels, edges on bin boundaries (0.1, 0.3) and an absent class."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.5), n)
    probs[rng.random(n) < 0.2, 0] = 0.3  # a confidence exactly on an inner edge (for 10 bins)
    labels = rng.integers(0, k - 1, n)  # class k − 1 never occurs
    frames = []
    for c in [None, *range(k)]:
        curve = M.reliability_curve(probs, labels, n_bins, class_index=c)
        curve.insert(0, "class_index", pd.array([c] * n_bins, dtype="Int64"))
        curve.insert(0, "curve", "top_label" if c is None else "one_vs_rest")
        frames.append(curve)
    pd.testing.assert_frame_equal(
        M.reliability_table(probs, labels, n_bins), pd.concat(frames, ignore_index=True), check_exact=True
    )


def test_side_tables_are_those_of_the_test_split_and_scores_of_every_split():
    """score_tables: the side tables (read by the figures for the test split only) come from the test
    predictions alone, the same rows as a call on those alone; scores.csv keeps a row per split; with
    no test split the side tables are those of the splits given."""
    from trustcal.evaluation import MetricParams, PredictionSet, score_tables

    rng = np.random.default_rng(3)
    preds = [
        PredictionSet(epoch, cal, split, rng.dirichlet(np.ones(3), 40), rng.integers(0, 3, 40))
        for epoch in (1, 2)
        for cal in ("none", "temperature")
        for split in ("test", "val")
    ]
    mp = MetricParams(density_points=11)
    both, test_only = score_tables(preds, mp), score_tables([p for p in preds if p.split == "test"], mp)
    assert sorted(set(both["scores"]["split"])) == ["test", "val"] and len(both["scores"]) == 8
    for name in ("trust_spectrum", "reliability", "trust_density"):
        assert set(both[name]["split"]) == {"test"}, name
        pd.testing.assert_frame_equal(both[name], test_only[name], check_exact=True)
    val_only = score_tables([p for p in preds if p.split == "val"], mp)
    assert set(val_only["reliability"]["split"]) == {"val"}


# --- all scalars, and the author's real files ---------------------------------------

EXPECTED_KEYS = {
    "accuracy",
    "mean_confidence",
    "nll",
    "brier",
    "ece",
    "ece_10",
    "ece_15",
    "ece_mass_10",
    "ece_mass_15",
    "mce_10",
    "mce_15",
    "classwise_ece",
    "net_trust_score",
    "confidence_correct",
    "confidence_incorrect",
    "geometric_accuracy",
    "decisiveness",
    "robustness",
    "geometric_accuracy_measured",
    "decisiveness_measured",
    "robustness_measured",
    "confidence_slope",
    "reliability_sq_distance",
    "reliability_mean_abs_gap",
    "smece",
    "l2_ece",
    "l2_ece_debiased",
    "ks_error",
    "aurc",
    "eaurc",
    "augrc",
    "spiegelhalter_z",
    "spiegelhalter_p",
    "ks_p",
    "kuiper_p",
    "brier_reliability",
    "brier_resolution",
    "brier_uncertainty",
    "brier_within_bin",
}


def test_scalar_metrics_keys_and_consistency():
    probs, labels = random_predictions(500, 10, 5)
    out = M.scalar_metrics(probs, labels)
    assert set(out) == EXPECTED_KEYS
    assert out["ece"] == out["ece_10"] == M.ece(probs, labels, 10)
    assert out["ece_mass_15"] == M.ece(probs, labels, 15, binning="mass")
    assert out["net_trust_score"] == M.net_trust_score(probs, labels)
    assert out["mce_15"] == M.mce(probs, labels, 15)
    assert out["classwise_ece"] == M.classwise_ece(probs, labels, 10)
    summary = M.reliability_summary(M.reliability_curve(probs, labels, 10))
    assert out["reliability_mean_abs_gap"] == summary["mean_abs_gap"]
    assert out["reliability_sq_distance"] == summary["squared_distance"]
    assert all(isinstance(v, float) for v in out.values())


# Twelve predictions of three classes, one per row: (probabilities, label). Sorted by confidence (the top
# probability; the row order below is shuffled); ✓ right, ✗ wrong (p_y: the label's probability).
SCALAR_ROWS = [
    ([0.42, 0.30, 0.28], 0),  # r0  0.42 ✓
    ([0.46, 0.34, 0.20], 1),  # r1  0.46 ✗ p_y 0.34
    ([0.18, 0.52, 0.30], 2),  # r2  0.52 ✗ p_y 0.30
    ([0.22, 0.20, 0.58], 2),  # r3  0.58 ✓
    ([0.27, 0.10, 0.63], 0),  # r4  0.63 ✗ p_y 0.27
    ([0.12, 0.68, 0.20], 1),  # r5  0.68 ✓
    ([0.72, 0.18, 0.10], 0),  # r6  0.72 ✓
    ([0.78, 0.12, 0.10], 1),  # r7  0.78 ✗ p_y 0.12
    ([0.07, 0.10, 0.83], 2),  # r8  0.83 ✓
    ([0.05, 0.87, 0.08], 0),  # r9  0.87 ✗ p_y 0.05
    ([0.03, 0.93, 0.04], 1),  # r10 0.93 ✓
    ([0.01, 0.02, 0.97], 2),  # r11 0.97 ✓
]
SCALAR_ORDER = [7, 2, 11, 0, 9, 4, 1, 10, 5, 8, 3, 6]
# By hand. |hit − conf| per row: .58 .46 .52 .42 .63 .32 .28 .78 .17 .87 .07 .03 (sum 5.13).
# 10 equal-width bins hold the pairs (r0 r1) (r2 r3) … (r10 r11): gaps |½ − .44| = .06, |½ − .55| = .05,
#   |½ − .655| = .155, |½ − .75| = .25, |½ − .85| = .35, |1 − .95| = .05, each ×2 → 1.83.
# 15 equal-width bins (edges k/15): (r0 r1) .06·2, r2 .52, r3 .42, r4 .63, (r5 r6) |1 − .70|·2 = .6, r7 .78,
#   r8 .17, (r9 r10) |½ − .90|·2 = .8, r11 .03 → 4.07.
# 10 equal-mass bins of 12 ranks (⌊10r/12⌋): the pairs (r0 r1) and (r6 r7), the rest alone:
#   5.13 − (.58 + .46) + .12 − (.28 + .78) + .5 = 3.65. 15 equal-mass bins (⌊15r/12⌋): every rank alone, 5.13.
# NetTrustScore (α = β = 1): the confidence of a right answer, 1 − it of a wrong one: 5.13 + 1.74 = 6.87.
SCALAR_BY_HAND = {
    "accuracy": 7 / 12,
    "mean_confidence": 8.39 / 12,
    "confidence_correct": (0.42 + 0.58 + 0.68 + 0.72 + 0.83 + 0.93 + 0.97) / 7,
    "confidence_incorrect": (0.46 + 0.52 + 0.63 + 0.78 + 0.87) / 5,
    "nll": -np.mean(np.log([0.42, 0.34, 0.30, 0.58, 0.27, 0.68, 0.72, 0.12, 0.83, 0.05, 0.93, 0.97])),
    "ece": 1.83 / 12,
    "ece_10": 1.83 / 12,
    "ece_15": 4.07 / 12,
    "ece_mass_10": 3.65 / 12,
    "ece_mass_15": 5.13 / 12,
    "mce_10": 0.35,
    "mce_15": 0.78,
    "net_trust_score": 6.87 / 12,
}


def test_scalar_metrics_and_the_scores_csv_row_equal_hand_computed_values():
    """Every column of scalar_metrics that is a plain sum over a dozen predictions, worked out by hand (the
    comments above SCALAR_BY_HAND), in scalar_metrics and in scores.csv's row (score_tables): a column computed
    wrongly, or two columns swapped, fails here. The hand values are distinct, so a swap shows. Tolerance: the
    sums of twelve numbers ≤ 1 in float64 on either side, 16·N·eps; the inputs are decimal literals on both
    sides. The Brier score is the definition on the same rows; the other columns equal their own functions on
    these predictions (tested by value in their modules)."""
    from trustcal.evaluation import MetricParams, PredictionSet, score_tables

    probs = np.array([SCALAR_ROWS[i][0] for i in SCALAR_ORDER])
    labels = np.array([SCALAR_ROWS[i][1] for i in SCALAR_ORDER])
    assert len(set(SCALAR_BY_HAND.values())) == len(SCALAR_BY_HAND) - 1  # distinct, but ece = ece_10
    out = M.scalar_metrics(probs, labels)
    row = score_tables([PredictionSet(1, "none", "test", probs, labels)], MetricParams())["scores"].iloc[0]
    tol = 16 * len(labels) * float(np.finfo(float).eps)
    for name, value in SCALAR_BY_HAND.items():
        assert out[name] == pytest.approx(value, abs=tol), name
        assert row[name] == pytest.approx(value, abs=tol), name
    brier = np.mean(np.sum((probs - np.eye(3)[labels]) ** 2, axis=1))
    assert out["brier"] == pytest.approx(brier, abs=tol) and row["brier"] == pytest.approx(brier, abs=tol)
    own = {
        "classwise_ece": M.classwise_ece(probs, labels, 10),
        "smece": M.smece(probs, labels),
        "ks_error": M.ks_error(probs, labels),
        "aurc": M.aurc(probs, labels),
        "eaurc": M.eaurc(probs, labels),
        "augrc": M.augrc(probs, labels),
        "l2_ece": M.l2_ece(probs, labels, 15, "mass"),
        "l2_ece_debiased": M.l2_ece(probs, labels, 15, "mass", debias=True),
        **M.brier_decomposition(probs, labels, 10),
        **M.geometric_metrics(probs, labels, eps=0.01, n_bins=10),
    }
    for name, value in own.items():
        assert out[name] == pytest.approx(value, rel=1e-12, abs=1e-15), name
        assert row[name] == pytest.approx(value, rel=1e-12, abs=1e-15), name


@pytest.mark.parametrize("name", [f"{w}_{e}" for e in (1, 10, 100) for w in ("bef", "aft")])
def test_scalar_metrics_on_author_mnist_files(mnist, name):
    probs, labels = mnist[name]
    out = M.scalar_metrics(probs, labels)
    assert set(out) == EXPECTED_KEYS
    bad = {k: v for k, v in out.items() if not math.isfinite(v)}
    assert not bad, f"non-finite metrics on {name}: {bad}"
    assert 0.9 < out["accuracy"] <= 1.0
    assert 0 <= out["ece"] <= out["mce_10"] <= 1
    assert out["robustness"] <= out["geometric_accuracy"] <= out["decisiveness"]
    # side tables work on the same data
    assert len(M.reliability_table(probs, labels)) == 110
    assert set(M.trust_density_table(probs, labels)["label"]) == set(range(10))


def test_documented_defaults_and_the_empty_bins_message():
    """What the docstrings promise where no other test reaches: the trust density's default grid is 201 points
    from 0 to 1 (a step of 0.005); a trust spectrum over more labels than the predictions' columns has NaN for
    the labels that do not occur; scalar_metrics refuses no ECE bins with MetricParams' message; geometric_bins'
    documented defaults."""
    q = np.array([0.2, 0.5, 0.9])
    grid, density = M.trust_density(q)
    assert grid.shape == density.shape == (201,) and (grid[0], grid[1], grid[-1]) == (0.0, 0.005, 1.0)
    spectrum = M.trust_spectrum(HAND_P, HAND_Y, n_classes=HAND_P.shape[1] + 2)
    assert spectrum.shape == (HAND_P.shape[1] + 2,) and np.isnan(spectrum[-2:]).all()
    with pytest.raises(ValueError, match=r"^ece_bins must be one or more values, e\.g\. \(10, 15\) \(got \(\)\)$"):
        M.scalar_metrics(HAND_P, HAND_Y, ece_bins=())
    # Nelson's histogram: eps = 0.01 and 10 bins unless told, its singular flags a boolean column
    probs, labels = random_predictions(300, 4, 2)
    table = M.geometric_bins(probs, labels)
    pd.testing.assert_frame_equal(table, M.geometric_bins(probs, labels, eps=0.01, n_bins=10))
    assert table["singular"].dtype == bool


def test_a_class_index_outside_the_classes_is_refused_with_the_range():
    with pytest.raises(ValueError, match=r"^class_index must lie in \[0, 4\), got 4$"):
        M.reliability_curve(HAND_P, HAND_Y, n_bins=10, class_index=4)


def test_the_trust_density_is_drawn_on_density_points_points_of_the_unit_interval():
    from trustcal.measures.bins import TopLabel
    from trustcal.measures.metric_params import MetricParams

    table = M.trust_density_table_of(TopLabel.of(HAND_P, HAND_Y), MetricParams(density_points=7))
    for _, curve in table.groupby("label"):
        np.testing.assert_allclose(curve["trust"], np.linspace(0.0, 1.0, 7))
