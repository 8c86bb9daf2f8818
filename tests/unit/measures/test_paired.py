"""Paired differences with seeds (trustcal.measures.paired; docs/method.md §12): the estimator on tiny
arrays with hand-computed answers, the paired replicates the workflow writes (the scores stage's
``paired.npz``, the ``trust_bootstrap`` stage's opinions) against the scores and opinions recomputed on the
drawn rows, the study's calibrator comparison, and the interval's coverage in simulated studies whose true
difference is known."""

import functools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from trustcal.evaluation import MetricParams, PredictionSet, score_tables
from trustcal.files import read_result_npz, write_npz
from trustcal.measures import metrics
from trustcal.measures.bootstrap import BootstrapParams, bootstrap_scores, resample_counts
from trustcal.measures.paired import (
    PAIRED_KEYS,
    paired_arrays,
    paired_interval,
    paired_interval_from_intervals,
    stack_seeds,
    t_quantile,
    variance_terms,
)
from trustcal.measures.trust import trust_opinions

EPS = np.finfo(float).eps
EPS32 = float(np.finfo(np.float32).eps)
LEVEL = 0.95


# --------------------------------------------------------------------------- Student's t


@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995, 0.025])
def test_t_quantile_matches_scipy(p):
    df = np.array([*range(1, 61), 100, 500, 999, 1000, 1001, 5000, 1e6])
    got, want = t_quantile(p, df), stats.t.ppf(p, df)
    # bisection to one ulp of θ, t = √ν·tan θ: relative error ≤ (t/√ν + √ν/t)·θ·eps ≤ 64·(1 + t²/ν)·eps; the
    # series of ≤ ν/2 terms ≤ 1 is off by ≤ ν·eps in P(|T| ≤ t) = 2F − 1, moving t by ν·eps/(2f(t)); above
    # ν = 1000 the Cornish–Fisher remainder is O(z¹¹/ν⁵) < 1e-14
    t = np.abs(want)
    tol = 64 * (1 + t**2 / df) * EPS + np.minimum(df, 1000) * EPS / (t * stats.t.pdf(t, df)) + 1e-14
    np.testing.assert_array_less(np.abs(got - want) / np.abs(want), tol)
    assert t_quantile(p, np.inf) == pytest.approx(stats.norm.ppf(p), rel=4 * EPS)
    assert t_quantile(p, 4.8) == t_quantile(p, 4)  # rounded down
    assert np.isnan(t_quantile(p, [0.5, np.nan])).all()


# --------------------------------------------------------------------------- the estimator, by hand

POINTS = np.array([1.0, 2.0, 3.0])  # mean 2, s² = 1


def test_known_answer_with_test_noise_shared_by_the_seeds():
    """Every seed moves by the same e_b on resample b: all test-set noise is shared, T = Var_b(e)."""
    e = np.array([-0.5, 0.5, -0.5, 0.5])  # Var (ddof 1) = 1/3
    iv = paired_interval(POINTS, POINTS[:, None] + e)
    terms = variance_terms(POINTS, POINTS[:, None] + e)
    assert terms.test == pytest.approx(1 / 3, rel=8 * EPS) and terms.seed == pytest.approx(1 / 3, rel=8 * EPS)
    half = math.sqrt(stats.t.ppf(0.975, 3) ** 2 / 3 + stats.t.ppf(0.975, 2) ** 2 / 3)  # B − 1 = 3, S − 1 = 2
    assert iv.estimate == 2.0 and float(iv.se) == pytest.approx(math.sqrt(2 / 3), rel=8 * EPS)
    assert (float(iv.lo), float(iv.hi)) == pytest.approx((2 - half, 2 + half), rel=64 * EPS)
    assert float(iv.df) == 2


def test_seed_specific_test_noise_is_not_counted_twice():
    """Orthogonal replicate noise per seed: nothing is shared, T = 0, and the interval is the one-sample
    t interval of the three points (the noise that differs between seeds is already in their spread)."""
    noise = np.array([[1.0, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]])
    iv = paired_interval(POINTS, POINTS[:, None] + noise)
    assert float(variance_terms(POINTS, POINTS[:, None] + noise).test) == 0.0
    lo, hi = stats.t.interval(LEVEL, 2, loc=2.0, scale=stats.sem(POINTS))
    assert (float(iv.lo), float(iv.hi)) == pytest.approx((lo, hi), rel=64 * EPS)


def test_negative_shared_covariance_counts_as_none():
    noise = np.array([[1.0, -1, 1, -1], [-1, 1, -1, 1], [0, 0, 0, 0]])  # seeds 0 and 1 move oppositely
    assert float(variance_terms(POINTS, POINTS[:, None] + noise).test) == 0.0
    assert float(paired_interval(POINTS, POINTS[:, None] + noise).hi) == pytest.approx(
        stats.t.interval(LEVEL, 2, loc=2.0, scale=stats.sem(POINTS))[1], rel=64 * EPS
    )


