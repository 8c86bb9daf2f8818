"""The study's numbers from a run's tables: the test metrics at the first, best-validation and last epoch,
every calibrator against the raw model, and the paired differences between calibrators (docs/method.md §12).
Each builder takes the seeds' tables as frames (a ``seed`` column) and returns the dataclasses of
:mod:`trustcal.study.report`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.calibration import METHODS
from trustcal.calibration.states import paper_states, temperature_rows
from trustcal.errors import TrustcalError
from trustcal.files import read_result_npz, read_seeds
from trustcal.measures.paired import PAIRED_KEYS, paired_interval, stack_seeds
from trustcal.measures.trust import TRUST_COLUMNS
from trustcal.study.names import order
from trustcal.study.report import CalibratorRow, Calibrators, Interval, MetricsRow, PairedCell, PairedRow
from trustcal.training.history import best_epoch

STUDY_TABLES = {  # table → columns kept in results/study/ (the figures' and the summary's inputs)
    "history": ("epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "seconds"),
    "calibration": ("epoch", "calibrator", "temperature", "val_nll_before", "val_nll_after", "at_bound"),
    # trust.csv's columns but the base rate, and the belief's bootstrap interval
    "trust": (*(c for c in TRUST_COLUMNS if c != "base_rate"), "belief_lo", "belief_hi"),
    "scores": (
        "epoch",
        "calibrator",
        "split",
        "accuracy",
        "nll",
        "ece",
        "smece",
        "brier",
        "net_trust_score",
        "nll_calibration",
        "nll_refinement",
        "nll_lo",
        "nll_hi",
        "ece_lo",
        "ece_hi",
    ),
}
PAIRED_SCORES = {"ece": "test ECE", "smece": "smooth ECE", "nll": "test NLL", "brier": "test Brier"}
PAIRED_BASELINES = ("none", "temperature")  # every calibrator against the raw model and temperature scaling
LATE_FROM = 20  # "late" epochs of the calibrator table: from epoch 20 on (the paper's "after 20 epochs")


def finished_runs(results: Path) -> dict[str, list[int]]:
    """run → its seeds with a ``trust.csv`` (``results/{run}/seed{N}/``), runs in :func:`order`."""
    runs: dict[str, list[int]] = {}
    for path in sorted(results.glob("*/seed*/trust.csv")):
        runs.setdefault(path.parent.parent.name, []).append(int(path.parent.name[4:]))
    if not runs:
        raise TrustcalError(
            f"{results}: no finished run (results/{{dataset}}/seed{{N}}/trust.csv); run the workflow first"
        )
    return {ds: sorted(s) for ds, s in sorted(runs.items(), key=lambda kv: order(kv[0]))}


def read_table(results: Path, ds: str, seeds, name: str) -> pd.DataFrame:
    """The seeds' ``{name}.csv`` of run ``ds`` as one frame: ``seed`` and the columns of :data:`STUDY_TABLES` it has."""
    df = read_seeds([results / ds / f"seed{s}" / f"{name}.csv" for s in seeds], STUDY_TABLES[name][:1], rule=name)
    return df[["seed", *[c for c in STUDY_TABLES[name] if c in df.columns]]]


def _best(history: pd.DataFrame) -> dict[int, int]:
    return {int(s): best_epoch(h) for s, h in history.groupby("seed")}


def metrics(scores: pd.DataFrame, calibration: pd.DataFrame, history: pd.DataFrame) -> list[MetricsRow]:
    """First, best-validation and last epoch: test accuracy, NLL and ECE before and after temperature scaling,
    and the temperature, per seed."""
    best = _best(history)
    last = int(history["epoch"].max())
    test = paper_states(scores[scores["split"] == "test"]).set_index(["seed", "epoch", "calibrated"])
    temps = temperature_rows(calibration).set_index(["seed", "epoch"])["temperature"]
    rows = []
    for point, epoch_of in (("first", lambda s: 1), ("best", lambda s: best[s]), ("last", lambda s: last)):
        picked = [(s, epoch_of(s)) for s in sorted(best)]

        def values(col, calibrated, picked=picked):
            return [float(test.at[(s, e, calibrated), col]) for s, e in picked]

        rows.append(
            MetricsRow(
                point=point,
                epochs=sorted({e for _, e in picked}),
                accuracy=values("accuracy", False),
                nll_before=values("nll", False),
                nll_after=values("nll", True),
                ece_before=values("ece", False),
                ece_after=values("ece", True),
                temperature=[float(temps.at[(s, e)]) for s, e in picked],
            )
        )
    return rows


def _seed_values(table: pd.DataFrame, picked, calibrator: str, col: str) -> list[float]:
    """``col`` of ``calibrator`` at each (seed, epoch) of ``picked`` (NaN where missing)."""
    t = table[table["calibrator"] == calibrator].set_index(["seed", "epoch"])
    return [float(t.at[(s, e), col]) if (s, e) in t.index else np.nan for s, e in picked]


