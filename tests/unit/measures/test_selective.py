"""Trust as a selective-prediction signal (docs/method.md §13.1; trustcal.measures.selective, selective.csv).

Oracles: a direct implementation of AURC and AUGRC of an arbitrary score (sort, cumulative errors, one
line each), ``calibration.get_selective_stats`` (uncertainty-calibration) for distinct scores, the
expectation over every order of the tied samples (the tie rule's definition), hand-computed cases, the
max-probability numbers of scores.csv, and the drawn rows of each resample.
"""

import itertools
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from trustcal.evaluation import (
    COVERAGES,
    PredictionSet,
    dynamic_trust,
    score_tables,
    selective_table,
    trust_tables,
)
from trustcal.measures import metrics
from trustcal.measures.bootstrap import BootstrapParams, bootstrap_selective, percentile_interval, resample_counts
from trustcal.measures.selective import SCORES, opinion_scores, risk_at_coverages, selective_areas
from trustcal.measures.trust import TrustParams

EPS = float(np.finfo(float).eps)


def direct_areas(score, hit):
    """AURC and AUGRC of distinct scores by their definitions: accept in decreasing score; risk_k = errors
    among the first k / k, AURC = mean_k risk_k; g_k = errors among the first k / N, AUGRC = trapezoids of
    (k/N, g_k) from (0, 0)."""
    order = np.argsort(-np.asarray(score), kind="stable")
    errors = np.cumsum(1 - np.asarray(hit, dtype=float)[order])
    n = len(errors)
    k = np.arange(1, n + 1)
    g = np.concatenate([[0.0], errors / n])
    return float(np.mean(errors / k)), float(np.sum((g[1:] + g[:-1]) / 2) / n)


def predictions(n=300, k=4, seed=0, scale=2.0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)) * scale
    z[np.arange(n), labels] += 1.5
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True), labels


def test_any_distinct_score_against_its_definition_and_uncertainty_calibration():
    calibration = pytest.importorskip("calibration")
    rng = np.random.default_rng(1)
    for n in (1, 2, 17, 500):
        score, hit = rng.random(n), (rng.random(n) < 0.7).astype(float)
        aurc, augrc = selective_areas(score, hit)
        want_aurc, want_augrc = direct_areas(score, hit)
        assert aurc == pytest.approx(want_aurc, abs=4 * n * EPS)
        assert augrc == pytest.approx(want_augrc, abs=4 * n * EPS)
        if n > 1:  # get_selective_stats: the mean accuracy over the coverages k/N, for distinct scores
            area, _ = calibration.get_selective_stats(score, hit)
            assert aurc == pytest.approx(1 - area, abs=4 * n * EPS)


def test_the_max_probability_gives_the_metrics_of_scores_csv():
    probs, labels = predictions()
    conf, hit = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    assert selective_areas(conf, hit) == (metrics.aurc(probs, labels), metrics.augrc(probs, labels))
    curve = metrics.risk_coverage(probs, labels, points=20)
    np.testing.assert_array_equal(risk_at_coverages(conf, hit, np.array(COVERAGES) / 100), curve["risk"])


def test_ties_by_hand():
    # scores .9 .9 .5 .5, hits 1 0 1 0: each group holds one error, accepted in random order its errors spread
    # evenly: risks 1/2, 1/2, (1 + 1/2)/3, 2/4 → AURC = 1/2; AUGRC = (2·(0 + 1) + 2·(1 + 2))/(2·4²) = 1/4
    score, hit = np.array([0.9, 0.9, 0.5, 0.5]), np.array([1.0, 0.0, 1.0, 0.0])
    assert selective_areas(score, hit) == pytest.approx((0.5, 0.25), abs=8 * EPS)
    # one group of three (1 error) then a wrong sample: risks 1/3, 1/3, 1/3, 2/4 → AURC = 3/8;
    # AUGRC = (3·(0 + 1) + 1·(1 + 2))/32 = 3/16
    score, hit = np.array([0.2, 0.2, 0.2, 0.1]), np.array([1.0, 0.0, 1.0, 0.0])
    assert selective_areas(score, hit) == pytest.approx((float(Fraction(3, 8)), float(Fraction(3, 16))), abs=8 * EPS)
    np.testing.assert_allclose(risk_at_coverages(score, hit, [0.25, 0.5, 1.0]), [1 / 3, 1 / 3, 1 / 2], atol=4 * EPS)


