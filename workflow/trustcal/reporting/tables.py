"""Tidy result tables from predicted probabilities, shared by the workflow and the CLI.

Input is a sequence of :class:`Predictions` — one (epoch, calibrator, split)
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
from trustcal.measures.bootstrap import (
    BootstrapParams,
    bootstrap_opinions,
    bootstrap_scores,
    bootstrap_selective_scores,
    percentile_interval,
    resample_counts,
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
    check_count,
)
from trustcal.measures.selective import SCORES, opinion_scores, risk_at_coverages, selective_areas
from trustcal.measures.smooth import bootstrap_smece, smooth_reliability
from trustcal.measures.trust import TRUST_COLUMNS, TrustParams, cluster_evidence, cluster_index, trust_opinions
from trustcal.numerics import log_softmax

__all__ = [
    "PAPER_CALIBRATOR",
    "RAW",
    "MetricParams",
    "Predictions",
    "SweepParams",
    "score_tables",
    "trust_tables",
    "selective_table",
    "refinement_losses",
]


@dataclass(frozen=True)
class Predictions:
    epoch: int
    calibrator: str  # "none" for the raw model
    split: str  # "test" or "val"
    probs: np.ndarray
    labels: np.ndarray
    # The exact log-probabilities (a log-softmax) where the predictions come from logits; None where they
    # come as probabilities, whose NLL floors them (docs/method.md §2.12).
    log_probs: np.ndarray | None = None

    @classmethod
    def of_logits(cls, epoch: int, calibrator: str, split: str, logits, labels) -> Predictions:
        """softmax(``logits``), with its exact log-probabilities."""
        log_probs = log_softmax(logits)
        return cls(epoch, calibrator, split, np.exp(log_probs), labels, log_probs)

    @classmethod
    def of_calibrator(cls, epoch: int, calibrator: str, split: str, cal, logits, labels) -> Predictions:
        """The predictions of a fitted calibrator ``cal`` (named ``calibrator``) on ``logits``."""
        probs, log_probs = cal.predict(logits)
        return cls(epoch, calibrator, split, probs, labels, log_probs)


@dataclass(frozen=True)
class MetricParams:
    """The metrics' settings (the config's ``metrics:`` keys): ECE bin counts (the first is the ``ece`` column),
    NetTrustScore exponents, the trust density's bandwidth and grid, the geometric family's floor and bins, the
    reliability and L2 bins, the refinement folds and the smooth reliability diagram's points."""

    ece_bins: tuple[int, ...] = (10, 15)
    nts_alpha: float = 1.0
    nts_beta: float = 1.0
    density_gamma: float = 0.5
    density_points: int = 51
    geo_eps: float = 0.01
    geo_bins: int = 10
    reliability_bins: int = 10
    l2_bins: int = 15
    refinement_folds: int = 5  # folds of the cross-fitted recalibration (docs/method.md §13.2)
    smooth_points: int = 101  # points t of the smooth reliability diagram (docs/method.md §13.3)

    def __post_init__(self):
        """The integer settings within the bounds of :mod:`trustcal.measures.limits` (one line each)."""
        if isinstance(self.ece_bins, (str, bytes)) or not len(self.ece_bins):
            raise ValueError(f"ece_bins must be one or more bin counts, e.g. (10, 15) (got {self.ece_bins!r})")
        for m in self.ece_bins:
            check_count("ece_bins", m, 1, MAX_BINS, BINS_COST)
        for name in ("geo_bins", "reliability_bins", "l2_bins"):
            check_count(name, getattr(self, name), 1, MAX_BINS, BINS_COST)
        for name in ("density_points", "smooth_points"):
            check_count(name, getattr(self, name), 2, MAX_POINTS, POINTS_COST)
        check_count("refinement_folds", self.refinement_folds, 2, MAX_FOLDS, FOLDS_COST)


@dataclass(frozen=True)
class SweepParams:
    """The ``trust_sweep`` table's grid: the numbers of clusters M and the representatives the opinion is
    recomputed with, at these epochs (and always the last)."""

    clusters: tuple[int, ...] = (2, 5, 10, 20, 50, 100)
    representatives: tuple[str, ...] = ("midpoint", "mean")
    epochs: tuple[int, ...] = (1, 10, 20, 50, 100)  # plus always the last epoch

    def __post_init__(self):
        for m in self.clusters:
            check_count("clusters_sweep", m, 1, MAX_CLUSTERS, CLUSTERS_COST)
        for e in self.epochs:  # epoch 0: a single file assessed alone (trustcal assess)
            check_count("sweep_epochs", e, 0, MAX_EPOCHS, EPOCHS_COST)


def _keys(p: Predictions, **extra) -> dict:
    return dict(epoch=p.epoch, calibrator=p.calibrator, split=p.split, **extra)


def _prepend(df: pd.DataFrame, p: Predictions, with_split: bool = True) -> pd.DataFrame:
    keys = _keys(p) if with_split else dict(epoch=p.epoch, calibrator=p.calibrator)
    for i, (k, v) in enumerate(keys.items()):
        df.insert(i, k, v)
    return df


def _by_split(preds: Iterable[Predictions], split: str) -> list[Predictions]:
    return [p for p in preds if p.split == split]


# --------------------------------------------------------------------------- trust


OPINION = ("belief", "disbelief", "uncertainty")


def _counts(preds: Sequence[Predictions], bootstrap: BootstrapParams | None) -> np.ndarray | None:
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
    preds: Sequence[Predictions], params: TrustParams, bootstrap: BootstrapParams | None = None
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


