"""The ``trust_sweep`` table (trustcal.evaluation.trust_sweep_table, trust_sweep.csv): the network and
mean class opinions at each number of clusters M and each representative, checked against Algorithm 1
(docs/method.md §3) worked out apart from trustcal: by hand for M = 1, and for every M and representative
by the exact rational arithmetic of :func:`algorithm_1` (a loop over the samples, no code of trustcal)."""

from fractions import Fraction

import numpy as np
import pytest

from trustcal.evaluation import PredictionSet, SweepParams, trust_sweep_table, trust_tables
from trustcal.measures.trust import TrustParams

EPS = float(np.finfo(float).eps)

# Six predictions of three classes (probabilities as decimal strings, label). No p·M lands on a cluster edge
# for the M swept below, so the float cluster index ⌊p·M⌋ is the exact one.
ROWS = [
    (("0.70", "0.20", "0.10"), 0),
    (("0.55", "0.35", "0.10"), 1),
    (("0.15", "0.80", "0.05"), 1),
    (("0.30", "0.25", "0.45"), 2),
    (("0.05", "0.15", "0.80"), 0),
    (("0.35", "0.40", "0.25"), 2),
]
CLUSTERS = (1, 2, 3, 7)
COLUMNS = [
    "epoch",
    "calibrator",
    "clusters",
    "representative",
    "belief",
    "disbelief",
    "uncertainty",
    "class_belief_mean",
    "class_disbelief_mean",
    "class_uncertainty_mean",
]


def algorithm_1(rows, m: int, representative: str, weight=2, alpha=1, beta=1) -> dict[str, Fraction]:
    """Algorithm 1 in exact fractions: per class c and cluster i = ⌊p_c·M⌋ (p = 1 in the last), r_i = t_i (the
    samples of label c), s_i = α·max(t_i − n_i·RP_i, 0) + β·max(n_i·RP_i − t_i, 0) with RP_i the cluster's
    midpoint (i + ½)/M or its mean probability; cumulative fusion sums the evidence over the clusters (the
    class opinion) and over the classes (the network's); b, d, u = r, s, W over W + r + s."""
    k = len(rows[0][0])
    classes = []
    for c in range(k):
        clusters: dict[int, list] = {}
        for probs, label in rows:
            p = Fraction(probs[c])
            clusters.setdefault(min(int(p * m), m - 1), []).append((p, label == c))
        r = s = Fraction(0)
        for i, members in clusters.items():
            n, t = len(members), sum(hit for _, hit in members)
            rp = Fraction(2 * i + 1, 2 * m) if representative == "midpoint" else sum(p for p, _ in members) / n
            r += t
            s += alpha * max(t - n * rp, 0) + beta * max(n * rp - t, 0)
        classes.append((r, s))

    def opinion(r, s):
        total = weight + r + s
        return r / total, s / total, Fraction(weight) / total

    each = [opinion(r, s) for r, s in classes]
    net = opinion(sum(r for r, _ in classes), sum(s for _, s in classes))
    return dict(
        belief=net[0],
        disbelief=net[1],
        uncertainty=net[2],
        class_belief_mean=sum(o[0] for o in each) / k,
        class_disbelief_mean=sum(o[1] for o in each) / k,
        class_uncertainty_mean=sum(o[2] for o in each) / k,
    )


def _predictions(rows, epoch, calibrator, split="test"):
    probs = np.array([[float(p) for p in probs] for probs, _ in rows])
    return PredictionSet(epoch, calibrator, split, probs, np.array([label for _, label in rows]))


