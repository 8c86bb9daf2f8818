"""The negative log-likelihood, exact where the log-probability is known (docs/method.md §2.12).

Predictions that come as logits (the workflow's networks, logit files, every calibrator that ends
in a softmax: none, temperature, vector, matrix, Dirichlet) have exact log-probabilities, the
log-softmax (:func:`log_softmax`, float64): their NLL is −log_softmax(z)_y with no floor, however
confidently wrong a prediction is, as PyTorch's ``cross_entropy`` computes it.

Predictions that come as probabilities (probability files, histogram binning, isotonic
regression) may hold a stored 0, whose log is −∞. There, and only there, the probability is
floored at one constant, :data:`PROB_FLOOR`, wherever it becomes logits (the calibrators fitted on
probability files) or an NLL, so that the objective a calibrator minimises, evaluated at the
identity map, is the NLL the tables report (to float64 rounding) on both paths, and "never worse
than the raw model" is a statement about the reported number.

:data:`PROB_FLOOR` is float64's machine epsilon 2⁻⁵² ≈ 2.22e-16, the floor of
scikit-learn's ``log_loss`` (it clips to [eps, 1 − eps]) and of netcal's probability inputs,
so trustcal's NLL equals theirs to rounding even on predictions with zeros; a sample whose
true class got probability 0 costs −log eps ≈ 36.04 nats.

:func:`one_blas_thread` holds BLAS at one thread, for numbers that must not depend on the cores.
"""

from __future__ import annotations

import numpy as np

PROB_FLOOR: float = float(np.finfo(np.float64).eps)


def one_blas_thread():
    """BLAS held at one thread while the returned context lasts (threadpoolctl's ``threadpool_limits``). A
    float32 product's last bits depend on how many threads summed it, so the tables of ``trustcal assess``
    are computed so, as the workflow's one-thread jobs compute theirs (Snakemake sets a job's BLAS threads
    to its ``threads``); two forked workers of a BLAS with a thread per core would also run four threads on
    two cores, several times slower than one process. The calibrators' small iterative fits run so too."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


def log_softmax(logits) -> np.ndarray:
    """Row-wise log softmax(z) in float64, stable for any finite logits (the row max is subtracted):
    the exact log-probabilities of logits."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def floored_log(probs) -> np.ndarray:
    """log max(p, PROB_FLOOR), elementwise, in float64 (the logits of probabilities: softmax of them is p
    renormalised after flooring, so it differs from p by at most K · PROB_FLOOR)."""
    return np.log(np.maximum(np.asarray(probs, dtype=np.float64), PROB_FLOOR))


def true_class_nll(probs, labels, log_probs=None) -> np.ndarray:
    """The NLL per sample (N float64), for N×K ``probs`` and N integer ``labels``: −log_probs[i, y_i]
    when the exact log-probabilities are given (predictions from logits), else −log max(p_{i,y_i}, PROB_FLOOR)."""
    labels = np.asarray(labels)
    rows = np.arange(len(labels))
    if log_probs is not None:
        return -np.asarray(log_probs, dtype=np.float64)[rows, labels] + 0.0  # + 0.0: never −0.0
    p_true = np.asarray(probs, dtype=np.float64)[rows, labels]
    return -np.log(np.clip(p_true, PROB_FLOOR, 1.0)) + 0.0


def mean_nll(probs, labels, log_probs=None) -> float:
    """Mean negative log-likelihood −(1/N) Σ_i log p_{i,y_i}: the NLL every table reports, exact from
    ``log_probs`` when given, else with p floored at PROB_FLOOR (:func:`true_class_nll`)."""
    return float(true_class_nll(probs, labels, log_probs).mean()) + 0.0


def logits_nll(logits, labels) -> float:
    """Mean NLL of softmax(``logits``), exact (no floor): −(1/N) Σ_i log_softmax(z_i)_{y_i}."""
    return mean_nll(None, labels, log_softmax(logits))
