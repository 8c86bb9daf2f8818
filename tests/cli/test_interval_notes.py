"""A point estimate outside its own bootstrap interval (the binned ECE of a well-calibrated model, biased upward,
lies below the interval of its resamples): the summary, summary.txt and --json say why in one line, and where
docs/method.md explains it."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd

from trustcal import cli
from trustcal.assessment.summary import outside_notes
from trustcal.calibration.temperature import softmax

ECE_BELOW = (
    "note: ECE's point lies below its bootstrap interval: the binned ECE is biased upward (it sums absolute gaps, "
    "and the noise a resample adds only widens them), so resamples overstate it; see docs/method.md §10.3"
)


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def row(calibrator, **values):
    """A row of calibrator_table: each number x given as (x, lo, hi)."""
    out = dict(epoch=1, calibrator=calibrator)
    for name, (x, lo, hi) in values.items():
        out.update({name: x, f"{name}_lo": lo, f"{name}_hi": hi})
    return out


def test_each_number_outside_its_interval_gets_one_line_saying_why():
    inside = dict(accuracy=(0.9, 0.89, 0.91), net_trust_score=(0.8, 0.79, 0.81))
    table = pd.DataFrame(
        [
            row("none", ece=(0.0006, 0.0007, 0.0019), nll=(0.30, 0.29, 0.31), belief=(0.70, 0.69, 0.71), **inside),
            row(
                "temperature", ece=(0.0005, 0.0006, 0.0015), nll=(0.35, 0.29, 0.34), belief=(0.75, 0.72, 0.74), **inside
            ),
            row("vector", ece=(0.0020, 0.0010, 0.0030), nll=(0.30, 0.29, 0.31), belief=(0.70, 0.69, 0.71), **inside),
        ]
    )
    assert outside_notes(table) == [
        "note: ECE's point lies below its bootstrap interval (none, temperature): the binned ECE is biased upward "
        "(it sums absolute gaps, and the noise a resample adds only widens them), so resamples overstate it; "
        "see docs/method.md §10.3",
        "note: NLL's point lies above its bootstrap interval (temperature): the resamples' values of a skewed or "
        "biased statistic need not straddle it; see docs/method.md §10.3",
        "note: b's point lies above its bootstrap interval (temperature): the disbelief's evidence sums absolute "
        "gaps, which resampling widens, so resamples understate the belief; see docs/method.md §10.3",
    ]
    assert outside_notes(table.iloc[[0]]) == [ECE_BELOW]  # one calibrator: not named
    assert outside_notes(table.iloc[[2]]) == []  # every point within its interval, bounds included
    assert outside_notes(table[["epoch", "calibrator", "ece"]]) == []  # no intervals (--bootstrap 0)


def test_a_well_calibrated_model_whose_ece_lies_below_its_interval_is_explained(tmp_path):
    """Labels drawn from the probabilities themselves (a calibrated model): the ECE of 5,000 samples, 0.0063,
    below its interval [0.0069, 0.0223] (the default seed of the resamples)."""
    rng = np.random.default_rng(1)
    probs = softmax(rng.normal(0, 1.0, (5000, 4)))
    labels = (rng.random(5000)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    model = tmp_path / "model.npz"
    np.savez(model, probs=probs, labels=labels)
    code, stdout, stderr = run("assess", model, "--out", tmp_path / "out", "--no-figures")
    assert code == 0, stderr
    lines = stdout.splitlines()
    i = lines.index(ECE_BELOW)
    assert lines[i - 1].startswith("  none  accuracy 0.5166 [0.5050, 0.5312]  ECE 0.0063 [0.0069, 0.0223]  ")
    assert [line for line in lines if line.startswith("note:")] == [ECE_BELOW]
    assert ECE_BELOW in (tmp_path / "out" / "summary.txt").read_text().splitlines()
    code, stdout, stderr = run("assess", model, "--out", tmp_path / "out", "--no-figures", "--json")
    assert code == 0, stderr
    assert json.loads(stdout)["notes"] == [ECE_BELOW.removeprefix("note: ")]
    code, stdout, stderr = run("assess", model, "--out", tmp_path / "out", "--no-figures", "--bootstrap", "0")
    assert code == 0 and "note:" not in stdout  # no interval, nothing to explain