def test_m_1_by_hand():
    """One cluster, by hand. Each class has two samples of its label among six. Midpoint RP = ½: n·RP = 3,
    s = |2 − 3| = 1 per class; the network r = 6, s = 3: (6, 3, 2)/11. Mean RP: n·RP = Σ_i p_ic = 2.1, 2.15 and
    1.75 for the three classes, s = 0.1, 0.15, 0.25; the network r = 6, s = 0.5: (6, 0.5, 2)/8.5."""
    table = trust_sweep_table([_predictions(ROWS, 1, "none")], TrustParams(), SweepParams(clusters=(1,), epochs=(1,)))
    got = table.set_index("representative")
    assert list(table.columns) == COLUMNS and len(table) == 2
    mid, mean = got.loc["midpoint"], got.loc["mean"]
    tol = 8 * EPS
    assert (mid.belief, mid.disbelief, mid.uncertainty) == pytest.approx((6 / 11, 3 / 11, 2 / 11), abs=tol)
    assert mid.class_belief_mean == pytest.approx(2 / 5, abs=tol)  # each class: (2, 1, 2)/5
    assert mid.class_disbelief_mean == pytest.approx(1 / 5, abs=tol)
    assert (mean.belief, mean.disbelief, mean.uncertainty) == pytest.approx((6 / 8.5, 0.5 / 8.5, 2 / 8.5), abs=tol)
    assert mean.class_belief_mean == pytest.approx((2 / 4.1 + 2 / 4.15 + 2 / 4.25) / 3, abs=tol)
    assert mean.class_uncertainty_mean == pytest.approx((2 / 4.1 + 2 / 4.15 + 2 / 4.25) / 3, abs=tol)
    assert mean.class_disbelief_mean == pytest.approx((0.1 / 4.1 + 0.15 / 4.15 + 0.25 / 4.25) / 3, abs=tol)
    want = algorithm_1(ROWS, 1, "mean")
    assert mean.belief == pytest.approx(float(want["belief"]), abs=tol)  # the oracle agrees with the hand


def test_every_m_and_representative_is_algorithm_1_in_exact_arithmetic():
    """Each row of the sweep, at M = 1, 2, 3, 7 and both representatives, against :func:`algorithm_1`; the rows
    differ from each other (a sweep that ignored M or the representative would repeat one opinion). Tolerance:
    the float64 rounding of the evidence sums (≤ 3 terms per cluster, ≤ 7 clusters, 3 classes, each ≤ 6) and of
    one division: 64·eps relative to values ≤ 1."""
    preds = [_predictions(ROWS, 1, "none")]
    table = trust_sweep_table(preds, TrustParams(), SweepParams(clusters=CLUSTERS, epochs=(1,)))
    assert len(table) == len(CLUSTERS) * 2
    assert table[["belief", "disbelief"]].round(12).drop_duplicates().shape[0] == len(table)  # all distinct
    for _, row in table.iterrows():
        want = algorithm_1(ROWS, int(row.clusters), row.representative)
        for name, value in want.items():
            assert row[name] == pytest.approx(float(value), abs=64 * EPS), (row.clusters, row.representative, name)


def test_the_sweep_takes_the_chosen_epochs_every_calibrator_and_the_trust_settings():
    """Only the test predictions, at the sweep's epochs and the last one (epoch 2 is not swept); each calibrator
    its own predictions; the other trust settings (here W = 1, α = 2) carried into every M and representative."""
    other = [(probs, (label + 1) % 3) for probs, label in ROWS]  # another model: the same rows, other labels
    preds = [
        _predictions(ROWS if c == "none" else other, e, c, split)
        for e in (1, 2, 3)
        for c in ("none", "temperature")
        for split in ("test", "val")
    ]
    params = TrustParams(weight=1.0, alpha=2.0, clusters=10)
    sweep = SweepParams(clusters=(2, 3), representatives=("mean", "midpoint"), epochs=(1,))
    table = trust_tables(preds, params, sweep)["trust_sweep"]  # what the trust stage writes
    assert sorted(set(table["epoch"])) == [1, 3]
    assert len(table) == 2 * 2 * 2 * 2  # epochs × calibrators × M × representatives
    for _, row in table.iterrows():
        rows = ROWS if row.calibrator == "none" else other
        want = algorithm_1(rows, int(row.clusters), row.representative, weight=1, alpha=2)
        for name, value in want.items():
            assert row[name] == pytest.approx(float(value), abs=64 * EPS), (row.calibrator, row.clusters, name)
