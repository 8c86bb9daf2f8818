"""The probability floor shared by every fit and every reported NLL (docs/method.md §2.12).

A probability of exactly 0 has log p = −∞. Wherever probabilities become logits (the
calibrators fitted on probability files) or a negative log-likelihood (the NLL column of
every table, the calibrators' fit rows, the bootstrap), the probability is first floored at
one constant, :data:`PROB_FLOOR`, so that the objective a calibrator minimises, evaluated at
the identity map, is the NLL the tables report (to float64 rounding), and "never worse than
the raw model" is a statement about the reported number.

:data:`PROB_FLOOR` is float64's machine epsilon 2⁻⁵² ≈ 2.22e-16, the floor of
scikit-learn's ``log_loss`` (it clips to [eps, 1 − eps]) and of netcal's probability inputs,
so trustcal's NLL equals theirs to rounding even on predictions with zeros; a sample whose
true class got probability 0 costs −log eps ≈ 36.04 nats.
"""

from __future__ import annotations

import numpy as np

PROB_FLOOR: float = float(np.finfo(np.float64).eps)


def floored_log(probs) -> np.ndarray:
    """log max(p, PROB_FLOOR), elementwise, in float64 (the logits of probabilities: softmax of them is p
    renormalised after flooring, so it differs from p by at most K · PROB_FLOOR)."""
    return np.log(np.maximum(np.asarray(probs, dtype=np.float64), PROB_FLOOR))


def true_class_nll(probs, labels) -> np.ndarray:
    """−log max(p_{i,y_i}, PROB_FLOOR) per sample (N float64), for N×K ``probs`` and N integer ``labels``."""
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels)
    p_true = probs[np.arange(len(labels)), labels]
    return -np.log(np.clip(p_true, PROB_FLOOR, 1.0)) + 0.0  # + 0.0: never −0.0


def mean_nll(probs, labels) -> float:
    """Mean negative log-likelihood −(1/N) Σ_i log max(p_{i,y_i}, PROB_FLOOR): the NLL every table reports."""
    return float(true_class_nll(probs, labels).mean()) + 0.0
