"""trustcal.measures.detection: the AUROC by ranks against scikit-learn's (ties included), the FPR at 95 % TPR by
hand, the negative entropy."""

from __future__ import annotations

import numpy as np
import pytest

from trustcal.measures.detection import auroc, average_ranks, detection_replicates, fpr_at_tpr, negative_entropy


@pytest.mark.parametrize("seed", range(5))
def test_auroc_is_scikit_learns_with_ties(seed):
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(seed)
    inside = rng.integers(0, 6, 40) / 5  # few distinct values: many ties, within and across the sides
    outside = rng.integers(0, 4, 25) / 5
    expected = roc_auc_score(np.r_[np.ones(40), np.zeros(25)], np.r_[inside, outside])
    assert auroc(inside, outside) == pytest.approx(expected, abs=1e-12)


def test_auroc_extremes_and_average_ranks():
    assert auroc([2, 3], [0, 1]) == 1.0 and auroc([0, 1], [2, 3]) == 0.0 and auroc([1, 1], [1]) == 0.5
    assert average_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_fpr_at_95_tpr_by_hand():
    inside = np.arange(1, 21)  # 20 scores: 95 % is 19 of them, the threshold the 19th highest, 2
    outside = np.array([0, 1, 2, 2, 5, 30])  # at least 2: 2, 2, 5, 30
    assert fpr_at_tpr(inside, outside) == pytest.approx(4 / 6)
    assert fpr_at_tpr(inside, outside, tpr=1.0) == pytest.approx(5 / 6)  # threshold 1
    with pytest.raises(ValueError, match="both sides"):
        fpr_at_tpr([], [1])
    with pytest.raises(ValueError, match="^scores must be finite$"):
        auroc([0.1, np.inf], [0.2])


def test_negative_entropy():
    probs = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert negative_entropy(probs) == pytest.approx([0.0, -np.log(2)])
    assert negative_entropy(probs, np.log(np.where(probs > 0, probs, 1e-300))) == pytest.approx([0.0, -np.log(2)])


@pytest.mark.parametrize("seed", range(4))
def test_each_resample_equals_the_measures_on_the_scores_it_draws(seed):
    """detection_replicates on counts equals auroc and fpr_at_tpr on the scores repeated as drawn (ties across
    and within the sides, resamples of every size, some inputs never drawn)."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n_in, n_out = rng.integers(1, 30, 2)
        inside, outside = rng.integers(0, 6, n_in) / 5, rng.integers(0, 6, n_out) / 5
        b = int(rng.integers(1, 40))  # across RESAMPLE_CHUNK's passes
        c_in = np.stack([np.bincount(rng.integers(0, n_in, n_in), minlength=n_in) for _ in range(b)])
        c_out = np.stack([np.bincount(rng.integers(0, n_out, n_out), minlength=n_out) for _ in range(b)])
        tpr = float(rng.choice([0.5, 0.9, 0.95, 1.0]))
        areas, fprs = detection_replicates(inside, outside, c_in, c_out, tpr)
        for j in range(b):
            drawn_in, drawn_out = np.repeat(inside, c_in[j]), np.repeat(outside, c_out[j])
            assert areas[j] == pytest.approx(auroc(drawn_in, drawn_out), abs=1e-12)
            assert fprs[j] == pytest.approx(fpr_at_tpr(drawn_in, drawn_out, tpr), abs=1e-12)


def test_counts_of_one_give_the_point_values_and_bad_counts_are_refused():
    rng = np.random.default_rng(9)
    inside, outside = rng.normal(1, 1, 500), rng.normal(0, 1, 300)
    areas, fprs = detection_replicates(inside, outside, np.ones((3, 500)), np.ones((3, 300)))
    assert np.allclose(areas, auroc(inside, outside), atol=1e-12, rtol=0)
    assert np.allclose(fprs, fpr_at_tpr(inside, outside), atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="do not fit"):
        detection_replicates(inside, outside, np.ones((3, 499)), np.ones((3, 300)))
