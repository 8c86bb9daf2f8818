"""Calibration and trust under dataset shift: the rows of ``shift.csv`` and ``shift_ood.csv``.

The predictions on a shifted set come from the network of one epoch and, for every calibrator, its state of
that epoch applied unchanged (fitted on the clean validation split: the deployment setting, where the shift
is not known when calibrating). For a corrupted set (its labels kept) a row per (epoch, severity,
calibrator) holds the accuracy, NLL, Brier score and ECE (:data:`trustcal.measures.metrics.METRICS`, as
``scores.csv`` computes them) and the network's trust opinion (belief, disbelief, uncertainty: the
``network`` row of :func:`trustcal.measures.trust.trust_opinions`, as ``trust.csv``), with the percentile
interval of each over resamples of the set (:mod:`trustcal.measures.bootstrap`, the same resamples for
every severity, epoch and calibrator of a set; the opinion's under cumulative fusion only), and the smooth
ECE (no interval: its kernel sum on every resample would cost seconds a row). Each calibrator's NLL, Brier
score and ECE are also compared with the raw model's (``*_vs_raw``) and temperature scaling's
(``*_vs_temperature``, the field's baseline): the difference on the set and its percentile interval over
the same resamples (paired: both states scored on the same drawn rows), the per-seed input of the study's
paired intervals over seeds (docs/method.md §12.7).

For an out-of-distribution set a row per (epoch, calibrator, signal) says how well the signal tells the
run's clean test images from the set's (:mod:`trustcal.measures.detection`: AUROC and the false-positive
rate at 95 % true-positive rate, in-distribution the positives). Signals (:data:`SIGNALS`): the maximum
probability, the negative entropy, and the per-prediction opinion's belief and uncertainty (the opinion of
the prediction's (class, cluster) pair learned on the clean validation predictions of the same epoch and
calibrator, :func:`trustcal.evaluation.dynamic_trust`, as ``selective.csv`` uses it); uncertainty
counts against being in distribution (its AUROC is that of −u), the others for. The opinion's evidence,
W(1/u − 1), decreases with u, so its AUROC and FPR are uncertainty's. With bootstrap parameters each AUROC
and FPR gets its percentile interval over resamples of both sides (each side resampled apart, the
out-of-distribution side with the next seed), and each signal its AUROC difference from the maximum
probability's on the same resamples (``auroc_vs_max_probability``). :func:`ood_curves` keeps what the
figures draw of the per-input values: each signal's histogram in and out of distribution and its ROC curve.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from trustcal.calibration.states import PAPER_CALIBRATOR, RAW
from trustcal.evaluation import MetricParams, PredictionSet, dynamic_trust
from trustcal.measures.bins import TopLabel
from trustcal.measures.bootstrap import (
    BootstrapParams,
    bootstrap_opinions,
    bootstrap_scores_of,
    percentile_interval,
)
from trustcal.measures.detection import auroc, detection_replicates, fpr_at_tpr, negative_entropy
from trustcal.measures.limits import MAX_SEED
from trustcal.measures.metrics import METRICS
from trustcal.measures.trust import TrustParams, trust_opinions

__all__ = [
    "CURVE_COLUMNS",
    "OOD_COLUMNS",
    "SIGNALS",
    "ood_curves",
    "ood_rows",
    "shift_columns",
    "shift_row",
    "shift_rows",
    "signal_values",
]

SCORE_NAMES = ("accuracy", "nll", "brier", "ece")
POINT_ONLY = ("smece",)  # scores without an interval
PAIRED = ("nll", "brier", "ece")  # compared with a baseline state on the same resamples
BASELINES = {"raw": RAW, "temperature": PAPER_CALIBRATOR}  # column word → calibrator
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
    "auroc_lo",
    "auroc_hi",
    "fpr95_lo",
    "fpr95_hi",
    "auroc_vs_max_probability",
    "auroc_vs_max_probability_lo",
    "auroc_vs_max_probability_hi",
    "n_in",
    "n_out",
    "mean_in",
    "mean_out",
)


CURVE_COLUMNS = ("run", "seed", "epoch", "epoch_label", "set", "calibrator", "signal", "curve", "x", "y")
CURVE_BINS = 20  # histogram bins over each signal's range
ROC_POINTS = 51  # false-positive rates 0, 0.02, …, 1 of each ROC curve


def shift_columns(bootstrapped: bool) -> list[str]:
    """The columns of ``shift.csv``: the keys, the scores and the opinion, then their ``_lo`` / ``_hi``,
    then each paired difference from a baseline with its interval."""
    values = [*SCORE_NAMES, *OPINION]
    ends = [f"{v}_{end}" for v in values for end in ("lo", "hi")] if bootstrapped else []
    paired = [f"{m}_vs_{b}{end}" for b in BASELINES for m in PAIRED for end in ("", "_lo", "_hi")]
    return [*SHIFT_KEYS, *values, *POINT_ONLY, *ends, *(paired if bootstrapped else [])]


def shift_row(
    pred: PredictionSet,
    trust: TrustParams = TrustParams(),
    metrics: MetricParams = MetricParams(),
    counts: np.ndarray | None = None,
    bootstrap: BootstrapParams | None = None,
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """The scores and network opinion of ``pred`` (labelled predictions) and, with ``counts`` (B × N
    resample counts, :func:`trustcal.measures.bootstrap.resample_counts`) and ``bootstrap`` (its level),
    their percentile intervals; and the replicates of :data:`PAIRED` (empty without ``counts``)."""
    top = TopLabel.of(pred.probs, pred.labels, pred.log_probs)
    row = {name: float(METRICS[name].values(top, metrics)[0]) for name in (*SCORE_NAMES, *POINT_ONLY)}
    network = trust_opinions(pred.probs, pred.labels, trust).iloc[-1]
    row.update({name: float(network[name]) for name in OPINION})
    if counts is None or bootstrap is None:
        return row, {}
    replicates = bootstrap_scores_of(top, counts, metrics, names=SCORE_NAMES)
    replicates = {name: replicates[name] for name in SCORE_NAMES}
    if trust.cluster_fusion == trust.class_fusion == "cumulative":
        opinions = bootstrap_opinions(pred.probs, pred.labels, counts, trust)
        replicates.update({name: opinions[name][:, -1] for name in OPINION})
    for name in [*SCORE_NAMES, *OPINION]:
        lo, hi = percentile_interval(replicates[name], bootstrap.level) if name in replicates else (np.nan, np.nan)
        row[f"{name}_lo"], row[f"{name}_hi"] = float(lo), float(hi)
    return row, {name: replicates[name] for name in PAIRED}


def shift_rows(
    preds: dict[str, PredictionSet],
    trust: TrustParams = TrustParams(),
    metrics: MetricParams = MetricParams(),
    counts: np.ndarray | None = None,
    bootstrap: BootstrapParams | None = None,
) -> list[dict]:
    """:func:`shift_row` of each calibration state of ``preds`` (name → predictions of the same rows), with
    the paired differences of :data:`PAIRED` from each baseline of :data:`BASELINES` (NaN where that
    baseline is not among ``preds``), when bootstrapped."""
    scored = {name: shift_row(pred, trust, metrics, counts, bootstrap) for name, pred in preds.items()}
    rows = []
    for name, (row, reps) in scored.items():
        row = {"calibrator": name, **row}
        for word, base in BASELINES.items():
            if not reps:
                break
            for m in PAIRED:
                key = f"{m}_vs_{word}"
                if base not in scored:
                    row[key] = row[f"{key}_lo"] = row[f"{key}_hi"] = np.nan
                    continue
                base_row, base_reps = scored[base]
                lo, hi = percentile_interval(reps[m] - base_reps[m], bootstrap.level)
                row[key], row[f"{key}_lo"], row[f"{key}_hi"] = row[m] - base_row[m], float(lo), float(hi)
        rows.append(row)
    return rows


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


def other_side(bootstrap: BootstrapParams) -> BootstrapParams:
    """The resampling of an out-of-distribution set: ``bootstrap`` with the next seed (its side is
    resampled apart from the in-distribution one)."""
    return BootstrapParams(bootstrap.resamples, (bootstrap.seed + 1) % (MAX_SEED + 1), bootstrap.level)


def ood_rows(
    inside: PredictionSet,
    outside: PredictionSet,
    fit: PredictionSet,
    trust: TrustParams = TrustParams(),
    counts: tuple[np.ndarray, np.ndarray] | None = None,
    bootstrap: BootstrapParams | None = None,
    curves: bool = True,
) -> tuple[list[dict], list[dict]]:
    """A row per signal: how well it tells ``inside`` (clean test predictions) from ``outside`` (an
    out-of-distribution set's) — ``auroc``, ``fpr95`` — and its mean on each side (``mean_in``,
    ``mean_out``, the values themselves), ``n_in`` and ``n_out``; opinions learned on ``fit``. With
    ``counts`` (the resample counts of each side) and ``bootstrap`` (its level): the intervals, and the
    AUROC difference from the maximum probability's. Also the rows of :func:`ood_curves` (none without
    ``curves``)."""
    ins, outs = signal_values(inside, fit, trust), signal_values(outside, fit, trust)
    rows, drawn, reps = [], [], {}
    for name, sign in SIGNALS.items():
        row = dict(
            signal=name,
            auroc=auroc(sign * ins[name], sign * outs[name]),
            fpr95=fpr_at_tpr(sign * ins[name], sign * outs[name], 0.95),
            n_in=len(ins[name]),
            n_out=len(outs[name]),
            mean_in=float(np.mean(ins[name])),
            mean_out=float(np.mean(outs[name])),
        )
        if counts is not None and bootstrap is not None:
            reps[name], fprs = detection_replicates(sign * ins[name], sign * outs[name], *counts, 0.95)
            row["auroc_lo"], row["auroc_hi"] = percentile_interval(reps[name], bootstrap.level)
            row["fpr95_lo"], row["fpr95_hi"] = percentile_interval(fprs, bootstrap.level)
            diff = reps[name] - reps["max_probability"]
            row["auroc_vs_max_probability"] = row["auroc"] - rows[0]["auroc"] if rows else 0.0
            row["auroc_vs_max_probability_lo"], row["auroc_vs_max_probability_hi"] = percentile_interval(
                diff, bootstrap.level
            )
        rows.append(row)
        if curves:
            drawn += [
                dict(signal=name, **c) for c in ood_curves(name, sign, ins[name], outs[name], inside.probs.shape[1])
            ]
    return [{k: float(v) if isinstance(v, np.floating) else v for k, v in r.items()} for r in rows], drawn


def signal_range(name: str, classes: int) -> tuple[float, float]:
    """The values a signal takes: [−log K, 0] for the negative entropy, [0, 1] for the others."""
    return (-float(np.log(classes)), 0.0) if name == "negative_entropy" else (0.0, 1.0)


def ood_curves(name: str, sign: int, inside: np.ndarray, outside: np.ndarray, classes: int) -> list[dict]:
    """What the figures draw of one signal's per-input values: ``curve`` ``in`` and ``out``, the fraction of
    each side's inputs in each of :data:`CURVE_BINS` equal bins over the signal's range (``x`` the bin's
    centre, ``y`` the fraction); ``roc``, the true-positive rate (in distribution accepted) at false-positive rate
    ``x``, at :data:`ROC_POINTS` rates, on the ROC curve whose points (one per threshold) are joined by straight
    lines, so that its area is the AUROC of :func:`trustcal.measures.detection.auroc`."""
    lo, hi = signal_range(name, classes)
    edges = np.linspace(lo, hi, CURVE_BINS + 1)
    centres = (edges[:-1] + edges[1:]) / 2
    out = []
    for side, values in (("in", inside), ("out", outside)):
        counts, _ = np.histogram(np.clip(values, lo, hi), bins=edges)
        out += [dict(curve=side, x=float(x), y=float(c / len(values))) for x, c in zip(centres, counts)]
    # every threshold t (a distinct score): TPR = P(in ≥ t), FPR = P(out ≥ t); from the highest threshold down
    # both rise, from (0, 0) to (1, 1). Joined by straight lines (tied scores between two thresholds are
    # accepted together: the line between their points), the curve's area is the AUROC with ties counting ½.
    ins, outs = np.sort(sign * inside), np.sort(sign * outside)
    thresholds = np.unique(np.concatenate([ins, outs]))[::-1]
    tpr = np.r_[0.0, (len(ins) - np.searchsorted(ins, thresholds, side="left")) / len(ins)]
    fpr = np.r_[0.0, (len(outs) - np.searchsorted(outs, thresholds, side="left")) / len(outs)]
    grid = np.linspace(0.0, 1.0, ROC_POINTS)
    # fpr never falls along the points; where it stays (a vertical step) np.interp takes the line arriving at
    # the step's foot between two rates, and the step's top at the rate itself
    out += [dict(curve="roc", x=float(x), y=float(y)) for x, y in zip(grid, np.interp(grid, fpr, tpr))]
    return out


def frame(rows: list[dict], columns) -> pd.DataFrame:
    """``rows`` as a table of ``columns``, in that order (none: the empty table of them)."""
    return pd.DataFrame(rows, columns=list(columns))
