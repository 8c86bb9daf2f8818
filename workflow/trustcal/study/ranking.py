"""Which calibrator wins: every calibrator against temperature scaling, per run and across runs
(docs/method.md §12.8).

Two views, both from the tables a study keeps in ``results/study/``:

* :func:`differences`: from a run's paired table (:func:`trustcal.study.tables.paired_comparisons`), each
  calibrator's test NLL, ECE and Brier score minus temperature scaling's, with the paired 95 % interval
  over seeds and test-set resamples (docs/method.md §12), at the best-validation epoch and the last, and a
  :func:`verdict` per cell. The paired table is per epoch, so "best validation" is the epoch of the lowest
  validation loss averaged over seeds (:func:`mean_best_epoch`).
* :func:`win_rates`: on every prediction set (run, seed, epoch: the seed's own best-validation epoch and the
  last), each calibrator's share of the other calibrators whose test NLL it beats (ties count ½), as
  CalArena reports it, and its share of prediction sets where it beats temperature scaling, each with a
  percentile interval of a bootstrap over (run, seed) clusters (:func:`cluster_bootstrap`).

:func:`ranking_table` puts both into one tidy frame (``calibrator_ranking.csv``); :func:`ranking_markdown`
and :func:`summary_line` say it in words; :func:`trustcal.study.ranking_figure.write_ranking` writes the three files from the tables
alone. The functions take whatever calibrators the tables hold.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.measures.bootstrap import percentile_interval
from trustcal.study.markdown import listing, md_table
from trustcal.study.report import Ranking
from trustcal.study.tables import in_order
from trustcal.training.history import best_epoch

BASELINE = "temperature"  # the field's baseline
METRICS = ("nll", "ece", "brier")  # lower is better for each
METRIC_NAMES = {"nll": "NLL", "ece": "ECE", "brier": "Brier"}
POINTS = ("best", "last")
POINT_NAMES = {"best": "best-validation epoch", "last": "last epoch"}
WIN_METRIC = "nll"
RESAMPLES = 2000
SEED = 20240617  # the bootstrap's generator seed: the same intervals on every run of the same tables
LEVEL = 0.95
ALL = "all"  # the run name of the rows across runs
OTHERS = "others"  # ``against`` of the win rate against every other calibrator
BETTER, WORSE, NO_DIFFERENCE, NO_INTERVAL = "better", "worse", "no difference", "no interval"
FILES = ("calibrator_ranking.csv", "calibrator_ranking.md", "calibrator_ranking.png")
COLUMNS = [
    "table",
    "run",
    "point",
    "epoch",
    "calibrator",
    "against",
    "metric",
    "estimate",
    "lo",
    "hi",
    "verdict",
    "seeds",
    "prediction_sets",
    "clusters",
    "rank",
    "rank_lo",
    "rank_hi",
]


# --------------------------------------------------------------------------- differences from temperature


def mean_best_epoch(history: pd.DataFrame) -> int:
    """The epoch of the lowest validation loss averaged over seeds (:func:`best_epoch` of the seed mean:
    the earliest on a tie)."""
    mean = history.groupby("epoch", as_index=False)["val_loss"].mean()
    return best_epoch(mean)


def seed_best_epochs(history: pd.DataFrame) -> dict[int, int]:
    """seed → its own best-validation epoch."""
    return {int(s): best_epoch(h) for s, h in history.groupby("seed")}


def verdict(lo: float, hi: float) -> str:
    """``better`` when the interval of calibrator − baseline lies wholly below 0 (lower is better for every
    score here), ``worse`` wholly above, ``no difference`` when it holds 0, ``no interval`` without one."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return NO_INTERVAL
    return BETTER if hi < 0 else WORSE if lo > 0 else NO_DIFFERENCE


