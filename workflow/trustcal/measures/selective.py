"""Trust as a selective-prediction signal (docs/method.md §13.1): AURC and AUGRC of any confidence score.

A classifier that may abstain accepts its predictions in decreasing order of a confidence score. The
risk–coverage curve, AURC and AUGRC of :mod:`trustcal.measures.calibration_errors` (§5.8) rank by the
maximum probability; here the score is any per-prediction number, in particular one derived from the
per-prediction opinion of §3.6 (the opinion of the (predicted class, cluster) pair, learned on another
set of predictions). Equal scores form one group, accepted together (§5.8's rule), so a score with few
distinct values (the opinion scores take at most K·M) is compared fairly with the maximum probability.

Scores (:data:`SCORES`):

* ``max_probability`` — max_k p_ik, the usual confidence (the baseline);
* ``belief`` — b of the prediction's opinion;
* ``projected_probability`` — b + a·u (Jøsang 2016, Eq. 3.2), a the base rate of the trust parameters:
  the opinion's own point estimate of the probability that the prediction can be trusted;
* ``evidence`` — 1 − u = (r + s)/(W + r + s): how much evidence the pair's opinion rests on,
  whatever its direction. The method offers it as its measure of how well founded an opinion is; it
  grows with the number of validation predictions in the pair (r + s ≥ r = t, the pair's true-class
  count), not with their accuracy, so it is reported as a check of what the belief adds beyond it.

Disbelief alone is not a score: d = |t − n·RP|/(W + r + s) is the same for a pair that is too
confident and one that is not confident enough, so ranking by it cannot say which predictions are wrong.
"""

from __future__ import annotations

import numpy as np

from trustcal.measures.bins import TopLabel
from trustcal.measures.calibration_errors import augrc_of, risk_curve

__all__ = ["SCORES", "opinion_scores", "selective_areas", "risk_at_coverages"]

SCORES = ("max_probability", "belief", "projected_probability", "evidence")


def opinion_scores(confidence, belief, uncertainty, base_rate: float) -> dict[str, np.ndarray]:
    """The confidence scores of :data:`SCORES` from each prediction's max probability and opinion (b, u)."""
    b = np.asarray(belief, dtype=np.float64)
    u = np.asarray(uncertainty, dtype=np.float64)
    return {
        "max_probability": np.asarray(confidence, dtype=np.float64),
        "belief": b,
        "projected_probability": b + float(base_rate) * u,
        "evidence": 1.0 - u,
    }


def selective_areas(score, hit) -> tuple[float, float]:
    """(AURC, AUGRC) of accepting the predictions in decreasing ``score`` (docs/method.md §5.8, §13.1).

    ``hit``: 1 for a right prediction, 0 for a wrong one. The definitions (and the tie rule: equal scores
    form one group whose errors spread evenly) are those of :func:`trustcal.measures.metrics.aurc` and
    :func:`trustcal.measures.metrics.augrc`, which this gives for ``score`` = the max probability.
    """
    score = np.asarray(score, dtype=np.float64).ravel()
    hit = np.asarray(hit, dtype=np.float64).ravel()
    if score.shape != hit.shape or score.size == 0:
        raise ValueError(f"score and hit must be non-empty and of equal length (got {score.size} and {hit.size})")
    _, risk = risk_curve(score, hit)
    return float(np.mean(risk)), augrc_of(TopLabel.of_scores(score, hit))


def risk_at_coverages(score, hit, coverages) -> np.ndarray:
    """Selective risk at each coverage in (0, 1]: the error rate among the k = ⌈c·N⌉ predictions of highest
    ``score`` (c rounded up to the next k/N, as :func:`trustcal.measures.metrics.risk_coverage` does),
    ties as a group (the expected risk when a group is accepted in random order)."""
    score = np.asarray(score, dtype=np.float64).ravel()
    hit = np.asarray(hit, dtype=np.float64).ravel()
    wanted = np.asarray(coverages, dtype=np.float64)
    if np.any((wanted <= 0) | (wanted > 1)):
        raise ValueError("coverages must lie in (0, 1]")
    _, risk = risk_curve(score, hit)
    coverage = np.arange(1, score.size + 1) / score.size
    return risk[np.searchsorted(coverage, wanted, side="left")]
