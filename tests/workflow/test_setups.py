"""The study on any dataset and network (docs/usage.md, "Any dataset, any network"): each registered dataset
beyond the paper's two, staged in torchvision's own layout, Fashion-MNIST a second time with LeNet-5, and
scikit-learn's digits saved as a user's .npz with a user's network given by its import path, run end to end
by a configuration change alone."""

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

from trustcal.registry import DATASETS
from trustcal.reporting.figures.registry import FIGURES
from trustcal.reporting.verdict import NOT_COMPARABLE

pytestmark = pytest.mark.slow

# a network of the user's own, outside the package: built as Net(in_shape=…, num_classes=…, **network_kwargs)
USER_NETWORK = """
from torch import nn


class Net(nn.Module):
    def __init__(self, in_shape, num_classes, width=16):
        super().__init__()
        c, h, w = in_shape
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(c * h * w, width), nn.ReLU(), nn.Linear(width, num_classes))

    def forward(self, x):
        return self.body(x)
"""

REGISTERED = ("fashion_mnist", "kmnist", "cifar100", "svhn")


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*")}


def write_digits(path, n_train=180, n_test=60, seed=0):
    """scikit-learn's digits (8 × 8 grey images, values 0..16, 10 classes) as a user saves them: uint8
    pixels scaled to 0..255, (N, H, W), a random split."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    keep = np.random.default_rng(seed).permutation(len(y))[: n_train + n_test]
    images = np.rint(x[keep].reshape(-1, 8, 8) * 255 / 16).astype(np.uint8)
    np.savez(
        path, x_train=images[:n_train], y_train=y[keep][:n_train], x_test=images[n_train:], y_test=y[keep][n_train:]
    )


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    from trustcal.data import synthetic

    work = tmp_path_factory.mktemp("setups")
    data = work / "data"
    synthetic.write_idx_dataset(data, "fashion_mnist", n_train=120, n_test=60)
    synthetic.write_idx_dataset(data, "kmnist", n_train=120, n_test=60)
    synthetic.write_cifar100(data, n_train=300, n_test=200)
    synthetic.write_svhn(data, n_train=120, n_test=60)
    mine = work / "mine"
    mine.mkdir()
    write_digits(mine / "arrays.npz")
    nets = work / "nets"
    (nets / "mynets").mkdir(parents=True)
    (nets / "mynets" / "__init__.py").write_text("")
    (nets / "mynets" / "net.py").write_text(USER_NETWORK)
    before = _digest(mine)
    config = {
        **TINY_CONFIG,
        "epochs": 2,
        "datasets": [*REGISTERED, "fmnist_lenet5", "mine"],
        "setups": {
            "fmnist_lenet5": {"dataset": "fashion_mnist", "network": "lenet5"},
            "mine": {
                "dataset": {"kind": "npz", "path": str(mine / "arrays.npz"), "title": "Digits"},
                "network": "mynets.net:Net",
                "network_kwargs": {"width": 8},
                "recipe": {"preset": "sgd", "batch_size": 16},
            },
        },
    }
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(nets), os.environ.get("PYTHONPATH", "")])}
    snakemake(work, env=env, timeout=1200)
    return work, before, _digest(mine)


def test_each_registered_dataset_and_a_users_own_run_end_to_end(finished):
    work, before, after = finished
    results = work / "results"
    classes = {**{ds: len(DATASETS[ds].classes) for ds in REGISTERED}, "fmnist_lenet5": 10, "mine": 10}
    for run, k in classes.items():
        trust = pd.read_csv(results / run / "seed0" / "trust.csv")
        labels = pd.to_numeric(trust["label"], errors="coerce").dropna()  # the class rows (not the network's)
        assert labels.max() < k and labels.nunique() > 1, run
        scores = pd.read_csv(results / run / "seed0" / "scores.csv")
        assert set(scores["epoch"]) == {1, 2} and scores["accuracy"].between(0, 1).all()
        logits = np.load(results / run / "seed0" / "logits" / "epoch002.npz", allow_pickle=False)
        assert logits["test_logits"].shape[1] == k, run
        for name in FIGURES:
            assert (results / "figures" / run / f"{name}.png").stat().st_size > 10_000, (run, name)
    # the user's arrays: read, never written
    assert after == before
    # their manifest names the user's file with its md5
    manifest = pd.read_csv(results / "data" / "mine" / "raw_manifest.tsv", sep="\t")
    assert list(manifest["verified"]) == ["user file"]


def test_the_general_claims_are_judged_on_every_run(finished):
    work, _, _ = finished
    table = pd.read_csv(work / "results" / "reproduction.csv")
    general = table[table["scope"] == "general"]
    assert set(general["dataset"]) == {*REGISTERED, "fmnist_lenet5", "mine"}
    # the paper's claims stay with the paper's datasets, not in this run
    assert (table.loc[table["scope"] == "paper", "verdict"] == NOT_COMPARABLE).all()
    text = (work / "results" / "reproduction.md").read_text()
    assert "Does it hold beyond the paper?" in text
    assert "CIFAR-100 (CNN)" in text and "Fashion-MNIST (MLP)" in text and "Digits (Net)" in text
    assert "Fashion-MNIST (LeNet-5)" in text


@pytest.mark.skipif(
    chromium() is None, reason="no Chromium on this machine (apt-get install chromium, or set TRUSTCAL_CHROMIUM)"
)
def test_the_pages_of_runs_beyond_the_paper(finished, tmp_path):
    """Runs without the paper's datasets, in a browser (tests/helpers/pages.py): the verdict opens with the table
    of the general claims judged on them, on the first screen of a 1,400 × 900 window; the report's landing page
    lists every run in "What ran", from the top on a wide screen and without a sideways scroll on a phone."""
    work, _, _ = finished
    shots = Path(os.environ.get("TRUSTCAL_SCREENSHOTS") or tmp_path / "screenshots") / "setups"
    print(f"\nscreenshots: {shots}")
    verdict = page_layout(work, "results/reproduction.html", shots, 1400, 900)
    assert not verdict.problems and verdict.scroll_width <= 1400, verdict.problems
    first = verdict.tables[0]
    assert first["head"][:2] == ["Claim", "Reproduced when"] and 0 < first["top"] < 900, verdict.tables[:1]
    assert {"CIFAR-100 (CNN)", "Fashion-MNIST (MLP)", "Fashion-MNIST (LeNet-5)", "Digits (Net)"} <= set(first["head"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(work / "nets"), os.environ.get("PYTHONPATH", "")])}
    snakemake(work, "--report", "report.html", env=env)
    for width, height in ((1400, 900), (390, 844)):
        landing = page_layout(work, "report.html", shots, width, height)
        assert not landing.problems and landing.scroll_width <= width, (width, landing.problems)
        runs = landing.table(id="trustcal-runs")
        assert runs and runs["shown"] and 0 <= runs["left"] and runs["right"] <= width, (width, runs)
        assert runs["top"] < height - 80, (width, runs)
