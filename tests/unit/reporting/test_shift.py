"""trustcal.reporting.shift: a shifted set's row holds the scores and network opinion as scores.csv and trust.csv
compute them, with intervals; the out-of-distribution rows tell confident from flat predictions."""

from __future__ import annotations

import numpy as np
import pytest

from trustcal.measures import metrics
from trustcal.measures.bootstrap import BootstrapParams, resample_counts
from trustcal.measures.trust import TrustParams, trust_opinions
from trustcal.reporting.shift import SIGNALS, ood_rows, shift_columns, shift_row
from trustcal.reporting.tables import PredictionSet


def _preds(seed: int, n: int = 300, k: int = 4, scale: float = 3.0, split: str = "test") -> PredictionSet:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += scale
    return PredictionSet.of_logits(1, "none", split, logits, labels)


def test_a_row_is_scores_csvs_metrics_and_trust_csvs_network_opinion():
    p = _preds(0)
    row = shift_row(p)
    assert row["accuracy"] == pytest.approx(metrics.accuracy(p.probs, p.labels))
    assert row["nll"] == pytest.approx(metrics.nll(p.probs, p.labels, p.log_probs))
    assert row["brier"] == pytest.approx(metrics.brier(p.probs, p.labels))
    assert row["ece"] == pytest.approx(metrics.ece(p.probs, p.labels, 10))
    network = trust_opinions(p.probs, p.labels, TrustParams()).iloc[-1]
    assert row["belief"] == pytest.approx(network["belief"]) and row["uncertainty"] == pytest.approx(
        network["uncertainty"]
    )
    boot = BootstrapParams(resamples=50)
    full = shift_row(p, counts=resample_counts(len(p.labels), boot), bootstrap=boot)
    assert set(full) == set(shift_columns(True)) - {
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
    rows = {r["signal"]: r for r in ood_rows(inside, flat, fit)}
    assert set(rows) == set(SIGNALS)
    assert rows["max_probability"]["auroc"] > 0.99 and rows["negative_entropy"]["auroc"] > 0.99
    assert rows["max_probability"]["fpr95"] < 0.05 and rows["max_probability"]["n_out"] == 200
