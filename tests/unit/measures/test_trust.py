"""Trust opinions (docs/method.md §3) on cases small enough to compute by hand."""

import numpy as np
import pytest

from trustcal.measures.opinions import Opinion, cumulative_fusion, opinion_from_evidence
from trustcal.measures.trust import TrustParams, cluster_evidence, cluster_index, trust_opinions


def two_class(p1, labels):
    p1 = np.asarray(p1, dtype=float)
    return np.column_stack([1 - p1, p1]), np.asarray(labels)


def test_cluster_edges_and_one_in_last_cluster():
    # [i/10, (i+1)/10) for i < 9, and [0.9, 1] – 1.0 belongs to the last cluster (docs/method.md §3.1).
    p = np.array([0.0, 0.0999, 0.1, 0.3, 0.5, 0.8999999, 0.9, 1.0])
    assert cluster_index(p, 10).tolist() == [0, 0, 1, 3, 5, 8, 9, 9]
    assert cluster_index(np.array([0.5, 1.0]), 2).tolist() == [1, 1]


def test_hand_computed_two_classes_with_empty_clusters_and_p_equal_one():
    # M = 2 clusters: [0, 0.5) with RP 0.25 and [0.5, 1] with RP 0.75.
    # Class 1 probabilities: 0.2 (label 0), 0.6 (label 1), 1.0 (label 1), 0.7 (label 0).
    probs, labels = two_class([0.2, 0.6, 1.0, 0.7], [0, 1, 1, 0])
    params = TrustParams(clusters=2, weight=2.0, alpha=1.0, beta=1.0)
    ev = cluster_evidence(probs, labels, params)
    # class 1: cluster 0 holds {0.2}: n=1, t=0, s=|0 - 0.25| = 0.25
    #          cluster 1 holds {0.6, 1.0, 0.7}: n=3, t=2, s=|2 - 2.25| = 0.25
    # class 0 (p0 = 0.8, 0.4, 0.0, 0.3): cluster 0 {0.4, 0.0, 0.3}: n=3, t=0 (labels 1,1,0 → one is 0!)
    #   p0=0.3 belongs to sample 4 (label 0) → t=1; s=|1 - 0.75| = 0.25
    #   cluster 1 {0.8}: n=1, t=1, s=|1 - 0.75| = 0.25
    np.testing.assert_array_equal(ev["n"], [[3, 1], [1, 3]])
    np.testing.assert_array_equal(ev["t"], [[1, 1], [0, 2]])
    np.testing.assert_allclose(ev["s"], [[0.25, 0.25], [0.25, 0.25]])
    table = trust_opinions(probs, labels, params).set_index("label")
    # class 1: r = 2, s = 0.5 → b = 2/4.5, d = 0.5/4.5, u = 2/4.5
    assert table.loc["1", "belief"] == pytest.approx(2 / 4.5)
    assert table.loc["1", "disbelief"] == pytest.approx(0.5 / 4.5)
    assert table.loc["1", "uncertainty"] == pytest.approx(2 / 4.5)
    # network: r = 2 + 2 = 4, s = 0.5 + 0.5 = 1 → b = 4/7, d = 1/7, u = 2/7
    assert table.loc["network", "positive_evidence"] == pytest.approx(4)
    assert table.loc["network", "negative_evidence"] == pytest.approx(1)
    assert table.loc["network", "belief"] == pytest.approx(4 / 7)
    assert table.loc["network", "uncertainty"] == pytest.approx(2 / 7)
    assert (table["base_rate"] == 0.5).all()


def test_empty_cluster_contributes_no_evidence():
    # All class-1 probabilities in cluster 9 → clusters 0..8 of class 1 are empty: r = s = 0 there.
    probs, labels = two_class([0.95, 0.95], [1, 1])
    ev = cluster_evidence(probs, labels, TrustParams())
    assert ev["n"][1, :9].sum() == 0 and ev["s"][1, :9].sum() == 0
    # cluster 9: n = 2, t = 2, RP = 0.95 → s = |2 - 1.9| = 0.1
    assert ev["s"][1, 9] == pytest.approx(0.1)


