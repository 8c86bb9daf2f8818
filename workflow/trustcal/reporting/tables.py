"""Tidy result tables from predicted probabilities, shared by the workflow and the CLI.

Input is a sequence of :class:`PredictionSet` — one (epoch, calibrator, split)
each — whatever produced them (our logits, or someone's prediction files).
Output is one long table per result, one row per (epoch, calibrator, …), so
seaborn plots them directly and seeds stack by concatenation. ``calibrator`` is
``none`` for the raw model; :func:`trustcal.files.paper_states` selects the
paper's before (``none``) and after (``temperature``) calibration.

With bootstrap parameters, every bootstrapped number of the test split gets
``<name>_lo`` / ``<name>_hi`` columns: the percentile interval over resamples of
the test set (:mod:`trustcal.measures.bootstrap`); the same resamples for every
epoch and calibrator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import pandas as pd

from trustcal.calibration.temperature import newton_temperature, softmax
from trustcal.files import PAPER_CALIBRATOR, RAW
from trustcal.measures import decomposition, metrics
from trustcal.measures.bins import TopLabel
from trustcal.measures.bootstrap import (
    BootstrapParams,
    bootstrap_opinions,
    bootstrap_scores_of,
    bootstrap_selective_scores,
    percentile_interval,
    resample_counts,
    resampled_sums,
)
from trustcal.measures.limits import (
    BINS_COST,
    CLUSTERS_COST,
    EPOCHS_COST,
    FOLDS_COST,
    MAX_BINS,
    MAX_CLUSTERS,
    MAX_EPOCHS,
    MAX_FOLDS,
    MAX_POINTS,
    POINTS_COST,
)
from trustcal.measures.options import check_fields, setting
from trustcal.measures.reliability import reliability_table_of
from trustcal.measures.selective import SCORES, opinion_scores, risk_at_coverages, selective_areas
from trustcal.measures.smooth import SMECE_BANDWIDTHS, smooth_measures, smooth_reliability_of
from trustcal.measures.trust import (
    REPRESENTATIVES,
    TRUST_COLUMNS,
    TrustParams,
    cluster_evidence,
    cluster_index,
    trust_opinions,
)
from trustcal.numerics import log_softmax

__all__ = [
    "PAPER_CALIBRATOR",
    "RAW",
    "MetricParams",
    "PredictionSet",
    "SweepParams",
    "score_tables",
    "trust_tables",
    "selective_table",
    "refinement_losses",
]


@dataclass(frozen=True)
class PredictionSet:
    """One set of predictions: an epoch's raw model (calibrator ``none``) or calibrator on one split."""

    epoch: int
    calibrator: str  # "none" for the raw model
    split: str  # "test" or "val"
    probs: np.ndarray
    labels: np.ndarray
    # The exact log-probabilities (a log-softmax) where the predictions come from logits; None where they
    # come as probabilities, whose NLL floors them (docs/method.md §2.12).
    log_probs: np.ndarray | None = None

    @classmethod
    def of_logits(cls, epoch: int, calibrator: str, split: str, logits, labels) -> PredictionSet:
        """softmax(``logits``), with its exact log-probabilities."""
        log_probs = log_softmax(logits)
        return cls(epoch, calibrator, split, np.exp(log_probs), labels, log_probs)

    @classmethod
    def of_calibrator(cls, epoch: int, calibrator: str, split: str, cal, logits, labels) -> PredictionSet:
        """The predictions of a fitted calibrator ``cal`` (named ``calibrator``) on ``logits``."""
        probs, log_probs = cal.predict(logits)
        return cls(epoch, calibrator, split, probs, labels, log_probs)