def test_two_resamples_are_enough_for_the_test_set_term():
    """B = 2: the test-set term is measured (B − 1 = 1 degree of freedom), as with more resamples. Every seed
    moves by ±0.5 on the two resamples: T = Var_b(e) = 0.5, half-width √(t₁² · 0.5 + t₂² · 1/3)."""
    e = np.array([-0.5, 0.5])
    iv = paired_interval(POINTS, POINTS[:, None] + e)
    half = math.sqrt(stats.t.ppf(0.975, 1) ** 2 * 0.5 + stats.t.ppf(0.975, 2) ** 2 / 3)
    assert float(iv.hi) - 2.0 == pytest.approx(half, rel=64 * EPS)


def test_test_term_is_the_mean_cross_seed_covariance():
    rng = np.random.default_rng(0)
    reps = rng.normal(size=(4, 50)) + rng.normal(size=50)  # 4 seeds sharing a common part
    cov = np.cov(reps)  # 4 × 4, ddof 1
    want = (cov.sum() - np.trace(cov)) / 12
    assert float(variance_terms(reps[:, 0], reps).test) == pytest.approx(want, rel=1e-12)


def test_one_seed_is_the_percentile_interval_of_the_paired_replicates():
    reps = np.arange(1.0, 200.0)  # B = 199: the Weibull positions 0.025·200 = 5 and 195 are order statistics
    iv = paired_interval(np.array([100.0]), reps[None])
    assert (float(iv.lo), float(iv.hi)) == pytest.approx((5.0, 195.0), rel=16 * EPS)  # 0.025·200 in floating point
    assert float(iv.se) == pytest.approx(np.std(reps, ddof=1)) and np.isinf(iv.df)


def test_without_replicates_only_the_seeds_count():
    iv = paired_interval(POINTS)
    assert (float(iv.lo), float(iv.hi)) == pytest.approx(
        stats.t.interval(LEVEL, 2, loc=2.0, scale=stats.sem(POINTS)), rel=64 * EPS
    )
    one = paired_interval(np.array([0.3]))
    assert float(one.lo) == float(one.hi) == 0.3 and np.isnan(one.se) and np.isnan(one.df)


def test_from_intervals_equals_the_replicates_interval_when_the_seeds_share_all_test_noise():
    """Known answer (docs/method.md §12.7): every seed moves by the same e_b, each seed's interval is
    d_s ± z·sd(e); the interval from the intervals is 12.3's with z for the t quantile of B − 1."""
    z = stats.norm.ppf(0.975)
    e = np.array([-0.5, 0.5, -0.5, 0.5])  # Var (ddof 1) = 1/3
    sd = math.sqrt(1 / 3)
    iv = paired_interval_from_intervals(POINTS, POINTS - z * sd, POINTS + z * sd)
    half = math.sqrt(z**2 / 3 + stats.t.ppf(0.975, 2) ** 2 / 3)
    assert float(iv.estimate) == 2.0 and float(iv.se) == pytest.approx(math.sqrt(2 / 3), rel=8 * EPS)
    assert (float(iv.lo), float(iv.hi)) == pytest.approx((2 - half, 2 + half), rel=64 * EPS)
    with_t = paired_interval(POINTS, POINTS[:, None] + e)  # the same with t(3) for z: wider by that only
    t_half = math.sqrt(stats.t.ppf(0.975, 3) ** 2 / 3 + stats.t.ppf(0.975, 2) ** 2 / 3)
    assert float(with_t.hi) - 2 == pytest.approx(t_half, rel=64 * EPS) and t_half > half


def test_from_intervals_is_never_narrower_than_from_the_replicates():
    """Cov(d_s, d_s') ≤ se_s·se_s': random mixtures of shared and seed-specific noise, symmetric per-seed
    intervals d_s ± z·sd_s from the replicates' own sd; compared at equal quantiles (B large)."""
    rng = np.random.default_rng(7)
    z = stats.norm.ppf(0.975)
    for _ in range(200):
        seeds = int(rng.integers(2, 6))
        shared, own = rng.exponential(size=2)
        reps = shared * rng.normal(size=(1, 20_000)) + own * rng.normal(size=(seeds, 20_000)) * rng.uniform(
            0.2, 2, size=(seeds, 1)
        )
        points = rng.normal(size=seeds)
        reps = points[:, None] + reps - reps.mean(axis=1, keepdims=True)
        sd = reps.std(axis=1, ddof=1)
        wide = paired_interval_from_intervals(points, points - z * sd, points + z * sd)
        exact = paired_interval(points, reps)  # its t(19 999) quantile is z·(1 + 1.6e-4)
        assert float(wide.hi - wide.estimate) >= float(exact.hi - exact.estimate) / (1 + 2e-4)