def test_alpha_beta_weight_excess_and_missing_evidence_differently():
    # One cluster (M = 1, RP = 0.5); class 1 has n = 4 values, t = 3 → excess t − n·RP = 1.
    # class 0: t = 1 → missing n·RP − t = 1.
    probs, labels = two_class([0.1, 0.2, 0.3, 0.4], [1, 1, 1, 0])
    ev = cluster_evidence(probs, labels, TrustParams(clusters=1, alpha=3.0, beta=0.5))
    assert ev["s"][1, 0] == pytest.approx(3.0 * 1)  # alpha · excess
    assert ev["s"][0, 0] == pytest.approx(0.5 * 1)  # beta · missing


def test_cluster_mean_representative():
    # M = 1: RP = mean of the class-1 probabilities = 0.25; n = 4, t = 3 → s = |3 − 1| = 2
    probs, labels = two_class([0.1, 0.2, 0.3, 0.4], [1, 1, 1, 0])
    ev = cluster_evidence(probs, labels, TrustParams(clusters=1, representative="mean"))
    assert ev["representative"][1, 0] == pytest.approx(0.25)
    assert ev["s"][1, 0] == pytest.approx(2.0)


def test_evidence_sum_equals_pairwise_cumulative_fusion():
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(4), size=300)
    labels = rng.integers(0, 4, 300)
    params = TrustParams(clusters=5)
    ev = cluster_evidence(probs, labels, params)
    table = trust_opinions(probs, labels, params)
    for c in range(4):
        fused = opinion_from_evidence(ev["r"][c, 0], ev["s"][c, 0])
        for i in range(1, 5):
            fused = cumulative_fusion(fused, opinion_from_evidence(ev["r"][c, i], ev["s"][c, i]))
        row = table[table["label"] == str(c)].iloc[0]
        np.testing.assert_allclose(
            [fused.belief, fused.disbelief, fused.uncertainty],
            [row.belief, row.disbelief, row.uncertainty],
            rtol=1e-12,
        )


def test_spec_golden_vector_through_cumulative_fusion():
    ops = [Opinion(0.1, 0.3, 0.6, 0.5), Opinion(0.4, 0.2, 0.4, 0.5), Opinion(0.7, 0.1, 0.2, 0.5)]
    fused = cumulative_fusion(cumulative_fusion(ops[0], ops[1]), ops[2])
    np.testing.assert_allclose([fused.belief, fused.disbelief, fused.uncertainty], [0.651, 0.209, 0.140], atol=5e-4)


@pytest.mark.parametrize("fusion", ["cumulative", "averaging", "weighted"])
def test_opinions_are_valid_for_every_fusion(fusion):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(10) * 0.3, size=500)
    labels = rng.integers(0, 10, 500)
    table = trust_opinions(probs, labels, TrustParams(cluster_fusion=fusion, class_fusion=fusion))
    total = table[["belief", "disbelief", "uncertainty"]].sum(axis=1)
    np.testing.assert_allclose(total, 1.0)
    assert (
        ((table[["belief", "disbelief", "uncertainty"]] >= 0) & (table[["belief", "disbelief", "uncertainty"]] <= 1))
        .all()
        .all()
    )
    assert list(table["label"]) == [str(c) for c in range(10)] + ["network"]


def test_averaging_fusion_is_mean_evidence():
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(3), size=200)
    labels = rng.integers(0, 3, 200)
    params = TrustParams(clusters=4, cluster_fusion="averaging", class_fusion="cumulative")
    ev = cluster_evidence(probs, labels, params)
    table = trust_opinions(probs, labels, params).set_index("label")
    for c in range(3):
        r, s = ev["r"][c].mean(), ev["s"][c].mean()
        assert table.loc[str(c), "belief"] == pytest.approx(r / (2 + r + s))


def test_perfect_classifier_has_no_disbelief():
    labels = np.arange(10).repeat(20)
    probs = np.eye(10)[labels]
    table = trust_opinions(probs, labels, TrustParams())
    # p = 1 → cluster 9, RP = 0.95: n = 20, t = 20 → s = 1 per class; p = 0 → cluster 0: n = 180, t = 0, s = 180·0.05 = 9
    row = table.set_index("label").loc["0"]
    assert row.positive_evidence == pytest.approx(20)
    assert row.negative_evidence == pytest.approx(1 + 9)


def test_rejects_bad_parameters():
    with pytest.raises(ValueError, match="clusters"):
        TrustParams(clusters=0)
    with pytest.raises(ValueError, match="fusion"):
        TrustParams(class_fusion="bayes")
