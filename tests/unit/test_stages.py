"""The stages the rules run (trustcal/stages.py), called directly on small files.

The NLL of logits is exact (docs/method.md §2.12): scores.csv and calibration.csv against PyTorch's
cross-entropy in float64 on logits whose true class lies up to 90 nats below the top, the probability path
against scikit-learn's ``log_loss``, and the fit objective at the identity map equal to the reported NLL on
both paths.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from helpers.synthetic import overconfident_logits

from trustcal import stages
from trustcal.calibration import fit_calibrator
from trustcal.evaluation import MetricParams
from trustcal.numerics import PROB_FLOOR, floored_log, logits_nll
from trustcal.settings import Settings

EPS = float(np.finfo(np.float64).eps)
SCORE_TABLES = ("scores", "trust_spectrum", "reliability", "trust_density", "smooth_reliability")


def torch_nll(z: np.ndarray, y: np.ndarray, temperature: float = 1.0) -> float:
    torch = pytest.importorskip("torch")
    logits = torch.from_numpy(np.asarray(z, dtype=np.float64) / temperature)
    return torch.nn.functional.cross_entropy(logits, torch.from_numpy(y).long()).item()


def nll_rounding(z: np.ndarray) -> float:
    """What float64 may change in a mean of K-term log-softmaxes of row-centred logits of size ≤ max |z|."""
    return (z.shape[1] + 2) * EPS * (1 + np.abs(z - z.max(axis=1, keepdims=True)).max())


def run_scores(tmp_path, logits: dict, methods=("temperature", "vector")) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The calibrate and scores stages on one epoch's logits file: (scores.csv, calibration rows)."""
    path = tmp_path / "epoch001.npz"
    np.savez(path, **logits)
    states, rows = [], []
    for method in methods:
        states.append(str(tmp_path / f"{method}.npz"))
        rows.append(stages.calibrate_stage([str(path)], states[-1], tmp_path / f"{method}.csv", method=method))
    outputs = {t: str(tmp_path / f"{t}.csv") for t in SCORE_TABLES}
    stages.scores_stage([str(path)], states, outputs, Settings(metrics=MetricParams(), bootstrap=None))
    return pd.read_csv(outputs["scores"]), pd.concat(rows, ignore_index=True)


def test_scores_nll_of_logits_is_pytorch_cross_entropy_beyond_any_floor(tmp_path):
    z_test, y_test = overconfident_logits(3000, 10, seed=1)
    z_val, y_val = overconfident_logits(1500, 10, seed=2)
    log_p_true = z_test[np.arange(len(y_test)), y_test] - np.log(np.exp(z_test).sum(axis=1))
    assert log_p_true.min() < -89 and (log_p_true < np.log(PROB_FLOOR)).sum() >= 30  # far beyond eps's −36
    scores, calibration = run_scores(
        tmp_path, dict(val_logits=z_val, val_labels=y_val, test_logits=z_test, test_labels=y_test)
    )
    row = scores.set_index(["calibrator", "split"])
    exact = torch_nll(z_test, y_test)
    assert row.loc[("none", "test"), "nll"] == pytest.approx(exact, rel=0, abs=1e-12)
    assert row.loc[("none", "val"), "nll"] == pytest.approx(torch_nll(z_val, y_val), rel=0, abs=1e-12)
    floored = float(np.mean(-np.maximum(log_p_true, np.log(PROB_FLOOR))))
    assert exact - floored > 0.3  # what a floor would hide here
    temperature = float(calibration.set_index("calibrator").loc["temperature", "temperature"])
    assert temperature > 1.5  # the fit softens the overconfident model
    assert row.loc[("temperature", "test"), "nll"] == pytest.approx(
        torch_nll(z_test, y_test, temperature), rel=0, abs=1e-12
    )
    assert row["nll_exact"].all()
    # one convention across the tables: calibration.csv's NLLs are the scores' (fit split: validation)
    for method, cal in calibration.set_index("calibrator").iterrows():
        assert cal["fit_nll_before"] == pytest.approx(row.loc[("none", "val"), "nll"], rel=0, abs=nll_rounding(z_val))
        assert cal["fit_nll_after"] == pytest.approx(row.loc[(method, "val"), "nll"], rel=0, abs=nll_rounding(z_val))
        assert cal["fit_nll_after"] < cal["fit_nll_before"] and not cal["identity_fallback"]


