"""Trust under dataset shift through the workflow (config `shift:`): the tiny MNIST run with two MNIST-C corruptions
and uniform noise as an out-of-distribution set, end to end: the tables' columns and rows, the clean rows equal to
scores.csv's test rows, accuracy falling under a destructive corruption, and a corruption added later running its
own jobs only."""

import pandas as pd
import pytest
import yaml
from helpers.workflow import make_workdir, planned_jobs, snakemake

from trustcal.reporting.shift import CURVE_COLUMNS, OOD_COLUMNS, SIGNALS, shift_columns

pytestmark = pytest.mark.slow

SHIFT = {"corruptions": ["impulse_noise", "fog"], "ood": ["noise_uniform"], "samples": 200}


def test_shift_tables_end_to_end(tmp_path):
    work = make_workdir(tmp_path / "work", datasets=["mnist"])
    (work / "shift.yaml").write_text(yaml.safe_dump({"shift": SHIFT}))
    snakemake(work, "--configfile", "tiny.yaml", "shift.yaml")
    run = work / "results" / "mnist"

    table = pd.read_csv(run / "shift.csv")
    assert list(table.columns) == shift_columns(bootstrapped=True)
    # clean + 2 corruptions, each at its one severity, epochs best and last, calibrators none and temperature
    assert len(table) == 3 * 2 * 2
    assert set(table["set"]) == {"clean", "impulse_noise", "fog"} and set(table["calibrator"]) == {
        "none",
        "temperature",
    }
    assert (table["n"] == 80).all()  # samples: 200 caps nothing on 80 test images
    assert (table.loc[table["set"] == "clean", "severity"] == 0).all()
    assert (table.loc[table["set"] != "clean", "severity"] == 1).all()
    for name in ("accuracy", "nll", "belief"):
        assert (table[f"{name}_lo"] <= table[name] + 1e-12).all() and (table[name] <= table[f"{name}_hi"] + 1e-12).all()

    last = table[(table["epoch_label"] == "last") & (table["calibrator"] == "none")].set_index("set")
    assert last.loc["fog", "accuracy"] < last.loc["clean", "accuracy"], last[["accuracy"]]

    scores = pd.read_csv(run / "seed0" / "scores.csv")
    test = scores[scores["split"] == "test"].set_index(["epoch", "calibrator"])
    clean = table[table["set"] == "clean"]
    for _, row in clean.iterrows():
        for name in ("accuracy", "nll", "brier", "ece"):
            assert row[name] == pytest.approx(test.loc[(row["epoch"], row["calibrator"]), name], abs=1e-12), name
    trust = pd.read_csv(run / "seed0" / "trust.csv")
    network = trust[trust["label"] == "network"].set_index(["epoch", "calibrator"])
    for _, row in clean.iterrows():
        assert row["belief"] == pytest.approx(network.loc[(row["epoch"], row["calibrator"]), "belief"], abs=1e-12)

    ood = pd.read_csv(run / "shift_ood.csv")
    assert list(ood.columns) == list(OOD_COLUMNS)
    assert len(ood) == 2 * 2 * len(SIGNALS) and set(ood["set"]) == {"ood-noise_uniform"}
    assert ood["auroc"].between(0, 1).all() and ood["fpr95"].between(0, 1).all()
    assert (ood["n_in"] == 80).all() and (ood["n_out"] == 80).all()
    assert (ood["auroc_lo"] <= ood["auroc"] + 1e-12).all() and (ood["auroc"] <= ood["auroc_hi"] + 1e-12).all()
    assert (ood.loc[ood["signal"] == "max_probability", "auroc_vs_max_probability"] == 0).all()
    # the paired differences: temperature scaling against the raw model on the same rows and resamples
    both = table.set_index(["set", "epoch_label", "calibrator"])
    for key in both.xs("temperature", level="calibrator").index:
        want = both.loc[(*key, "temperature"), "nll"] - both.loc[(*key, "none"), "nll"]
        assert both.loc[(*key, "temperature"), "nll_vs_raw"] == pytest.approx(want, abs=1e-12)
    curves = pd.read_csv(run / "shift_ood_curves.csv")
    assert list(curves.columns) == list(CURVE_COLUMNS)
    assert set(curves["calibrator"]) == {"none", "temperature"} and set(curves["curve"]) == {"in", "out", "roc"}
    sums = curves[curves["curve"] != "roc"].groupby(["epoch_label", "calibrator", "signal", "curve"])["y"].sum()
    assert sums.to_numpy() == pytest.approx(1.0)  # each histogram holds every image of its side

    # the run's shift figures (rule shift_figures): a PNG and a PDF of each, drawn (not a notice: both tables have rows)
    from trustcal.reporting.figures.shift_registry import SHIFT_FIGURES

    for name in SHIFT_FIGURES:
        for ext in ("png", "pdf"):
            assert (work / "results" / "figures" / "mnist" / f"{name}.{ext}").stat().st_size > 10_000, (name, ext)

    # a corruption added later: its own jobs, the run's table and its figures, nothing else
    (work / "shift.yaml").write_text(
        yaml.safe_dump({"shift": {**SHIFT, "corruptions": [*SHIFT["corruptions"], "stripe"]}})
    )
    plan = planned_jobs(work, "--configfile", "tiny.yaml", "shift.yaml")
    assert plan == {
        "all": 1,
        "shift_images": 1,
        "shift_logits": 1,
        "shift_scores": 1,
        "shift_table": 1,
        "shift_figures": 1,
    }, plan
    # shift: left at its defaults: the shift files are simply no target (the verdict alone reruns: it names the
    # configuration it judged, now without shift.yaml)
    assert planned_jobs(work, "--configfile", "tiny.yaml") == {"all": 1, "verdict": 1}