def test_from_intervals_with_one_seed_is_its_interval_and_bad_cells_are_nan():
    iv = paired_interval_from_intervals(np.array([[0.1], [np.nan]]), np.array([[0.0], [0.0]]), np.array([[0.3], [1]]))
    assert (iv.lo[0], iv.hi[0], iv.estimate[0]) == (0.0, 0.3, 0.1) and np.isnan([iv.lo[1], iv.hi[1]]).all()
    two = paired_interval_from_intervals(np.array([1.0, np.nan]), np.zeros(2), np.ones(2) * 2)
    assert np.isnan([two.estimate, two.lo, two.hi, two.se, two.df]).all()
    three = paired_interval_from_intervals(POINTS, POINTS - 1, POINTS + 1)
    assert float(three.df) == 2.0  # S − 1 degrees of freedom of the seed term
    with pytest.raises(ValueError, match="one shape"):
        paired_interval_from_intervals(POINTS, POINTS[:2], POINTS)


def test_vectorised_over_leading_axes_equals_cell_by_cell():
    rng = np.random.default_rng(1)
    points = rng.normal(size=(4, 3, 5))
    reps = points[..., None] + rng.normal(size=(4, 3, 5, 30)) + rng.normal(size=(4, 3, 1, 30))
    whole = paired_interval(points, reps)
    for i in range(4):
        for j in range(3):
            cell = paired_interval(points[i, j], reps[i, j])
            for name in ("estimate", "lo", "hi", "se", "df"):
                assert getattr(whole, name)[i, j] == pytest.approx(float(getattr(cell, name)), rel=1e-12), name


def test_a_missing_resample_is_left_out_for_every_seed_and_a_missing_seed_value_gives_nan():
    rng = np.random.default_rng(2)
    points, reps = rng.normal(size=3), rng.normal(size=(3, 20))
    holed = reps.copy()
    holed[1, 7] = np.nan
    got, want = paired_interval(points, holed), paired_interval(points, np.delete(reps, 7, axis=1))
    assert (float(got.lo), float(got.hi)) == pytest.approx((float(want.lo), float(want.hi)), rel=1e-12)
    gone = paired_interval(np.array([[1.0, np.nan, 2.0], [1.0, 1.5, 2.0]]), np.zeros((2, 3, 20)))
    assert np.isnan([gone.estimate[0], gone.lo[0], gone.hi[0]]).all() and np.isfinite(gone.lo[1])


def test_swapping_the_states_mirrors_the_interval():
    """A − B and B − A (as the study and the questions take them: the difference of the two states' arrays,
    then :func:`paired_interval`) give mirrored intervals."""
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(2, 5)), rng.normal(size=(2, 5))
    ra, rb = a[..., None] + rng.normal(size=(2, 5, 40)), b[..., None] + rng.normal(size=(2, 5, 40))
    ab, ba = paired_interval(a - b, ra - rb), paired_interval(b - a, rb - ra)
    np.testing.assert_allclose(ab.estimate, -ba.estimate, rtol=0, atol=8 * EPS)
    np.testing.assert_allclose(ab.lo, -ba.hi, rtol=0, atol=64 * EPS)


def test_shapes_are_checked():
    with pytest.raises(ValueError, match=r"replicates must have shape points.shape \+ \(B,\)"):
        paired_interval(np.zeros(3), np.zeros((4, 10)))
    with pytest.raises(ValueError, match="level must be in"):
        paired_interval(np.zeros(3), level=95)
    with pytest.raises(ValueError, match="seeds on their last axis"):
        paired_interval(np.zeros(0))


# --------------------------------------------------------------------------- replicates of the project's scores


def _predictions(n=300, k=4, seed=5, temperature=1.0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k)) * 2 + 2.0 * np.eye(k)[labels]
    logits /= temperature
    probs = np.exp(logits - logits.max(1, keepdims=True))
    return probs / probs.sum(1, keepdims=True), labels