@dataclass(frozen=True)
class MetricParams:
    """The metrics' settings (the config's ``metrics:`` keys): ECE bin counts (the first is the ``ece`` column),
    NetTrustScore exponents, the trust density's bandwidth and grid, the geometric family's floor and bins, the
    reliability and L2 bins, the refinement folds, the smooth reliability diagram's points and the bandwidth of the
    smooth ECE's resamples."""

    ece_bins: tuple[int, ...] = setting(
        (10, 15),
        "ECE bin counts; the first is the 'ece' column",
        low=1,
        high=MAX_BINS,
        cost=BINS_COST,
        many=True,
        metavar="M",
    )
    nts_alpha: float = setting(1.0, "NetTrustScore reward exponent", kind=float, low=0, low_open=True)
    nts_beta: float = setting(1.0, "NetTrustScore penalty exponent", kind=float, low=0, low_open=True)
    density_gamma: float = setting(0.5, "trust density bandwidth γ/√N", kind=float, low=0, low_open=True)
    density_points: int = setting(51, "trust density grid points", low=2, high=MAX_POINTS, cost=POINTS_COST)
    geo_eps: float = setting(
        0.01, "floor of the true-class probability", kind=float, low=0, high=1, low_open=True, high_open=True
    )
    geo_bins: int = setting(10, "bins of the measured geometric metrics", low=1, high=MAX_BINS, cost=BINS_COST)
    reliability_bins: int = setting(10, "reliability curve bins", low=1, high=MAX_BINS, cost=BINS_COST)
    l2_bins: int = setting(15, "equal-mass bins of the L2 and debiased L2 ECE", low=1, high=MAX_BINS, cost=BINS_COST)
    refinement_folds: int = setting(
        5,
        "folds of the cross-fitted recalibration (docs/method.md §13.2)",
        low=2,
        high=MAX_FOLDS,
        cost=FOLDS_COST,
    )
    smooth_points: int = setting(
        101,
        "points t of the smooth reliability diagram (docs/method.md §13.3)",
        low=2,
        high=MAX_POINTS,
        cost=POINTS_COST,
    )
    smece_bandwidth: str = setting(
        "shared",
        "bandwidth of the smooth ECE's resamples: the test set's (shared) or each resample's own search "
        "(docs/method.md §13.3)",
        kind=str,
        choices=SMECE_BANDWIDTHS,
    )

    def __post_init__(self):
        check_fields(self)


def _sweep_setting(default, help: str, key: str, metavar: str, **option):
    """A setting of :class:`SweepParams`: a list of values, possibly empty, under the config's ``trust:``."""
    return setting(default, help, **option, many=True, min_items=0, key=key, section="trust", metavar=metavar)


@dataclass(frozen=True)
class SweepParams:
    """The ``trust_sweep`` table's grid: the numbers of clusters M and the representatives the opinion is
    recomputed with, at these epochs (and always the last)."""

    clusters: tuple[int, ...] = _sweep_setting(
        (2, 5, 10, 20, 50, 100),
        "M values of trust_sweep.csv",
        "clusters_sweep",
        "M",
        low=1,
        high=MAX_CLUSTERS,
        cost=CLUSTERS_COST,
    )
    representatives: tuple[str, ...] = _sweep_setting(
        REPRESENTATIVES,
        "cluster representatives of trust_sweep.csv",
        "sweep_representatives",
        "R",
        kind=str,
        choices=REPRESENTATIVES,
    )
    epochs: tuple[int, ...] = _sweep_setting(
        (1, 10, 20, 50, 100),
        "epochs of trust_sweep.csv; the last epoch is always added (0: a single file assessed alone)",
        "sweep_epochs",
        "E",
        low=0,
        high=MAX_EPOCHS,
        cost=EPOCHS_COST,
    )

    def __post_init__(self):
        check_fields(self)


def _keys(p: PredictionSet, **extra) -> dict:
    return dict(epoch=p.epoch, calibrator=p.calibrator, split=p.split, **extra)


def _prepend(df: pd.DataFrame, p: PredictionSet, with_split: bool = True) -> pd.DataFrame:
    keys = _keys(p) if with_split else dict(epoch=p.epoch, calibrator=p.calibrator)
    for i, (k, v) in enumerate(keys.items()):
        df.insert(i, k, v)
    return df


def _by_split(preds: Iterable[PredictionSet], split: str) -> list[PredictionSet]:
    return [p for p in preds if p.split == split]


# --------------------------------------------------------------------------- trust


OPINION = ("belief", "disbelief", "uncertainty")


def _counts(preds: Sequence[PredictionSet], bootstrap: BootstrapParams | None) -> np.ndarray | None:
    """The resample counts of the test set (the same for every epoch and calibrator), or None."""
    tests = _by_split(preds, "test")
    return _resample_counts(len(tests[0].labels), bootstrap) if bootstrap is not None and tests else None


@lru_cache(maxsize=2)
def _resample_counts(n: int, bootstrap: BootstrapParams) -> np.ndarray:
    """:func:`resample_counts`, drawn once for a series assessed an epoch at a time (read only)."""
    counts = resample_counts(n, bootstrap)
    counts.flags.writeable = False
    return counts


