"""trustcal.reporting.shift: a shifted set's row holds the scores and network opinion as scores.csv and trust.csv
compute them, with intervals; the out-of-distribution rows tell confident from flat predictions."""

from __future__ import annotations

import numpy as np
import pytest

from trustcal.evaluation import PredictionSet
from trustcal.measures import metrics
from trustcal.measures.bootstrap import BootstrapParams, resample_counts
from trustcal.measures.trust import TrustParams, trust_opinions
from trustcal.reporting.shift import (
    CURVE_BINS,
    ROC_POINTS,
    SIGNALS,
    ood_curves,
    ood_rows,
    other_side,
    shift_columns,
    shift_row,
    shift_rows,
)


def _logits(seed: int, n: int = 300, k: int = 4, scale: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += scale
    return logits, labels


def _preds(seed: int, n: int = 300, k: int = 4, scale: float = 3.0, split: str = "test") -> PredictionSet:
    return PredictionSet.of_logits(1, "none", split, *_logits(seed, n, k, scale))


def test_a_row_is_scores_csvs_metrics_and_trust_csvs_network_opinion():
    p = _preds(0)
    row, replicates = shift_row(p)
    assert replicates == {}
    assert row["accuracy"] == pytest.approx(metrics.accuracy(p.probs, p.labels))
    assert row["nll"] == pytest.approx(metrics.nll(p.probs, p.labels, p.log_probs))
    assert row["brier"] == pytest.approx(metrics.brier(p.probs, p.labels))
    assert row["ece"] == pytest.approx(metrics.ece(p.probs, p.labels, 10))
    network = trust_opinions(p.probs, p.labels, TrustParams()).iloc[-1]
    assert row["belief"] == pytest.approx(network["belief"]) and row["uncertainty"] == pytest.approx(
        network["uncertainty"]
    )
    boot = BootstrapParams(resamples=50)
    full, _ = shift_row(p, counts=resample_counts(len(p.labels), boot), bootstrap=boot)
    assert set(full) == {c for c in shift_columns(True) if "_vs_" not in c} - {
        "run",
        "seed",
        "epoch",
        "epoch_label",
        "set",
        "kind",
        "severity",
        "calibrator",
        "n",
    }
    for name in ("accuracy", "nll", "brier", "ece", "belief", "disbelief", "uncertainty"):
        assert full[f"{name}_lo"] <= full[f"{name}_hi"]


def test_confident_in_distribution_predictions_are_told_from_flat_ones():
    inside, fit = _preds(1, scale=6.0), _preds(2, scale=6.0, split="val")
    flat = PredictionSet.of_logits(
        1, "none", "test", np.random.default_rng(3).normal(0, 0.01, (200, 4)), -np.ones(200, int)
    )
    rows = {r["signal"]: r for r in ood_rows(inside, flat, fit)[0]}
    assert set(rows) == set(SIGNALS)
    assert rows["max_probability"]["auroc"] > 0.99 and rows["negative_entropy"]["auroc"] > 0.99
    assert rows["max_probability"]["fpr95"] < 0.05 and rows["max_probability"]["n_out"] == 200


def test_paired_differences_are_the_replicates_differences_on_the_same_resamples():
    """shift_rows: each calibrator's NLL, Brier and ECE minus the raw model's and temperature scaling's, on the set
    and on every resample (the same counts); the baseline's own difference is 0; a baseline not scored is NaN."""
    logits, labels = _logits(4)
    raw = PredictionSet.of_logits(1, "none", "test", logits, labels)
    hot = PredictionSet.of_logits(1, "temperature", "test", logits * 0.5, labels)
    boot = BootstrapParams(resamples=60, seed=3)
    counts = resample_counts(len(raw.labels), boot)
    rows = {r["calibrator"]: r for r in shift_rows({"none": raw, "temperature": hot}, counts=counts, bootstrap=boot)}
    _, reps_raw = shift_row(raw, counts=counts, bootstrap=boot)
    row_hot, reps_hot = shift_row(hot, counts=counts, bootstrap=boot)
    for m in ("nll", "brier", "ece"):
        diff = reps_hot[m] - reps_raw[m]
        assert rows["temperature"][f"{m}_vs_raw"] == pytest.approx(row_hot[m] - rows["none"][m], abs=1e-12)
        lo, hi = np.quantile(diff, [0.025, 0.975])
        assert rows["temperature"][f"{m}_vs_raw_lo"] == pytest.approx(lo, abs=1e-12)
        assert rows["temperature"][f"{m}_vs_raw_hi"] == pytest.approx(hi, abs=1e-12)
        assert rows["none"][f"{m}_vs_raw"] == rows["none"][f"{m}_vs_raw_lo"] == rows["none"][f"{m}_vs_raw_hi"] == 0
        assert rows["none"][f"{m}_vs_temperature"] == pytest.approx(-rows["temperature"][f"{m}_vs_raw"], abs=1e-12)
    alone = shift_rows({"none": raw}, counts=counts, bootstrap=boot)[0]
    assert np.isnan(alone["nll_vs_temperature"]) and alone["nll_vs_raw"] == 0
    assert set(shift_rows({"none": raw})[0]) == {"calibrator", *shift_row(raw)[0]}  # no bootstrap: no differences


def test_ood_intervals_hold_the_point_and_the_max_probability_differs_from_itself_by_nothing():
    inside, fit = _preds(5, scale=2.0), _preds(6, scale=2.0, split="val")
    outside = PredictionSet.of_logits(1, "none", "test", _logits(7, n=250, scale=0.5)[0], -np.ones(250, int))
    boot = BootstrapParams(resamples=80, seed=2)
    counts = (resample_counts(300, boot), resample_counts(250, other_side(boot)))
    rows, curves = ood_rows(inside, outside, fit, TrustParams(), counts, boot)
    for r in rows:
        assert r["auroc_lo"] <= r["auroc"] <= r["auroc_hi"] and r["fpr95_lo"] <= r["fpr95_hi"]
    first = rows[0]
    assert first["signal"] == "max_probability" and first["auroc_vs_max_probability"] == 0
    assert first["auroc_vs_max_probability_lo"] == first["auroc_vs_max_probability_hi"] == 0
    entropy = next(r for r in rows if r["signal"] == "negative_entropy")
    assert entropy["auroc_vs_max_probability"] == pytest.approx(entropy["auroc"] - first["auroc"])
    # the out-of-distribution side's resamples are drawn apart: not the in-distribution side's
    assert other_side(boot).seed != boot.seed
    assert {c["signal"] for c in curves} == set(SIGNALS)
    assert len(curves) == len(SIGNALS) * (2 * CURVE_BINS + ROC_POINTS)


def test_curves_by_hand():
    """ood_curves: histogram fractions per bin over the signal's range, and the ROC curve's best TPR at each
    FPR bound, against a brute force over every threshold."""
    rng = np.random.default_rng(11)
    inside, outside = rng.beta(5, 2, 400), rng.beta(2, 3, 300)
    rows = ood_curves("max_probability", 1, inside, outside, 10)
    hist_in = np.array([r["y"] for r in rows if r["curve"] == "in"])
    assert hist_in.sum() == pytest.approx(1.0) and len(hist_in) == CURVE_BINS
    assert hist_in == pytest.approx(np.histogram(inside, bins=np.linspace(0, 1, CURVE_BINS + 1))[0] / 400)
    roc = [(r["x"], r["y"]) for r in rows if r["curve"] == "roc"]
    assert roc[0][0] == 0.0 and roc[0][1] > 0 and roc[-1] == (1.0, 1.0)  # at FPR 0: the clean images above all
    # few distinct scores (ties within and across the sides): the curve through the thresholds' points, a
    # vertical step where only clean images share a threshold; its area is the AUROC (ties ½)
    tied_in, tied_out = np.round(inside * 4) / 4, np.round(outside * 4) / 4
    points = [(0.0, 0.0)] + [
        ((tied_out >= t).mean(), (tied_in >= t).mean()) for t in sorted(set(tied_in) | set(tied_out), reverse=True)
    ]
    curve = {r["x"]: r["y"] for r in ood_curves("max_probability", 1, tied_in, tied_out, 10) if r["curve"] == "roc"}
    for x, y in curve.items():
        on = [p for p in points if abs(p[0] - x) < 1e-12]
        if on:  # at a threshold's rate: the highest point there
            want = max(p[1] for p in on)
        else:  # between two: the straight line from the left one's top to the right one's foot
            left = max((p for p in points if p[0] < x), key=lambda p: (p[0], p[1]))
            right = min((p for p in points if p[0] > x), key=lambda p: (p[0], p[1]))
            want = left[1] + (right[1] - left[1]) * (x - left[0]) / (right[0] - left[0])
        assert y == pytest.approx(want, abs=1e-12), x
    from trustcal.measures.detection import auroc

    xs = np.array([p[0] for p in points])
    ys = np.array([p[1] for p in points])
    assert np.trapezoid(ys, xs) == pytest.approx(auroc(tied_in, tied_out), abs=1e-12)
    entropy = ood_curves("negative_entropy", 1, -inside, -outside, 10)  # its range is −log K … 0
    centres = [r["x"] for r in entropy if r["curve"] == "in"]
    assert min(centres) > -np.log(10) and max(centres) < 0


def test_ood_rows_without_curves_gives_the_same_rows_and_no_curve():
    """The stage asks the curves of the raw model and temperature scaling only: the rows do not depend on it."""
    inside, fit = _preds(1), _preds(2, split="val")
    outside = PredictionSet.of_logits(1, "none", "test", _logits(7, n=250, scale=0.5)[0], -np.ones(250, int))
    rows, curves = ood_rows(inside, outside, fit)
    rows_alone, none = ood_rows(inside, outside, fit, curves=False)
    assert rows_alone == rows and none == [] and len(curves) > 0
