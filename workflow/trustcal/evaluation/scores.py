"""The score tables of a sequence of :class:`~trustcal.evaluation.prediction_sets.PredictionSet`: ``scores``
(every scalar metric of :data:`trustcal.measures.metrics.METRICS`, the NLL's and Brier score's calibration and
refinement terms, docs/method.md §13.2, and with a bootstrap their intervals) and its side tables
(:data:`SIDE_TABLES`), under one :class:`~trustcal.measures.metric_params.MetricParams`, ``metrics``, from
:func:`score_tables` down to each metric."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from trustcal.calibration.temperature import newton_temperature, softmax
from trustcal.evaluation.prediction_sets import (
    PredictionSet,
    interval_columns,
    keys_of,
    of_split,
    resamples_of,
    with_keys,
)
from trustcal.measures import decomposition
from trustcal.measures.bins import TopLabel
from trustcal.measures.bootstrap import BootstrapParams, bootstrap_scores_of, resampled_sums
from trustcal.measures.metric_params import MetricParams
from trustcal.measures.metrics import (
    scalar_columns,
    scalar_metrics_of,
    trust_density_table_of,
    trust_spectrum_of,
)
from trustcal.measures.reliability import reliability_table_of
from trustcal.measures.smooth import smooth_measures, smooth_reliability_of

__all__ = [
    "FIRST_SCORES",
    "SCORE_KEYS",
    "SIDE_TABLES",
    "refinement_losses",
    "refinement_replicates",
    "score_columns",
    "score_tables",
]


def refinement_losses(p: PredictionSet, metrics: MetricParams, seed: int) -> dict[str, np.ndarray] | None:
    """Per-sample losses of ``p`` and of its cross-fitted recalibration (docs/method.md §13.2), the split of
    scores.csv (None: fewer samples than folds): :func:`trustcal.measures.decomposition.loss_terms` of
    :func:`~trustcal.measures.decomposition.cross_fitted` with ``metrics.refinement_folds`` folds drawn with ``seed``
    and temperature scaling of the log-probabilities as the recalibration, T fitted by
    :func:`trustcal.calibration.temperature.newton_temperature` (the minimiser of
    :func:`trustcal.calibration.fit_temperature`, T in [0.01, 100], to its tolerance)."""
    if len(p.labels) < metrics.refinement_folds:
        return None
    previous = [1.0]  # each fold's fit starts at the T of the fold before (four of five rows are shared)

    def fit(log_probs: np.ndarray, labels: np.ndarray):
        previous[0] = temperature = newton_temperature(log_probs, labels, start=previous[0])
        return lambda z: softmax(z, temperature)

    refined = decomposition.cross_fitted(p.probs, p.labels, fit, metrics.refinement_folds, seed, log_probs=p.log_probs)
    return decomposition.loss_terms(p.probs, p.labels, refined, log_probs=p.log_probs)


def refinement_replicates(losses: dict[str, np.ndarray], counts: np.ndarray) -> dict[str, np.ndarray]:
    """The calibration and refinement terms of every resample, the recalibration maps held fixed: one
    product of the counts with the N × 4 per-sample terms (float32, as :func:`bootstrap_scores_of`; in
    blocks of samples for a large N, :func:`~trustcal.measures.bootstrap.resampled_sums`)."""
    per_sample = np.stack(
        [
            losses["nll"] - losses["nll_refined"],
            losses["nll_refined"],
            losses["brier"] - losses["brier_refined"],
            losses["brier_refined"],
        ],
        axis=1,
    ).astype(np.float32)
    sums = resampled_sums(counts, per_sample, per_sample.shape[0]) / per_sample.shape[0]
    return dict(zip(decomposition.TERMS, sums.T))


# the contracted first columns of scores.csv
SCORE_KEYS = ("epoch", "calibrator", "split")
FIRST_SCORES = ("accuracy", "nll", "ece")


def score_columns(metrics: MetricParams, bootstrapped: Iterable[str] = ()) -> list[str]:
    """The columns of scores.csv: the keys, the first scores, every other column of
    :func:`trustcal.measures.metrics.scalar_columns` in the order of its table, ``nll_exact`` and the
    calibration/refinement terms, then ``<name>_lo`` / ``<name>_hi`` of each of them in ``bootstrapped``."""
    rest = [c for c in [*scalar_columns(metrics), "nll_exact", *decomposition.TERMS] if c not in FIRST_SCORES]
    estimates = [*FIRST_SCORES, *rest]
    bootstrapped = set(bootstrapped)
    return [*SCORE_KEYS, *estimates] + [f"{c}_{end}" for c in estimates if c in bootstrapped for end in ("lo", "hi")]


def _score_row(
    p: PredictionSet,
    top: TopLabel,
    metrics: MetricParams,
    counts: np.ndarray | None,
    bootstrap: BootstrapParams | None,
    losses: dict[str, np.ndarray] | None,
    smece: np.ndarray | None = None,
) -> tuple[dict, dict[str, np.ndarray] | None]:
    """The row of scores.csv of ``p`` (``top`` its top label, ``losses`` its :func:`refinement_losses` or
    None) and, with ``counts`` (the test split's resamples) and ``smece`` (their smooth ECEs,
    :func:`~trustcal.measures.smooth.smooth_measures`), the bootstrap replicates behind its intervals."""
    row = keys_of(p, **scalar_metrics_of(top, metrics))
    row["nll_exact"] = p.log_probs is not None  # the NLL's convention: log-softmax, or p floored (§2.12)
    row.update(decomposition.terms_from_losses(losses) if losses else dict.fromkeys(decomposition.TERMS, np.nan))
    if counts is None:
        return row, None
    replicates = bootstrap_scores_of(top, counts, metrics)
    replicates["smece"] = smece
    if losses:
        replicates.update(refinement_replicates(losses, counts))
    row.update(interval_columns(replicates, bootstrap.level))
    return row, replicates


def _side_tables(p: PredictionSet, top: TopLabel, metrics: MetricParams, diagram: dict) -> dict[str, pd.DataFrame]:
    """The side tables' rows of ``p`` (``top`` its top label; ``diagram`` its smooth reliability diagram)."""
    k = p.probs.shape[1]
    spectrum = trust_spectrum_of(top, k, metrics.nts_alpha, metrics.nts_beta)
    per_label = np.bincount(p.labels, minlength=k)
    return {
        "trust_spectrum": with_keys(pd.DataFrame(dict(label=np.arange(k), trust=spectrum, count=per_label)), p),
        "reliability": with_keys(reliability_table_of(top, metrics.reliability_bins), p),
        "trust_density": with_keys(trust_density_table_of(top, metrics), p),
        "smooth_reliability": with_keys(pd.DataFrame(diagram), p),
    }