def _interval_columns(replicates: dict[str, np.ndarray], level: float) -> dict[str, np.ndarray]:
    """``<name>_lo`` / ``<name>_hi`` of each B-leading replicate array."""
    out = {}
    for name, values in replicates.items():
        out[f"{name}_lo"], out[f"{name}_hi"] = percentile_interval(values, level)
    return out


def trust_table(
    preds: Sequence[PredictionSet], params: TrustParams, bootstrap: BootstrapParams | None = None
) -> pd.DataFrame:
    """docs/method.md §3 on the test predictions: K class opinions + the network opinion per
    (epoch, calibrator); with ``bootstrap`` (cumulative fusion), a percentile interval for each of
    belief, disbelief and uncertainty."""
    counts = _counts(preds, bootstrap) if params.cluster_fusion == params.class_fusion == "cumulative" else None
    frames = []
    for p in _by_split(preds, "test"):
        df = _prepend(trust_opinions(p.probs, p.labels, params), p, with_split=False)
        if counts is not None:
            replicates = bootstrap_opinions(p.probs, p.labels, counts, params)
            for name, values in _interval_columns({k: replicates[k] for k in OPINION}, bootstrap.level).items():
                df[name] = values
        frames.append(df)
    table = pd.concat(frames, ignore_index=True)
    intervals = [f"{k}_{end}" for k in OPINION for end in ("lo", "hi")]
    return table[list(TRUST_COLUMNS) + [c for c in intervals if c in table.columns]]


def dynamic_trust(fit: PredictionSet, new: PredictionSet, params: TrustParams) -> pd.DataFrame:
    """Per-prediction opinions (docs/method.md §3.6) of ``new``, from the cluster opinions of ``fit``.

    A prediction with predicted class k and probability p gets the opinion of
    (k, cluster(p)) learned on ``fit``. Returns one row per sample.
    """
    ev = cluster_evidence(fit.probs, fit.labels, params)
    k = new.probs.argmax(axis=1)
    p = new.probs[np.arange(len(k)), k]
    i = cluster_index(p, params.clusters)
    r, s = ev["r"][k, i], ev["s"][k, i]
    total = params.weight + r + s
    return pd.DataFrame(
        dict(
            predicted=k,
            confidence=p,
            correct=k == new.labels,
            belief=r / total,
            disbelief=s / total,
            uncertainty=params.weight / total,
        )
    )


def per_prediction_opinions(
    preds: Sequence[PredictionSet], params: TrustParams
) -> list[tuple[PredictionSet, PredictionSet, pd.DataFrame]]:
    """(test predictions, the predictions their cluster opinions are learned on, :func:`dynamic_trust`) of
    every (epoch, calibrator) of the test split: learned on the validation predictions of the same
    (epoch, calibrator) when present, otherwise on the test predictions themselves. Computed once for
    :func:`dynamic_trust_table` and :func:`selective_table`."""
    val = {(p.epoch, p.calibrator): p for p in _by_split(preds, "val")}
    out = []
    for test in _by_split(preds, "test"):
        fit = val.get((test.epoch, test.calibrator), test)
        out.append((test, fit, dynamic_trust(fit, test, params)))
    return out


def dynamic_trust_table(
    preds: Sequence[PredictionSet], params: TrustParams, opinions: list | None = None
) -> pd.DataFrame:
    """Mean per-prediction opinion on the test set, for correct and incorrect predictions.

    Cluster opinions are learned on the validation predictions of the same
    (epoch, calibrator) when present (the operational setting), otherwise on
    the test predictions themselves (``fitted_on`` says which). ``opinions``: :func:`per_prediction_opinions`
    of ``preds``, when already computed.
    """
    rows = []
    for test, fit, per_sample in opinions if opinions is not None else per_prediction_opinions(preds, params):
        for correct, group in per_sample.groupby("correct"):
            rows.append(
                dict(
                    epoch=test.epoch,
                    calibrator=test.calibrator,
                    fitted_on=fit.split,
                    correct=bool(correct),
                    n=len(group),
                    belief=group["belief"].mean(),
                    disbelief=group["disbelief"].mean(),
                    uncertainty=group["uncertainty"].mean(),
                )
            )
    return pd.DataFrame(
        rows, columns=["epoch", "calibrator", "fitted_on", "correct", "n", "belief", "disbelief", "uncertainty"]
    )