def test_tied_areas_are_the_mean_over_every_order_of_the_ties():
    """The tie rule is the expectation over the orders a threshold cannot tell apart: both areas are linear
    in the per-coverage errors, so they equal the mean of the distinct-score areas over every order of the
    samples within each group (enumerated exactly)."""
    rng = np.random.default_rng(4)
    score = np.array([3, 3, 3, 2, 2, 1, 1, 1, 1], dtype=float)  # groups of 3, 2 and 4
    for _ in range(5):
        hit = (rng.random(score.size) < 0.5).astype(float)
        groups = [np.flatnonzero(score == s) for s in (3, 2, 1)]
        areas = []
        for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
            ranked = np.concatenate(orders)  # one order of acceptance: distinct ranks in decreasing score
            rank_score = np.empty(score.size)
            rank_score[ranked] = -np.arange(score.size)
            areas.append(direct_areas(rank_score, hit))
        want = np.mean(areas, axis=0)
        assert selective_areas(score, hit) == pytest.approx(tuple(want), abs=64 * EPS)
        assert selective_areas(score[::-1], hit[::-1]) == pytest.approx(tuple(want), abs=64 * EPS)


@pytest.mark.parametrize("ties", ["distinct", "opinion-like"])
def test_each_resample_equals_the_areas_of_its_drawn_rows(ties):
    probs, labels = predictions(n=400, seed=2)
    hit = (probs.argmax(axis=1) == labels).astype(float)
    score = probs.max(axis=1) if ties == "distinct" else np.round(probs.max(axis=1) * 7) / 7  # 8 values at most
    counts = resample_counts(hit.size, BootstrapParams(resamples=6, seed=5))
    got = bootstrap_selective(score, hit, counts)
    n = hit.size
    tol = 4 * n * (np.log(n) + 1) * EPS  # as test_bootstrap's AURC resamples: sums of ≤ n terms ≤ n·H_n
    for b in range(len(counts)):
        rows = np.repeat(np.arange(n), counts[b].astype(int))
        aurc, augrc = selective_areas(score[rows], hit[rows])
        assert got["aurc"][b] == pytest.approx(aurc, abs=tol)
        assert got["augrc"][b] == pytest.approx(augrc, abs=tol)


def test_opinion_scores_are_the_opinions_of_dynamic_trust():
    probs, labels = predictions(n=300, seed=3)
    val_probs, val_labels = predictions(n=200, seed=4)
    test = PredictionSet(1, "none", "test", probs, labels)
    fit = PredictionSet(1, "none", "val", val_probs, val_labels)
    params = TrustParams(base_rate=0.3)
    op = dynamic_trust(fit, test, params)
    scores = opinion_scores(op["confidence"], op["belief"], op["uncertainty"], params.base_rate)
    assert set(scores) == set(SCORES)
    np.testing.assert_array_equal(scores["max_probability"], probs.max(axis=1))
    np.testing.assert_allclose(scores["projected_probability"], op["belief"] + 0.3 * op["uncertainty"], atol=2 * EPS)
    np.testing.assert_allclose(scores["evidence"], op["belief"] + op["disbelief"], atol=4 * EPS)
    # the opinion is that of the (predicted class, cluster) pair: at most K·M distinct values
    assert np.unique(scores["belief"]).size <= 4 * params.clusters


def test_selective_table_pairs_the_differences_and_agrees_with_scores_csv():
    probs, labels = predictions(n=500, seed=6)
    val_probs, val_labels = predictions(n=300, seed=7)
    preds = [
        PredictionSet(e, c, s, p ** (1 + e / 3), y)
        for e in (1, 2)
        for c in ("none", "temperature")
        for s, p, y in (("test", probs, labels), ("val", val_probs, val_labels))
    ]
    preds = [
        PredictionSet(p.epoch, p.calibrator, p.split, p.probs / p.probs.sum(1, keepdims=True), p.labels) for p in preds
    ]
    boot = BootstrapParams(resamples=40, seed=3)
    params = TrustParams()
    table = trust_tables(preds, params, None, boot)["selective"]
    assert table.equals(selective_table(preds, params, boot))
    assert list(table.columns[:15]) == [
        "epoch", "calibrator", "score",
        "aurc", "aurc_lo", "aurc_hi", "augrc", "augrc_lo", "augrc_hi",
        "diff_aurc", "diff_aurc_lo", "diff_aurc_hi", "diff_augrc", "diff_augrc_lo", "diff_augrc_hi",
    ]  # fmt: skip
    assert list(table.columns[15:]) == [f"risk_{c:02d}" for c in COVERAGES]
    assert len(table) == 2 * 2 * len(SCORES)
    scores = score_tables(preds, bootstrap=boot)["scores"]
    counts = resample_counts(len(labels), boot)
    for (epoch, calibrator), rows in table.groupby(["epoch", "calibrator"]):
        row = scores[(scores.epoch == epoch) & (scores.calibrator == calibrator) & (scores.split == "test")].iloc[0]
        base = rows[rows.score == "max_probability"].iloc[0]
        for column in ("aurc", "augrc", "aurc_lo", "aurc_hi", "augrc_lo", "augrc_hi"):  # the same numbers
            assert base[column] == pytest.approx(row[column], abs=1e-12), column
        assert base["diff_aurc"] == base["diff_aurc_lo"] == base["diff_aurc_hi"] == 0.0
        # the paired interval: the percentiles of the resamples' differences, not a difference of intervals
        test = next(p for p in preds if (p.epoch, p.calibrator, p.split) == (epoch, calibrator, "test"))
        fit = next(p for p in preds if (p.epoch, p.calibrator, p.split) == (epoch, calibrator, "val"))
        op = dynamic_trust(fit, test, params)
        hit = op["correct"].to_numpy(dtype=float)
        mine = bootstrap_selective(op["belief"].to_numpy(), hit, counts)["aurc"]
        theirs = bootstrap_selective(op["confidence"].to_numpy(), hit, counts)["aurc"]
        lo, hi = percentile_interval(mine - theirs, boot.level)
        belief = rows[rows.score == "belief"].iloc[0]
        assert (belief["diff_aurc_lo"], belief["diff_aurc_hi"]) == pytest.approx((lo, hi), abs=1e-12)
        assert belief["diff_aurc"] == pytest.approx(belief["aurc"] - base["aurc"], abs=4 * EPS)
        assert base["risk_100"] == pytest.approx(1 - row["accuracy"], abs=4 * EPS)


