"""The study's answers to docs/method.md §13's two questions (trustcal.study.questions), on hand-built
tables and arrays whose answers are known."""

import math

import numpy as np
import pandas as pd
import pytest

from trustcal.measures.paired import paired_interval, paired_interval_from_intervals
from trustcal.study.questions import (
    lowest_epochs,
    refinement_answer,
    refinement_changes,
    selective_answer,
    selective_differences,
)

EPS = np.finfo(float).eps


def _selective(diff_of):
    """Three seeds × epochs 1–3 × (none, temperature) × the four scores; ``diff_of(seed, epoch, calibrator,
    score)`` → (diff_aurc, lo, hi)."""
    rows = []
    for seed in (0, 1, 2):
        for epoch in (1, 2, 3):
            for cal in ("none", "temperature"):
                for score in ("max_probability", "belief", "projected_probability", "evidence"):
                    d, lo, hi = (0.0, 0.0, 0.0) if score == "max_probability" else diff_of(seed, epoch, cal, score)
                    rows.append(
                        dict(seed=seed, epoch=epoch, calibrator=cal, score=score, aurc=0.01 + d, diff_aurc=d)
                        | dict(diff_aurc_lo=lo, diff_aurc_hi=hi, diff_augrc=d / 2, diff_augrc_lo=lo / 2)
                        | dict(diff_augrc_hi=hi / 2)
                    )
    return pd.DataFrame(rows)


def test_selective_differences_combine_the_seeds_cell_by_cell():
    def diff_of(seed, epoch, cal, score):
        d = 0.001 * (seed + 1) * epoch * (1 if score == "belief" else -1)
        return d, d - 0.002 * (seed + 1), d + 0.003

    table = _selective(diff_of)
    got = selective_differences(table)
    assert set(got["score"]) == {"belief", "projected_probability", "evidence"} and set(got["area"]) == {
        "aurc",
        "augrc",
    }
    assert len(got) == 2 * 3 * 3 * 2 and (got["seeds"] == 3).all()
    cell = got.set_index(["calibrator", "score", "area", "epoch"]).loc[("temperature", "belief", "aurc", 2)]
    d = np.array([diff_of(s, 2, "temperature", "belief") for s in (0, 1, 2)])
    want = paired_interval_from_intervals(d[:, 0], d[:, 1], d[:, 2])
    assert cell["estimate"] == pytest.approx(0.001 * 2 * 2, rel=4 * EPS)  # mean of 0.002, 0.004, 0.006
    assert (cell["lo"], cell["hi"]) == pytest.approx((float(want.lo), float(want.hi)), rel=4 * EPS)
    augrc = got.set_index(["calibrator", "score", "area", "epoch"]).loc[("temperature", "belief", "augrc", 2)]
    assert augrc["estimate"] == pytest.approx(cell["estimate"] / 2, rel=4 * EPS)
    # a cell one seed lacks is left out, not averaged over the others
    partial = table.drop(table[(table["seed"] == 1) & (table["epoch"] == 3)].index)
    assert 3 not in set(selective_differences(partial)["epoch"])


def test_selective_answer_says_no_when_no_interval_lies_below_zero():
    table = _selective(lambda seed, epoch, cal, score: (0.004 + 0.0001 * seed, 0.002, 0.006 + 0.0001 * seed))
    text = selective_answer(selective_differences(table))
    assert "No: at no epoch does an opinion score rank them better" in text
    assert "belief +0.0041 [" in text and "(better in 0, worse in 3 of 3 epochs)" in text
    assert "3 seeds" in text and text.endswith(".")


def test_selective_answer_names_where_an_opinion_score_ranks_better():
    def diff_of(seed, epoch, cal, score):
        if cal == "none" and score == "projected_probability" and epoch < 3:
            return -0.01, -0.012, -0.008  # better at epochs 1 and 2
        return 0.0, -0.002, 0.002  # no difference

    text = selective_answer(selective_differences(_selective(diff_of)))
    assert text.split("? ")[1].startswith(
        "At some epochs: projected probability b + a·u before calibration in 2 of 3 epochs."
    )
    assert "projected probability b + a·u +0.0000 [" in text  # epoch 3, the last: no difference
    assert "(better in 2, worse in 0 of 3 epochs)" in text