def dynamic_trust(fit: Predictions, new: Predictions, params: TrustParams) -> pd.DataFrame:
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
    preds: Sequence[Predictions], params: TrustParams
) -> list[tuple[Predictions, Predictions, pd.DataFrame]]:
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
    preds: Sequence[Predictions], params: TrustParams, opinions: list | None = None
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


def trust_sweep_table(preds: Sequence[Predictions], params: TrustParams, sweep: SweepParams) -> pd.DataFrame:
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
    preds: Sequence[Predictions],
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
    preds: Sequence[Predictions],
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


def refinement_losses(p: Predictions, mp: MetricParams, seed: int) -> dict[str, np.ndarray] | None:
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


def _refinement_replicates(losses: dict[str, np.ndarray], counts: np.ndarray) -> dict[str, np.ndarray]:
    """The calibration and refinement terms of every resample, the recalibration maps held fixed: one
    product of the counts with the N × 4 per-sample terms (float32, as :func:`bootstrap_scores`)."""
    per_sample = np.stack(
        [
            losses["nll"] - losses["nll_refined"],
            losses["nll_refined"],
            losses["brier"] - losses["brier_refined"],
            losses["brier_refined"],
        ],
        axis=1,
    ).astype(np.float32)
    sums = (np.asarray(counts, dtype=np.float32) @ per_sample).astype(np.float64) / per_sample.shape[0]
    return dict(zip(decomposition.TERMS, sums.T))


def score_tables(
    preds: Sequence[Predictions],
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
    intervals too.

    Side tables are computed on the test split (the only one a figure, the verdict or the study
    report reads; the validation split gets its rows of scores; every split when none is test): ``trust_spectrum`` (NetTrustScore
    per label), ``reliability`` (top-label and one-vs-rest curves), ``trust_density`` (KDE of
    the question-answer trust per label) and ``smooth_reliability`` (the smooth reliability diagram on
    ``mp.smooth_points`` confidences, with its bootstrap band on the test split; docs/method.md §13.3).

    ``kept``, a dict, receives (epoch, calibrator) → (the row of scores, its bootstrap replicates) of
    every test-split prediction when ``bootstrap`` is given: the input of
    :func:`trustcal.measures.paired.paired_arrays`.
    """
    preds = list(preds)
    scores, spectra, curves, densities, smooth = [], [], [], [], []
    grid = np.linspace(0.0, 1.0, mp.density_points)
    counts = _counts(preds, bootstrap)
    fold_seed = (bootstrap or BootstrapParams()).seed  # the folds of the calibration/refinement split
    side_splits = {"test"} if _by_split(preds, "test") else {p.split for p in preds}
    for p in preds:
        row = _keys(
            p,
            **metrics.scalar_metrics(
                p.probs,
                p.labels,
                log_probs=p.log_probs,
                ece_bins=mp.ece_bins,
                nts_alpha=mp.nts_alpha,
                nts_beta=mp.nts_beta,
                geo_eps=mp.geo_eps,
                geo_bins=mp.geo_bins,
                reliability_bins=mp.reliability_bins,
                l2_bins=mp.l2_bins,
            ),
        )
        row["nll_exact"] = p.log_probs is not None  # the NLL's convention: log-softmax, or p floored (§2.12)
        losses = refinement_losses(p, mp, fold_seed) if p.split in side_splits else None
        row.update(decomposition.terms_from_losses(losses) if losses else dict.fromkeys(decomposition.TERMS, np.nan))
        tested = counts is not None and p.split == "test"
        conf = p.probs.max(axis=1)
        hit = (p.probs.argmax(axis=1) == p.labels).astype(np.float64)
        if tested:
            replicates = bootstrap_scores(p.probs, p.labels, counts, mp, log_probs=p.log_probs)
            replicates["smece"] = bootstrap_smece(conf, hit, counts)
            if losses:
                replicates.update(_refinement_replicates(losses, counts))
            row.update(_interval_columns(replicates, bootstrap.level))
            if kept is not None:  # for the paired differences: trustcal.measures.paired.paired_arrays
                kept[(p.epoch, p.calibrator)] = (dict(row), replicates)
        scores.append(row)
        if p.split not in side_splits:
            continue
        k = p.probs.shape[1]
        spectrum = metrics.trust_spectrum(p.probs, p.labels, k, mp.nts_alpha, mp.nts_beta)
        per_label = np.bincount(p.labels, minlength=k)
        spectra.append(_prepend(pd.DataFrame(dict(label=np.arange(k), trust=spectrum, count=per_label)), p))
        curves.append(_prepend(metrics.reliability_table(p.probs, p.labels, mp.reliability_bins), p))
        densities.append(
            _prepend(
                metrics.trust_density_table(
                    p.probs, p.labels, gamma=mp.density_gamma, grid=grid, alpha=mp.nts_alpha, beta=mp.nts_beta
                ),
                p,
            )
        )
        diagram = smooth_reliability(
            conf, hit, counts if tested else None, mp.smooth_points, bootstrap.level if tested else 0.95
        )
        smooth.append(_prepend(pd.DataFrame(diagram), p))
    scores = pd.DataFrame(scores)
    first = ["epoch", "calibrator", "split", "accuracy", "nll", "ece"]  # the contracted columns
    estimates = [c for c in scores.columns if c not in first and not c.endswith(("_lo", "_hi"))]
    intervals = [f"{c}_{end}" for c in first[3:] + estimates for end in ("lo", "hi") if f"{c}_lo" in scores.columns]
    return {
        "scores": scores[first + estimates + intervals],
        "trust_spectrum": pd.concat(spectra, ignore_index=True),
        "reliability": pd.concat(curves, ignore_index=True),
        "trust_density": pd.concat(densities, ignore_index=True),
        "smooth_reliability": pd.concat(smooth, ignore_index=True),
    }