def test_paired_arrays_are_the_scores_of_both_states_on_the_same_drawn_rows():
    """The scores stage's ``paired.npz`` (:func:`score_tables` keeping its replicates, :func:`paired_arrays`
    stacking them): the difference of two calibration states of the same test samples is, at index 0, that of
    :func:`~trustcal.measures.metrics.scalar_metrics` on the whole test set and, at index b, that of the
    scores recomputed on the rows resample b drew (the same rows for both states)."""
    probs_a, labels = _predictions()
    probs_b, _ = _predictions(temperature=2.5)  # the same logits, softened: the same samples
    boot = BootstrapParams(resamples=4, seed=9)
    preds = [
        PredictionSet(1, "none", "test", probs_a, labels),
        PredictionSet(1, "temperature", "test", probs_b, labels),
    ]
    kept: dict = {}
    score_tables(preds, MetricParams(), bootstrap=boot, kept=kept)
    arrays = paired_arrays(kept, boot)
    assert list(arrays["calibrators"]) == ["none", "temperature"]
    names = list(arrays["metrics"])
    assert {"accuracy", "nll", "brier", "ece", "aurc", "augrc", "net_trust_score"} <= set(names)
    diff = arrays["scores"][0, 0].astype(float) - arrays["scores"][0, 1].astype(float)  # metrics × (B + 1)
    counts = resample_counts(len(labels), boot)  # the resamples score_tables draws
    n = len(labels)
    # float32 per-sample terms, ≤ 27.7 each (−log 1e-12), summed over n: n·eps32·27.7 bounds each side's error;
    # the float32 storage of each side (≤ 27.7) adds half an ulp of it
    tol = 2 * n * EPS32 * 27.7 + 27.7 * EPS32
    for name in ("accuracy", "nll", "brier", "ece", "aurc", "augrc", "net_trust_score"):
        m = names.index(name)
        whole = metrics.scalar_metrics(probs_a, labels)[name] - metrics.scalar_metrics(probs_b, labels)[name]
        assert diff[m, 0] == pytest.approx(whole, abs=tol), name
        for b in range(boot.resamples):
            rows = np.repeat(np.arange(n), counts[b].astype(int))
            drawn = (
                metrics.scalar_metrics(probs_a[rows], labels[rows])[name]
                - metrics.scalar_metrics(probs_b[rows], labels[rows])[name]
            )
            assert diff[m, b + 1] == pytest.approx(drawn, abs=tol), (name, b)


def test_trust_bootstrap_pairs_both_states_on_the_same_drawn_rows(tmp_path):
    """The opinions of the verdict's paired differences: the ``trust_bootstrap`` stage's arrays (resamples of
    the test set, before and after temperature scaling) read with ``trust.csv``'s rows as the verdict reads them
    (:func:`trustcal.reporting.verdict.runs.run_from_tables`). Row 0 is Algorithm 1 on the whole test set, row b
    Algorithm 1 on the rows resample b drew, the same rows for both states, so after − before on row b is the
    difference of Algorithm 1 of the two states on those rows."""
    from trustcal import stages
    from trustcal.evaluation import trust_table
    from trustcal.files import write_npz
    from trustcal.reporting.verdict.runs import AFTER, BEFORE, COMPONENTS, run_from_tables
    from trustcal.settings import Settings

    rng = np.random.default_rng(5)
    k = 4
    labels = {split: rng.integers(0, k, n) for split, n in (("test", 300), ("val", 200))}
    logits = {split: (rng.normal(size=(len(y), k)) + 3.0 * np.eye(k)[y]) * 2.5 for split, y in labels.items()}
    path = tmp_path / "logits" / "epoch001.npz"
    write_npz(
        path, **{f"{split}_logits": z for split, z in logits.items()}, **{f"{s}_labels": y for s, y in labels.items()}
    )
    calibrated = tmp_path / "temperature.npz"
    stages.calibrate_stage([str(path)], calibrated, tmp_path / "temperature.csv", method="temperature")
    settings = Settings.from_config({"clusters": 5, "bootstrap": {"resamples": 3, "seed": 4, "level": 0.95}})
    out = tmp_path / "trust_bootstrap.npz"
    stages.trust_bootstrap_stage([str(path)], str(calibrated), out, settings)
    preds = list(stages.load_predictions([str(path)], [str(calibrated)], splits=("test",)))
    run = run_from_tables(
        trust_table(preds, settings.trust), pd.DataFrame(dict(epoch=[1])), dict(np.load(out, allow_pickle=False))
    )
    assert run.resamples == 3
    state = {p.calibrator: p for p in preds}
    counts = resample_counts(len(labels["test"]), settings.bootstrap)
    n = len(labels["test"])
    for b in range(4):
        rows = np.arange(n) if b == 0 else np.repeat(np.arange(n), counts[b - 1].astype(int))
        before, after = (
            trust_opinions(state[c].probs[rows], labels["test"][rows], settings.trust) for c in ("none", "temperature")
        )
        assert not np.allclose(before["belief"], after["belief"])  # two states that differ
        for component in COMPONENTS:
            got = run.opinions[component][b, 0, AFTER] - run.opinions[component][b, 0, BEFORE]
            want = after[component].to_numpy() - before[component].to_numpy()
            # float32 storage of the resamples (values in [0, 1]: half an ulp, eps32/2, per state) and the same
            # float64 sums of ~n terms in another order
            np.testing.assert_allclose(got, want, rtol=0, atol=EPS32 + 2 * n * EPS)


