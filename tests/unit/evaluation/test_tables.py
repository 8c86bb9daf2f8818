"""The result tables of trustcal.evaluation by value on hand-built predictions: the per-prediction
opinions' table (dynamic_trust.csv), the tables the trust stage writes and their columns (trust.csv with its
intervals), and the index of the score tables' side tables. The trust sweep: test_tables_sweep.py."""

import numpy as np
import pandas as pd
import pytest

from trustcal.evaluation import (
    MetricParams,
    PredictionSet,
    SweepParams,
    dynamic_trust_table,
    score_tables,
    trust_tables,
)
from trustcal.measures.bootstrap import BootstrapParams
from trustcal.measures.trust import TRUST_COLUMNS, TrustParams

EPS = float(np.finfo(float).eps)
VAL = PredictionSet(
    3, "none", "val", np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]), np.array([0, 1, 1, 1])
)
TEST = PredictionSet(3, "none", "test", np.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4]]), np.array([0, 0, 0]))


def test_dynamic_trust_is_the_validation_clusters_opinion_of_each_test_prediction():
    """By hand, M = 2 (midpoint RP ¾ in the upper cluster), W = 2. On the validation predictions, class 0's upper
    cluster holds p = 0.9 (label 0) and 0.8 (label 1): r = 1, s = |1 − 2·¾| = ½; class 1's holds 0.7 and 0.6, both
    label 1: r = 2, s = ½. The test predictions 0.7 and 0.6 for class 0 (right) get (1, ½, 2)/3.5 each; 0.8 for
    class 1 (wrong, the label is 0) gets (2, ½, 2)/4.5."""
    table = dynamic_trust_table([VAL, TEST], TrustParams(clusters=2))
    assert list(table.columns) == [
        "epoch",
        "calibrator",
        "fitted_on",
        "correct",
        "n",
        "belief",
        "disbelief",
        "uncertainty",
    ]
    got = table.set_index("correct")
    assert set(table["epoch"]) == {3} and set(table["calibrator"]) == {"none"} and set(table["fitted_on"]) == {"val"}
    assert (got.at[True, "n"], got.at[False, "n"]) == (2, 1)
    right = (got.at[True, "belief"], got.at[True, "disbelief"], got.at[True, "uncertainty"])
    wrong = (got.at[False, "belief"], got.at[False, "disbelief"], got.at[False, "uncertainty"])
    assert right == pytest.approx((1 / 3.5, 0.5 / 3.5, 2 / 3.5), abs=4 * EPS)
    assert wrong == pytest.approx((2 / 4.5, 0.5 / 4.5, 2 / 4.5), abs=4 * EPS)
    alone = dynamic_trust_table([TEST], TrustParams(clusters=2)).set_index("correct")  # no validation split
    assert set(alone["fitted_on"]) == {"test"}
    # fitted on the test predictions: class 0's upper cluster holds 0.7 and 0.6 (label 0) → (2, ½, 2)/4.5
    assert alone.at[True, "belief"] == pytest.approx(2 / 4.5, abs=4 * EPS)


def test_the_trust_stage_writes_its_tables_with_the_interval_columns_beside_the_opinion():
    preds = [VAL, TEST]
    boot = BootstrapParams(resamples=20, seed=3)
    out = trust_tables(preds, TrustParams(clusters=2), SweepParams(clusters=(2,), epochs=(3,)), boot)
    assert set(out) == {"trust", "dynamic_trust", "selective", "trust_sweep"}
    assert set(trust_tables(preds, TrustParams(clusters=2))) == {"trust", "dynamic_trust", "selective"}
    trust = out["trust"]
    intervals = [f"{k}_{end}" for k in ("belief", "disbelief", "uncertainty") for end in ("lo", "hi")]
    assert list(trust.columns) == list(TRUST_COLUMNS) + intervals
    assert list(trust["label"]) == ["0", "1", "network"]
    for k in ("belief", "disbelief", "uncertainty"):
        assert (trust[f"{k}_lo"] <= trust[f"{k}_hi"]).all() and trust[f"{k}_lo"].between(0, 1).all()
    # the test set's class 0: r = 3 (every label is 0), M = 2; p₀ = 0.7, 0.6 in the upper cluster (s = |2 − 1.5|),
    # 0.2 in the lower (s = |1 − 0.25|): s = 1.25, belief 3/6.25
    assert trust.loc[0, "belief"] == pytest.approx(3 / 6.25, abs=4 * EPS)
    wrong = out["dynamic_trust"].set_index("correct")  # the hand values of the test above
    assert wrong.at[False, "belief"] == pytest.approx(2 / 4.5, abs=4 * EPS)


def test_the_side_tables_are_numbered_from_zero():
    """The side tables of several predictions are concatenated into one table numbered 0 … n − 1, as their
    CSV files are read back."""
    preds = [PredictionSet(e, "none", "test", TEST.probs, TEST.labels) for e in (1, 2)]
    tables = score_tables(preds, MetricParams(density_points=5, smooth_points=5))
    for name in ("trust_spectrum", "reliability", "trust_density", "smooth_reliability"):
        assert tables[name].index.equals(pd.RangeIndex(len(tables[name]))), name
        assert list(tables[name]["epoch"].unique()) == [1, 2], name


def test_the_trust_table_is_keyed_by_epoch_and_calibrator_alone():
    """trust.csv holds the test split only: no split column beside its keys."""
    from trustcal.evaluation import trust_table

    table = trust_table([VAL, TEST], TrustParams())
    assert list(table.columns[:2]) == ["epoch", "calibrator"] and "split" not in table.columns
    assert set(table["epoch"]) == {3}
