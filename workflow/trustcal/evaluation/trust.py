"""The trust tables of a sequence of :class:`~trustcal.evaluation.prediction_sets.PredictionSet`
(docs/method.md §3, §13.1): the class and network opinions (``trust``), the mean per-prediction opinion
(``dynamic_trust``), trust as a selective-prediction signal (``selective``) and the cluster sweep
(``trust_sweep``, its grid :class:`SweepParams`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from trustcal.evaluation.prediction_sets import PredictionSet, interval_columns, of_split, resamples_of, with_keys
from trustcal.measures.bootstrap import BootstrapParams, bootstrap_opinions, bootstrap_selective_scores
from trustcal.measures.limits import CLUSTERS_COST, EPOCHS_COST, MAX_CLUSTERS, MAX_EPOCHS
from trustcal.measures.options import check_fields, setting
from trustcal.measures.selective import SCORES, opinion_scores, risk_at_coverages, selective_areas
from trustcal.measures.trust import (
    REPRESENTATIVES,
    TRUST_COLUMNS,
    TrustParams,
    cluster_evidence,
    cluster_index,
    trust_opinions,
)

__all__ = [
    "COVERAGES",
    "OPINION",
    "SweepParams",
    "dynamic_trust",
    "dynamic_trust_table",
    "per_prediction_opinions",
    "selective_table",
    "sweep_epochs",
    "trust_sweep_table",
    "trust_table",
    "trust_tables",
]


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


OPINION = ("belief", "disbelief", "uncertainty")


def trust_table(
    preds: Sequence[PredictionSet], params: TrustParams, bootstrap: BootstrapParams | None = None
) -> pd.DataFrame:
    """docs/method.md §3 on the test predictions: K class opinions + the network opinion per
    (epoch, calibrator); with ``bootstrap`` (cumulative fusion), a percentile interval for each of
    belief, disbelief and uncertainty."""
    counts = resamples_of(preds, bootstrap) if params.cluster_fusion == params.class_fusion == "cumulative" else None
    frames = []
    for p in of_split(preds, "test"):
        df = with_keys(trust_opinions(p.probs, p.labels, params), p, with_split=False)
        if counts is not None:
            replicates = bootstrap_opinions(p.probs, p.labels, counts, params)
            for name, values in interval_columns({k: replicates[k] for k in OPINION}, bootstrap.level).items():
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
    val = {(p.epoch, p.calibrator): p for p in of_split(preds, "val")}
    out = []
    for test in of_split(preds, "test"):
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
    tests = of_split(preds, "test")
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
    counts = resamples_of(preds, bootstrap)
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
                    row.update(interval_columns({area: mine, f"diff_{area}": mine - base}, bootstrap.level))
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
    """``trust`` (:func:`trust_table`), ``dynamic_trust`` (:func:`dynamic_trust_table`), ``selective``
    (:func:`selective_table`; the two share their per-prediction opinions) and, with ``sweep``,
    ``trust_sweep`` (:func:`trust_sweep_table`)."""
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
