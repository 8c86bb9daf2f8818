"""The jobs' warnings reach the user (trustcal.reporting.digest): a calibrator that raises the test NLL on the tiny
data is named, with its numbers, in the digest at the end of the run's console output and in the verdict."""

import json

import pandas as pd
import pytest
from helpers.workflow import make_workdir, snakemake

pytestmark = pytest.mark.slow


def test_a_calibrator_that_worsens_the_test_nll_ends_the_console_output(tmp_path):
    work = make_workdir(tmp_path / "work", datasets=["mnist"])
    (work / "mine.yaml").write_text("calibration:\n  methods: [temperature, isotonic]\n")
    proc = snakemake(work, "--configfile", "tiny.yaml", "mine.yaml")
    scores = pd.read_csv(work / "results" / "mnist" / "seed0" / "scores.csv")
    test = scores[scores["split"] == "test"].set_index(["calibrator", "epoch"])["nll"]
    rises = {e: (test["none", e], test["isotonic", e]) for e in sorted(set(test["none"].index))}
    worse = {e: v for e, v in rises.items() if v[1] > v[0]}
    assert worse, f"isotonic no longer raises the tiny run's test NLL: {rises}"
    epoch, (before, after) = max(worse.items(), key=lambda kv: kv[1][1] - kv[1][0])
    line = (
        f"isotonic raised the test NLL in {len(worse)} of {len(rises)} epochs of mnist seed 0: "
        f"{before:.3f} → {after:.3f} (worst, epoch {epoch})"
    )
    tail = proc.stderr.rstrip().splitlines()
    assert tail[-1] == f"  - {line}", "\n".join(tail[-15:])
    assert tail[-2].startswith("Warnings of this workflow's jobs (1;")
    (record,) = [
        json.loads(x) for x in (work / "results/logs/scores/mnist/seed0.warnings.jsonl").read_text().splitlines()
    ]
    assert record["code"] == "calibrator_worse_on_test" and record["calibrator"] == "isotonic"
    assert record["numbers"]["nll_epochs"] == sorted(worse)
    assert f"- {line}" in (work / "results" / "reproduction.md").read_text()
    assert "<h2>Warnings</h2>" in (work / "results" / "reproduction.html").read_text()

    # a failed run ends with the digest too: a corrupt trust.csv stops the figures job after the warnings were kept
    (work / "results" / "mnist" / "seed0" / "trust.csv").write_text("not,a\ntrust,table\n")
    failed = snakemake(work, "--configfile", "tiny.yaml", "mine.yaml", check=False)
    assert failed.returncode != 0, failed.stdout + failed.stderr
    assert f"  - {line}" in failed.stderr.splitlines(), failed.stderr[-3000:]