def sweep_epochs(available: Iterable[int], wanted: Iterable[int]) -> list[int]:
    available = sorted(set(available))
    return sorted({e for e in wanted if e in available} | {available[-1]}) if available else []


def trust_sweep_table(preds: Sequence[PredictionSet], params: TrustParams, sweep: SweepParams) -> pd.DataFrame:
    """Network and mean class opinion against the number of clusters M and the representative."""
    tests = _by_split(preds, "test")
    chosen = set(sweep_epochs([p.epoch for p in tests], sweep.epochs))
    rows = []
    for p in tests:
        if p.epoch not in chosen:
            continue
        for m in sweep.clusters:
            for rep in sweep.representatives:
                t = trust_opinions(p.probs, p.labels, replace(params, clusters=m, representative=rep))
                net = t[t["label"] == "network"].iloc[0]
                classes = t[t["label"] != "network"]
                rows.append(
                    dict(
                        epoch=p.epoch,
                        calibrator=p.calibrator,
                        clusters=m,
                        representative=rep,
                        belief=net.belief,
                        disbelief=net.disbelief,
                        uncertainty=net.uncertainty,
                        class_belief_mean=classes["belief"].mean(),
                        class_disbelief_mean=classes["disbelief"].mean(),
                        class_uncertainty_mean=classes["uncertainty"].mean(),
                    )
                )
    return pd.DataFrame(rows)


# Coverages of the risk–coverage curve kept in selective.csv: 5 %, 10 %, …, 100 % (columns risk_05 … risk_100).
COVERAGES = tuple(range(5, 101, 5))


def selective_table(
    preds: Sequence[PredictionSet],
    params: TrustParams,
    bootstrap: BootstrapParams | None = None,
    opinions: list | None = None,
) -> pd.DataFrame:
    """Trust as a selective-prediction signal (docs/method.md §13.1): per (epoch, calibrator) of the test
    predictions and per confidence score of :data:`trustcal.measures.selective.SCORES` (the max
    probability and the scores of the per-prediction opinion of :func:`dynamic_trust`, learned as in
    :func:`dynamic_trust_table`), the AURC and AUGRC of accepting the predictions in decreasing score and
    the risk at the coverages of :data:`COVERAGES` (``risk_05`` … ``risk_100``). With ``bootstrap``: the
    percentile interval of each area, and ``diff_aurc`` / ``diff_augrc`` (score − max probability) with
    their paired interval, both areas of a resample computed on the same drawn rows. The opinions are
    held fixed under resampling: they are learned on the validation predictions (on the test
    predictions themselves where there are none: then the interval leaves out their refit). ``opinions``:
    :func:`per_prediction_opinions` of ``preds``, when already computed."""
    counts = _counts(preds, bootstrap)
    coverages = np.array(COVERAGES) / 100
    rows = []
    for test, _, opinion in opinions if opinions is not None else per_prediction_opinions(preds, params):
        hit = opinion["correct"].to_numpy(dtype=np.float64)
        scores = opinion_scores(
            opinion["confidence"].to_numpy(),
            opinion["belief"].to_numpy(),
            opinion["uncertainty"].to_numpy(),
            params.base_rate,
        )
        point = {name: selective_areas(scores[name], hit) for name in SCORES}
        replicates = bootstrap_selective_scores(scores, hit, counts) if counts is not None else {}
        for name in SCORES:
            row = dict(epoch=test.epoch, calibrator=test.calibrator, score=name)
            for index, area in enumerate(("aurc", "augrc")):
                row[area] = point[name][index]
                row[f"diff_{area}"] = point[name][index] - point[SCORES[0]][index]  # against the max probability
                if replicates:
                    mine, base = replicates[name][area], replicates[SCORES[0]][area]  # the same resamples: paired
                    row.update(_interval_columns({area: mine, f"diff_{area}": mine - base}, bootstrap.level))
            risk = risk_at_coverages(scores[name], hit, coverages)
            row.update({f"risk_{c:02d}": r for c, r in zip(COVERAGES, risk)})
            rows.append(row)
    ends = ("", "_lo", "_hi") if counts is not None else ("",)
    columns = ["epoch", "calibrator", "score"]
    columns += [f"{diff}{area}{end}" for diff in ("", "diff_") for area in ("aurc", "augrc") for end in ends]
    return pd.DataFrame(rows, columns=columns + [f"risk_{c:02d}" for c in COVERAGES])