def _tables_with_kept(epochs=(1, 2), resamples=12):
    preds = []
    for epoch in epochs:
        for calibrator, t in (("none", 1.0), ("temperature", 2.0 + epoch)):
            for split in ("test", "val"):
                probs, labels = _predictions(n=120, seed=epoch + (split == "val"), temperature=t)
                preds.append(PredictionSet(epoch, calibrator, split, probs, labels))
    kept: dict = {}
    boot = BootstrapParams(resamples=resamples, seed=2)
    tables = score_tables(preds, MetricParams(), bootstrap=boot, kept=kept)
    return preds, tables, kept, boot


def test_paired_arrays_hold_every_test_score_and_its_replicates(tmp_path):
    preds, tables, kept, boot = _tables_with_kept()
    arrays = paired_arrays(kept, boot)
    assert list(arrays["epochs"]) == [1, 2] and list(arrays["calibrators"]) == ["none", "temperature"]
    assert arrays["scores"].shape == (2, 2, len(arrays["metrics"]), boot.resamples + 1)
    assert arrays["scores"].dtype == np.float32 and {"ece", "nll", "brier", "smece"} <= set(arrays["metrics"])
    scores = tables["scores"].set_index(["epoch", "calibrator", "split"])
    m = list(arrays["metrics"]).index("ece")
    for p in (p for p in preds if p.split == "test"):
        e, c = list(arrays["epochs"]).index(p.epoch), list(arrays["calibrators"]).index(p.calibrator)
        row = arrays["scores"][e, c, m]
        assert row[0] == pytest.approx(scores.at[(p.epoch, p.calibrator, "test"), "ece"], rel=EPS32)
        counts = resample_counts(len(p.labels), boot)
        np.testing.assert_allclose(
            row[1:], bootstrap_scores(p.probs, p.labels, counts, MetricParams())["ece"], rtol=EPS32, atol=0
        )
    path = tmp_path / "paired.npz"
    write_npz(path, **arrays)
    back = read_result_npz(path, PAIRED_KEYS, rule="scores")
    np.testing.assert_array_equal(back["scores"], arrays["scores"])
    assert list(back["calibrators"]) == ["none", "temperature"]
    stacked = stack_seeds({3: back, 1: arrays})
    assert list(stacked["seeds"]) == [1, 3] and stacked["scores"].shape == (2, *arrays["scores"].shape)
    with pytest.raises(ValueError, match="different resamples"):
        stack_seeds({1: arrays, 2: {**arrays, "seed": np.array(boot.seed + 1)}})


def test_paired_arrays_need_bootstrapped_scores():
    with pytest.raises(ValueError, match="no bootstrapped test-split scores"):
        paired_arrays({}, BootstrapParams())


# --------------------------------------------------------------------------- the study's calibrator comparison


def _paired_seed(shift, noise, epochs=3, resamples=40, seed=0):
    """paired.npz arrays: ECE 0.05 raw, 0.05 − shift(epoch) for 'iso', 0.04 for temperature, with
    shared resample noise."""
    rng = np.random.default_rng(seed)
    common = rng.normal(scale=noise, size=resamples)
    scores = np.empty((epochs, 3, 1, resamples + 1), dtype=np.float32)
    for e in range(epochs):
        for c, level in enumerate((0.05, 0.04, 0.05 - shift(e + 1))):
            scores[e, c, 0] = level + np.concatenate([[0.0], common])
    return dict(
        epochs=np.arange(1, epochs + 1),
        calibrators=np.array(["none", "temperature", "iso"]),
        metrics=np.array(["ece"]),
        scores=scores,
        resamples=np.array(resamples),
        seed=np.array(0),
        level=np.array(0.95),
    )


def test_study_counts_epochs_whose_paired_interval_excludes_zero():
    from trustcal.study import calibrator_findings, comparison, paired_comparisons

    # iso: 0.02 below the raw model at epochs 2 and 3, 0 at epoch 1; shared noise cancels in the differences
    per_seed = {s: _paired_seed(lambda e, s=s: 0.0 if e == 1 else 0.02 + 0.001 * s, 0.01, seed=s) for s in range(3)}
    table = paired_comparisons(per_seed, metrics=("ece",))
    iso = table[(table["calibrator"] == "iso") & (table["against"] == "none")].set_index("epoch")
    assert iso.loc[2, "estimate"] == pytest.approx(-0.021, abs=1e-7)  # float32 storage
    half = stats.t.ppf(0.975, 2) * 0.001 / math.sqrt(3)  # seed term only: sd 0.001 over 3 seeds
    assert (iso.loc[2, "lo"], iso.loc[2, "hi"]) == pytest.approx((-0.021 - half, -0.021 + half), abs=1e-6)
    assert iso.loc[1, "estimate"] == 0 and iso.loc[1, "lo"] == iso.loc[1, "hi"] == 0  # identical predictions
    temp = table[(table["calibrator"] == "temperature") & (table["against"] == "none")]
    assert (temp["hi"] < 0).all()
    trust = pd.DataFrame(
        [
            dict(seed=s, epoch=e, calibrator=c, label=str(z), belief=0.6)
            for s in range(3)
            for e in (1, 2, 3)
            for c in ("none", "temperature", "iso")
            for z in range(2)
        ]
    )
    lines = calibrator_findings(comparison(trust, table, 3))
    assert any("`iso` below at 2 of 3 epochs, above at 0" in line for line in lines), lines
    assert not any("overlap" in line for line in lines)


