"""A user's .npz with one stray training label, run through the workflow: rule `prepare` stops with the line
that names the label, before any training, and leaves no splits behind (docs/usage.md, "A dataset of your
own")."""

import numpy as np
import pytest
import yaml
from helpers.workflow import TINY_CONFIG, snakemake

from trustcal.data.synthetic import class_images

pytestmark = pytest.mark.slow


def test_a_stray_training_label_stops_prepare_before_training(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    x, y = class_images(30, (3, 8, 8), 0, classes=3)
    xt, yt = class_images(9, (3, 8, 8), 1, classes=3)
    y[4] = 7
    path = work / "mine.npz"
    np.savez(path, x_train=x, y_train=y, x_test=xt, y_test=yt)
    config = {
        **TINY_CONFIG,
        "datasets": ["mine"],
        "setups": {"mine": {"dataset": {"kind": "npz", "path": str(path)}, "network": "lenet5"}},
    }
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    done = snakemake(work, "results/mine/seed0/scores.csv", check=False)
    line = (
        f"mine: {path}: label 7 (1 image) in y_train only; labels 3..6 in neither: with no classes named, K is "
        "the largest label + 1 (8) and each class 0..7 must have images in both y_train and y_test. Fix: correct "
        "or remove the images of the stray labels, numbering the classes 0..K−1 without gaps."
    )
    screen = done.stdout + done.stderr
    assert done.returncode == 1, screen
    assert f"ERROR (rule prepare): {line}\n" in screen, screen
    assert "Traceback" not in screen
    assert line in (work / "results" / "logs" / "prepare" / "mine.log").read_text()
    data = work / "results" / "data" / "mine"
    assert sorted(p.name for p in data.iterdir()) == ["raw_manifest.tsv"], "no splits, whole or half written"
    assert not (work / "results" / "mine").exists(), "no training job started"
