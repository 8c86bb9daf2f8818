"""Bootstrap of the trust opinion: each resample equals Algorithm 1 run on the resampled rows."""

import numpy as np
import pytest

from trustcal.measures.bootstrap import BootstrapParams, bootstrap_opinions, percentile_interval, resample_counts
from trustcal.measures.trust import TrustParams, trust_opinions


def predictions(n=500, k=4, seed=1):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 3
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    probs[0] = np.eye(k)[0]  # p = 1.0 belongs to the last cluster
    return probs, rng.integers(0, k, n)


@pytest.mark.parametrize("representative", ["midpoint", "mean"])
def test_each_resample_equals_algorithm_1_on_the_drawn_rows(representative):
    probs, labels = predictions()
    params = TrustParams(clusters=7, alpha=0.5, beta=2.0, representative=representative)
    counts = resample_counts(len(labels), BootstrapParams(resamples=5, seed=3))
    got = bootstrap_opinions(probs, labels, counts, params)
    for b in range(5):
        rows = np.repeat(np.arange(len(labels)), counts[b].astype(int))  # the drawn rows, with repeats
        want = trust_opinions(probs[rows], labels[rows], params)
        for name in ("belief", "disbelief", "uncertainty"):
            # the same sums in another order: float64 rounding of ~N terms
            np.testing.assert_allclose(got[name][b], want[name], rtol=0, atol=len(labels) * np.finfo(float).eps)


def test_counts_of_one_give_the_point_estimate():
    probs, labels = predictions()
    got = bootstrap_opinions(probs, labels, np.ones((1, len(labels)), np.float32))
    want = trust_opinions(probs, labels)
    np.testing.assert_allclose(got["belief"][0], want["belief"], atol=1e-12)


def test_resamples_are_multinomial_and_reproducible():
    a = resample_counts(100, BootstrapParams(resamples=50, seed=7))
    assert a.shape == (50, 100) and (a.sum(1) == 100).all() and (a >= 0).all()
    np.testing.assert_array_equal(a, resample_counts(100, BootstrapParams(resamples=50, seed=7)))
    assert not np.array_equal(a, resample_counts(100, BootstrapParams(resamples=50, seed=8)))


def test_percentile_interval_of_a_known_sample():
    lo, hi = percentile_interval(np.arange(101.0), level=0.9)
    assert (lo, hi) == pytest.approx((5.0, 95.0))


def test_interval_covers_the_sampling_spread_of_belief():
    """The bootstrap sd of a label's belief matches its spread over fresh test sets of the same model."""
    rng = np.random.default_rng(0)
    k, n = 3, 2000

    def draw(size):
        y = rng.integers(0, k, size)
        logits = rng.normal(size=(size, k)) + 2.5 * np.eye(k)[y]
        return np.exp(logits) / np.exp(logits).sum(1, keepdims=True), y

    fresh = np.array([trust_opinions(*draw(n))["belief"].iloc[0] for _ in range(200)])
    probs, labels = draw(n)
    boot = bootstrap_opinions(probs, labels, resample_counts(n, BootstrapParams(resamples=400)))["belief"][:, 0]
    # the sd of an sd estimate from 200 draws is ~5 %; allow four of those on each side
    assert 0.8 < boot.std() / fresh.std() < 1.25


def test_other_fusions_are_refused():
    probs, labels = predictions()
    with pytest.raises(ValueError, match="cumulative"):
        bootstrap_opinions(
            probs, labels, np.ones((1, len(labels)), np.float32), TrustParams(cluster_fusion="averaging")
        )


def _fixed_bin_ece(probs, labels, idx):
    """Top-label ECE over the given bin of every sample (the bins of bootstrap_scores' equal-mass ECE)."""
    conf, hit = probs.max(1), (probs.argmax(1) == labels).astype(float)
    gap = np.bincount(idx, weights=hit - conf, minlength=idx.max() + 1)
    return np.abs(gap).sum() / len(labels)


