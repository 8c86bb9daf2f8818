"""A user's table run end to end (docs/usage.md, "A dataset of your own"): scikit-learn's breast-cancer data
saved as an .npz of (N, F) features, trained by the registered MLP, and every later stage (logits, calibrate,
trust, scores, figures, verdict) as for images; a convolutional network on it stops before any job."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.pages import chromium, page_layout
from helpers.workflow import TINY_CONFIG, snakemake

from trustcal.reporting.figures.registry import FIGURES

pytestmark = pytest.mark.slow


def write_breast_cancer(path, n=300, seed=0):
    """A subsample of scikit-learn's breast-cancer data (30 float features, 2 classes), as docs/usage.md saves
    it: the first 80 % for training, the rest for testing."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    keep = np.random.default_rng(seed).permutation(len(data.target))[:n]
    x, y = data.data[keep], data.target[keep]
    cut = int(0.8 * n)
    np.savez(
        path, x_train=x[:cut], y_train=y[:cut], x_test=x[cut:], y_test=y[cut:], classes=np.array(data.target_names)
    )
    return x[:cut]


def config_of(path, **setup):
    entry = {"dataset": {"kind": "npz", "path": str(path), "title": "Breast cancer"}, "network": "paper_mlp", **setup}
    return {**TINY_CONFIG, "epochs": 2, "datasets": ["bc"], "setups": {"bc": entry}}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    work = tmp_path_factory.mktemp("tabular")
    x_train = write_breast_cancer(work / "bc.npz")
    before = hashlib.sha256((work / "bc.npz").read_bytes()).hexdigest()
    (work / "tiny.yaml").write_text(yaml.safe_dump(config_of(work / "bc.npz")))
    snakemake(work, timeout=1200)
    return work, x_train, before


def test_a_table_runs_end_to_end_through_every_stage(finished):
    work, _, before = finished
    results = work / "results"
    trust = pd.read_csv(results / "bc" / "seed0" / "trust.csv")
    labels = pd.to_numeric(trust["label"], errors="coerce").dropna()  # the class rows
    assert set(labels.astype(int)) == {0, 1}
    scores = pd.read_csv(results / "bc" / "seed0" / "scores.csv")
    assert set(scores["epoch"]) == {1, 2} and scores["accuracy"].between(0, 1).all()
    logits = np.load(results / "bc" / "seed0" / "logits" / "epoch002.npz", allow_pickle=False)
    assert logits["test_logits"].shape == (60, 2) and np.isfinite(logits["test_logits"]).all()
    assert (results / "bc" / "seed0" / "calibration.csv").stat().st_size > 0
    for name in FIGURES:
        assert (results / "figures" / "bc" / f"{name}.png").stat().st_size > 10_000, name
    verdict = pd.read_csv(results / "reproduction.csv")
    assert set(verdict.loc[verdict["scope"] == "general", "dataset"]) == {"bc"}
    assert "Breast cancer (MLP)" in (results / "reproduction.md").read_text()
    # the user's file: read, never written
    assert hashlib.sha256((work / "bc.npz").read_bytes()).hexdigest() == before


def test_the_prepared_splits_are_the_features_standardised_by_the_training_split(finished):
    work, x_train, _ = finished
    with np.load(work / "results" / "data" / "bc" / "splits.npz", allow_pickle=False) as data:
        splits = {k: data[k] for k in data.files}
    train = x_train[:216]  # validation_split 0.1 of 240: the last 24 validate
    np.testing.assert_allclose(splits["feature_mean"], train.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(splits["feature_scale"], train.std(axis=0), rtol=1e-12)
    assert splits["x_train"].dtype == np.float32 and splits["x_train"].shape == (216, 30)
    np.testing.assert_allclose(splits["x_val"], (x_train[216:] - train.mean(axis=0)) / train.std(axis=0), rtol=1e-5)
    assert splits["classes"].tolist() == ["malignant", "benign"]


def test_a_convolutional_network_on_a_table_stops_before_any_job(finished, tmp_path):
    work, _, _ = finished
    config = config_of(work / "bc.npz", network="resnet20")
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(tmp_path, "--dry-run", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out
    assert (
        f"setups: bc: dataset {work / 'bc.npz'} (x_train of shape (240, 30): 240 samples of 30 features) holds a "
        "table, which network resnet20 cannot read: it is made for images. Fix: set network: paper_mlp in setups: bc"
    ) in out, out


@pytest.mark.skipif(
    chromium() is None, reason="no Chromium on this machine (apt-get install chromium, or set TRUSTCAL_CHROMIUM)"
)
def test_the_verdict_of_a_table_opens_with_its_general_claims_on_the_first_screen(finished, tmp_path):
    """The table's verdict in a browser at 1,400 × 900 (tests/helpers/pages.py): its first table, the general
    claims judged on this run, starts on the first screen, with the run's column."""
    work, _, _ = finished
    shots = Path(os.environ.get("TRUSTCAL_SCREENSHOTS") or tmp_path / "screenshots") / "tabular"
    verdict = page_layout(work, "results/reproduction.html", shots, 1400, 900)
    assert not verdict.problems and verdict.scroll_width <= 1400, verdict.problems
    first = verdict.tables[0]
    assert first["head"][:2] == ["Claim", "Reproduced when"] and 0 < first["top"] < 900, verdict.tables[:1]
    assert "Breast cancer (MLP)" in first["head"], first["head"]
