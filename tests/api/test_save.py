"""What the Python API writes and prints: `result.save(dir)` writes what `trustcal assess --out dir` writes on the
same predictions (docs/assess.md says so), and its objects print in the API's own words."""

import contextlib
import io

import numpy as np
import pytest

import trustcal
from trustcal.cli import main

CALIBRATORS = ["temperature", "histogram"]  # numpy only: the light install's


@pytest.fixture(scope="module")
def predictions():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 400)
    logits = rng.normal(size=(400, 3)) + 2.5 * np.eye(3)[labels]
    return logits[:250], labels[:250], logits[250:], labels[250:]


@pytest.fixture(scope="module")
def result(predictions):
    logits, labels, val_logits, val_labels = predictions
    return trustcal.assess(
        logits, labels, kind="logits", validation=(val_logits, val_labels), calibrators=CALIBRATORS, bootstrap=20
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory, result):
    return result.save(tmp_path_factory.mktemp("saved") / "api")


def files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_save_writes_what_the_command_writes(tmp_path, predictions, saved):
    logits, labels, val_logits, val_labels = predictions
    np.savez(tmp_path / "preds.npz", logits=logits, labels=labels, val_logits=val_logits, val_labels=val_labels)
    cmd = ["assess", str(tmp_path / "preds.npz"), "--out", str(tmp_path / "cli"), "--quiet"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*cmd, "--calibrators", ",".join(CALIBRATORS), "--bootstrap", "20"]) == 0
    written = files(tmp_path / "cli")
    assert files(saved) == written
    assert "figures/reliability.png" in written and not any(f.endswith(".pdf") for f in written)


def test_api_objects_print_in_the_api_words(result, saved):
    opinion = repr(result.network_opinion("histogram"))
    assert opinion.splitlines()[-1] == "Name: histogram, dtype: float64", opinion  # not the row's index
    assert repr(result).splitlines()[0] == "trustcal.assess: 250 test samples, 3 classes"
    summary = (saved / "summary.txt").read_text()
    assert summary == result.summary() + "\n" and "prediction file" not in summary and "probs_or_logits" not in summary