def test_study_reads_every_seed_or_none_and_refuses_other_resamples(tmp_path):
    from trustcal.errors import TrustcalError
    from trustcal.study import load_paired

    assert load_paired(tmp_path, "mnist", [0, 1]) == {}
    write_npz(tmp_path / "mnist" / "seed0" / "paired.npz", **_paired_seed(lambda e: 0.0, 0.01))
    with pytest.raises(TrustcalError, match=r"seed1/paired.npz: file not found .* rerun rule 'scores'") as err:
        load_paired(tmp_path, "mnist", [0, 1])
    assert err.value.rerun == "scores"
    other = {**_paired_seed(lambda e: 0.0, 0.01), "seed": np.array(7)}
    write_npz(tmp_path / "mnist" / "seed1" / "paired.npz", **other)
    with pytest.raises(TrustcalError, match="different test-set resamples"):
        load_paired(tmp_path, "mnist", [0, 1])


# --------------------------------------------------------------------------- coverage by simulation


@functools.lru_cache
def quadrature_coverage(
    rho: float, seeds: int, resamples: int, used: float | None = None, level: float = LEVEL
) -> float:
    """The coverage of d̄ ± √(q_B²·T̂ + q_S²·s²/S) when d̄ − δ is normal with variance T + v, ρ = T/(T + v),
    s²/S ~ v·χ²_{S−1}/(S − 1) and the test-set term is taken as T̂ = used·(T + v) (default: T itself):
    E_X[2Φ(√(q_B²·used + q_S²(1 − ρ)X)) − 1]."""
    qb, qs, k = stats.t.ppf(0.5 + level / 2, resamples - 1), stats.t.ppf(0.5 + level / 2, seeds - 1), seeds - 1
    used = rho if used is None else used

    def integrand(x):
        return (2 * stats.norm.cdf(math.sqrt(qb**2 * used + qs**2 * (1 - rho) * x)) - 1) * stats.chi2.pdf(x * k, k) * k

    return integrate.quad(integrand, 0, np.inf, limit=200)[0]


@functools.lru_cache
def largest_coverage(seeds: int, resamples: int) -> float:
    """The most the quadrature interval covers, over every share ρ of the test-set term (about 0.987 for
    S = 2, 0.977 for S = 3, 0.966 for S = 5)."""
    return max(quadrature_coverage(r, seeds, resamples) for r in np.linspace(0, 1, 41))


def binomial_tolerance(p: float, n: int) -> float:
    return 3 * math.sqrt(p * (1 - p) / n)


def _draw_counts(rng, sims: int, resamples: int, n: int) -> np.ndarray:
    """sims × resamples × n multinomial counts (n draws with replacement each), as resample_counts draws them."""
    draws = rng.integers(0, n, size=(sims * resamples, n)) + n * np.arange(sims * resamples)[:, None]
    return np.bincount(draws.ravel(), minlength=sims * resamples * n).reshape(sims, resamples, n).astype(float)


def random_effects_studies(sims, seeds, n, resamples, sd_common, sd_interaction, sd_seed, rng, mean=0.3):
    """Per-sample differences g_{s,i} = G_i + h_{s,i} + τ_s (G: shared by the seeds, h: the seed × sample
    interaction, τ: the seed), one test set of n samples per study, one set of resamples shared by
    the seeds. True difference: ``mean``. Returns (points: sims × S, replicates: sims × S × B)."""
    common = mean + sd_common * rng.standard_normal((sims, 1, n))
    g = (
        common
        + sd_interaction * rng.standard_normal((sims, seeds, n))
        + sd_seed * rng.standard_normal((sims, seeds, 1))
    )
    counts = _draw_counts(rng, sims, resamples, n)
    return g.mean(-1), np.matmul(g, counts.transpose(0, 2, 1)) / n