def _interval(table: pd.DataFrame, picked, calibrator: str, col: str) -> Interval:
    """Per-seed values of ``col``, and the seed-mean of its bootstrap interval when the table has one."""
    out = Interval(_seed_values(table, picked, calibrator, col))
    if f"{col}_lo" in table:
        lo = float(np.mean(_seed_values(table, picked, calibrator, f"{col}_lo")))
        hi = float(np.mean(_seed_values(table, picked, calibrator, f"{col}_hi")))
        if np.isfinite(lo):
            out.lo, out.hi = lo, hi
    return out


def label_belief(trust: pd.DataFrame) -> pd.DataFrame:
    """The label-mean belief (the network's opinion left out), rows (seed, epoch), a column per calibrator."""
    labels = trust[trust["label"].astype(str) != "network"]
    return labels.groupby(["seed", "calibrator", "epoch"])["belief"].mean().unstack("calibrator")


def trust_gaps(trust: pd.DataFrame) -> dict[str, list[float]]:
    """Per fitted calibrator and seed: its label belief minus the raw model's, lowest over epochs."""
    belief = label_belief(trust)
    fitted = [c for c in METHODS[1:] if c in belief.columns]
    return {c: (belief[c] - belief["none"]).groupby("seed").min().tolist() for c in fitted}


def calibrator_rows(scores: pd.DataFrame, trust: pd.DataFrame, history: pd.DataFrame) -> list[CalibratorRow]:
    """Per calibrator: test ECE, smooth ECE and NLL at the best-validation and last epochs (with intervals),
    its label trust from epoch :data:`LATE_FROM` on (mean and range), and its lowest difference from the raw
    model's."""
    best = _best(history)
    last = int(history["epoch"].max())
    at_best = [(s, best[s]) for s in sorted(best)]
    at_last = [(s, last) for s in sorted(best)]
    test = scores[scores["split"] == "test"]
    belief = label_belief(trust)
    late = belief[belief.index.get_level_values("epoch") >= min(LATE_FROM, last)]
    rows = []
    for c in (c for c in METHODS if c in belief):
        gap = (belief[c] - belief["none"]).groupby("seed").min()
        rows.append(
            CalibratorRow(
                calibrator=c,
                ece_best=_interval(test, at_best, c, "ece"),
                ece_last=_interval(test, at_last, c, "ece"),
                smece_last=_seed_values(test, at_last, c, "smece") if "smece" in test else None,
                nll_last=_interval(test, at_last, c, "nll"),
                trust_late=late[c].groupby("seed").mean().tolist(),
                trust_gap=None if c == "none" else gap.tolist(),
                trust_range=late[c].groupby("seed").agg(lambda v: v.max() - v.min()).tolist(),
            )
        )
    return rows


def load_paired(results: Path, ds: str, seeds) -> dict[int, dict[str, np.ndarray]]:
    """Each seed's ``paired.npz`` (rule ``scores``: the scores of every epoch and calibrator on the test set
    and its resamples), or an empty dict when the run wrote none."""
    paths = {int(s): results / ds / f"seed{s}" / "paired.npz" for s in seeds}
    missing = [p for p in paths.values() if not p.exists()]
    if len(missing) == len(paths):
        return {}
    if missing:
        raise TrustcalError(
            f"{missing[0]}: file not found while other seeds have one; rerun rule 'scores'",
            rerun="scores",
        )
    arrays = {s: read_result_npz(p, PAIRED_KEYS, rule="scores") for s, p in paths.items()}
    drawn = {s: (int(a["resamples"]), int(a["seed"])) for s, a in arrays.items()}
    if len(set(drawn.values())) > 1:
        raise TrustcalError(
            f"{results / ds}: the seeds' paired.npz come from different test-set resamples "
            f"(resamples, bootstrap seed per seed: {drawn}); rerun rule 'scores' with one bootstrap setting",
            rerun="scores",
        )
    return arrays


