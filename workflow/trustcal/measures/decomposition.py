"""Calibration and refinement terms of the NLL and the Brier score (Berta, Holzmüller et al. 2025,
"Rethinking Early Stopping: Refine, Then Calibrate", arXiv 2501.19195; docs/method.md §13.2).

A proper loss L of predictions p splits into what a post-hoc recalibration of p can remove and what it
cannot:

    refinement  = L(g(p))   with g the best recalibration map of a family (here: temperature scaling),
    calibration = L(p) − refinement.

Fitting g on the very predictions it scores would make the calibration term ≥ 0 by construction and
biased upwards; it is cross-fitted instead (as probmetrics' ``MetricsWithCalibration`` with its
``cv-5`` splitter): the N samples are split into K folds, stratified by label, g is fitted on K − 1
folds and applied to the held-out one, and the refinement is the loss of the held-out recalibrated
predictions over all N. The calibration term can then be slightly negative for a calibrated model
(the fitted g is not quite the identity).

The family of g is passed in (``fit``): :mod:`trustcal.measures` does not depend on the calibrators;
:func:`trustcal.evaluation.refinement_losses` passes temperature scaling
(:func:`trustcal.calibration.fit_temperature`) on the log-probabilities, probmetrics' default for the
log loss (``ts-mix``). As there, the recalibrated predictions are mixed with the uniform distribution
at weight 1/(n_fit + 1), n_fit the samples g was fitted on, so no held-out probability is 0; the Brier
terms use the same g (probmetrics fits one recalibration for every loss).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from trustcal.numerics import floored_log, true_class_nll

__all__ = [
    "TERMS",
    "Recalibrator",
    "stratified_folds",
    "cross_fitted",
    "loss_terms",
    "terms_from_losses",
]

# fit(log_probs, labels) → map: log-probabilities (n × K) → recalibrated probabilities (n × K)
Recalibrator = Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], np.ndarray]]

TERMS = ("nll_calibration", "nll_refinement", "brier_calibration", "brier_refinement")


def stratified_folds(labels, folds: int, seed: int) -> np.ndarray:
    """The fold (0 … folds − 1) of each sample: the samples in a random order (``seed``), grouped by label
    (stable), dealt to the folds in turn, so every fold holds ⌊n_c/folds⌋ or ⌈n_c/folds⌉ samples of
    each label c. The same labels and seed give the same folds."""
    labels = np.asarray(labels)
    if folds < 2:
        raise ValueError(f"folds must be ≥ 2 (got {folds})")
    order = np.random.default_rng(seed).permutation(labels.size)
    order = order[np.argsort(labels[order], kind="stable")]
    fold = np.empty(labels.size, dtype=np.int64)
    fold[order] = np.arange(labels.size) % folds
    return fold


def cross_fitted(probs, labels, fit: Recalibrator, folds: int = 5, seed: int = 0, log_probs=None) -> np.ndarray:
    """The recalibrated probabilities of every sample from the map fitted on the other folds (N × K float64):
    (1 − λ)·g_f(log p) + λ/K with λ = 1/(n_fit + 1), g_f fitted by ``fit`` on the log-probabilities
    (``log_probs``, exact, when the predictions come from logits; else log p floored at
    :data:`trustcal.numerics.PROB_FLOOR`) and labels of every fold but f."""
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels).astype(np.int64)
    n, k = probs.shape
    log_probs = floored_log(probs) if log_probs is None else np.asarray(log_probs, dtype=np.float64)
    fold = stratified_folds(labels, folds, seed)
    out = np.empty((n, k))
    for f in range(folds):  # K fits, not a loop over samples
        held = fold == f
        n_fit = n - int(held.sum())
        recalibrate = fit(log_probs[~held], labels[~held])
        mix = 1.0 / (n_fit + 1)
        out[held] = (1.0 - mix) * recalibrate(log_probs[held]) + mix / k
    return out


def loss_terms(probs, labels, refined, log_probs=None) -> dict[str, np.ndarray]:
    """Per-sample losses (N float64 each): ``nll`` and ``brier`` of ``probs`` (as the scores report them:
    :func:`trustcal.numerics.true_class_nll`, exact from ``log_probs`` when given, Σ_k (p_ik − 1[y_i = k])²) and
    ``nll_refined`` / ``brier_refined`` of the recalibrated ``refined``."""
    probs = np.asarray(probs, dtype=np.float64)
    refined = np.asarray(refined, dtype=np.float64)
    labels = np.asarray(labels).astype(np.int64)
    onehot = np.zeros_like(probs)
    onehot[np.arange(labels.size), labels] = 1.0
    return {
        "nll": true_class_nll(probs, labels, log_probs),
        "nll_refined": true_class_nll(refined, labels),
        "brier": ((probs - onehot) ** 2).sum(axis=1),
        "brier_refined": ((refined - onehot) ** 2).sum(axis=1),
    }


def terms_from_losses(losses: dict[str, np.ndarray]) -> dict[str, float]:
    """The four terms of :data:`TERMS` from per-sample losses: refinement = mean refined loss,
    calibration = mean loss − refinement."""
    out = {}
    for loss in ("nll", "brier"):
        refinement = float(np.mean(losses[f"{loss}_refined"]))
        out[f"{loss}_calibration"] = float(np.mean(losses[loss])) - refinement
        out[f"{loss}_refinement"] = refinement
    return {name: out[name] for name in TERMS}