def trust_tables(
    preds: Sequence[PredictionSet],
    params: TrustParams,
    sweep: SweepParams | None = None,
    bootstrap: BootstrapParams | None = None,
) -> dict[str, pd.DataFrame]:
    preds = list(preds)
    opinions = per_prediction_opinions(preds, params)
    out = {
        "trust": trust_table(preds, params, bootstrap),
        "dynamic_trust": dynamic_trust_table(preds, params, opinions),
        "selective": selective_table(preds, params, bootstrap, opinions),
    }
    if sweep is not None:
        out["trust_sweep"] = trust_sweep_table(preds, params, sweep)
    return out


# --------------------------------------------------------------------------- scores


def refinement_losses(p: PredictionSet, mp: MetricParams, seed: int) -> dict[str, np.ndarray] | None:
    """Per-sample losses of ``p`` and of its cross-fitted recalibration (docs/method.md §13.2), the split of
    scores.csv (None: fewer samples than folds): :func:`trustcal.measures.decomposition.loss_terms` of
    :func:`~trustcal.measures.decomposition.cross_fitted` with ``mp.refinement_folds`` folds drawn with ``seed``
    and temperature scaling of the log-probabilities as the recalibration, T fitted by
    :func:`trustcal.calibration.temperature.newton_temperature` (the minimiser of
    :func:`trustcal.calibration.fit_temperature`, T in [0.01, 100], to its tolerance)."""
    if len(p.labels) < mp.refinement_folds:
        return None
    previous = [1.0]  # each fold's fit starts at the T of the fold before (four of five rows are shared)

    def fit(log_probs: np.ndarray, labels: np.ndarray):
        previous[0] = temperature = newton_temperature(log_probs, labels, start=previous[0])
        return lambda z: softmax(z, temperature)

    refined = decomposition.cross_fitted(p.probs, p.labels, fit, mp.refinement_folds, seed, log_probs=p.log_probs)
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


def score_columns(mp: MetricParams, bootstrapped: Iterable[str] = ()) -> list[str]:
    """The columns of scores.csv: the keys, the first scores, every other column of
    :func:`trustcal.measures.metrics.scalar_columns` in the order of its table, ``nll_exact`` and the
    calibration/refinement terms, then ``<name>_lo`` / ``<name>_hi`` of each of them in ``bootstrapped``."""
    rest = [c for c in [*metrics.scalar_columns(mp), "nll_exact", *decomposition.TERMS] if c not in FIRST_SCORES]
    estimates = [*FIRST_SCORES, *rest]
    bootstrapped = set(bootstrapped)
    return [*SCORE_KEYS, *estimates] + [f"{c}_{end}" for c in estimates if c in bootstrapped for end in ("lo", "hi")]


def _score_row(
    p: PredictionSet,
    top: TopLabel,
    mp: MetricParams,
    counts: np.ndarray | None,
    bootstrap: BootstrapParams | None,
    losses: dict[str, np.ndarray] | None,
    smece: np.ndarray | None = None,
) -> tuple[dict, dict[str, np.ndarray] | None]:
    """The row of scores.csv of ``p`` (``top`` its top label, ``losses`` its :func:`refinement_losses` or
    None) and, with ``counts`` (the test split's resamples) and ``smece`` (their smooth ECEs,
    :func:`~trustcal.measures.smooth.smooth_measures`), the bootstrap replicates behind its intervals."""
    row = _keys(p, **metrics.scalar_metrics_of(top, mp))
    row["nll_exact"] = p.log_probs is not None  # the NLL's convention: log-softmax, or p floored (§2.12)
    row.update(decomposition.terms_from_losses(losses) if losses else dict.fromkeys(decomposition.TERMS, np.nan))
    if counts is None:
        return row, None
    replicates = bootstrap_scores_of(top, counts, mp)
    replicates["smece"] = smece
    if losses:
        replicates.update(refinement_replicates(losses, counts))
    row.update(_interval_columns(replicates, bootstrap.level))
    return row, replicates