def test_without_resamples_the_table_has_no_interval():
    probs, labels = predictions(n=100, seed=8)
    table = selective_table([PredictionSet(3, "none", "test", probs, labels)], TrustParams())
    assert not [c for c in table.columns if c.endswith(("_lo", "_hi"))]
    assert list(table["score"]) == list(SCORES) and (table["epoch"] == 3).all()


def test_trustcal_assess_writes_selective_csv(tmp_path):
    """`trustcal assess` writes every table it computes: selective.csv with a row per epoch, calibration
    state and score (temperature scaling fitted on the files' validation logits)."""
    rng = np.random.default_rng(9)
    series = tmp_path / "logits"
    series.mkdir()
    for epoch in (1, 2):
        logits, labels = (rng.normal(size=(120, 4)) * 2, rng.integers(0, 4, 120))
        logits[np.arange(120), labels] += 2
        val, val_labels = rng.normal(size=(60, 4)) * 2, rng.integers(0, 4, 60)
        np.savez(
            series / f"epoch{epoch:03d}.npz",
            test_logits=logits,
            test_labels=labels,
            val_logits=val,
            val_labels=val_labels,
        )
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trustcal",
            "assess",
            str(series),
            "--out",
            str(out),
            "--no-figures",
            "--bootstrap",
            "30",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out / "selective.csv")
    assert sorted(set(zip(table.epoch, table.calibrator))) == [
        (1, "none"),
        (1, "temperature"),
        (2, "none"),
        (2, "temperature"),
    ]
    assert (table.groupby(["epoch", "calibrator"])["score"].apply(list) == [list(SCORES)] * 4).all()
    assert table["diff_aurc_lo"].notna().all() and (table["aurc_lo"] <= table["aurc_hi"]).all()
    assert (out / "smooth_reliability.csv").is_file()


def test_grouped_scores_beyond_the_joint_group_limit_are_each_the_areas_of_the_drawn_rows():
    """Two scores of 12 values each (grouped on their own) whose joint groups exceed the 128 a single product
    takes: each is done alone, and each resample's AURC and AUGRC are those of the rows it drew
    (:func:`selective_areas` on the drawn copies; float32 sums of at most N counts, exact below 2^24, and float64
    areas of N terms: 64·N·eps)."""
    from trustcal.measures.bootstrap import bootstrap_selective_scores

    rng = np.random.default_rng(12)
    n = 400
    scores = {"a": rng.integers(0, 12, n) / 12, "b": rng.integers(0, 12, n) / 11}
    hit = (rng.random(n) < 0.7).astype(float)
    assert len(set(zip(scores["a"], scores["b"]))) > 128
    counts = resample_counts(n, BootstrapParams(resamples=3, seed=1))
    got = bootstrap_selective_scores(scores, hit, counts)
    for name, score in scores.items():
        for b in range(3):
            rows = np.repeat(np.arange(n), counts[b].astype(int))
            aurc, augrc = selective_areas(score[rows], hit[rows])
            assert got[name]["aurc"][b] == pytest.approx(aurc, abs=64 * n * np.finfo(float).eps), (name, b)
            assert got[name]["augrc"][b] == pytest.approx(augrc, abs=64 * n * np.finfo(float).eps), (name, b)
