"""Calibration and trust under dataset shift: the rows of ``shift.csv`` and ``shift_ood.csv``.

The predictions on a shifted set come from the network of one epoch and, for every calibrator, its state of
that epoch applied unchanged (fitted on the clean validation split: the deployment setting, where the shift
is not known when calibrating). For a corrupted set (its labels kept) a row per (epoch, severity,
calibrator) holds the accuracy, NLL, Brier score and ECE (:data:`trustcal.measures.metrics.METRICS`, as
``scores.csv`` computes them) and the network's trust opinion (belief, disbelief, uncertainty: the
``network`` row of :func:`trustcal.measures.trust.trust_opinions`, as ``trust.csv``), with the percentile
interval of each over resamples of the set (:mod:`trustcal.measures.bootstrap`, the same resamples for
every severity, epoch and calibrator of a set; the opinion's under cumulative fusion only).

For an out-of-distribution set a row per (epoch, calibrator, signal) says how well the signal tells the
run's clean test images from the set's (:mod:`trustcal.measures.detection`: AUROC and the false-positive
rate at 95 % true-positive rate, in-distribution the positives). Signals (:data:`SIGNALS`): the maximum
probability, the negative entropy, and the per-prediction opinion's belief and uncertainty (the opinion of
the prediction's (class, cluster) pair learned on the clean validation predictions of the same epoch and
calibrator, :func:`trustcal.reporting.tables.dynamic_trust`, as ``selective.csv`` uses it); uncertainty
counts against being in distribution (its AUROC is that of −u), the others for.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from trustcal.measures.bins import TopLabel
from trustcal.measures.bootstrap import (
    BootstrapParams,
    bootstrap_opinions,
    bootstrap_scores_of,
    percentile_interval,
)
from trustcal.measures.detection import auroc, fpr_at_tpr, negative_entropy
from trustcal.measures.metrics import METRICS, ScalarSettings
from trustcal.measures.trust import TrustParams, trust_opinions
from trustcal.reporting.tables import MetricParams, PredictionSet, dynamic_trust

__all__ = ["OOD_COLUMNS", "SIGNALS", "ood_rows", "shift_columns", "shift_row", "signal_values"]

SCORE_NAMES = ("accuracy", "nll", "brier", "ece")
OPINION = ("belief", "disbelief", "uncertainty")
SHIFT_KEYS = ("run", "seed", "epoch", "epoch_label", "set", "kind", "severity", "calibrator", "n")
# name → +1 where a higher value says "in distribution", -1 where a lower one does
SIGNALS = {"max_probability": 1, "negative_entropy": 1, "belief": 1, "uncertainty": -1}
OOD_COLUMNS = (
    "run",
    "seed",
    "epoch",
    "epoch_label",
    "set",
    "calibrator",
    "signal",
    "auroc",
    "fpr95",
    "n_in",
    "n_out",
    "mean_in",
    "mean_out",
)


def shift_columns(bootstrapped: bool) -> list[str]:
    """The columns of ``shift.csv``: the keys, the scores and the opinion, then their ``_lo`` / ``_hi``."""
    values = [*SCORE_NAMES, *OPINION]
    ends = [f"{v}_{end}" for v in values for end in ("lo", "hi")] if bootstrapped else []
    return [*SHIFT_KEYS, *values, *ends]


def shift_row(
    pred: PredictionSet,
    trust: TrustParams = TrustParams(),
    metrics: MetricParams = MetricParams(),
    counts: np.ndarray | None = None,
    bootstrap: BootstrapParams | None = None,
) -> dict[str, float]:
    """The scores and network opinion of ``pred`` (labelled predictions) and, with ``counts`` (B × N
    resample counts, :func:`trustcal.measures.bootstrap.resample_counts`) and ``bootstrap`` (its level),
    their percentile intervals."""
    top = TopLabel.of(pred.probs, pred.labels, pred.log_probs)
    settings = ScalarSettings.of(metrics)
    row = {name: float(METRICS[name].values(top, settings)[0]) for name in SCORE_NAMES}
    network = trust_opinions(pred.probs, pred.labels, trust).iloc[-1]
    row.update({name: float(network[name]) for name in OPINION})
    if counts is None or bootstrap is None:
        return row
    replicates = bootstrap_scores_of(top, counts, metrics)
    replicates = {name: replicates[name] for name in SCORE_NAMES}
    if trust.cluster_fusion == trust.class_fusion == "cumulative":
        opinions = bootstrap_opinions(pred.probs, pred.labels, counts, trust)
        replicates.update({name: opinions[name][:, -1] for name in OPINION})
    for name in [*SCORE_NAMES, *OPINION]:
        lo, hi = percentile_interval(replicates[name], bootstrap.level) if name in replicates else (np.nan, np.nan)
        row[f"{name}_lo"], row[f"{name}_hi"] = float(lo), float(hi)
    return row


def signal_values(pred: PredictionSet, fit: PredictionSet, trust: TrustParams = TrustParams()) -> dict[str, np.ndarray]:
    """Each signal of :data:`SIGNALS` per prediction of ``pred`` (as computed: uncertainty is u itself);
    the opinions are those of ``fit``'s (class, cluster) pairs."""
    opinion = dynamic_trust(fit, pred, trust)
    return dict(
        max_probability=pred.probs.max(axis=1),
        negative_entropy=negative_entropy(pred.probs, pred.log_probs),
        belief=opinion["belief"].to_numpy(dtype=np.float64),
        uncertainty=opinion["uncertainty"].to_numpy(dtype=np.float64),
    )


def ood_rows(
    inside: PredictionSet, outside: PredictionSet, fit: PredictionSet, trust: TrustParams = TrustParams()
) -> list[dict]:
    """A row per signal: how well it tells ``inside`` (clean test predictions) from ``outside`` (an
    out-of-distribution set's) — ``auroc``, ``fpr95`` — and its mean on each side (``mean_in``,
    ``mean_out``, the values themselves), ``n_in`` and ``n_out``; opinions learned on ``fit``."""
    ins, outs = signal_values(inside, fit, trust), signal_values(outside, fit, trust)
    rows = []
    for name, sign in SIGNALS.items():
        rows.append(
            dict(
                signal=name,
                auroc=auroc(sign * ins[name], sign * outs[name]),
                fpr95=fpr_at_tpr(sign * ins[name], sign * outs[name], 0.95),
                n_in=len(ins[name]),
                n_out=len(outs[name]),
                mean_in=float(np.mean(ins[name])),
                mean_out=float(np.mean(outs[name])),
            )
        )
    return rows


def frame(rows: list[dict], columns) -> pd.DataFrame:
    """``rows`` as a table of ``columns``, in that order (none: the empty table of them)."""
    return pd.DataFrame(rows, columns=list(columns))