SIDE_TABLES = ("trust_spectrum", "reliability", "trust_density", "smooth_reliability")


def score_tables(
    preds: Sequence[PredictionSet],
    metrics: MetricParams = MetricParams(),
    bootstrap: BootstrapParams | None = None,
    kept: dict | None = None,
) -> dict[str, pd.DataFrame]:
    """``scores`` (every scalar metric per epoch × calibrator × split; with ``bootstrap``, the
    percentile interval of each bootstrapped metric on the test split) and the side tables.

    Besides :func:`trustcal.measures.metrics.scalar_metrics` (its NLL exact where the predictions carry
    their log-probabilities, and ``nll_exact`` saying so; floored probabilities otherwise, docs/method.md
    §2.12), the rows of the side tables' splits (below)
    have the calibration and refinement terms of the NLL and the Brier score (docs/method.md §13.2;
    ``metrics.refinement_folds`` folds drawn with the bootstrap seed, temperature scaling as the recalibration;
    NaN on the other rows: five temperature fits per row are the largest cost of a row); on the test split
    with ``bootstrap`` they and the smooth ECE (:func:`trustcal.measures.smooth.bootstrap_smece`) have
    intervals too. The columns are :func:`score_columns`.

    Side tables are computed on the test split (the only one a figure, the verdict or the study
    report reads; the validation split gets its rows of scores; every split when none is test): ``trust_spectrum`` (NetTrustScore
    per label), ``reliability`` (top-label and one-vs-rest curves), ``trust_density`` (KDE of
    the question-answer trust per label) and ``smooth_reliability`` (the smooth reliability diagram on
    ``metrics.smooth_points`` confidences, with its bootstrap band on the test split; docs/method.md §13.3).

    Every table of a prediction set reads its one :class:`~trustcal.measures.bins.TopLabel`.

    ``kept``, a dict, receives (epoch, calibrator) → (the row of scores, its bootstrap replicates) of
    every test-split prediction when ``bootstrap`` is given: the input of
    :func:`trustcal.measures.paired.paired_arrays`.
    """
    preds = list(preds)
    scores, side = [], {name: [] for name in SIDE_TABLES}
    counts = resamples_of(preds, bootstrap)
    fold_seed = (bootstrap or BootstrapParams()).seed  # the folds of the calibration/refinement split
    side_splits = {"test"} if of_split(preds, "test") else {p.split for p in preds}
    for p in preds:
        top = TopLabel.of(p.probs, p.labels, p.log_probs)
        losses = refinement_losses(p, metrics, fold_seed) if p.split in side_splits else None
        tested = counts is not None and p.split == "test"
        smece, diagram = None, None  # the smooth ECE's replicates and diagram share their grids
        if tested:
            smece, diagram = smooth_measures(
                top, counts, metrics.smooth_points, bootstrap.level, metrics.smece_bandwidth
            )
        elif p.split in side_splits:
            diagram = smooth_reliability_of(top, None, metrics.smooth_points)
        row, replicates = _score_row(p, top, metrics, counts if tested else None, bootstrap, losses, smece)
        if tested and kept is not None:  # for the paired differences: trustcal.measures.paired.paired_arrays
            kept[(p.epoch, p.calibrator)] = (dict(row), replicates)
        scores.append(row)
        if p.split in side_splits:
            for name, table in _side_tables(p, top, metrics, diagram).items():
                side[name].append(table)
    scores = pd.DataFrame(scores)
    bootstrapped = [c[: -len("_lo")] for c in scores.columns if c.endswith("_lo")]
    return {"scores": scores[score_columns(metrics, bootstrapped)]} | {
        name: pd.concat(tables, ignore_index=True) for name, tables in side.items()
    }
