"""The workflow's `external:` section: someone else's predictions through the same tables and figures."""

import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.workflow import TINY_CONFIG, planned_jobs, snakemake

pytestmark = pytest.mark.slow
FILES = [f"{state}_{epoch}.csv.gz" for epoch in (1, 2) for state in ("bef", "aft")]


@pytest.fixture(scope="module")
def mnist_pred(shared):
    """The author's MNIST predictions (tests/conftest.py: ``shared``; skips where absent)."""
    return shared("reference/author-predictions/MNIST_PRED")


TARGETS = ["results/external/author_mnist/summary.txt", "results/external/author_mnist/figures"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, mnist_pred):
    """A copy of four of the author's MNIST files, assessed by snakemake (no training: only the external targets)."""
    work = tmp_path_factory.mktemp("external") / "work"
    preds = work / "preds"
    preds.mkdir(parents=True)
    for name in FILES + ["loss_history.npy"]:
        shutil.copy(mnist_pred / name, preds / name)
    config = {**TINY_CONFIG, "datasets": ["mnist"], "external": {"author_mnist": {"path": "preds"}}}
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    snakemake(work, *TARGETS)
    return work


def test_external_set_gets_the_workflow_tables_and_figures(workdir):
    out = workdir / "results" / "external" / "author_mnist"
    trust = pd.read_csv(out / "trust.csv")
    assert list(trust.columns[:3]) == ["epoch", "calibrator", "label"]
    assert sorted(trust["epoch"].unique()) == [1, 2] and len(trust) == 2 * 2 * 11
    scores = pd.read_csv(out / "scores.csv")
    assert list(scores.columns[:6]) == ["epoch", "calibrator", "split", "accuracy", "nll", "ece"]
    for name in ("dynamic_trust", "trust_sweep", "trust_spectrum", "reliability", "trust_density"):
        assert (out / f"{name}.csv").stat().st_size > 0
    for ext in ("png", "pdf"):
        assert (out / "figures" / f"trust_grid.{ext}").stat().st_size > 10_000
        assert (out / "figures" / f"loss_curves.{ext}").exists()  # the loss_history.npy beside the predictions
    assert (out / "warnings.txt").read_text() == ""
    log = (workdir / "results" / "logs" / "external" / "author_mnist.log").read_text()
    assert "0.9587" in log and "after calibration" in log  # the summary, epoch-1 accuracy
    # same numbers as the CLI on the same files
    after = trust[(trust["calibrator"] == "temperature") & (trust["label"] != "network")]
    assert after["belief"].between(0.59, 0.71).all()


def test_external_set_is_up_to_date_and_reruns_when_a_file_changes(workdir, tmp_path, mnist_pred):
    assert planned_jobs(workdir, *TARGETS) == {}
    copy = tmp_path / "copy"
    shutil.copytree(workdir, copy, symlinks=True)
    history = copy / "preds" / "loss_history.npy"  # found beside the predictions: an input too
    history.chmod(0o644)
    np.save(history, {"train": [0.5, 0.4], "val": [0.6, 0.7]}, allow_pickle=True)
    assert planned_jobs(copy, *TARGETS) == {"external": 1}
    shutil.copy(mnist_pred / "bef_3.csv.gz", copy / "preds" / "bef_3.csv.gz")
    plan = planned_jobs(copy)  # the default target: our own runs and the external set
    assert plan["external"] == 1 and plan["train"] == 1


def test_lint_with_an_external_set(workdir):
    lint = snakemake(workdir, "--lint")
    assert "good condition" in lint.stdout + lint.stderr


def test_bad_external_entries_stop_before_any_job(workdir, tmp_path):
    for override, expected in (
        ("external={author_mnist: {path: nowhere}}", "external.author_mnist: nowhere: file or directory not found"),
        (
            "external={author_mnist: {path: preds, lable_column: y}}",
            "unknown key 'lable_column' (did you mean 'label_column'?)",
        ),
        ("external={other: {format: csv}}", "'path' is a required property in 'external.other'"),
    ):
        proc = snakemake(workdir, "--dry-run", "--config", override, check=False)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0 and expected in out, out
        assert "Traceback" not in out


def test_bad_external_file_fails_the_job_with_the_message(workdir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(workdir, copy, symlinks=True)
    (copy / "preds" / "bef_5.csv").write_text("Class_0_Probability,Class_1_Probability,True Label\n0.5,0.5,x\n")
    proc = snakemake(copy, *TARGETS, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "bef_5.csv: line 2, column 'True Label': label 'x' names none of the probability columns" in out
    assert "Traceback" not in out
