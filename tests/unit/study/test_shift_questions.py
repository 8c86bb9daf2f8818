"""trustcal.study.shift: the four questions of trust under shift, on small tables whose answers are worked out here
(Spearman's ρ against scipy's, t intervals over seeds by hand, seeds' paired intervals combined as §12.7 says, each
answer flipping with the side of 0 its interval lies on)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from trustcal.measures.paired import paired_interval_from_intervals
from trustcal.study.shift import (
    answer_lines,
    best_under_shift,
    over_seeds,
    shift_questions,
    spearman,
    temperature_gain,
    trust_tracks_accuracy,
    uncertainty_detects,
)

CORRUPTIONS = ("fog", "gaussian_noise", "contrast")


def shift_table(belief_slope: float = 1.0, gain: float = -0.02, seeds=(0, 1, 2)) -> pd.DataFrame:
    """Rows of shift.csv: clean and three corruptions at severities 1–5 for none, temperature and vector; accuracy
    falls with severity, belief follows it with ``belief_slope``; temperature's ECE differs from the raw model's
    by ``gain`` (± 0.005 as its interval) at every cell; vector's NLL is 0.1 above temperature's."""
    rng = np.random.default_rng(0)
    rows = []
    for seed in seeds:
        cells = [("clean", 0)] + [(c, s) for c in CORRUPTIONS for s in range(1, 6)]
        for label in ("best", "last"):
            for name, severity in cells:
                acc = 0.95 - 0.1 * severity - 0.02 * (CORRUPTIONS.index(name) if severity else 0) + rng.normal(0, 1e-3)
                for cal in ("none", "temperature", "vector"):
                    d_ece = 0.0 if cal == "none" else gain + 0.001 * seed
                    d_nll = {"none": 0.05, "temperature": 0.0, "vector": 0.1}[cal]
                    rows.append(
                        dict(seed=seed, epoch_label=label, set=name, severity=severity, calibrator=cal)
                        | dict(accuracy=acc, belief=0.5 + belief_slope * (acc - 0.5), uncertainty=1 - acc)
                        | dict(ece_vs_raw=d_ece, ece_vs_raw_lo=d_ece - 0.005, ece_vs_raw_hi=d_ece + 0.005)
                        | dict(nll_vs_temperature=d_nll, nll_vs_temperature_lo=d_nll - 0.02)
                        | dict(nll_vs_temperature_hi=d_nll + 0.02)
                    )
    return pd.DataFrame(rows)


def test_spearman_is_scipys_and_the_seed_interval_is_students():
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 5, 30), rng.normal(size=30)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert math.isnan(spearman(np.ones(5), np.arange(5)))
    values = np.array([0.7, 0.8, 0.9])
    mean, lo, hi = over_seeds(values)
    half = stats.t.ppf(0.975, 2) * values.std(ddof=1) / math.sqrt(3)
    assert (mean, lo, hi) == pytest.approx((0.8, 0.8 - half, 0.8 + half), abs=1e-9)
    assert math.isnan(over_seeds([0.5])[1])


def test_a_trust_that_follows_accuracy_says_yes_and_one_that_runs_against_it_says_no():
    rows = trust_tracks_accuracy(shift_table())
    assert [r["answer"] for r in rows] == ["yes", "yes"]
    assert rows[0]["estimate"] > 0.9 and rows[1]["estimate"] < -0.9  # belief with accuracy, uncertainty against
    assert trust_tracks_accuracy(shift_table(belief_slope=-1.0))[0]["answer"] == "no"
    assert trust_tracks_accuracy(shift_table(seeds=(0,)))[0]["answer"] == "inconclusive"  # one seed: no interval
    line = answer_lines(pd.DataFrame(rows))[0]
    assert "**yes**: belief falls with accuracy (ρ(accuracy, belief) " in line
    assert "; uncertainty rises as accuracy falls (ρ(accuracy, uncertainty) " in line
    # the real study's case: belief follows accuracy, uncertainty falls with it too
    against = pd.DataFrame(trust_tracks_accuracy(shift_table().assign(uncertainty=lambda d: d["accuracy"])))
    line = answer_lines(against)[0]
    assert "**no**: belief falls with accuracy" in line and "; uncertainty falls with accuracy (" in line


def test_b_combines_the_corruption_means_of_each_seeds_interval_over_seeds():
    table = shift_table(gain=-0.02)
    clean, top = temperature_gain(table)
    assert top["where"] == "severity 5" and top["answer"] == "yes"
    points = np.array([-0.02, -0.019, -0.018])
    want = paired_interval_from_intervals(points[None], points[None] - 0.005, points[None] + 0.005)
    assert (top["estimate"], top["lo"], top["hi"]) == pytest.approx((want.estimate[0], want.lo[0], want.hi[0]))
    assert clean["estimate"] == pytest.approx(points.mean())
    assert temperature_gain(shift_table(gain=0.02))[1]["answer"] == "no"
    assert temperature_gain(shift_table(gain=-0.001))[1]["answer"] == "inconclusive"


def test_c_ranks_the_calibrators_against_temperature_and_d_reads_the_auroc_difference():
    rows = best_under_shift(shift_table())
    assert [(r["calibrator"], r["answer"]) for r in rows] == [("none", "no"), ("vector", "no")]
    assert rows[0]["estimate"] == pytest.approx(0.05)
    ood = pd.DataFrame(
        [
            dict(seed=s, epoch_label="best", set=name, calibrator="none", signal="uncertainty")
            | dict(
                auroc_vs_max_probability=d, auroc_vs_max_probability_lo=d - 0.01, auroc_vs_max_probability_hi=d + 0.01
            )
            for s in (0, 1, 2)
            for name, d in (("ood-fashion_mnist", 0.05 + 0.001 * s), ("ood-noise_uniform", -0.004 + 0.001 * s))
        ]
    )
    d = {r["where"]: r["answer"] for r in uncertainty_detects(ood)}
    assert d == {"ood-fashion_mnist": "yes", "ood-noise_uniform": "inconclusive"}
    table = shift_questions(shift_table(), ood)
    assert list(table["question"].unique()) == ["a", "b", "c", "d"]
    lines = answer_lines(table)
    assert len(lines) == 4 and "**yes**" in lines[0] and "ood-fashion_mnist **yes**" in lines[3]
    severity = shift_table()["severity"].max()
    assert f"Lowest NLL at severity {severity}: **raw model** (0.05 [" in lines[2], lines[2]
    assert "beat temperature scaling: none; worse: raw model, vector scaling (" in lines[2], lines[2]
    assert shift_questions(None, None).empty


def test_the_study_writes_the_shift_tables_answers_and_figures_of_a_run_that_has_them(tmp_path):
    """build.shift_answers: the run's shift tables copied (gzip), the questions' table, the sentences; the run's
    section in study.md and the README block carry them, and a run without shift tables gets neither."""
    from trustcal.study import render
    from trustcal.study.build import shift_answers
    from trustcal.study.report import DatasetSection

    results, out = tmp_path / "results", tmp_path / "study"
    (results / "mnist").mkdir(parents=True)
    out.mkdir()
    assert shift_answers(results, "mnist", out) == ([], [])
    shift_table().to_csv(results / "mnist" / "shift.csv", index=False)
    answers, figures = shift_answers(results, "mnist", out)
    assert figures == [] and len(answers) == 3  # a, b, c: no out-of-distribution table
    assert pd.read_csv(out / "mnist_shift.csv.gz").shape == shift_table().shape
    assert list(pd.read_csv(out / "mnist_shift_questions.csv")["question"].unique()) == ["a", "b", "c"]
    section = DatasetSection("mnist", "MNIST", "", "", [0, 1, 2], 5, [], [], shift=answers)
    lines = render.shift_lines(section)
    assert lines[0] == "#### MNIST: under dataset shift" and f"- {answers[0]}" in lines
    assert "[shift](results/study/mnist_shift.csv.gz)" in lines[2]
    assert render.dataset_body(section)[-len(lines) :] == lines
    assert render.dataset_body(DatasetSection("mnist", "MNIST", "", "", [0], 5, [], [])) == render.dataset_body(
        DatasetSection("mnist", "MNIST", "", "", [0], 5, [], [], shift=[])
    )


def test_the_readme_lists_the_shift_answers_of_the_runs_beyond_the_papers_after_the_papers():
    """render.shift_summary: one line per answer of every run that has them, the paper's runs first, then each
    run beyond the paper's (the ResNet-20 study's), each named with its data note's label; none: no lines."""
    from types import SimpleNamespace

    from trustcal.study import render
    from trustcal.study.report import DatasetSection

    paper = DatasetSection("mnist", "MNIST", "", "", [0], 5, [], [], shift=["a1", "b1"])
    quiet = DatasetSection("cifar10", "CIFAR-10", "JPEG-derived images", "", [0], 5, [], [])
    other = DatasetSection("cifar10_resnet20", "CIFAR-10 (ResNet-20)", "JPEG-derived images", "", [0], 5, [], [])
    other.shift = ["a2"]
    report = SimpleNamespace(datasets=[paper, quiet], beyond=[SimpleNamespace(datasets=[other])])
    lines = render.shift_summary(report)
    assert lines[2:] == ["- MNIST: a1", "- MNIST: b1", "- CIFAR-10 (ResNet-20) (JPEG-derived images): a2", ""]
    assert render.shift_summary(SimpleNamespace(datasets=[quiet], beyond=[SimpleNamespace(datasets=[])])) == []