def test_scores_nll_of_probabilities_is_scikit_learn_log_loss_and_the_fit_starts_from_it(tmp_path):
    """Probability inputs keep the documented floor (a stored 0 has log −∞): scikit-learn's ``log_loss`` (which
    clips at float64's eps) on probabilities with exact zeros on the true class, ``nll_exact`` false; and the
    fit objective at the identity map (the NLL of softmax(log max(p, eps))) equals the reported NLL to K·eps."""
    metrics = pytest.importorskip("sklearn.metrics")
    import trustcal

    rng = np.random.default_rng(4)
    n, k = 2000, 5
    y = rng.integers(0, k, n)
    p = rng.dirichlet(np.full(k, 0.3), n)
    p[np.arange(n), y] += 1.0
    p /= p.sum(axis=1, keepdims=True)
    wrong = np.r_[0:20, 1000:1020]  # forty predictions certain of a wrong class: p(true) = 0 exactly
    p[wrong, :] = 0.0
    p[wrong, (y[wrong] + 1) % k] = 1.0
    val = (p[:1000], y[:1000])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the certain wrong predictions are worth a warning, not this test's
        result = trustcal.assess(
            p[1000:], y[1000:], kind="probs", validation=val, calibrators=["temperature"], bootstrap=None, sweep=None
        )
    scores = result.tables["scores"].set_index(["calibrator", "split"])
    want = metrics.log_loss(y[1000:], p[1000:], labels=np.arange(k))
    assert scores.loc[("none", "test"), "nll"] == pytest.approx(want, rel=1e-13)
    assert not scores.loc[("none", "test"), "nll_exact"] and scores.loc[("temperature", "test"), "nll_exact"]
    z_val = floored_log(val[0])
    objective_at_identity = logits_nll(z_val, val[1])
    assert objective_at_identity == pytest.approx(scores.loc[("none", "val"), "nll"], rel=0, abs=k * EPS + 1e-15)
    cal = fit_calibrator("temperature", z_val, val[1])
    assert cal.nll(z_val, val[1]) <= objective_at_identity + nll_rounding(z_val)


def test_the_scores_job_logs_a_line_per_calibrator_that_made_the_test_split_worse(tmp_path, caplog):
    """The workflow's form of trustcal assess's calibrator_worse_on_test: the scores job logs one warning line per
    calibrator whose test accuracy is lower or test NLL higher than the raw model's, naming it and the numbers
    of scores.csv (a 10-tree forest on digits, as log-probabilities: isotonic regression and histogram binning
    make it worse; temperature scaling, which lowers the NLL, is not named)."""
    datasets = pytest.importorskip("sklearn.datasets")
    ensemble = pytest.importorskip("sklearn.ensemble")
    model_selection = pytest.importorskip("sklearn.model_selection")
    x, y = datasets.load_digits(return_X_y=True)
    split = model_selection.train_test_split
    x_rest, x_test, y_rest, y_test = split(x, y, test_size=0.2, random_state=1, stratify=y)
    x_train, x_val, y_train, y_val = split(x_rest, y_rest, test_size=0.25, random_state=1, stratify=y_rest)
    forest = ensemble.RandomForestClassifier(n_estimators=10, random_state=1).fit(x_train, y_train)
    logits = dict(
        val_logits=floored_log(forest.predict_proba(x_val)),
        val_labels=y_val,
        test_logits=floored_log(forest.predict_proba(x_test)),
        test_labels=y_test,
    )
    with caplog.at_level("WARNING", logger="trustcal.stages"):
        scores, _ = run_scores(tmp_path, logits, methods=("temperature", "isotonic", "histogram"))
    lines = [r.getMessage() for r in caplog.records if "[calibrator_worse_on_test]" in r.getMessage()]
    test = scores[scores["split"] == "test"].set_index("calibrator")
    assert test.loc["temperature", "nll"] < test.loc["none", "nll"]
    assert len(lines) == 2, lines
    for line, name in zip(lines, ("isotonic", "histogram")):
        raw, cal = test.loc["none"], test.loc[name]
        assert line.startswith(str(tmp_path / "scores.csv")), line
        assert f"calibrator '{name}'" in line
        assert f"accuracy {raw['accuracy']:.4f} → {cal['accuracy']:.4f}" in line
        assert f"NLL {raw['nll']:.4f} → {cal['nll']:.4f}" in line