def test_each_score_resample_equals_the_metric_on_the_drawn_rows():
    from trustcal.evaluation import MetricParams
    from trustcal.measures import metrics
    from trustcal.measures.bootstrap import bootstrap_scores

    probs, labels = predictions(n=400, k=4, seed=5)
    mp = MetricParams(ece_bins=(10, 7), nts_alpha=0.5, nts_beta=2.0)
    counts = resample_counts(len(labels), BootstrapParams(resamples=6, seed=2))
    got = bootstrap_scores(probs, labels, counts, mp)
    mass = {m: metrics.bin_indices(probs.max(1), m, "mass") for m in mp.ece_bins}  # the full test set's bins
    n = len(labels)
    for b in range(len(counts)):
        rows = np.repeat(np.arange(n), counts[b].astype(int))
        p, y = probs[rows], labels[rows]
        want = {
            "accuracy": metrics.accuracy(p, y),
            "nll": metrics.nll(p, y),
            "brier": metrics.brier(p, y),
            "net_trust_score": metrics.net_trust_score(p, y, 0.5, 2.0),
            "ece": metrics.ece(p, y, 10),
            "ece_10": metrics.ece(p, y, 10),
            "ece_7": metrics.ece(p, y, 7),
            "classwise_ece": metrics.classwise_ece(p, y, 10),
            "ks_error": metrics.ks_error(p, y),
            "mean_confidence": float(p.max(1).mean()),
            **{f"ece_mass_{m}": _fixed_bin_ece(p, y, mass[m][rows]) for m in mp.ece_bins},
        }
        for name, value in want.items():
            # float32 products summed over n terms, each |term| ≤ 27.7 (−log 1e-12): n·eps32·27.7 bounds the error
            assert got[name][b] == pytest.approx(value, abs=float(n * np.finfo(np.float32).eps * 27.7)), name
    assert set(got) >= set(want)


@pytest.mark.parametrize(
    "names",
    [
        ("accuracy", "nll", "brier", "ece"),
        ("ece_mass_7",),
        ("classwise_ece", "l2_ece"),
        ("aurc",),
        ("ece_7", "ks_error"),
    ],
)
def test_a_subset_of_scores_equals_the_same_scores_of_the_whole_computation(names):
    """``names`` (what a shifted set's row asks for) gives those scores of the full product and walks, each
    within the float32 rounding of its sums (n terms, each |term| ≤ 27.7, −log 1e-12; the absolute values of up
    to K·M bins summed for the ECEs), and skips the columns and walks not asked for."""
    from trustcal.evaluation import MetricParams
    from trustcal.measures.bins import TopLabel
    from trustcal.measures.bootstrap import bootstrap_scores_of

    probs, labels = predictions(n=400, k=4, seed=5)
    mp = MetricParams(ece_bins=(10, 7))
    counts = resample_counts(len(labels), BootstrapParams(resamples=6, seed=2))
    top = TopLabel.of(probs, labels)
    whole, part = bootstrap_scores_of(top, counts, mp), bootstrap_scores_of(top, counts, mp, names=names)
    assert set(names) <= set(part) < set(whole)
    if "ks_error" not in names and "aurc" not in names:
        assert not {"ks_error", "aurc", "eaurc", "augrc"} & set(part)
    bound = len(labels) * np.finfo(np.float32).eps * 27.7 * 4 * 10
    for name in names:
        np.testing.assert_allclose(part[name], whole[name], rtol=0, atol=bound, err_msg=name)


def test_score_interval_matches_the_spread_over_fresh_test_sets():
    """The bootstrap sd of the ECE and the accuracy matches their spread over fresh test sets of the same model."""
    from trustcal.evaluation import MetricParams
    from trustcal.measures import metrics
    from trustcal.measures.bootstrap import bootstrap_scores

    rng = np.random.default_rng(4)
    k, n = 3, 2000

    def draw():
        y = rng.integers(0, k, n)
        logits = rng.normal(size=(n, k)) + 2.0 * np.eye(k)[y]
        return np.exp(logits) / np.exp(logits).sum(1, keepdims=True), y

    fresh = np.array([[metrics.ece(*s), metrics.accuracy(*s)] for s in (draw() for _ in range(200))])
    probs, labels = draw()
    boot = bootstrap_scores(probs, labels, resample_counts(n, BootstrapParams(resamples=400)), MetricParams())
    for i, name in enumerate(("ece", "accuracy")):
        # the sd of an sd estimate from 200 draws is ~5 %; allow four of those on each side
        assert 0.8 < boot[name].std() / fresh[:, i].std() < 1.25, name


