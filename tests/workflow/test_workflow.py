"""The whole workflow under snakemake on tiny datasets in torchvision's formats."""

import re
import shutil

import numpy as np
import pandas as pd
import pytest
from helpers.workflow import make_workdir, planned_jobs, snakemake

pytestmark = pytest.mark.slow

DATASETS = ("mnist", "cifar10")
CONTRACT = {
    "history.csv": ["epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "seconds"],
    "calibration.csv": ["epoch", "calibrator", "temperature", "val_nll_before", "val_nll_after", "converged"],
    "trust.csv": [
        "epoch",
        "calibrator",
        "label",
        "belief",
        "disbelief",
        "uncertainty",
        "base_rate",
        "positive_evidence",
        "negative_evidence",
    ],
    "scores.csv": ["epoch", "calibrator", "split", "accuracy", "nll", "ece"],
}
# finished: the tiny run shared by the session, read-only; copy_of: a copy to change (tests/conftest.py)


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_contracted_file_exists_with_its_columns(finished, dataset):
    run = finished / "results" / dataset / "seed0"
    for e in (1, 2, 3):
        assert (run / "checkpoints" / f"epoch{e:03d}.pt").stat().st_size > 0
        with np.load(run / "logits" / f"epoch{e:03d}.npz") as d:
            assert set(d.files) == {"val_logits", "val_labels", "test_logits", "test_labels"}
            assert d["test_logits"].shape == (80, 10) and d["val_logits"].shape == (24, 10)
    for name, columns in CONTRACT.items():
        df = pd.read_csv(run / name)
        assert list(df.columns[: len(columns)]) == columns, name
    for fig in ("trust_grid", "loss_curves"):
        for ext in ("png", "pdf"):
            assert (finished / "results" / "figures" / dataset / f"{fig}.{ext}").stat().st_size > 10_000


@pytest.mark.parametrize("dataset", DATASETS)
def test_tables_hold_sane_values(finished, dataset):
    run = finished / "results" / dataset / "seed0"
    trust = pd.read_csv(run / "trust.csv")
    assert len(trust) == 3 * 2 * 11  # epochs × (none, temperature) × (10 labels + network)
    for c in ("belief", "disbelief", "uncertainty"):  # bootstrap intervals, cumulative fusion
        assert (trust[f"{c}_lo"] <= trust[f"{c}_hi"]).all() and trust[f"{c}_lo"].between(0, 1).all()
    np.testing.assert_allclose(trust[["belief", "disbelief", "uncertainty"]].sum(axis=1), 1.0)
    assert set(trust["label"].astype(str)) == {str(c) for c in range(10)} | {"network"}
    cal = pd.read_csv(run / "calibration.csv")
    assert (cal["temperature"] > 0).all() and list(cal["epoch"]) == [1, 2, 3]
    assert (cal["val_nll_after"] <= cal["val_nll_before"] + 1e-9).all()
    scores = pd.read_csv(run / "scores.csv")
    assert scores["accuracy"].between(0, 1).all() and scores["ece"].between(0, 1).all()
    assert set(scores["split"]) == {"test", "val"}
    # temperature scaling leaves accuracy unchanged
    pivot = scores.pivot_table(index=["epoch", "split"], columns="calibrator", values="accuracy")
    np.testing.assert_allclose(pivot["none"], pivot["temperature"])
    test = scores[scores["split"] == "test"]  # intervals on the test split only
    assert test[["ece_lo", "ece_hi", "accuracy_lo", "nll_hi"]].notna().all().all()
    assert scores.loc[scores["split"] == "val", "ece_lo"].isna().all()
    assert (test["accuracy_lo"] <= test["accuracy_hi"]).all()


@pytest.mark.parametrize("dataset", DATASETS)
def test_history_scores_and_calibration_report_one_nll(finished, dataset):
    """One NLL convention across the run's tables (docs/method.md §2.12): history.csv's validation loss (PyTorch's
    float32 cross-entropy during training), scores.csv's validation NLL of the raw model and calibration.csv's
    val_nll_before (both float64 log-softmax of the saved logits) agree to float32 rounding: the loss of a
    row is a K-term log-sum-exp of logits ≤ max |z| (≤ (K + 2)·eps32·(1 + max |z|)), and the mean of N such
    terms adds ⌈log2 N⌉·eps32 of the largest."""
    run = finished / "results" / dataset / "seed0"
    history = pd.read_csv(run / "history.csv").set_index("epoch")
    scores = pd.read_csv(run / "scores.csv")
    raw_val = scores[(scores["calibrator"] == "none") & (scores["split"] == "val")].set_index("epoch")
    calibration = pd.read_csv(run / "calibration.csv").set_index("epoch")
    eps32 = float(np.finfo(np.float32).eps)
    for epoch in history.index:
        with np.load(run / "logits" / f"epoch{epoch:03d}.npz") as d:
            z = d["val_logits"].astype(np.float64)
        spread = float(np.abs(z - z.max(axis=1, keepdims=True)).max())
        tol = (z.shape[1] + 2 + np.ceil(np.log2(len(z)))) * eps32 * (1 + spread) * 2
        assert raw_val.loc[epoch, "nll"] == pytest.approx(history.loc[epoch, "val_loss"], rel=0, abs=tol), epoch
        assert calibration.loc[epoch, "val_nll_before"] == pytest.approx(raw_val.loc[epoch, "nll"], rel=0, abs=1e-12)
    assert scores["nll_exact"].astype(str).eq("True").all()


def test_lint_and_nothing_left_to_do(finished):
    lint = snakemake(finished, "--lint")
    assert "good condition" in lint.stdout + lint.stderr
    assert planned_jobs(finished) == {}


def test_changing_a_trust_parameter_reruns_only_trust_and_figures(copy_of):
    plan = planned_jobs(copy_of, "--config", "clusters=5")
    assert set(plan) - {"verdict"} == {"trust", "trust_bootstrap", "figures", "all"}, plan
    plan = planned_jobs(copy_of, "--config", "trust={representative: mean}")
    assert set(plan) - {"verdict"} == {"trust", "trust_bootstrap", "figures", "all"}, plan


def test_changing_a_metric_parameter_reruns_only_scores_and_their_figures(copy_of):
    plan = planned_jobs(copy_of, "--config", "metrics={geo_eps: 0.02}")
    # the verdict follows the scores jobs, whose warnings it digests (section Warnings)
    assert set(plan) - {"verdict"} == {"scores", "metric_figures", "all"}, plan


ALL_METHODS = ["temperature", "vector", "matrix", "dirichlet", "histogram", "isotonic", "sms", "svs", "ets", "irm"]


def test_every_calibrator_is_fitted_on_its_own_and_gets_its_rows(copy_of):
    methods = f"calibration={{methods: [{', '.join(ALL_METHODS)}]}}"
    plan = planned_jobs(copy_of, "--config", methods, "datasets=[mnist]")
    assert plan["calibrate"] == len(ALL_METHODS) - 1  # temperature is cached: only the new ones are fitted
    snakemake(copy_of, "--config", methods, "datasets=[mnist]")
    run = copy_of / "results" / "mnist" / "seed0"
    expected = {"none", *ALL_METHODS}
    for name in ("trust.csv", "scores.csv", "dynamic_trust.csv", "trust_sweep.csv", "reliability.csv"):
        assert set(pd.read_csv(run / name)["calibrator"]) == expected, name
    cal = pd.read_csv(run / "calibration.csv")
    assert list(cal["calibrator"].unique()) == ALL_METHODS and (cal.groupby("calibrator").size() == 3).all()
    assert cal.loc[cal["calibrator"] != "temperature", "temperature"].isna().all()
    for m in ALL_METHODS:  # each fitted state per epoch, reloadable
        with np.load(run / "calibration" / f"{m}.npz") as d:
            assert {k.split("/")[0] for k in d.files} == {"epoch001", "epoch002", "epoch003"}
    trust = pd.read_csv(run / "trust.csv")
    np.testing.assert_allclose(trust[["belief", "disbelief", "uncertainty"]].sum(axis=1), 1.0)
    for fig in ("calibrator_trust", "calibrator_metrics", "calibrator_reliability"):
        assert (copy_of / "results" / "figures" / "mnist" / f"{fig}.png").stat().st_size > 10_000


def test_raising_epochs_trains_only_the_new_epoch(copy_of):
    ckpts = copy_of / "results" / "mnist" / "seed0" / "checkpoints"
    before = {p.name: p.stat().st_mtime_ns for p in ckpts.glob("*.pt")}
    stale = copy_of / "results" / "mnist" / "seed0" / ".calibration.csv.a1b2.tmp"
    stale.write_text("left by a calibrate job killed mid-write")
    snakemake(copy_of, "--config", "epochs=4", "datasets=[mnist]")
    assert not stale.exists()  # the rerun of that rule removes it
    log = (copy_of / "results" / "logs" / "train" / "mnist" / "seed0.log").read_text()
    assert "resuming from" in log and "epoch003.pt" in log
    assert re.search(
        r"CPU: \d thread\(s\) on \d+ allowed CPU\(s\), (\d+ busy at the start|not probed \(one thread\)): ", log
    )  # training/cpu.py
    assert "epoch   4/4" in log and "epoch   1/4" not in log
    assert {p.name: p.stat().st_mtime_ns for p in ckpts.glob("epoch00[123].pt")} == before
    assert len(pd.read_csv(copy_of / "results" / "mnist" / "seed0" / "history.csv")) == 4
    assert len(pd.read_csv(copy_of / "results" / "mnist" / "seed0" / "calibration.csv")) == 4


def test_bad_config_stops_before_any_job_with_a_readable_message(copy_of):
    for override, expected in (
        ("datasets=[mnst]", "datasets: 'mnst' (did you mean 'mnist'?) is neither a registered dataset"),
        ("epochs=0", "key 'epochs' is 0; it must be ≥ 1"),
        ("clusters=-1", "key 'clusters' is -1"),
        ("epoch=3", "unknown key 'epoch' (did you mean 'epochs'?)"),
        ("calibration={methods: [platt]}", "allowed values: temperature, vector"),
        (
            "calibration={options: {matrix: {odir_lamda: 1}}}",
            "calibration.options.matrix: unknown option(s) odir_lamda; matrix accepts: odir_lambda",
        ),
    ):
        proc = snakemake(copy_of, "--dry-run", "--config", override, check=False)
        assert proc.returncode != 0
        out = proc.stdout + proc.stderr
        assert expected in out, out
        assert "Traceback" not in out


def test_missing_dataset_offline_stops_at_download_with_instructions(tmp_path):
    workdir = make_workdir(tmp_path / "work")
    shutil.rmtree(workdir / "data" / "cifar-10-batches-py")
    proc = snakemake(workdir, "--config", "datasets=[cifar10]", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "cifar-10-python.tar.gz" in out and "c58f30108f718f92721af3b95e74349a" in out
    assert not (workdir / "results" / "data" / "cifar10" / "raw_manifest.tsv").exists()


def test_seeds_trained_together_write_each_seeds_own_files(tmp_path):
    workdir = make_workdir(tmp_path / "work", datasets=["mnist"], epochs=2, seeds=[0, 1], seed_batching=True)
    plan = planned_jobs(workdir)
    assert plan["train"] == 1 and plan["logits"] == 2, plan
    snakemake(workdir)
    for seed in (0, 1):
        run = workdir / "results" / "mnist" / f"seed{seed}"
        assert len(pd.read_csv(run / "history.csv")) == 2
        assert (run / "checkpoints" / "epoch002.pt").exists()
        assert len(pd.read_csv(run / "trust.csv")) == 2 * 2 * 11
    log = (workdir / "results" / "logs" / "train" / "mnist" / "seeds.log").read_text()
    assert "seed 0" in log and "seed 1" in log


def test_command_line_lists_and_booleans_are_understood(finished):
    plan = planned_jobs(finished, "--config", "seeds=[0,1]", "seed_batching=true", "datasets=[mnist]")
    assert plan["train"] == 1 and plan["trust"] == 2, plan  # one job trains both seeds