def _side_tables(p: PredictionSet, top: TopLabel, mp: MetricParams, diagram: dict) -> dict[str, pd.DataFrame]:
    """The side tables' rows of ``p`` (``top`` its top label; ``diagram`` its smooth reliability diagram)."""
    k = p.probs.shape[1]
    spectrum = metrics.trust_spectrum_of(top, k, mp.nts_alpha, mp.nts_beta)
    per_label = np.bincount(p.labels, minlength=k)
    grid = np.linspace(0.0, 1.0, mp.density_points)
    density = metrics.trust_density_table_of(
        top, gamma=mp.density_gamma, grid=grid, alpha=mp.nts_alpha, beta=mp.nts_beta
    )
    return {
        "trust_spectrum": _prepend(pd.DataFrame(dict(label=np.arange(k), trust=spectrum, count=per_label)), p),
        "reliability": _prepend(reliability_table_of(top, mp.reliability_bins), p),
        "trust_density": _prepend(density, p),
        "smooth_reliability": _prepend(pd.DataFrame(diagram), p),
    }


SIDE_TABLES = ("trust_spectrum", "reliability", "trust_density", "smooth_reliability")


def score_tables(
    preds: Sequence[PredictionSet],
    mp: MetricParams = MetricParams(),
    bootstrap: BootstrapParams | None = None,
    kept: dict | None = None,
) -> dict[str, pd.DataFrame]:
    """``scores`` (every scalar metric per epoch × calibrator × split; with ``bootstrap``, the
    percentile interval of each bootstrapped metric on the test split) and the side tables.

    Besides :func:`trustcal.measures.metrics.scalar_metrics` (its NLL exact where the predictions carry
    their log-probabilities, and ``nll_exact`` saying so; floored probabilities otherwise, docs/method.md
    §2.12), the rows of the side tables' splits (below)
    have the calibration and refinement terms of the NLL and the Brier score (docs/method.md §13.2;
    ``mp.refinement_folds`` folds drawn with the bootstrap seed, temperature scaling as the recalibration;
    NaN on the other rows: five temperature fits per row are the largest cost of a row); on the test split
    with ``bootstrap`` they and the smooth ECE (:func:`trustcal.measures.smooth.bootstrap_smece`) have
    intervals too. The columns are :func:`score_columns`.

    Side tables are computed on the test split (the only one a figure, the verdict or the study
    report reads; the validation split gets its rows of scores; every split when none is test): ``trust_spectrum`` (NetTrustScore
    per label), ``reliability`` (top-label and one-vs-rest curves), ``trust_density`` (KDE of
    the question-answer trust per label) and ``smooth_reliability`` (the smooth reliability diagram on
    ``mp.smooth_points`` confidences, with its bootstrap band on the test split; docs/method.md §13.3).

    Every table of a prediction set reads its one :class:`~trustcal.measures.bins.TopLabel`.

    ``kept``, a dict, receives (epoch, calibrator) → (the row of scores, its bootstrap replicates) of
    every test-split prediction when ``bootstrap`` is given: the input of
    :func:`trustcal.measures.paired.paired_arrays`.
    """
    preds = list(preds)
    scores, side = [], {name: [] for name in SIDE_TABLES}
    counts = _counts(preds, bootstrap)
    fold_seed = (bootstrap or BootstrapParams()).seed  # the folds of the calibration/refinement split
    side_splits = {"test"} if _by_split(preds, "test") else {p.split for p in preds}
    for p in preds:
        top = TopLabel.of(p.probs, p.labels, p.log_probs)
        losses = refinement_losses(p, mp, fold_seed) if p.split in side_splits else None
        tested = counts is not None and p.split == "test"
        smece, diagram = None, None  # the smooth ECE's replicates and diagram share their grids
        if tested:
            smece, diagram = smooth_measures(top, counts, mp.smooth_points, bootstrap.level, mp.smece_bandwidth)
        elif p.split in side_splits:
            diagram = smooth_reliability_of(top, None, mp.smooth_points)
        row, replicates = _score_row(p, top, mp, counts if tested else None, bootstrap, losses, smece)
        if tested and kept is not None:  # for the paired differences: trustcal.measures.paired.paired_arrays
            kept[(p.epoch, p.calibrator)] = (dict(row), replicates)
        scores.append(row)
        if p.split in side_splits:
            for name, table in _side_tables(p, top, mp, diagram).items():
                side[name].append(table)
    scores = pd.DataFrame(scores)
    bootstrapped = [c[: -len("_lo")] for c in scores.columns if c.endswith("_lo")]
    return {"scores": scores[score_columns(mp, bootstrapped)]} | {
        name: pd.concat(tables, ignore_index=True) for name, tables in side.items()
    }