def differences(
    paired: pd.DataFrame, history: pd.DataFrame, baseline: str = BASELINE, metrics: Sequence[str] = METRICS
) -> pd.DataFrame:
    """Each calibrator minus ``baseline`` at the best-validation epoch (:func:`mean_best_epoch`) and the
    last epoch of ``paired``: one row per (point, calibrator, metric) with ``epoch``, ``estimate``, ``lo``,
    ``hi``, ``seeds`` and :func:`verdict`. Empty when ``paired`` has no rows against ``baseline``."""
    rows = paired[(paired["against"] == baseline) & paired["metric"].isin(metrics)]
    columns = ["point", "epoch", "calibrator", "against", "metric", "estimate", "lo", "hi", "seeds", "verdict"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    epochs = {"best": mean_best_epoch(history), "last": int(rows["epoch"].max())}
    out = []
    for point in POINTS:
        at = rows[rows["epoch"] == epochs[point]].set_index(["calibrator", "metric"])
        for c in in_order(rows["calibrator"].unique()):
            for m in (m for m in metrics if m in set(rows["metric"])):
                r = at.loc[(c, m)] if (c, m) in at.index else None
                est, lo, hi = (np.nan,) * 3 if r is None else (float(r["estimate"]), float(r["lo"]), float(r["hi"]))
                seeds = int(r["seeds"]) if r is not None and "seeds" in r else np.nan
                out.append(dict(point=point, epoch=epochs[point], calibrator=c, against=baseline, metric=m,
                                estimate=est, lo=lo, hi=hi, seeds=seeds, verdict=verdict(lo, hi)))  # fmt: skip
    return pd.DataFrame(out, columns=columns)


# --------------------------------------------------------------------------- win rates


def prediction_sets(scores: pd.DataFrame, history: pd.DataFrame, metric: str = WIN_METRIC) -> pd.DataFrame:
    """The test ``metric`` of every calibrator on each prediction set of a run: per seed, its own
    best-validation epoch and its last epoch (one set where the two coincide). Rows (seed, epoch, point,
    calibrator, value); ``point`` is ``best``, ``last`` or ``best, last``."""
    test = scores[scores["split"] == "test"]
    frames = []
    for seed, h in history.groupby("seed"):
        points = {}
        for point, epoch in (("best", best_epoch(h)), ("last", int(h["epoch"].max()))):
            points.setdefault(epoch, []).append(point)
        for epoch, names in points.items():
            rows = test[(test["seed"] == seed) & (test["epoch"] == epoch)]
            frames.append(
                pd.DataFrame(
                    dict(
                        seed=int(seed),
                        epoch=epoch,
                        point=", ".join(names),
                        calibrator=rows["calibrator"].astype(str),
                        value=rows[metric].astype(float),
                    )
                )
            )
    columns = ["seed", "epoch", "point", "calibrator", "value"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def pairwise_wins(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a P × C matrix of a score (lower is better; NaN: the calibrator is missing on that set), per
    prediction set and calibrator: the wins over the other calibrators present (a tie counts ½) and the
    number of them. Each two calibrators present share one win between them."""
    v = np.asarray(values, dtype=float)
    present = np.isfinite(v)
    a, b = v[:, :, None], v[:, None, :]
    both = present[:, :, None] & present[:, None, :] & ~np.eye(v.shape[1], dtype=bool)
    wins = np.where(both, (a < b) + 0.5 * (a == b), 0.0).sum(axis=2)
    return wins, both.sum(axis=2).astype(float)


def wins_against(values: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Per prediction set and calibrator: 1 when its score is below column ``j``'s, ½ on a tie, 0 above;
    and whether both are present (column ``j`` itself counts nothing)."""
    v = np.asarray(values, dtype=float)
    base = v[:, j : j + 1]
    both = np.isfinite(v) & np.isfinite(base)
    both[:, j] = False
    wins = np.where(both, (v < base) + 0.5 * (v == base), 0.0)
    return wins, both.astype(float)


def cluster_bootstrap(wins: np.ndarray, pairs: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """R × C win rates of ``resamples`` bootstrap resamples of the G clusters (``wins`` and ``pairs``:
    G × C sums over each cluster's prediction sets): each resample draws G clusters with replacement and
    takes the ratio of its sums (NaN where a calibrator has no pair in it)."""
    g = wins.shape[0]
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, g, size=(resamples, g))
    counts = np.zeros((resamples, g))
    np.add.at(counts, (np.arange(resamples)[:, None], draws), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ wins) / (counts @ pairs)


def _ranks(rates: np.ndarray) -> np.ndarray:
    """Rank 1 for the highest win rate, along the last axis; ties share the best rank, NaN ranks last."""
    r = np.where(np.isfinite(rates), rates, -np.inf)
    return 1 + (r[..., None, :] > r[..., :, None]).sum(axis=-1)


def win_rates(
    sets: pd.DataFrame,
    baseline: str = BASELINE,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    cluster: Sequence[str] = ("run", "seed"),
) -> pd.DataFrame:
    """Win rates on the prediction sets ``sets`` (rows: the ``cluster`` columns, ``epoch``, ``calibrator``,
    ``value``; lower wins): per calibrator, against every other calibrator (``against`` :data:`OTHERS`, with
    its rank and the rank's interval) and against ``baseline`` (``against`` = ``baseline``, with a
    :func:`verdict` read at ½), each with the percentile interval of :func:`cluster_bootstrap` over the
    ``cluster`` groups. A calibrator that wins everywhere has 1 and [1, 1]; with every calibrator on
    every set, the win rates against the others average ½."""
    columns = ["calibrator", "against", "estimate", "lo", "hi", "verdict", "rank", "rank_lo", "rank_hi",
               "prediction_sets", "clusters"]  # fmt: skip
    cluster = [c for c in cluster if c in sets.columns]
    if sets.empty:
        return pd.DataFrame(columns=columns)
    wide = sets.pivot_table(index=[*cluster, "epoch"], columns="calibrator", values="value", aggfunc="first")
    calibrators = in_order(wide.columns)
    wide = wide[calibrators]
    groups = wide.index.droplevel("epoch") if cluster else pd.Index(np.zeros(len(wide)))
    codes, uniques = pd.factorize(groups)
    values = wide.to_numpy(dtype=float)

    def by_cluster(x: np.ndarray) -> np.ndarray:
        out = np.zeros((len(uniques), x.shape[1]))
        np.add.at(out, codes, x)
        return out

    rows = []
    tables = [(OTHERS, pairwise_wins(values))]
    if baseline in calibrators:
        tables.append((baseline, wins_against(values, calibrators.index(baseline))))
    for against, (wins, pairs) in tables:
        w, n = by_cluster(wins), by_cluster(pairs)
        with np.errstate(invalid="ignore", divide="ignore"):
            estimate = w.sum(axis=0) / n.sum(axis=0)
        replicates = cluster_bootstrap(w, n, resamples, seed)
        with warnings.catch_warnings():  # a calibrator never paired (the baseline against itself): NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = percentile_interval(replicates, level)
        rank = _ranks(estimate)
        rank_lo, rank_hi = percentile_interval(_ranks(replicates).astype(float), level)
        for k, c in enumerate(calibrators):
            if against == baseline and c == baseline:
                continue
            row = dict(calibrator=c, against=against, estimate=estimate[k], lo=lo[k], hi=hi[k],
                       prediction_sets=int((pairs[:, k] > 0).sum()), clusters=int((n[:, k] > 0).sum()))  # fmt: skip
            if against == OTHERS:
                row.update(rank=int(rank[k]), rank_lo=int(np.floor(rank_lo[k])), rank_hi=int(np.ceil(rank_hi[k])))
            else:
                row["verdict"] = verdict(0.5 - hi[k], 0.5 - lo[k])  # above ½ is better
            rows.append(row)
    out = pd.DataFrame(rows, columns=columns)
    order = np.lexsort((-out["estimate"].to_numpy(float), out["rank"].fillna(0).to_numpy(float),
                        (out["against"] != OTHERS).to_numpy()))  # fmt: skip
    return out.iloc[order].reset_index(drop=True)  # against every other calibrator first, by rank


# --------------------------------------------------------------------------- the table


@dataclass
class RunTables:
    """The tables of one run that the ranking reads (``results/study/{run}_*.csv.gz``)."""

    scores: pd.DataFrame
    history: pd.DataFrame
    paired: pd.DataFrame | None = None


def read_run(out: Path, run: str) -> RunTables:
    """``out/{run}_scores.csv.gz``, ``_history`` and (where it exists) ``_paired``."""
    paired = out / f"{run}_paired.csv.gz"
    return RunTables(
        scores=pd.read_csv(out / f"{run}_scores.csv.gz"),
        history=pd.read_csv(out / f"{run}_history.csv.gz"),
        paired=pd.read_csv(paired) if paired.exists() else None,
    )


def ranking_table(
    runs: Mapping[str, RunTables],
    baseline: str = BASELINE,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> pd.DataFrame:
    """The tidy table of ``calibrator_ranking.csv``: ``table`` ``difference`` (:func:`differences`, per
    run) and ``win_rate`` (:func:`win_rates` across all runs, ``run`` :data:`ALL`, then per run, its
    clusters that run's seeds), columns :data:`COLUMNS`."""
    frames, sets = [], []
    for run, t in runs.items():
        if t.paired is not None:
            d = differences(t.paired, t.history, baseline)
            frames.append(d.assign(table="difference", run=run))
        sets.append(prediction_sets(t.scores, t.history).assign(run=run))
    if sets:
        every = pd.concat(sets, ignore_index=True)
        for run, s in [(ALL, every), *((r, every[every["run"] == r]) for r in runs)]:
            w = win_rates(s, baseline, resamples, seed, level)
            frames.append(w.assign(table="win_rate", run=run, point="best, last", metric=WIN_METRIC))
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    out = pd.concat(frames, ignore_index=True).reindex(columns=COLUMNS)
    for c in ("epoch", "seeds", "prediction_sets", "clusters", "rank", "rank_lo", "rank_hi"):
        out[c] = out[c].astype("Int64")
    return out


# --------------------------------------------------------------------------- in words


def frame(ranking: Ranking) -> pd.DataFrame:
    """The rows of ``ranking`` as the table of ``calibrator_ranking.csv`` (numbers as numbers)."""
    table = pd.DataFrame(ranking.rows, columns=COLUMNS)
    for c in ("estimate", "lo", "hi"):
        table[c] = pd.to_numeric(table[c], errors="coerce").astype(float)
    for c in ("epoch", "seeds", "prediction_sets", "clusters", "rank", "rank_lo", "rank_hi"):
        table[c] = pd.to_numeric(table[c], errors="coerce").astype("Int64")
    return table


def name(calibrator: str) -> str:
    """The calibrator's name in the figures (trustcal.reporting.figures.calibrators), else its key."""
    from trustcal.reporting.figures.calibrators import CALIBRATOR_NAMES

    return CALIBRATOR_NAMES.get(calibrator, calibrator)


def baseline_name(baseline: str = BASELINE) -> str:
    return "temperature scaling" if baseline == "temperature" else name(baseline)


def interval(estimate, lo, hi, signed: bool = True) -> str:
    """A difference, ``−0.0132 [−0.0178, −0.0086]`` (4 decimals, signed), or a win rate,
    ``0.83 [0.70, 0.93]`` (``signed`` False: 2 decimals); ``–`` without a value."""
    if estimate is None or not np.isfinite(estimate):
        return "–"
    f = (lambda x: f"{x:+.4f}".replace("-", "−")) if signed else (lambda x: f"{x:.2f}")
    tail = f" [{f(lo)}, {f(hi)}]" if lo is not None and np.isfinite(lo) else ""
    return f(estimate) + tail


def _where(cells: pd.DataFrame) -> str:
    """``NLL and Brier at the best-validation epoch and NLL at the last epoch``."""
    at = {p: [METRIC_NAMES.get(m, m) for m in cells.loc[cells["point"] == p, "metric"]] for p in POINTS}
    if at["best"] and at["best"] == at["last"]:
        return f"{listing(at['best'])} at the best-validation and the last epoch"
    return " and ".join(f"{listing(at[p])} at the {POINT_NAMES[p]}" for p in POINTS if at[p])


def _rank(r) -> str:
    return f"rank {r.rank_lo}" if r.rank_lo == r.rank_hi else f"rank {r.rank_lo}–{r.rank_hi}"


def summary_line(ranking: Ranking, baseline: str = BASELINE) -> str:
    """One line: the calibrators whose test NLL, ECE or Brier score is lower than ``baseline``'s (paired
    interval wholly below 0) and where, the runs where none is; the test-NLL win rates of the first and of
    ``baseline``, and those against ``baseline`` whose interval lies above ½."""
    table = frame(ranking)
    titles, base = ranking.runs, baseline_name(baseline)
    diff = table[table["table"] == "difference"]
    better = diff[diff["verdict"] == BETTER]
    runs = [r for r in titles if r in set(diff["run"])]
    found = []
    for c in in_order(better["calibrator"].unique()):
        cells = better[better["calibrator"] == c]
        found += [
            f"{name(c)} on {titles[r]} ({_where(cells[cells['run'] == r])})" for r in runs if r in set(cells["run"])
        ]
    quiet = [titles[r] for r in runs if r not in set(better["run"])]
    text = f"**Which calibrators beat {base}.**"
    if runs:
        text += (
            f" Lower test NLL, ECE or Brier score than {base} (paired 95 % interval over seeds and test-set "
            "resamples below 0, at the best-validation or the last epoch): "
        )
        if found:
            text += "; ".join(found) + (f"; none on {listing(quiet).replace(' and ', ' or ')}" if quiet else "")
        else:
            text += f"none, on any run ({listing([titles[r] for r in runs])})"
        text += "."
    wins = table[(table["table"] == "win_rate") & (table["run"] == ALL)]
    others = wins[wins["against"] == OTHERS].sort_values(["rank", "estimate"], ascending=[True, False])
    if len(others):
        n = int(others["prediction_sets"].max())
        shown = [r for r in others.itertuples() if r.rank == 1 or r.calibrator == baseline]
        rates = ", ".join(
            f"{name(r.calibrator) if r.calibrator != baseline else base} {interval(r.estimate, r.lo, r.hi, False)}"
            f" ({_rank(r)})"
            for r in shown
        )
        text += f" Test-NLL win rate against every other calibrator over {n} prediction sets: {rates}"
        vs = wins[wins["against"] == baseline].sort_values("estimate", ascending=False)
        if len(vs):
            ahead = vs[vs["verdict"] == BETTER]
            listed = ", ".join(
                f"{name(r.calibrator)} {interval(r.estimate, r.lo, r.hi, False)}"
                for r in (ahead if len(ahead) else vs.head(1)).itertuples()
            )
            text += f"; against {base} alone, above ½ for " + (listed if len(ahead) else f"none (highest: {listed})")
        text += "."
    return text.removesuffix(".") + " ([ranking](results/study/calibrator_ranking.md))."


def _difference_lines(run: str, d, title: str, seeds: Mapping[int, int]) -> list[str]:
    """The section of one run in :func:`ranking_markdown`: its differences at the best-validation and last epoch."""
    epochs = {p: int(d.loc[d["point"] == p, "epoch"].iloc[0]) for p in POINTS}
    own = f" (the seeds' own: {', '.join(str(e) for _, e in sorted(seeds.items()))})" if seeds else ""
    n = d["seeds"].dropna()
    lines = [
        f"### {title}",
        "",
        f"{int(n.max()) if len(n) else '?'} seeds; best validation: epoch {epochs['best']}{own}; last: epoch "
        f"{epochs['last']}; every epoch: [{run}_paired.csv.gz]({run}_paired.csv.gz).",
        "",
    ]
    metrics = [m for m in METRICS if m in set(d["metric"])]
    header = ["calibrator"] + [
        f"test {METRIC_NAMES.get(m, m)}, epoch {epochs[p]} ({'best' if p == 'best' else 'last'})"
        for m in metrics
        for p in POINTS
    ]
    cells = d.set_index(["calibrator", "metric", "point"])
    rows = []
    for c in in_order(d["calibrator"].unique()):
        row = [name(c)]
        for m in metrics:
            for p in POINTS:
                r = cells.loc[(c, m, p)]
                mark = {BETTER: " **better**", WORSE: " *worse*"}.get(r["verdict"], "")
                row.append(interval(r["estimate"], r["lo"], r["hi"]) + mark)
        rows.append(row)
    lines += [*md_table(header, rows), ""]
    return lines


def _win_rate_lines(table, titles: Mapping[str, str], baseline: str) -> list[str]:
    """The ranking section of :func:`ranking_markdown` (none without win rates)."""
    lines: list[str] = []
    wins = table[table["table"] == "win_rate"]
    overall = wins[(wins["run"] == ALL) & (wins["against"] == OTHERS)]
    if len(overall):
        vs = wins[wins["against"] == baseline].set_index(["run", "calibrator"])
        per_run = wins[wins["against"] == OTHERS].set_index(["run", "calibrator"])
        runs = [r for r in titles if r in set(wins["run"])]
        n, g = int(overall["prediction_sets"].max()), int(overall["clusters"].max())
        sizes = sorted({int(x) for x in wins.loc[wins["run"] != ALL, "clusters"].dropna()})
        seeds = f"{sizes[0]} to {sizes[-1]}" if len(sizes) > 1 else str(sizes[0]) if sizes else "none"
        lines += [
            "## Ranking by test-NLL win rate",
            "",
            f"Prediction sets: every (run, seed, epoch) with the epoch the seed's own best-validation epoch or "
            f"the last (one set where the two coincide): {n} sets from {g} (run, seed) clusters. *Win rate*: the "
            "share of (prediction set, other calibrator) pairs in which the calibrator's test NLL is lower, a tie "
            f"counting ½, as CalArena reports it; *against {baseline_name(baseline)}*: the share of prediction sets in "
            f"which it is lower than {baseline_name(baseline)}'s, **above ½** where its interval lies wholly above "
            "½ (`better` in the table's `verdict`), *below ½* wholly below. In brackets the 95 % percentile "
            f"interval of a bootstrap over (run, seed) clusters ({RESAMPLES:,} resamples, fixed seed); *rank, "
            f"95 %*: the same bootstrap's interval of the rank. Per run, the clusters are that run's seeds "
            f"({seeds}: a rough interval). docs/method.md §12.8 gives the method and its limits.",
            "",
        ]
        header = [
            "rank",
            "calibrator",
            "win rate, all runs",
            "rank, 95 %",
            f"against {baseline_name(baseline)}, all runs",
        ]
        header += [f"win rate, {titles[r]}" for r in runs if r != ALL]
        rows = []
        for r in overall.sort_values(["rank", "estimate"], ascending=[True, False]).itertuples():
            against = (
                interval(*vs.loc[(ALL, r.calibrator), ["estimate", "lo", "hi"]], signed=False)
                if (ALL, r.calibrator) in vs.index
                else "–"
            )
            mark = {BETTER: " **above ½**", WORSE: " *below ½*"}.get(
                vs.loc[(ALL, r.calibrator), "verdict"] if (ALL, r.calibrator) in vs.index else "", ""
            )
            row = [str(r.rank), name(r.calibrator), interval(r.estimate, r.lo, r.hi, signed=False)]
            row += [f"{r.rank_lo}–{r.rank_hi}" if r.rank_lo != r.rank_hi else str(r.rank_lo), against + mark]
            for run in (x for x in runs if x != ALL):
                at = per_run.loc[(run, r.calibrator)] if (run, r.calibrator) in per_run.index else None
                row.append("–" if at is None else interval(at["estimate"], at["lo"], at["hi"], signed=False))
            rows.append(row)
        lines += [*md_table(header, rows), ""]
    return lines


def ranking_markdown(ranking: Ranking, best: Mapping[str, Mapping[int, int]], baseline: str = BASELINE) -> str:
    """``calibrator_ranking.md``: the summary, the figure, per run the differences from ``baseline`` at the
    best-validation and last epoch, then the win-rate ranking (``best``: run → seed → its own best epoch)."""
    table = frame(ranking)
    titles = ranking.runs
    diff = table[table["table"] == "difference"]
    lines = [
        f"# Which calibrator wins: every calibrator against {baseline_name(baseline)}",
        "",
        "<!-- generated by workflow/scripts/study_report.py from results/study/; do not edit -->",
        "",
        summary_line(ranking, baseline).replace("](results/study/", "]("),
        "",
        "![Differences from temperature scaling per run, and test-NLL win rates](calibrator_ranking.png)",
        "",
        f"## Differences from {baseline_name(baseline)}",
        "",
        f"Each cell: the calibrator's test score minus {baseline_name(baseline)}'s, mean over seeds, with its "
        "paired 95 % interval over seeds and test-set resamples (docs/method.md §12); **better** where the "
        "interval lies wholly below 0 (lower is better for the three scores), *worse* wholly above, otherwise "
        "no difference at the interval. The paired table is per epoch, so the best-validation epoch is the "
        "one of the lowest validation loss averaged over seeds; each seed's own is given beside it. Every "
        "row in [calibrator_ranking.csv](calibrator_ranking.csv); every epoch in each run's paired table.",
        "",
    ]
    for run in (r for r in titles if r in set(diff["run"])):
        lines += _difference_lines(run, diff[diff["run"] == run], titles[run], best.get(run, {}))
    lines += _win_rate_lines(table, titles, baseline)
    return "\n".join(lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- the files


def ranking_of(out: Path, runs: Mapping[str, str], **kw) -> tuple[Ranking, dict[str, dict[int, int]]]:
    """The :class:`~trustcal.study.report.Ranking` of the runs ``runs`` (run → title) from their tables in
    ``out``, and each run's seeds' own best-validation epochs. Runs without a scores table, or with fewer
    than two calibrators besides the raw model, are left out."""
    tables, best = {}, {}
    for run in runs:
        if not (out / f"{run}_scores.csv.gz").exists():
            continue
        t = read_run(out, run)
        if "calibrator" not in t.scores or t.scores["calibrator"].nunique() <= 2:
            continue
        tables[run], best[run] = t, seed_best_epochs(t.history)
    table = ranking_table(tables, **kw)
    rows = table.astype(object).where(table.notna(), None).to_dict("records")
    return Ranking(runs={r: runs[r] for r in tables}, rows=rows), best