@pytest.mark.parametrize(
    "seeds, sd_common, sd_interaction, sd_seed",
    [
        (2, 1.0, 0.0, 0.2),  # both terms: where the Welch–Satterthwaite interval covers 0.88
        (3, 1.0, 1.0, 0.1),  # all three sources
        (5, 0.0, 1.0, 0.0),  # only the seed × sample interaction: T = 0, the exact t interval
    ],
)
def test_coverage_matches_theory_in_random_effects_studies(seeds, sd_common, sd_interaction, sd_seed):
    """Normal effects with known variances: the empirical coverage equals the interval's coverage under
    normality at the true variances (between 0.95 and :func:`largest_coverage`) within three binomial
    standard errors. The test-set term enters at the mean of its estimates: it is set to 0 where noise
    makes it negative, which widens the interval a little when the true term is 0 (last case: 0.95 →
    about 0.958). An estimator that counted the interaction twice (SE² = Var_b(seed mean) + s²/S)
    covers 0.99 in the last case and fails this."""
    n, resamples, sims = 200, 200, 2000
    rng = np.random.default_rng(11 + seeds)
    points, reps = random_effects_studies(sims, seeds, n, resamples, sd_common, sd_interaction, sd_seed, rng)
    iv = paired_interval(points, reps)
    covered = float(np.mean((iv.lo <= 0.3) & (0.3 <= iv.hi)))
    shared, seed = sd_common**2 / n, (sd_seed**2 + sd_interaction**2 / n) / seeds  # T and v
    used = float(np.mean(variance_terms(points, reps).test)) / (shared + seed)
    want = quadrature_coverage(shared / (shared + seed), seeds, resamples, used)
    assert abs(covered - want) <= binomial_tolerance(want, sims), (covered, want)


class Binary:
    """A binary problem with the logit ℓ of P(y = 1) on equally likely atoms, and two models
    A and B of the form σ(k·ℓ + c + g·τ), τ ~ N(0, sd²) a training seed. Population values of
    accuracy, Brier, NLL and the 10-bin top-label ECE are sums over the atoms; their mean over seeds
    an integral over τ (Gauss–Hermite for the smooth scores, exact normal probabilities for accuracy,
    a fine grid for the ECE, whose bins change with τ)."""

    bins = 10

    def __init__(self, ell, model_a, model_b, sd):
        self.ell = np.asarray(ell, float)
        self.p1 = 1 / (1 + np.exp(-self.ell))
        self.weights = np.stack([1 - self.p1, self.p1], -1) / len(self.ell)  # P(atom, y)
        self.models, self.sd = (model_a, model_b), sd

    def q(self, which, tau):
        k, c, g = self.models[which]
        return 1 / (1 + np.exp(-(k * self.ell + c + g * np.asarray(tau, float)[..., None])))

    def per_sample(self, q):
        """Per (atom, y) cell: accuracy, Brier, NLL, ECE gap and bin of a model with P(y = 1) = q."""
        y = np.array([0, 1])
        q = q[..., None]
        p_label = np.where(y == 1, q, 1 - q)
        hit = ((q > 0.5) == (y == 1)).astype(float)
        conf = np.maximum(q, 1 - q) + 0 * y
        return dict(
            accuracy=hit,
            brier=2 * (1 - p_label) ** 2,
            nll=-np.log(p_label),
            gap=hit - conf,
            bin=np.minimum((conf * self.bins).astype(int), self.bins - 1),
        )

    def population(self, q) -> dict[str, np.ndarray]:
        v = self.per_sample(q)
        out = {m: (v[m] * self.weights).sum((-1, -2)) for m in ("accuracy", "brier", "nll")}
        onehot = v["bin"][..., None] == np.arange(self.bins)
        out["ece"] = np.abs(((v["gap"] * self.weights)[..., None] * onehot).sum((-2, -3))).sum(-1)
        return out

    def difference(self, tau) -> dict[str, np.ndarray]:
        a, b = self.population(self.q(0, tau)), self.population(self.q(1, tau))
        return {m: a[m] - b[m] for m in a}

    @functools.cached_property
    def mean_difference(self) -> dict[str, float]:
        nodes, w = np.polynomial.hermite_e.hermegauss(80)
        smooth = self.difference(self.sd * nodes)
        out = {m: float((smooth[m] * w).sum() / w.sum()) for m in ("brier", "nll")}
        accuracy = 0.0
        for which, sign in ((0, 1), (1, -1)):  # P(predict 1) = Φ((kℓ + c)/(g·sd))
            k, c, g = self.models[which]
            up = stats.norm.cdf((k * self.ell + c) / (g * self.sd))
            accuracy += sign * (self.p1 * up + (1 - self.p1) * (1 - up)).mean()
        out["accuracy"] = float(accuracy)
        x = np.linspace(-8, 8, 32001)  # step 5e-4 sd: the jumps of the ECE in τ cost < 1e-5
        density = np.exp(-x * x / 2)
        ece = 0.0
        for which, sign in ((0, 1), (1, -1)):  # per τ, the gaps summed per bin: one bincount
            v = self.per_sample(self.q(which, self.sd * x))
            index = np.arange(len(x))[:, None, None] * self.bins + v["bin"]
            sums = np.bincount(index.ravel(), (v["gap"] * self.weights).ravel(), minlength=len(x) * self.bins)
            ece = ece + sign * np.abs(sums.reshape(len(x), self.bins)).sum(1)
        out["ece"] = float((ece * density).sum() / density.sum())
        return out

    def studies(self, sims, seeds, n, resamples, rng, names):
        """Per study: a test set of n samples drawn once, S seeds, B resamples shared by the seeds; the
        difference A − B of each score per seed on the test set and on each resample."""
        cells = self.weights.ravel()
        test = rng.multinomial(n, cells, size=sims)
        drawn = rng.multinomial(n, test / n, size=(resamples, sims)).transpose(1, 0, 2)
        w = np.concatenate([test[:, None], drawn], 1).astype(float)  # sims × (B + 1) × cells
        tau = self.sd * rng.standard_normal((sims, seeds))
        va, vb = self.per_sample(self.q(0, tau)), self.per_sample(self.q(1, tau))
        out = {}
        for name in names:
            if name == "ece":
                each = []
                for v in (va, vb):
                    onehot = v["bin"].reshape(sims, seeds, -1)[..., None] == np.arange(self.bins)
                    terms = (v["gap"].reshape(sims, seeds, -1)[..., None] * onehot).transpose(0, 2, 1, 3)
                    sums = np.matmul(w, terms.reshape(sims, len(cells), -1)) / n  # sims × (B + 1) × (S·bins)
                    each.append(np.abs(sums.reshape(sims, -1, seeds, self.bins)).sum(-1).transpose(0, 2, 1))
                d = each[0] - each[1]
            else:
                per_cell = (va[name] - vb[name]).reshape(sims, seeds, -1)
                d = np.matmul(w, per_cell.transpose(0, 2, 1)).transpose(0, 2, 1) / n
            out[name] = d
        return out, tau


