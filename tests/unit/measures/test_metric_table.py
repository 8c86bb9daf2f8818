"""The table of scalar metrics (trustcal.measures.metrics.METRICS): scalar_metrics, the bootstrap and the
columns of scores.csv read it, so one entry adds a metric to all three; and no module of the measures
imports a private name of another (docs/method.md §5)."""

import ast
from pathlib import Path

import numpy as np
import pytest

from trustcal.evaluation import MetricParams, PredictionSet, score_tables
from trustcal.measures import metrics as M
from trustcal.measures.bootstrap import BootstrapParams, bootstrap_scores, resample_counts


def predictions(n=300, k=4, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, (n, k))
    labels = rng.integers(0, k, n)
    logits[np.arange(n), labels] += 1.5
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return probs, labels


def test_the_columns_are_the_keys_of_scalar_metrics_in_the_table_order():
    probs, labels = predictions()
    for kwargs in ({}, dict(ece_bins=(7, 3), l2_bins=4, reliability_bins=6)):
        out = M.scalar_metrics(probs, labels, **kwargs)
        assert list(out) == M.scalar_columns(M.MetricParams(**kwargs))
    assert M.scalar_columns(M.MetricParams(ece_bins=(7, 3)))[4:11] == [
        "ece",
        "ece_7",
        "ece_3",
        "ece_mass_7",
        "ece_mass_3",
        "mce_7",
        "mce_3",
    ]


def test_a_metric_with_a_per_sample_term_is_the_mean_of_that_term():
    probs, labels = predictions(seed=1)
    top = M.TopLabel.of(probs, labels)
    settings = M.MetricParams()
    with_term = {name: metric for name, metric in M.METRICS.items() if metric.term is not None}
    assert list(with_term) == ["accuracy", "mean_confidence", "nll", "brier", "net_trust_score"]
    for metric in with_term.values():
        (value,) = metric.values(top, settings)
        term = metric.term(top, settings)
        assert term.shape == labels.shape
        assert value == pytest.approx(float(np.mean(term)), rel=1e-12)
    # and the terms are the textbook ones
    right = probs.argmax(axis=1) == labels
    np.testing.assert_array_equal(with_term["accuracy"].term(top, settings), right)
    np.testing.assert_allclose(
        with_term["nll"].term(top, settings), -np.log(probs[np.arange(len(labels)), labels]), rtol=1e-12
    )


def test_one_entry_adds_a_metric_to_scalar_metrics_the_bootstrap_and_scores_csv(monkeypatch):
    """A metric written once, as a table entry (the mean squared confidence, with its per-sample term),
    appears in scalar_metrics, in the bootstrap's replicates and as a column of scores.csv with its interval."""
    probs, labels = predictions(n=200, seed=2)
    square = M.Metric(lambda s: ("confidence_sq",), lambda t, s: (float(np.mean(t.conf**2)),), lambda t, s: t.conf**2)
    monkeypatch.setitem(M.METRICS, "confidence_sq", square)
    by_hand = probs.max(axis=1) ** 2
    assert M.scalar_metrics(probs, labels)["confidence_sq"] == pytest.approx(by_hand.mean(), rel=1e-12)

    counts = resample_counts(len(labels), BootstrapParams(resamples=7, seed=3))
    replicates = bootstrap_scores(probs, labels, counts, MetricParams())["confidence_sq"]
    np.testing.assert_allclose(replicates, counts @ by_hand / len(labels), rtol=1e-6)  # float32 product

    preds = [PredictionSet(1, "none", "test", probs, labels)]
    scores = score_tables(preds, MetricParams(density_points=5, smooth_points=5), BootstrapParams(resamples=7))
    columns = list(scores["scores"].columns)
    assert columns.index("confidence_sq") == columns.index("nll_exact") - 1  # after the table's other entries
    row = scores["scores"].iloc[0]
    assert row["confidence_sq"] == pytest.approx(by_hand.mean(), rel=1e-12)
    assert row["confidence_sq_lo"] <= row["confidence_sq"] <= row["confidence_sq_hi"]


def test_the_metric_settings_need_an_ece_bin_count():
    with pytest.raises(ValueError, match=r"^ece_bins must be one or more values, e\.g\. \(10, 15\) \(got \(\)\)$"):
        M.MetricParams(ece_bins=())


PACKAGE = Path(M.__file__).resolve().parents[1]  # workflow/trustcal


@pytest.mark.parametrize(
    "module",
    sorted((PACKAGE / "measures").glob("*.py")) + sorted((PACKAGE / "evaluation").glob("*.py")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_no_private_name_is_imported_from_another_module(module):
    """Each module's underscore names are its own: what another module needs is public."""
    private = []
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("trustcal"):
            private += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
        if isinstance(node, ast.ImportFrom) and node.level:  # relative imports count too
            private += [f".{a.name}" for a in node.names if a.name.startswith("_")]
    assert private == []


def test_metrics_exports_its_own_names_and_the_estimators_of_calibration_errors():
    """``from trustcal.measures.metrics import *`` gives every metric, the calibration errors' estimators
    (:data:`trustcal.measures.calibration_errors.ESTIMATORS`, written once there) among them."""
    from trustcal.measures import calibration_errors

    assert set(calibration_errors.ESTIMATORS) <= set(M.__all__) and len(set(M.__all__)) == len(M.__all__)
    for name in M.__all__:
        assert getattr(M, name) is not None, name
    for name in calibration_errors.ESTIMATORS:
        assert getattr(M, name) is getattr(calibration_errors, name), name