def test_l2_and_aurc_resamples_equal_the_metrics_on_the_drawn_rows():
    from trustcal.evaluation import MetricParams
    from trustcal.measures import metrics
    from trustcal.measures.bootstrap import bootstrap_scores

    probs, labels = predictions(n=300, k=3, seed=9)
    probs[:40] = probs[0]  # a group of tied confidences (one threshold accepts or rejects all of them)
    counts = resample_counts(len(labels), BootstrapParams(resamples=5, seed=1))
    got = bootstrap_scores(probs, labels, counts, MetricParams(l2_bins=6))
    conf, hit = probs.max(1), (probs.argmax(1) == labels).astype(float)
    idx = metrics.bin_indices(conf, 6, "mass")  # the full test set's equal-mass bins
    for b in range(len(counts)):
        rows = np.repeat(np.arange(len(labels)), counts[b].astype(int))
        p, y = probs[rows], labels[rows]
        # aurc: the drawn copies of a sample are ties of it, the same groups as the weighted sum
        assert got["aurc"][b] == pytest.approx(metrics.aurc(p, y), abs=1e-12)
        assert got["eaurc"][b] == pytest.approx(metrics.eaurc(p, y), abs=1e-12)
        assert got["augrc"][b] == pytest.approx(metrics.augrc(p, y), abs=1e-12)
        n_b = np.bincount(idx[rows], minlength=6)
        gap = np.bincount(idx[rows], weights=conf[rows] - hit[rows], minlength=6) / np.maximum(n_b, 1)
        acc = np.bincount(idx[rows], weights=hit[rows], minlength=6) / np.maximum(n_b, 1)
        plugin = np.sqrt(np.sum(n_b * gap**2) / len(rows))
        debiased = np.sum(np.where(n_b >= 2, n_b * (gap**2 - acc * (1 - acc) / np.maximum(n_b - 1, 1)), 0)) / len(rows)
        # float32 sums of n terms ≤ 1 each, squared: 4·n·eps32 bounds the error of the squares
        assert got["l2_ece"][b] ** 2 == pytest.approx(plugin**2, abs=float(4 * len(rows) * np.finfo(np.float32).eps))
        assert got["l2_ece_debiased"][b] ** 2 == pytest.approx(
            max(debiased, 0.0), abs=float(4 * len(rows) * np.finfo(np.float32).eps)
        )


@pytest.mark.parametrize(
    "case", ["distinct", "tied", "all correct", "all wrong", "misses first", "one sample", "all misses drawn away"]
)
def test_ks_and_aurc_resamples_equal_the_metrics_on_the_drawn_rows(case):
    """KS, AURC and E-AURC of every resample against the metrics recomputed on the drawn rows, with
    distinct confidences (read only at the ends of runs of hits and misses, the usual case) and with
    ties (groups of equal confidence), at the edges: no error, no hit, the lowest confidences all
    misses (the walk falls from its first sample), a single sample, errors never drawn."""
    from trustcal.evaluation import MetricParams
    from trustcal.measures import metrics
    from trustcal.measures.bootstrap import bootstrap_scores

    probs, labels = predictions(n=1 if case == "one sample" else 300, k=3, seed=11)
    pred, order = probs.argmax(1), np.argsort(probs.max(1))
    if case == "tied":
        probs[:40] = probs[0]
    if case == "all correct":
        labels = pred.copy()
    if case == "all wrong":
        labels = (pred + 1) % 3
    if case == "misses first":  # the 30 lowest confidences wrong, the rest right
        labels = pred.copy()
        labels[order[:30]] = (pred[order[:30]] + 1) % 3
    counts = resample_counts(len(labels), BootstrapParams(resamples=5, seed=1))
    if case == "all misses drawn away":
        labels = pred.copy()
        labels[:5] = (pred[:5] + 1) % 3
        counts[:, 5] += counts[:, :5].sum(axis=1)  # no resample draws an error (each still draws n)
        counts[:, :5] = 0
    conf = probs.max(1)
    assert (np.unique(conf).size == conf.size) == (case != "tied")
    got = bootstrap_scores(probs, labels, counts, MetricParams())
    n = len(labels)
    # Σ of ≤ n terms, each of a few products of numbers ≤ n·H_n, over n: 4·n·H_n·eps64 bounds the rounding
    tol = 4 * n * (np.log(n) + 1) * np.finfo(float).eps
    for b in range(len(counts)):
        rows = np.repeat(np.arange(n), counts[b].astype(int))
        p, y = probs[rows], labels[rows]
        assert got["ks_error"][b] == pytest.approx(metrics.ks_error(p, y), abs=tol)
        assert got["aurc"][b] == pytest.approx(metrics.aurc(p, y), abs=tol)
        assert got["eaurc"][b] == pytest.approx(metrics.eaurc(p, y), abs=tol)
        assert got["augrc"][b] == pytest.approx(metrics.augrc(p, y), abs=tol)


# --------------------------------------------------------------------------- smooth ECE and the smooth diagram (§13.3)


def _overconfident(n, k, seed, scale):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)) * scale
    z[np.arange(n), labels] += 2.0
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True), labels