_U = (np.arange(16) + 0.5) / 16
DESIGNS = {
    # over- against under-confident (slopes 2 and 0.5), no atom near 0.5: every bin's calibration gap is
    # far from 0, so the plug-in ECE has no |·| bias; the same predicted class: no accuracy difference
    "scores": (
        Binary(np.concatenate([-(1 + 3 * _U), 1 + 3 * _U]), (2.0, 0.0, 1.0), (0.5, 0.0, 0.5), 0.3),
        ("brier", "nll", "ece"),
    ),
    # B's decision threshold moves by 0.6: accuracy differs, and by how much depends on the seed
    "threshold": (Binary(np.linspace(-3, 3, 32), (1.0, 0.0, 1.0), (1.0, 0.6, 1.0), 0.3), ("accuracy", "brier", "nll")),
}


@pytest.mark.parametrize("seeds", [1, 3, 5])
@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_coverage_of_score_differences_between_two_models(design, seeds):
    """Simulated studies of two classifiers whose population scores are known: the 95 % interval covers the
    true difference (the mean over seeds; with one seed, that seed's own) in 0.95 of the studies within three
    binomial standard errors, or up to the quadrature interval's largest coverage for S ≥ 2
    (:func:`largest_coverage`; it covers more than 0.95 when both terms matter, by construction). With
    several seeds, leaving out the seed term (the test-set interval of the seed mean) covers clearly less."""
    model, names = DESIGNS[design]
    n, resamples, sims = 1000, 100, 1000
    rng = np.random.default_rng(100 * seeds + len(design))
    diffs, tau = model.studies(sims, seeds, n, resamples, rng, names)
    truth = model.mean_difference if seeds > 1 else None
    tol = binomial_tolerance(LEVEL, sims)
    ceiling = largest_coverage(seeds, resamples) if seeds > 1 else LEVEL
    for name, d in diffs.items():
        iv = paired_interval(d[..., 0], d[..., 1:])
        target = truth[name] if seeds > 1 else model.difference(tau[:, 0])[name]
        covered = float(np.mean((iv.lo <= target) & (target <= iv.hi)))
        assert LEVEL - tol <= covered <= ceiling + tol, (name, covered, ceiling)
        if seeds > 1 and design == "threshold":
            lo, hi = np.quantile(d[..., 1:].mean(1), [0.025, 0.975], axis=-1, method="weibull")
            test_only = float(np.mean((lo <= target) & (target <= hi)))
            assert test_only < LEVEL - tol, (name, test_only)


def test_paired_arrays_refuse_replicates_of_another_bootstrap():
    probs, labels = _predictions()
    kept: dict = {}
    score_tables(
        [PredictionSet(1, "none", "test", probs, labels)],
        MetricParams(),
        bootstrap=BootstrapParams(resamples=4, seed=9),
        kept=kept,
    )
    with pytest.raises(ValueError, match=r"^the kept replicates have \[4\] resamples, the bootstrap 5$"):
        paired_arrays(kept, BootstrapParams(resamples=5, seed=9))