def _stacked(values):
    """S = 2 seeds, epochs 1–4, calibrators (none, temperature), metrics (nll, nll_calibration,
    nll_refinement), B = 3 resamples; ``values(seed, epoch, calibrator, metric)`` → the B + 1 values."""
    cals, metrics, epochs = ["none", "temperature"], ["nll", "nll_calibration", "nll_refinement"], [1, 2, 3, 4]
    scores = np.array(
        [[[[values(s, e, c, m) for m in metrics] for c in cals] for e in epochs] for s in (0, 1)], dtype=np.float32
    )
    return dict(
        scores=scores, epochs=np.array(epochs), calibrators=np.array(cals), metrics=np.array(metrics), seeds=[0, 1]
    )


def test_refinement_changes_are_paired_differences_between_each_seeds_epochs():
    noise = np.array([0.0, 0.01, -0.01, 0.02])  # the resamples: index 0 is the full test set

    def values(seed, epoch, cal, metric):
        level = {"nll": 0.3, "nll_calibration": 0.05, "nll_refinement": 0.25}[metric] + 0.1 * epoch * (
            metric != "nll_refinement"
        )
        return level + (0.5 if cal == "temperature" else 0) + 0.01 * seed + epoch * noise

    stacked = _stacked(values)
    best, refined = {0: 2, 1: 1}, {0: 3, 1: 1}
    got = refinement_changes(stacked, best, refined)
    for metric, per_epoch in (("nll", 0.1), ("nll_calibration", 0.1), ("nll_refinement", 0.0)):
        d = np.array(
            [
                [values(s, 4, "none", metric)[b] - values(s, best[s], "none", metric)[b] for b in range(4)]
                for s in (0, 1)
            ]
        )
        want = paired_interval(d[:, 0], d[:, 1:])
        assert float(got[metric].estimate) == pytest.approx(per_epoch * (2 + 3) / 2, abs=1e-6)  # float32 storage
        np.testing.assert_allclose([got[metric].lo, got[metric].hi], [want.lo, want.hi], atol=1e-6)
    stop = got["stop_at_refinement"]  # seed 0: epoch 3 − epoch 2 of temperature; seed 1: the same epoch, 0
    assert float(stop.estimate) == pytest.approx((0.1 + 0.0) / 2, abs=1e-6)


def test_refinement_answer_words_what_the_numbers_say():
    def iv(est, half):
        return paired_interval(np.array([est - 0.001, est + 0.001]), None)._replace(
            lo=np.array(est - half), hi=np.array(est + half), estimate=np.array(est)
        )

    best, refined = {0: 10, 1: 12}, {0: 20, 1: 25}
    mis = dict(
        nll=iv(0.4, 0.05),
        nll_calibration=iv(0.38, 0.04),
        nll_refinement=iv(0.02, 0.03),
        stop_at_refinement=iv(-0.01, 0.005),
    )
    text = refinement_answer(mis, best, refined, 100)
    assert "Mostly miscalibration (95% of the rise; lost refinement 5%)" in text
    assert "(epochs 10, 12) to epoch 100" in text and "refinement term is lowest at epochs 20, 25" in text
    assert "-0.010 [-0.015, -0.005]" in text and "2 seeds" in text
    lost = dict(mis, nll_calibration=iv(0.1, 0.02), nll_refinement=iv(0.3, 0.05))
    assert "Mostly lost refinement (75% of the rise; miscalibration 25%)" in refinement_answer(lost, best, refined, 100)
    both = dict(mis, nll_calibration=iv(0.2, 0.3), nll_refinement=iv(0.2, 0.3))
    assert "Both (miscalibration 50%, lost refinement 50% of the rise)" in refinement_answer(both, best, refined, 100)
    flat = dict(mis, nll=iv(0.01, 0.05))
    assert "The test NLL does not rise measurably" in refinement_answer(flat, best, refined, 100)
    assert "the epochs of lowest validation loss" in refinement_answer(mis, best, dict(best), 100)
    assert "Nothing to split" in refinement_answer(mis, {0: 100, 1: 100}, refined, 100)


def test_lowest_epochs_per_seed_earliest_on_a_tie():
    scores = pd.DataFrame(
        dict(
            seed=[0, 0, 0, 1, 1, 1, 1],
            epoch=[1, 2, 3, 1, 2, 3, 3],
            calibrator=["none"] * 6 + ["temperature"],
            split="test",
            nll_refinement=[0.5, 0.3, 0.3, 0.2, math.nan, 0.4, 0.0],
        )
    )
    assert lowest_epochs(scores, "nll_refinement") == {0: 2, 1: 1}
