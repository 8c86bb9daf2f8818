"""trustcal.measures.detection: the AUROC by ranks against scikit-learn's (ties included), the FPR at 95 % TPR by
hand, the negative entropy."""

from __future__ import annotations

import numpy as np
import pytest

from trustcal.measures.detection import auroc, average_ranks, fpr_at_tpr, negative_entropy


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


def test_negative_entropy():
    probs = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert negative_entropy(probs) == pytest.approx([0.0, -np.log(2)])
    assert negative_entropy(probs, np.log(np.where(probs > 0, probs, 1e-300))) == pytest.approx([0.0, -np.log(2)])
