"""A calibrator of the user's own by its import path, run through the workflow (docs/method.md §2.15): fitted per
epoch beside temperature scaling, in every table with its own rows, and refitted when its code changes."""

import textwrap

import numpy as np
import pandas as pd
import pytest
from helpers.workflow import make_workdir, planned_jobs, snakemake

pytestmark = pytest.mark.slow

MODULE = textwrap.dedent(
    """
    import numpy as np


    class Shrink:
        '''Mixes the softmax with the uniform distribution, the weight chosen on the fit split.'''

        def __init__(self, weights=(0.0, 0.01, 0.05, 0.1)):
            self.weights = weights

        def fit(self, p, labels):
            rows = np.arange(len(labels))
            k = p.shape[1]
            self.w = min(self.weights, key=lambda w: -np.log((1 - w) * p[rows, labels] + w / k).mean())

        def predict_proba(self, p):
            return (1 - self.w) * p + self.w / p.shape[1]


    Shrink.inputs = "probabilities"
    """
)


def test_a_users_calibrator_runs_through_the_workflow(tmp_path, monkeypatch):
    work = make_workdir(tmp_path / "work", datasets=["mnist"])
    code = tmp_path / "code"
    code.mkdir()
    (code / "shrink.py").write_text(MODULE)
    (work / "mine.yaml").write_text(
        'calibration:\n  methods: [temperature, "shrink:Shrink"]\n  options: {"shrink:Shrink": {weights: [0.0, 0.2]}}\n'
    )
    monkeypatch.setenv("PYTHONPATH", str(code))
    snakemake(work, "--configfile", "tiny.yaml", "mine.yaml")
    run = work / "results" / "mnist" / "seed0"
    scores = pd.read_csv(run / "scores.csv")
    assert set(scores["calibrator"]) == {"none", "temperature", "shrink:Shrink"}
    assert (scores.groupby("calibrator").size() == 6).all()  # 3 epochs × 2 splits each
    with np.load(run / "calibration" / "shrink:Shrink.npz") as states:
        assert {k.split("/")[0] for k in states.files} == {"epoch001", "epoch002", "epoch003"}
    assert planned_jobs(work, "--configfile", "tiny.yaml", "mine.yaml") == {}  # all done
    (code / "shrink.py").write_text(MODULE + "\n# a change to its code\n")
    plan = planned_jobs(work, "--configfile", "tiny.yaml", "mine.yaml")
    assert plan.get("calibrate") == 1, plan  # its own job only; temperature's stays