def _smooth_case(case: str, n: int, seed: int, label_seed: int):
    """(probs, labels, conf, hit) of n overconfident 5-class predictions; "nearly calibrated": the labels drawn
    from the probabilities (calibrated by construction); "ties": the first quarter one repeated prediction."""
    probs, labels = _overconfident(n, 5, seed=seed, scale=3.0)
    if case.startswith("nearly"):
        rng = np.random.default_rng(label_seed)
        labels = (rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, 4)
    if case == "ties":
        probs[: n // 4] = probs[0]
    return probs, labels, probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)


@pytest.mark.parametrize(
    "case", ["overconfident", "nearly calibrated (σ < 0.01 tried: larger grids)", "ties", "one sample"]
)
def test_each_smooth_ece_resample_equals_the_smooth_ece_of_its_drawn_rows(case):
    """Every replicate runs its own bandwidth search (relplot's), so it is the smooth ECE recomputed on the drawn
    rows; the sums differ only in order (float64 rounding of a few hundred grid terms). The nearly calibrated
    case reaches bandwidths below 0.01, where relplot's grid grows past 1001 points."""
    from trustcal.measures import metrics
    from trustcal.measures.smooth import bootstrap_smece

    n = {"one sample": 1, "nearly calibrated (σ < 0.01 tried: larger grids)": 20_000}.get(case, 2000)
    probs, labels, conf, hit = _smooth_case(case, n, seed=21, label_seed=8)
    counts = resample_counts(n, BootstrapParams(resamples=8, seed=2))
    got = bootstrap_smece(conf, hit, counts)
    sigmas = []
    for b in range(len(counts)):
        rows = np.repeat(np.arange(n), counts[b].astype(int))
        want, sigma = metrics.smece(probs[rows], labels[rows], return_sigma=True)
        sigmas.append(sigma)
        assert got[b] == pytest.approx(want, rel=1e-12, abs=1e-15), b
    if case.startswith("nearly"):  # the bisection from 1 tried 1/128 < 0.01 on its way to a σ* below 1/64
        assert min(sigmas) < 1 / 64


@pytest.mark.parametrize("case", ["overconfident", "nearly calibrated (σ* < 0.01: a larger grid)", "ties"])
def test_each_shared_bandwidth_resample_is_relplots_smooth_ece_of_its_drawn_rows_at_the_sets_bandwidth(case):
    """With the bandwidth shared, every replicate is relplot's smECE_sigma of the drawn rows at the test set's
    σ* (relplot smooths by direct summation, we by FFT: a few ε times the grid size apart, relative to the
    smoothed values, which are at most the N drawn samples)."""
    import relplot

    from trustcal.measures import metrics
    from trustcal.measures.smooth import bootstrap_smece

    n = 20_000 if case.startswith("nearly") else 2000
    probs, labels, conf, hit = _smooth_case(case, n, seed=25, label_seed=10)
    _, sigma = metrics.smece(probs, labels, return_sigma=True)
    assert (sigma < 0.01) == case.startswith("nearly")
    counts = resample_counts(n, BootstrapParams(resamples=6, seed=4))
    got = bootstrap_smece(conf, hit, counts, sigma)
    e = max(2000, round(20 / sigma)) // 2 + 1
    for b in range(len(counts)):
        rows = np.repeat(np.arange(n), counts[b].astype(int))
        want = relplot.smECE_sigma(conf[rows], hit[rows], sigma)
        assert got[b] == pytest.approx(want, rel=64 * e * np.finfo(float).eps), b


def test_smooth_diagram_is_relplots_kernel_smoother_and_its_band_the_drawn_rows():
    """The curve is relplot's KernelSmoother with the reflected Gaussian kernel at the smooth ECE's bandwidth
    (both sum directly over the grid, in another order: within a few ε times the grid size), the density its
    ``kde`` with the same kernel; each resample's curve is relplot's
    smoother fitted on the drawn rows, and the band their percentiles."""
    from relplot.estimators import KernelSmoother
    from relplot.kernels import ReflectedGaussianKernel

    from trustcal.measures import metrics
    from trustcal.measures.smooth import smooth_reliability

    probs, labels = _overconfident(1500, 4, seed=22, scale=2.5)
    conf, hit = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    counts = resample_counts(len(hit), BootstrapParams(resamples=12, seed=6))
    out = smooth_reliability(conf, hit, counts, points=41, level=0.8)
    _, sigma = metrics.smece(probs, labels, return_sigma=True)
    t = np.linspace(0, 1, 41)
    assert np.array_equal(out["confidence"], t) and (out["bandwidth"] == sigma).all()
    kernel = ReflectedGaussianKernel(sigma)
    e = max(2000, round(20 / sigma)) // 2 + 1
    tol = 16 * e * np.finfo(float).eps  # the FFT against direct convolution, relative to values ≤ 1
    smoother = KernelSmoother(kernel).fit(conf.reshape(-1, 1), hit)
    np.testing.assert_allclose(out["accuracy"], smoother.predict(t.reshape(-1, 1)), rtol=0, atol=tol)
    np.testing.assert_allclose(out["density"], kernel.kde(conf, t), rtol=0, atol=tol)
    curves = []
    for b in range(len(counts)):
        rows = np.repeat(np.arange(len(hit)), counts[b].astype(int))
        curves.append(KernelSmoother(kernel).fit(conf[rows].reshape(-1, 1), hit[rows]).predict(t.reshape(-1, 1)))
    lo, hi = percentile_interval(np.array(curves), 0.8)
    np.testing.assert_allclose(out["accuracy_lo"], lo, rtol=0, atol=tol)
    np.testing.assert_allclose(out["accuracy_hi"], hi, rtol=0, atol=tol)