SCALAR_FIELDS = ("ece_bins", "nts_alpha", "nts_beta", "geo_eps", "geo_bins", "reliability_bins", "l2_bins")


def test_the_stages_write_the_tables_of_the_public_entry_points(tmp_path):
    """The scores and trust stages on fixed logits (two epochs; temperature scaling fitted by its stage), under
    settings other than the defaults, write exactly what the public entry points give on the same predictions,
    two code paths in one process: each table of trustcal.evaluation.score_tables and trust_tables, as the CSV
    text the stages write; every scalar column as trustcal.measures.metrics.scalar_metrics gives it from loose
    values; and the test split's intervals as the percentile intervals of bootstrap_scores' replicates."""
    from trustcal.evaluation import SweepParams, score_tables, trust_tables
    from trustcal.measures.bootstrap import BootstrapParams, bootstrap_scores, percentile_interval, resample_counts
    from trustcal.measures.metrics import scalar_metrics
    from trustcal.measures.trust import TrustParams
    from trustcal.numerics import one_blas_thread

    rng = np.random.default_rng(44)
    paths = []
    for epoch in (1, 2):
        arrays = {}
        for split, n in (("val", 120), ("test", 160)):
            labels = rng.integers(0, 4, n)
            arrays[f"{split}_logits"] = rng.normal(0, 2, (n, 4)) + 1.5 * epoch * np.eye(4)[labels]
            arrays[f"{split}_labels"] = labels
        paths.append(str(tmp_path / f"epoch{epoch:03d}.npz"))
        np.savez(paths[-1], **arrays)
    states = [str(tmp_path / "temperature.npz")]
    stages.calibrate_stage(paths, states[0], tmp_path / "calibration.csv")
    metrics = MetricParams(
        ece_bins=(7, 3),
        nts_alpha=1.5,
        nts_beta=0.5,
        density_points=9,
        geo_eps=0.02,
        geo_bins=4,
        reliability_bins=5,
        l2_bins=6,
        refinement_folds=3,
        smooth_points=11,
    )
    bootstrap = BootstrapParams(resamples=15, seed=3, level=0.9)
    settings = Settings(TrustParams(clusters=5), metrics, SweepParams(clusters=(2, 5), epochs=(1,)), bootstrap)
    trust_names = ("trust", "dynamic_trust", "selective", "trust_sweep")
    outputs = {name: str(tmp_path / f"{name}.csv") for name in (*SCORE_TABLES, *trust_names)}
    stages.scores_stage(paths, states, {name: outputs[name] for name in SCORE_TABLES}, settings)
    stages.trust_stage(paths, states, {name: outputs[name] for name in trust_names}, settings)

    preds = list(stages.load_predictions(paths, states))
    assert [(p.epoch, p.calibrator, p.split) for p in preds][:4] == [
        (1, "none", "test"),
        (1, "temperature", "test"),
        (1, "none", "val"),
        (1, "temperature", "val"),
    ]
    with one_blas_thread():
        tables = score_tables(preds, metrics, bootstrap) | trust_tables(
            preds, settings.trust, settings.sweep, bootstrap
        )
    assert set(tables) == set(outputs)
    for name, table in tables.items():
        assert (tmp_path / f"{name}.csv").read_text() == table.to_csv(index=False), name

    loose = {name: getattr(metrics, name) for name in SCALAR_FIELDS}
    counts = resample_counts(160, bootstrap)
    for p, (_, row) in zip(preds, tables["scores"].iterrows(), strict=True):
        assert (row["epoch"], row["calibrator"], row["split"]) == (p.epoch, p.calibrator, p.split)
        alone = scalar_metrics(p.probs, p.labels, log_probs=p.log_probs, **loose)
        np.testing.assert_array_equal(row[list(alone)].to_numpy(dtype=float), np.array(list(alone.values())))
        if p.split == "test":
            replicates = bootstrap_scores(p.probs, p.labels, counts, metrics, p.log_probs)
            for name in ("accuracy", "nll", "ece", "ece_mass_3", "classwise_ece", "l2_ece", "net_trust_score"):
                lo, hi = percentile_interval(replicates[name], bootstrap.level)
                assert (row[f"{name}_lo"], row[f"{name}_hi"]) == (lo, hi), name
