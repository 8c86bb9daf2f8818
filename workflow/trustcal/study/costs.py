"""What each job of a finished run cost, from Snakemake's benchmark files ``results/benchmarks/``: one row
per job (:func:`read_costs`), sums and maxima per rule and dataset (:func:`cost_summary`), their Markdown
(:func:`cost_lines`) and the files ``costs.csv``, ``costs_summary.csv`` and ``costs.md`` (:func:`write_costs`)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.errors import TrustcalError
from trustcal.files import atomic_path
from trustcal.study.markdown import duration, md_table
from trustcal.study.names import title

# Snakemake's benchmark columns (snakemake.benchmark.BenchmarkRecord): s = wall seconds, max_rss = peak
# resident memory in MiB (bytes / 1024²), cpu_time = user + system CPU seconds of the job and its children.
BENCHMARK_COLUMNS = ("s", "max_rss", "cpu_time")
MIB = 1.048576  # MB per MiB: Snakemake's mem_mb counts MB
COST_COLUMNS = ("rule", "dataset", "seed", "calibrator", "wall_s", "cpu_s", "max_rss_mb", "file")
COST_SUMS = ("wall_s", "cpu_s")  # summed over jobs; max_rss_mb: a per-job peak, only its max is meaningful
TOTAL = "total"  # the `rule` / `dataset` of the summary's rows over every rule / dataset
SEED_RE = re.compile(r"seed(\d+)|seeds")


def _benchmark_key(rel: Path) -> dict:
    """rule, dataset, seed and calibrator of a benchmark file from its path under results/benchmarks/,
    which mirrors the rule's log path (workflow/rules/*.smk): ``{rule}/{dataset}/seed{seed}/{calibrator}.tsv``,
    ``{rule}/{dataset}/seed{seed}.tsv``, ``{rule}/{dataset}/seeds.tsv`` (every seed trained together:
    seed empty), ``{rule}/{dataset}.tsv`` (one job per dataset; ``external/{name}.tsv``: the prediction
    set's name) and ``{rule}/{rule}.tsv`` (one job for the run)."""
    rule, *parts = rel.with_suffix("").parts
    key = {"rule": rule, "dataset": None, "seed": None, "calibrator": None}
    if parts == [rule]:
        return key
    at = next((i for i, p in enumerate(parts) if SEED_RE.fullmatch(p)), None)
    if at is None:
        dataset, after = parts[0], parts[1:]
    else:
        dataset, after = "/".join(parts[:at]) or None, parts[at + 1 :]
        key["seed"] = SEED_RE.fullmatch(parts[at]).group(1)
    if len(after) > 1:
        raise TrustcalError(
            f"{Path('benchmarks') / rel}: not a benchmark path of this workflow "
            "({rule}/{dataset}/seed{seed}[/{calibrator}].tsv); delete it"
        )
    key["dataset"] = dataset
    key["calibrator"] = after[0] if after else None
    return key


def read_costs(results: Path) -> pd.DataFrame:
    """What every job of a finished run cost, from Snakemake's benchmark files ``results/benchmarks/**/*.tsv``
    (the ``benchmark:`` of every rule): one row per job with its rule and wildcards (dataset, seed,
    calibrator; empty where the job has none) and ``wall_s`` (Snakemake's ``s``), ``cpu_s``
    (``cpu_time``: user + system seconds of the job and its children) and ``max_rss_mb`` (``max_rss``,
    MiB → MB: comparable with a rule's ``mem_mb``). A job benchmarked with ``repeat()`` counts the mean
    of its wall and CPU seconds and the largest peak.

    Snakemake samples memory and CPU every 0.5 s for the first 15 s of a job and every 30 s after that:
    a peak between two samples is missed, and the CPU seconds are those of the last sample (up to 30 s
    short for a long job); ``NA`` (nothing sampled) is kept as missing. A job run again records its
    last execution only (training resumed after ``epochs`` was raised: the new epochs only).
    """
    root = results / "benchmarks"
    files = sorted(root.rglob("*.tsv"))
    if not files:
        raise TrustcalError(
            f"{root}: no benchmark files ({{rule}}/…/*.tsv); run the workflow (every rule has a "
            "benchmark:), then read its costs"
        )
    rows = []
    for path in files:
        rel = path.relative_to(root)
        rule = rel.parts[0]
        hint = f"delete it and rerun rule '{rule}'"
        try:
            df = pd.read_csv(path, sep="\t", na_values=["NA", "-"])
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise TrustcalError(f"{path}: unreadable benchmark file ({exc}); {hint}.", rerun=rule) from None
        missing = [c for c in BENCHMARK_COLUMNS if c not in df.columns]
        if missing or df.empty:
            what = f"missing column(s) {missing}" if missing else "no row"
            raise TrustcalError(f"{path}: not a Snakemake benchmark file ({what}); {hint}.", rerun=rule)
        values = df[list(BENCHMARK_COLUMNS)].apply(pd.to_numeric, errors="coerce")
        rows.append(
            {
                **_benchmark_key(rel),
                "wall_s": values["s"].mean(),
                "cpu_s": values["cpu_time"].mean(),
                "max_rss_mb": values["max_rss"].max() * MIB,
                "file": f"benchmarks/{rel.as_posix()}",
            }
        )
    costs = pd.DataFrame(rows, columns=list(COST_COLUMNS))
    costs["seed"] = pd.to_numeric(costs["seed"]).astype("Int64")
    return costs.sort_values(["rule", "dataset", "seed", "calibrator"], na_position="first", ignore_index=True)


def _sum_measured(values: pd.Series) -> float:
    """The sum of the measured values; missing when none was measured (not 0)."""
    return values.sum(min_count=1)


def cost_summary(costs: pd.DataFrame) -> pd.DataFrame:
    """Per rule × dataset, per rule (dataset ``total``), per dataset (rule ``total``) and for the whole
    run (both ``total``): ``jobs``; the sum and the largest job of ``wall_s`` and ``cpu_s``; the largest
    ``max_rss_mb``. Sums and maxima are over the jobs measured (a value Snakemake did not sample is left out). A job with no dataset (the verdict) counts in its rule's and the run's rows only.

    The sums are the time the jobs took one after another; the run's wall time is shorter by what ran
    at once. The maxima are what one job asks for: ``runtime`` ≥ ``wall_s_max`` / 60 and
    ``mem_mb`` ≥ ``max_rss_mb_max``.
    """
    agg = {"jobs": ("wall_s", "size")}
    for col in COST_SUMS:
        agg[f"{col}_sum"] = (col, _sum_measured)
        agg[f"{col}_max"] = (col, "max")
    agg["max_rss_mb_max"] = ("max_rss_mb", "max")
    df = costs.assign(dataset=costs["dataset"].fillna(""))
    parts = [
        df.groupby(["rule", "dataset"], sort=True).agg(**agg).reset_index(),
        df.groupby("rule", sort=True).agg(**agg).reset_index().assign(dataset=TOTAL),
        df[df["dataset"] != ""].groupby("dataset", sort=True).agg(**agg).reset_index().assign(rule=TOTAL),
        df.assign(rule=TOTAL, dataset=TOTAL).groupby(["rule", "dataset"]).agg(**agg).reset_index(),
    ]
    summary = pd.concat(parts, ignore_index=True)[["rule", "dataset", *agg]]
    summary["dataset"] = summary["dataset"].replace("", None)
    return summary


def cost_lines(summary: pd.DataFrame, epoch_seconds: float = 0.0) -> list[str]:
    """The markdown account of :func:`cost_summary`: one row per rule (its jobs of every dataset),
    the total of each dataset and of the run, and how training compares with everything else.

    ``epoch_seconds``: the epochs' own seconds in every seed's history.csv. When the ``train`` jobs took
    less than half of that, they resumed from checkpoints an earlier invocation wrote (their benchmark
    counts only this invocation), and the comparison is made with the epochs' seconds instead."""
    header = ["rule", "jobs", "wall, sum", "wall, largest job", "CPU, sum", "CPU, largest job", "peak memory"]

    def row(r, name):
        return [
            name,
            str(int(r.jobs)),
            duration(r.wall_s_sum),
            duration(r.wall_s_max),
            duration(r.cpu_s_sum),
            duration(r.cpu_s_max),
            "–" if not np.isfinite(r.max_rss_mb_max) else f"{r.max_rss_mb_max:,.0f} MB",
        ]

    per_rule = summary[(summary["dataset"] == TOTAL) & (summary["rule"] != TOTAL)]
    per_rule = per_rule.sort_values("wall_s_sum", ascending=False)
    datasets = summary[(summary["rule"] == TOTAL) & (summary["dataset"] != TOTAL)]
    total = summary[(summary["rule"] == TOTAL) & (summary["dataset"] == TOTAL)].iloc[0]
    rows = [row(r, f"`{r.rule}`") for r in per_rule.itertuples()]
    rows += [row(r, f"all rules, {title(r.dataset)}") for r in datasets.itertuples()]
    rows.append(row(total, "**all rules**"))
    lines = md_table(header, rows)
    train, rest = training_share(summary)
    if line := training_line(train, rest, epoch_seconds):
        lines += ["", line]
    return lines


def training_share(summary: pd.DataFrame) -> tuple[float, float]:
    """(job wall seconds of rule ``train``, of every other rule) from :func:`cost_summary`."""
    per_rule = summary[(summary["dataset"] == TOTAL) & (summary["rule"] != TOTAL)]
    total = summary[(summary["rule"] == TOTAL) & (summary["dataset"] == TOTAL)].iloc[0]
    train = float(per_rule.loc[per_rule["rule"] == "train", "wall_s_sum"].sum())
    return train, float(total.wall_s_sum) - train


def training_line(train: float, rest: float, epoch_seconds: float = 0.0) -> str | None:
    """How the training jobs' wall time (``train``) compares with every other rule's (``rest``); with the
    epochs' own seconds (``epoch_seconds``) when the train jobs took less than half of them (they resumed
    from checkpoints an earlier invocation wrote). None when neither is known."""
    if train > 0 and train >= epoch_seconds / 2:
        return (
            f"Job wall time of training (`train`): {duration(train)}; of every other rule: {duration(rest)} "
            f"({rest / train:.2f} × the training)."
        )
    if epoch_seconds > 0:
        return (
            f"Job wall time of training (`train`): {duration(train)} in the last invocation, whose train jobs "
            "resumed from checkpoints that earlier invocations wrote; the epochs' own seconds in every seed's "
            f"history.csv: {duration(epoch_seconds)}. Job wall time of every other rule: {duration(rest)} "
            f"({rest / epoch_seconds:.2f} × the epochs' training time)."
        )
    return None


def write_costs(results: Path, out: Path) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """``out/costs.csv`` (one row per job: :func:`read_costs`), ``out/costs_summary.csv``
    (:func:`cost_summary`) and ``out/costs.md`` (:func:`cost_lines`) from ``results/benchmarks/``."""
    costs = read_costs(results)
    summary = cost_summary(costs)
    epoch_seconds = history_seconds(sorted(results.glob("*/seed*/history.csv")))
    lines = cost_lines(summary, epoch_seconds)
    for df, name in ((costs, "costs.csv"), (summary, "costs_summary.csv")):
        with atomic_path(out / name) as tmp:
            df.to_csv(tmp, index=False, float_format="%.6g")
    with atomic_path(out / "costs.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return costs, summary, lines


def history_seconds(paths) -> float:
    """The epochs' own seconds (column ``seconds``) summed over the ``history.csv`` files ``paths``."""
    return sum(seed_seconds(paths))


def seed_seconds(paths) -> list[float]:
    """The epochs' own seconds (column ``seconds``) of each ``history.csv`` of ``paths``, summed per file."""
    return [float(pd.to_numeric(pd.read_csv(h)["seconds"], errors="coerce").sum()) for h in paths]


def training_makespan(seconds, slots: int) -> float:
    """The wall time of training jobs of ``seconds`` each on ``slots`` jobs side by side, each next job
    started on the slot that frees first, longest first (LPT; for a few long jobs, as here, the shortest
    schedule): the time training alone takes on the run's job slots."""
    finish = [0.0] * max(1, int(slots))
    for job in sorted(seconds, reverse=True):
        finish[finish.index(min(finish))] += job
    return max(finish)