def test_score_tables_carry_the_smooth_ece_interval_and_the_smooth_diagram():
    from trustcal.evaluation import MetricParams, PredictionSet, score_tables
    from trustcal.measures import metrics
    from trustcal.measures.smooth import bootstrap_smece

    probs, labels = _overconfident(800, 4, seed=23, scale=2.0)
    boot = BootstrapParams(resamples=25, seed=9)
    tables = score_tables([PredictionSet(2, "none", "test", probs, labels)], MetricParams(smooth_points=11), boot)
    row = tables["scores"].iloc[0]
    conf, hit = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    _, sigma = metrics.smece(probs, labels, return_sigma=True)
    lo, hi = percentile_interval(bootstrap_smece(conf, hit, resample_counts(800, boot), sigma), boot.level)
    assert (row["smece_lo"], row["smece_hi"]) == (lo, hi)
    own = score_tables(
        [PredictionSet(2, "none", "test", probs, labels)], MetricParams(smooth_points=11, smece_bandwidth="own"), boot
    )["scores"].iloc[0]
    lo, hi = percentile_interval(bootstrap_smece(conf, hit, resample_counts(800, boot)), boot.level)
    assert (own["smece_lo"], own["smece_hi"]) == (lo, hi)
    diagram = tables["smooth_reliability"]
    assert list(diagram.columns) == [
        "epoch", "calibrator", "split", "confidence", "accuracy", "density", "bandwidth", "accuracy_lo", "accuracy_hi",
    ]  # fmt: skip
    assert len(diagram) == 11 and (diagram["accuracy_lo"] <= diagram["accuracy_hi"]).all()


@pytest.mark.parametrize("ties", [False, True])
def test_smooth_measures_share_their_grids_and_give_the_numbers_of_the_two_functions(ties):
    """smooth_measures spreads the set and its resamples onto one set of grids, in the confidence order the top
    label keeps, and reuses the σ* of the set's smooth ECE: the same numbers, to the bit, as bootstrap_smece and
    smooth_reliability computing theirs apart, with the resamples at that σ* or each at its own."""
    from trustcal.measures import metrics
    from trustcal.measures.bins import TopLabel
    from trustcal.measures.smooth import bootstrap_smece, smooth_measures, smooth_reliability

    probs, labels = _overconfident(1200, 4, seed=24, scale=2.5)
    if ties:
        probs[:300] = probs[0]
    top = TopLabel.of(probs, labels)
    counts = resample_counts(len(labels), BootstrapParams(resamples=16, seed=3))
    _, sigma = metrics.smece(probs, labels, return_sigma=True)
    replicates, diagram = smooth_measures(top, counts, points=21, level=0.9)
    assert np.array_equal(replicates, bootstrap_smece(top.conf, top.hit, counts, sigma))
    own, _ = smooth_measures(top, counts, points=21, level=0.9, bandwidth="own")
    assert np.array_equal(own, bootstrap_smece(top.conf, top.hit, counts))
    apart = smooth_reliability(top.conf, top.hit, counts, points=21, level=0.9)
    assert diagram.keys() == apart.keys()
    for name, values in apart.items():
        assert np.array_equal(diagram[name], values), name
    # the weights in confidence order are the set (a row of ones) and then the counts, columns in that order
    weights = top.weights_in_order(counts)
    assert (weights[0] == 1).all() and np.array_equal(weights[1:], counts[:, top.order])
    assert top.weights_in_order(counts) is weights  # kept for the same counts, drawn anew for others
    assert top.weights_in_order(counts.copy()) is not weights
