"""trustcal.assessment.tables: the tables of an epoch series, computed here or in forked workers.

The epochs shared out over forked processes give the tables of this process alone, bit for bit, rows in
the same order, and those of one call of trust_tables and score_tables with BLAS at one thread (as
assessment_tables holds it); the progress advances an epoch at a time either way.
"""

import os

import numpy as np
import pandas as pd
import pytest

from trustcal.assessment import assessment_tables
from trustcal.assessment import tables as assessment
from trustcal.assessment.workers import worker_count
from trustcal.evaluation import MetricParams, PredictionSet, SweepParams, score_tables, trust_tables
from trustcal.measures.bootstrap import BootstrapParams
from trustcal.numerics import one_blas_thread
from trustcal.settings import Settings

EPOCHS = 12


def series(n: int = 500, k: int = 4) -> list[PredictionSet]:
    """An epoch series of one test set (and a validation set), before and after a calibration, the model
    sharper every epoch."""
    rng = np.random.default_rng(7)
    labels = {"test": rng.integers(0, k, n), "val": rng.integers(0, k, n // 2)}
    preds = []
    for epoch in range(1, EPOCHS + 1):
        for split, y in labels.items():
            logits = rng.normal(0, 1.0, (len(y), k))
            logits[np.arange(len(y)), y] += 1.0 + epoch / 6
            for calibrator, t in (("none", 0.5), ("temperature", 1.0 + epoch / 10)):
                z = np.exp(logits / t - (logits / t).max(axis=1, keepdims=True))
                preds.append(PredictionSet(epoch, calibrator, split, z / z.sum(axis=1, keepdims=True), y))
    return preds


SETTINGS = Settings(
    metrics=MetricParams(density_points=11),
    sweep=SweepParams(clusters=(2, 10), epochs=(3, 12)),
    bootstrap=BootstrapParams(resamples=200, seed=5),
)


def two_processes() -> int:
    if worker_count(EPOCHS - 1, 2) < 2:
        pytest.skip("one core (or not Linux): the tables are computed in this process alone")
    return 2


def test_tables_from_forked_workers_equal_those_computed_here_and_those_of_one_call():
    preds = series()
    seen = []

    def progress(items, what, unit):
        seen.append((what, unit, len(items)))
        for item in items:
            seen.append(item[0].epoch)
            yield item

    here = assessment_tables(preds, SETTINGS, processes=1)
    forked = assessment_tables(preds, SETTINGS, progress, processes=two_processes())
    assert seen == [("assessing", "epoch", EPOCHS), *range(1, EPOCHS + 1)]
    with one_blas_thread():  # as assessment_tables computes them
        want = {
            **trust_tables(preds, SETTINGS.trust, SETTINGS.sweep, SETTINGS.bootstrap),
            **score_tables(preds, SETTINGS.metrics, SETTINGS.bootstrap),
        }
    assert list(forked) == list(here) == list(want)
    assert forked["scores"]["epoch"].tolist() == [e for e in range(1, EPOCHS + 1) for _ in range(4)]
    assert forked["trust"]["belief_lo"].notna().all()  # the bootstrap's intervals are there
    for name in want:
        pd.testing.assert_frame_equal(forked[name], here[name], check_exact=True, obj=name)
        pd.testing.assert_frame_equal(forked[name], want[name], check_exact=True, obj=name)


def test_tables_of_a_long_test_set_from_forked_workers_equal_those_computed_here():
    """10,000 × 10 test predictions: large enough for BLAS to sum the bootstrap's float32 products with
    several threads where it may, whose last bits depend on how many; the tables do not."""
    preds = [p for p in series(n=10_000, k=10) if p.epoch <= 4]
    settings = Settings(sweep=None)
    here = assessment_tables(preds, settings, processes=1)
    forked = assessment_tables(preds, settings, processes=two_processes())
    assert forked["scores"]["epoch"].tolist() == [e for e in range(1, 5) for _ in range(4)]
    for name in here:
        pd.testing.assert_frame_equal(forked[name], here[name], check_exact=True, obj=name)


def test_the_first_epoch_is_computed_here_and_the_others_in_the_workers(monkeypatch):
    """Every epoch after the first is computed in a forked process (the first, here, draws the resample
    counts that the workers inherit)."""
    computed = assessment._epoch_tables

    def with_pid(group, settings):
        tables, names = computed(group, settings)
        return {**tables, "pid": pd.DataFrame({"epoch": [group[0].epoch], "pid": [os.getpid()]})}, names

    monkeypatch.setattr(assessment, "_epoch_tables", with_pid)
    pids = assessment_tables(series(n=60), Settings(bootstrap=None), processes=two_processes())["pid"]
    assert pids["epoch"].tolist() == list(range(1, EPOCHS + 1))
    assert pids["pid"].iloc[0] == os.getpid()
    workers = set(pids["pid"].iloc[1:])
    assert os.getpid() not in workers and 1 <= len(workers) <= 2


def test_one_process_where_fork_is_not_safe(monkeypatch):
    monkeypatch.setattr("sys.platform", "darwin")
    assert worker_count(EPOCHS, 2) == 1
    monkeypatch.setattr("sys.platform", "linux")
    assert worker_count(1, 2) == 1  # one job: this process
    assert worker_count(EPOCHS, 1) == 1