def paired_comparisons(
    per_seed, metrics=tuple(PAIRED_SCORES), against=PAIRED_BASELINES, level: float = 0.95
) -> pd.DataFrame:
    """Every calibrator minus each of ``against``, per score of ``metrics`` and epoch: the paired interval
    with seeds (:func:`trustcal.measures.paired.paired_interval`; docs/method.md §12) from the seeds'
    :func:`trustcal.measures.paired.paired_arrays` (``per_seed``: seed → arrays).

    One row per (calibrator, against, metric, epoch): ``estimate`` (mean over seeds of the difference on
    the full test set), ``lo``, ``hi``, ``se``, ``df`` and ``seeds``."""
    stacked = stack_seeds(per_seed)
    calibrators, names = list(stacked["calibrators"]), list(stacked["metrics"])
    scores = stacked["scores"]  # S × E × C × M × (B + 1), float32
    frames = []
    for metric in (m for m in metrics if m in names):
        values = scores[..., names.index(metric), :].astype(np.float64)  # S × E × C × (B + 1)
        for base in (b for b in against if b in calibrators):
            diff = values - values[:, :, calibrators.index(base), None]
            diff = np.moveaxis(diff, 0, 2)  # E × C × S × (B + 1)
            iv = paired_interval(diff[..., 0], diff[..., 1:], level)
            e, c = np.meshgrid(stacked["epochs"], np.arange(len(calibrators)), indexing="ij")
            frame = pd.DataFrame(
                dict(
                    calibrator=np.array(calibrators)[c.ravel()],
                    against=base,
                    metric=metric,
                    epoch=e.ravel(),
                    estimate=iv.estimate.ravel(),
                    lo=iv.lo.ravel(),
                    hi=iv.hi.ravel(),
                    se=iv.se.ravel(),
                    df=iv.df.ravel(),
                    seeds=len(stacked["seeds"]),
                )
            )
            frames.append(frame[frame["calibrator"] != base])
    columns = ["calibrator", "against", "metric", "epoch", "estimate", "lo", "hi", "se", "df", "seeds"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def in_order(calibrators) -> list[str]:
    """``calibrators`` in the order of :data:`trustcal.calibration.METHODS`, others after them."""
    names = list(calibrators)
    return [c for c in METHODS if c in names] + sorted(c for c in names if c not in METHODS)


def separated(paired: pd.DataFrame, metric: str = "ece", against: str = "none") -> dict[str, tuple[int, int, int]]:
    """Per calibrator: (epochs where the paired interval of calibrator − ``against`` lies wholly below 0,
    wholly above 0, epochs) for ``metric``."""
    rows = paired[(paired["metric"] == metric) & (paired["against"] == against)]
    groups = dict(list(rows.groupby("calibrator", sort=False)))
    return {
        str(c): (int((groups[c]["hi"] < 0).sum()), int((groups[c]["lo"] > 0).sum()), len(groups[c]))
        for c in in_order(groups)
    }


def _finite(x) -> float | None:
    return float(x) if np.isfinite(x) else None


def paired_rows(paired: pd.DataFrame, last: int) -> list[PairedRow]:
    """Per (calibrator, baseline): for each score, the difference at epoch ``last`` with its interval, and
    the epochs whose interval lies wholly below / above 0. The raw model against temperature scaling is
    left out (the mirror of temperature scaling against the raw model)."""
    rows = []
    metrics = [m for m in PAIRED_SCORES if m in set(paired["metric"])]
    groups = dict(list(paired.groupby(["against", "calibrator"], sort=False)))
    for base in (b for b in PAIRED_BASELINES if b in set(paired["against"])):
        for c in in_order(c for b, c in groups if b == base):
            if c in PAIRED_BASELINES[: PAIRED_BASELINES.index(base)]:
                continue
            g, cells = groups[(base, c)], []
            for m in metrics:
                rows_m = g[g["metric"] == m]
                at = rows_m[rows_m["epoch"] == last]
                r = at.iloc[0] if len(at) and np.isfinite(at["estimate"].iloc[0]) else None
                cells.append(
                    PairedCell(
                        metric=m,
                        estimate=None if r is None else _finite(r.estimate),
                        lo=None if r is None else _finite(r.lo),
                        hi=None if r is None else _finite(r.hi),
                        below=int((rows_m["hi"] < 0).sum()),
                        above=int((rows_m["lo"] > 0).sum()),
                    )
                )
            rows.append(PairedRow(c, base, cells))
    return rows


def comparison(trust: pd.DataFrame, paired: pd.DataFrame | None, last: int) -> Calibrators:
    """The numbers of the calibrator comparison's sentences: each calibrator's lowest trust difference from
    the raw model, and (``paired``: :func:`paired_comparisons`, None without paired.npz) the epochs whose
    paired ECE interval lies below or above the raw model's, with the paired table at epoch ``last``."""
    out = Calibrators(late_from=min(LATE_FROM, last), rows=[], gaps=trust_gaps(trust), separated={})
    if paired is not None and len(paired):
        out.separated = {c: list(v) for c, v in separated(paired).items()}
        out.paired_seeds = int(paired["seeds"].max())
        out.paired_last = int(paired["epoch"].max())
        out.paired_epochs = int(paired["epoch"].nunique())
        out.paired = paired_rows(paired, out.paired_last)
    return out


def calibrators(
    scores: pd.DataFrame, trust: pd.DataFrame, history: pd.DataFrame, paired: pd.DataFrame | None
) -> Calibrators:
    """Every calibrator against the raw model (``paired``: :func:`paired_comparisons`, None without
    paired.npz): :func:`comparison` with the table of :func:`calibrator_rows`."""
    out = comparison(trust, paired, int(history["epoch"].max()))
    out.rows = calibrator_rows(scores, trust, history)
    return out
