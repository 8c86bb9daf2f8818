"""The README's account of the real study, regenerated from a finished run of the workflow.

``python workflow/scripts/study_report.py RUN_DIR`` reads ``RUN_DIR/results/`` (a run of the
paper's configuration, e.g. ``snakemake --cores 2 --configfile config.yaml workflow/study/config.yaml``)
and writes ``results/study/`` in this repository: the figures shown in the README, the per-epoch
tables they come from (gzipped CSV, one row per seed and epoch), the verdict, the verdict on the
author's published predictions, and ``study.md``, which is also put into README.md between the
``<!-- study:begin -->`` and ``<!-- study:end -->`` markers. Nothing in that block is typed by hand.
"""

from __future__ import annotations

import datetime as dt
import platform
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.calibration import METHODS
from trustcal.errors import TrustcalError
from trustcal.files import atomic_path, paper_states, read_seeds, temperature_rows
from trustcal.reporting.verdict import NOT_COMPARABLE, REPRODUCED, TENSIONS, invariance_note, load_runs
from trustcal.training.history import best_epoch

DATASET_NAMES = {"mnist": "MNIST", "cifar10": "CIFAR-10"}
FIGURES = ("trust_grid", "loss_curves", "calibration_metrics", "reliability", "network_opinion")
FIGURE_TITLES = {
    "trust_grid": "Trust opinion per label, before and after calibration (paper Fig. {fig})",
    "loss_curves": "Training and validation loss (paper Fig. 3{panel})",
    "calibration_metrics": "Accuracy, ECE, NLL, Brier, NetTrustScore and temperature per epoch",
    "reliability": "Reliability diagrams at the first, best-validation and last epoch",
    "network_opinion": "Network opinion per epoch",
}
TABLES = {  # table → columns kept in results/study/ (the figures' and the summary's inputs)
    "history": ("epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "seconds"),
    "calibration": ("epoch", "calibrator", "temperature", "val_nll_before", "val_nll_after", "at_bound"),
    "trust": (
        "epoch",
        "calibrator",
        "label",
        "belief",
        "disbelief",
        "uncertainty",
        "positive_evidence",
        "negative_evidence",
        "belief_lo",
        "belief_hi",
    ),
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
        "nll_lo",
        "nll_hi",
        "ece_lo",
        "ece_hi",
    ),
}
BEGIN, END = "<!-- study:begin -->", "<!-- study:end -->"
CIFAR_NOTE = (
    "CIFAR-10 here is rebuilt from JPEG copies of the images (quality 75; `../shared/datasets/"
    "cifar10-jpeg`), not the official pixels: expect accuracies within about a point of the official data"
)


def _runs(results: Path) -> dict[str, list[int]]:
    runs: dict[str, list[int]] = {}
    for path in sorted(results.glob("*/seed*/trust.csv")):
        runs.setdefault(path.parent.parent.name, []).append(int(path.parent.name[4:]))
    if not runs:
        raise TrustcalError(
            f"{results}: no finished run (results/{{dataset}}/seed{{N}}/trust.csv); run the workflow first"
        )
    return {ds: sorted(s) for ds, s in sorted(runs.items(), key=lambda kv: list(DATASET_NAMES).index(kv[0]))}


def _table(results: Path, ds: str, seeds, name: str) -> pd.DataFrame:
    df = read_seeds([results / ds / f"seed{s}" / f"{name}.csv" for s in seeds], TABLES[name][:1], rule=name)
    return df[["seed", *[c for c in TABLES[name] if c in df.columns]]]


def _ms(values) -> str:
    v = np.asarray(values, dtype=float)
    if len(v) == 1:
        return f"{v[0]:.3f}"
    return f"{v.mean():.3f} ± {v.std(ddof=1):.3f}"


def metrics_rows(scores: pd.DataFrame, calibration: pd.DataFrame, history: pd.DataFrame) -> list[list[str]]:
    """First, best-validation and last epoch: test accuracy, NLL and ECE before → after, T (mean ± sd over seeds)."""
    best = {int(s): best_epoch(h) for s, h in history.groupby("seed")}
    last = int(history["epoch"].max())
    test = paper_states(scores[scores["split"] == "test"])
    calibration = temperature_rows(calibration)
    rows = []
    for label, epoch_of in (
        ("epoch 1", lambda s: 1),
        ("best validation loss", lambda s: best[s]),
        (f"epoch {last}", lambda s: last),
    ):
        picked = [(s, epoch_of(s)) for s in sorted(best)]

        def values(col, calibrated, table=test, picked=picked):
            return [
                float(
                    table[(table["seed"] == s) & (table["epoch"] == e) & (table["calibrated"] == calibrated)][col].iloc[
                        0
                    ]
                )
                for s, e in picked
            ]

        temps = [
            float(calibration[(calibration["seed"] == s) & (calibration["epoch"] == e)]["temperature"].iloc[0])
            for s, e in picked
        ]
        epochs = sorted({e for _, e in picked})
        where = label if label != "best validation loss" else f"{label} (epoch {', '.join(map(str, epochs))})"
        rows.append(
            [
                where,
                _ms(values("accuracy", False)),
                f"{_ms(values('nll', False))} → {_ms(values('nll', True))}",
                f"{_ms(values('ece', False))} → {_ms(values('ece', True))}",
                _ms(temps),
            ]
        )
    return rows


def _seed_values(table: pd.DataFrame, picked, calibrator: str, col: str) -> np.ndarray:
    """``col`` of ``calibrator`` at each (seed, epoch) of ``picked``."""
    t = table[table["calibrator"] == calibrator].set_index(["seed", "epoch"])
    return np.array([float(t.at[(s, e), col]) if (s, e) in t.index else np.nan for s, e in picked])


def _with_interval(table: pd.DataFrame, picked, calibrator: str, col: str) -> str:
    """mean ± sd over seeds, and the seed-mean of the bootstrap interval in brackets."""
    text = _ms(_seed_values(table, picked, calibrator, col))
    if f"{col}_lo" in table:
        lo = _seed_values(table, picked, calibrator, f"{col}_lo").mean()
        hi = _seed_values(table, picked, calibrator, f"{col}_hi").mean()
        if np.isfinite(lo):
            text += f" [{lo:.3f}, {hi:.3f}]"
    return text


def calibrator_rows(scores: pd.DataFrame, trust: pd.DataFrame, history: pd.DataFrame) -> list[list[str]]:
    """Per calibrator: test ECE, smooth ECE and NLL at the best-validation and last epochs (with
    intervals), how the per-label trust compares with the raw model's, and how steady it is."""
    best = {int(s): best_epoch(h) for s, h in history.groupby("seed")}
    last = int(history["epoch"].max())
    at_best = [(s, best[s]) for s in sorted(best)]
    at_last = [(s, last) for s in sorted(best)]
    test = scores[scores["split"] == "test"]
    labels = trust[trust["label"].astype(str) != "network"]
    belief = labels.groupby(["seed", "calibrator", "epoch"])["belief"].mean().unstack("calibrator")
    late = belief[belief.index.get_level_values("epoch") >= min(20, last)]
    order = [c for c in METHODS if c in belief]
    rows = []
    for c in order:
        gap = (belief[c] - belief["none"]).groupby("seed").min()  # after − before, lowest over epochs
        spread = late[c].groupby("seed").agg(lambda v: v.max() - v.min())
        rows.append(
            [
                f"`{c}`",
                _with_interval(test, at_best, c, "ece"),
                _with_interval(test, at_last, c, "ece"),
                _ms(_seed_values(test, at_last, c, "smece")) if "smece" in test else "–",
                _with_interval(test, at_last, c, "nll"),
                _ms(late[c].groupby("seed").mean().to_numpy()),
                "–" if c == "none" else _ms(gap.to_numpy()),
                _ms(spread.to_numpy()),
            ]
        )
    return rows


def separated_epochs(scores: pd.DataFrame, col: str = "ece", against: str = "none") -> dict[str, tuple[int, int, int]]:
    """Per calibrator: (epochs × seeds where its test ``col`` interval lies wholly below ``against``'s,
    wholly above it, all epochs × seeds). Non-overlapping 95 % intervals: a conservative test of the
    difference."""
    test = scores[scores["split"] == "test"].set_index(["seed", "epoch", "calibrator"])
    out = {}
    if f"{col}_lo" not in test:
        return out
    base = test.xs(against, level="calibrator")
    for c in test.index.get_level_values("calibrator").unique():
        if c == against:
            continue
        other = test.xs(c, level="calibrator").reindex(base.index)
        below = int((other[f"{col}_hi"] < base[f"{col}_lo"]).sum())
        above = int((other[f"{col}_lo"] > base[f"{col}_hi"]).sum())
        out[str(c)] = (below, above, len(base))
    return out


CALIBRATOR_FIGURES = {
    "calibrator_trust": "Trust opinion per epoch for every calibrator, with bootstrap bands",
    "calibrator_metrics": "ECE, smooth ECE, NLL and Brier per epoch for every calibrator, with bootstrap bands",
    "calibrator_reliability": "Reliability of every calibrator at the best-validation epoch",
}


def calibrator_findings(scores: pd.DataFrame, trust: pd.DataFrame) -> list[str]:
    """The two questions, answered from the tables: does every calibrator raise the per-label trust
    above the raw model's at every epoch (the paper's claim for temperature scaling), and at how many
    epochs is its test ECE below the raw model's with non-overlapping intervals."""
    labels = trust[trust["label"].astype(str) != "network"]
    belief = labels.groupby(["seed", "calibrator", "epoch"])["belief"].mean().unstack("calibrator")
    fitted = [c for c in METHODS[1:] if c in belief.columns]
    gaps = {c: (belief[c] - belief["none"]).groupby("seed").min() for c in fitted}
    above = [c for c in fitted if (gaps[c] > 0).all()]
    below = [c for c in fitted if (gaps[c] < 0).all()]
    order = sorted(fitted, key=lambda c: gaps[c].mean())
    out = [
        "per-label trust above the raw model's at every epoch in every seed (what the paper says of "
        "temperature scaling): "
        + (", ".join(f"`{c}`" for c in above) if above else "no calibrator")
        + f"; below it at some epoch in every seed: {', '.join(f'`{c}`' for c in below) or 'no calibrator'} "
        "(lowest difference over epochs, mean over seeds: "
        + ", ".join(f"`{c}` {gaps[c].mean():+.3f}" for c in order)
        + ")."
    ]
    sep = separated_epochs(scores)
    if sep:
        out.append(
            "Test ECE below the raw model's with non-overlapping 95 % intervals, in epochs × seeds: "
            + ", ".join(f"`{c}` {b} of {n}" for c, (b, _, n) in sep.items())
            + "; above it: "
            + ", ".join(f"`{c}` {a}" for c, (_, a, _) in sep.items())
            + "."
        )
    return out


def calibrator_section(results: Path, ds: str, tables: dict[str, pd.DataFrame], out: Path) -> list[str]:
    """The comparison of every calibrator with the raw model, when the run fitted more than temperature scaling."""
    scores, trust, history = tables["scores"], tables["trust"], tables["history"]
    if "calibrator" not in scores or scores["calibrator"].nunique() <= 2:
        return []
    name = DATASET_NAMES[ds]
    header = [
        "calibrator",
        "test ECE, best epoch",
        "test ECE, last epoch",
        "smooth ECE, last epoch",
        "test NLL, last epoch",
        "label trust, epochs ≥ 20",
        "trust − raw, lowest over epochs",
        "trust range, epochs ≥ 20",
    ]
    lines = [
        f"#### {name}: every calibrator" + (" (JPEG-derived images)" if ds == "cifar10" else ""),
        "",
        *(f"- {f}" for f in calibrator_findings(scores, trust)),
        "",
        "Mean ± sd over seeds; in brackets the seed-mean of the 95 % bootstrap interval over "
        "resamples of the test set. *Label trust*: the belief of the per-label opinions, averaged over "
        "labels; *trust − raw*: that belief minus the raw model's at the same epoch, the lowest over all "
        "epochs (> 0: higher at every epoch, as the paper says of temperature scaling); *trust range*: "
        "its largest minus smallest value from epoch 20 on (small: steady, as the paper says).",
        "",
        *_md_table(header, calibrator_rows(scores, trust, history)),
        "",
    ]
    sep = separated_epochs(scores)
    if sep:
        lines += [
            "Test ECE against the raw model's, epoch by epoch (every epoch × seed): the calibrator's 95 % "
            "interval wholly below the raw model's / wholly above it / overlapping: "
            + "; ".join(f"`{c}` {b} / {a} / {n - a - b} of {n}" for c, (b, a, n) in sep.items())
            + ".",
            "",
        ]
    for fig, title in CALIBRATOR_FIGURES.items():
        src = results / "figures" / ds / f"{fig}.png"
        if src.exists():
            save_png(src, out / f"{ds}_{fig}.png")
            lines += [f"![{name}: {title}](results/study/{ds}_{fig}.png)", ""]
    return lines


def _md_table(header, rows) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows),
    ]


def _fmt(x) -> str:
    return "–" if not np.isfinite(x) else f"{x:.3g}"


def verdict_rows(table: pd.DataFrame) -> list[list[str]]:
    rows = []
    for r in table.itertuples():
        measured = _fmt(r.measured_mean) + (f" ± {_fmt(r.measured_sd)}" if np.isfinite(r.measured_sd) else "")
        interval = f"[{_fmt(r.interval_lo)}, {_fmt(r.interval_hi)}]" if np.isfinite(r.interval_lo) else "–"
        verdict = f"**{r.verdict}**" if r.verdict != NOT_COMPARABLE else r.verdict
        note = f" ({r.reason})" if r.reason and r.verdict in (NOT_COMPARABLE,) else ""
        seeds = f"; {r.seed_verdicts}" if isinstance(r.seed_verdicts, str) and r.seed_verdicts else ""
        rows.append(
            [
                f"{r.section}: {r.quote}<br>`{r.claim_id}`",
                r.paper,
                f"{measured} (n = {r.n_seeds})",
                interval,
                r.decision_rule.replace("interval ", ""),
                verdict + note + seeds,
            ]
        )
    return rows


def _counts(table: pd.DataFrame) -> str:
    c = table["verdict"].value_counts()
    return ", ".join(f"{c.get(v, 0)} {v}" for v in (REPRODUCED, "not reproduced", "inconclusive", NOT_COMPARABLE))


def wall_time(run_dir: Path) -> str:
    """The time Snakemake ran in ``run_dir``: over its logs that finished a job, first to last timestamp,
    added up (a run continued by a later invocation counts both, not the pause between them)."""
    minutes = 0.0
    for log in sorted((run_dir / ".snakemake" / "log").glob("*.snakemake.log")):
        text = log.read_text(errors="replace")
        if "Finished job" not in text:
            continue
        stamps = [
            dt.datetime.strptime(" ".join(m.split()), "%a %b %d %H:%M:%S %Y")
            for m in re.findall(r"^\[(\w{3} \w{3} +\d+ [\d:]{8} \d{4})\]", text, flags=re.M)
        ]
        if len(stamps) > 1:
            minutes += (max(stamps) - min(stamps)).total_seconds() / 60
    if not minutes:
        return "unknown"
    return f"{int(minutes // 60)} h {int(round(minutes % 60))} min" if minutes >= 60 else f"{minutes:.0f} min"


# --- What each job cost: results/benchmarks/ ------------------------------------------------------

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
        hint = f"delete it and rerun (snakemake --cores 2 --forcerun {rule})"
        try:
            df = pd.read_csv(path, sep="\t", na_values=["NA", "-"])
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise TrustcalError(f"{path}: unreadable benchmark file ({exc}); {hint}.") from None
        missing = [c for c in BENCHMARK_COLUMNS if c not in df.columns]
        if missing or df.empty:
            what = f"missing column(s) {missing}" if missing else "no row"
            raise TrustcalError(f"{path}: not a Snakemake benchmark file ({what}); {hint}.")
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


def _duration(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "–"
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(round(seconds % 3600 / 60)):02d} min"
    if seconds >= 60:
        return f"{int(seconds // 60)} min {int(round(seconds % 60)):02d} s"
    return f"{seconds:.1f} s"


def cost_lines(summary: pd.DataFrame) -> list[str]:
    """The markdown account of :func:`cost_summary`: one row per rule (its jobs of every dataset),
    the total of each dataset and of the run, and how training compares with everything else."""
    header = ["rule", "jobs", "wall, sum", "wall, largest job", "CPU, sum", "CPU, largest job", "peak memory"]

    def row(r, name):
        return [
            name,
            str(int(r.jobs)),
            _duration(r.wall_s_sum),
            _duration(r.wall_s_max),
            _duration(r.cpu_s_sum),
            _duration(r.cpu_s_max),
            "–" if not np.isfinite(r.max_rss_mb_max) else f"{r.max_rss_mb_max:,.0f} MB",
        ]

    per_rule = summary[(summary["dataset"] == TOTAL) & (summary["rule"] != TOTAL)]
    per_rule = per_rule.sort_values("wall_s_sum", ascending=False)
    datasets = summary[(summary["rule"] == TOTAL) & (summary["dataset"] != TOTAL)]
    total = summary[(summary["rule"] == TOTAL) & (summary["dataset"] == TOTAL)].iloc[0]
    rows = [row(r, f"`{r.rule}`") for r in per_rule.itertuples()]
    rows += [row(r, f"all rules, {DATASET_NAMES.get(r.dataset, r.dataset)}") for r in datasets.itertuples()]
    rows.append(row(total, "**all rules**"))
    lines = _md_table(header, rows)
    train = float(per_rule.loc[per_rule["rule"] == "train", "wall_s_sum"].sum())
    if train > 0:
        rest = float(total.wall_s_sum) - train
        lines += [
            "",
            f"Job wall time of training (`train`): {_duration(train)}; of every other rule: {_duration(rest)} "
            f"({rest / train:.2f} × the training).",
        ]
    return lines


def write_costs(results: Path, out: Path) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """``out/costs.csv`` (one row per job: :func:`read_costs`), ``out/costs_summary.csv``
    (:func:`cost_summary`) and ``out/costs.md`` (:func:`cost_lines`) from ``results/benchmarks/``."""
    costs = read_costs(results)
    summary = cost_summary(costs)
    lines = cost_lines(summary)
    for df, name in ((costs, "costs.csv"), (summary, "costs_summary.csv")):
        with atomic_path(out / name) as tmp:
            df.to_csv(tmp, index=False, float_format="%.6g")
    with atomic_path(out / "costs.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return costs, summary, lines


def cost_section(results: Path, out: Path) -> list[str]:
    """The README's account of what the run's jobs cost (:func:`write_costs`), or why there is none."""
    if not (results / "benchmarks").is_dir():
        return ["**Cost per rule.** Not recorded: this run wrote no `results/benchmarks/`.", ""]
    _, _, lines = write_costs(results, out)
    return [
        "**Cost per rule** (Snakemake's `benchmark:` of every job; one row per job in "
        "[results/study/costs.csv](results/study/costs.csv), sums and maxima per rule and dataset in "
        "[results/study/costs_summary.csv](results/study/costs_summary.csv); README: Running on a cluster "
        "says how to size requests from them):",
        "",
        *lines,
        "",
    ]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import os

    try:
        import torch

        torch_version = f", PyTorch {torch.__version__}"
    except ImportError:
        torch_version = ""
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}{torch_version}"


def _commit(run_dir: Path) -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=run_dir, capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def data_provenance(results: Path, datasets) -> list[str]:
    lines = []
    for ds in datasets:
        manifest = results / "data" / ds / "raw_manifest.tsv"
        if not manifest.exists():
            lines.append(f"{DATASET_NAMES[ds]}: no raw_manifest.tsv")
            continue
        m = pd.read_csv(manifest, sep="\t")
        how = m["verified"].value_counts().to_dict() if "verified" in m else {"(not recorded)": len(m)}
        text = ", ".join(f"{n} file{'s' if n > 1 else ''} {k}" for k, n in how.items())
        extra = f" — {CIFAR_NOTE}" if ds == "cifar10" else " — the official data (contents md5-identical)"
        lines.append(f"{DATASET_NAMES[ds]}: {text}{extra}.")
    return lines


def save_png(src: Path, dst: Path) -> None:
    """A 128-colour copy (a few hundred KB instead of a few MB) for the repository."""
    from PIL import Image

    im = Image.open(src).convert("RGB")
    with atomic_path(dst) as tmp:
        im.quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            tmp, format="PNG", optimize=True
        )


def author_verdicts(author_dir: Path, out: Path) -> dict[str, pd.DataFrame]:
    """The paper's claims judged on the author's published predictions (trustcal assess --paper-claims)."""
    from trustcal.assessment import assess_to_dir

    tables = {}
    for ds, folder in (("mnist", "MNIST_PRED"), ("cifar10", "CIFAR_PRED")):
        source = author_dir / folder
        if not source.exists():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            assess_to_dir([source], Path(tmp) / "a", figures=False, paper_claims=ds)
            for ext in ("md", "csv"):
                shutil.copy(Path(tmp) / "a" / f"reproduction.{ext}", out / f"author_{ds}_verdict.{ext}")
        tables[ds] = pd.read_csv(out / f"author_{ds}_verdict.csv")
    return tables


FINDINGS = (  # (sentence with {claim_id} fields: our mean ± sd and verdict, claims it needs)
    "MNIST after calibration: per-label trust {mnist_trust_after} and disbelief {mnist_disbelief_after}, as the paper "
    "says (≈ 0.65 / ≈ 0.35); these levels are what Algorithm 1 gives any accurate, confident classifier with "
    "M = K = 10 (2M/(2M + K) = 0.667, README: Reproduction notes).",
    "MNIST before calibration: trust does not fall over training (last epochs minus epoch 1: "
    "{mnist_trust_falls_before}; the paper: it decreases), and the losses are not close (final validation − "
    "training gap {mnist_little_overfitting} nats): §7.1 and §7.3 cannot both hold.",
    "CIFAR-10 (JPEG-derived images) before calibration, from epoch 20 on: trust {cifar10_trust_before_late} "
    "(paper 0.48) and "
    "disbelief {cifar10_disbelief_before_late} (paper 0.58). The paper's before-calibration CIFAR-10 numbers "
    "are not those of a real run of its CNN; they match the author's published files whose probabilities went "
    "through softmax twice (below).",
    "After calibration trust is not above the before-calibration trust at every epoch, as the paper says: the "
    "smallest after − before difference is negative (MNIST {mnist_trust_after_above_before}, CIFAR-10 (JPEG-derived) "
    "{cifar10_trust_after_above_before}), while temperature scaling does lower the ECE (tables above).",
)


def findings(table: pd.DataFrame) -> list[str]:
    """The headline numbers, each sentence filled in from the verdict (skipped when a claim is missing)."""
    by_id = table.set_index("claim_id")
    out = []
    for sentence in FINDINGS:
        ids = re.findall(r"{(\w+)}", sentence)
        if not all(i in by_id.index and np.isfinite(by_id.at[i, "measured_mean"]) for i in ids):
            continue
        values = {}
        for i in ids:
            r = by_id.loc[i]
            sd = f" ± {_fmt(r['measured_sd'])}" if np.isfinite(r["measured_sd"]) else ""
            values[i] = f"{_fmt(r['measured_mean'])}{sd} ({r['verdict']})"
        out.append(sentence.format(**values))
    return out


def write_study(run_dir: Path, repo: Path, author_dir: Path | None, command: str, remark: str = "") -> str:
    """Everything under ``repo/results/study/`` and the README block; returns the block."""
    results = run_dir / "results"
    out = repo / "results" / "study"
    out.mkdir(parents=True, exist_ok=True)
    runs = _runs(results)
    verdict = pd.read_csv(results / "reproduction.csv")
    for ext in ("md", "csv", "html"):
        shutil.copy(results / f"reproduction.{ext}", out / f"reproduction.{ext}")
    all_tables = {ds: {t: _table(results, ds, seeds, t) for t in TABLES} for ds, seeds in runs.items()}
    lines = [BEGIN, "", "<!-- generated by workflow/scripts/study_report.py from a finished run; do not edit -->", ""]
    lines += [
        f"**Run.** `{command}` (commit `{_commit(run_dir)}`; configuration: `config.yaml` with "
        "`workflow/study/config.yaml`), on " + machine() + f"; wall time {wall_time(run_dir)} for the whole "
        "workflow, both datasets." + (f" {remark}" if remark else ""),
        "",
        *cost_section(results, out),
        "**Seeds.** "
        + "; ".join(f"{DATASET_NAMES[ds]}: {len(s)} (seeds {', '.join(map(str, s))})" for ds, s in runs.items())
        + ", 100 epochs each, the paper's protocol "
        "(README: Reproduction notes). Every number below is the mean ± sd over seeds unless said otherwise.",
        "",
        "**Data.** " + " ".join(data_provenance(results, runs)),
        "",
        "**In short** (mean ± sd over seeds; the verdict below gives every statement with its interval):",
        "",
        *(f"- {f}" for f in findings(verdict)),
        *(
            f"- {DATASET_NAMES[ds]}{' (JPEG-derived images)' if ds == 'cifar10' else ''}, every calibrator "
            f"(below): {calibrator_findings(t['scores'], t['trust'])[0]}"
            for ds, t in all_tables.items()
            if t["scores"]["calibrator"].nunique() > 2
        ),
        "",
    ]
    fig_no = {"mnist": ("1", "a"), "cifar10": ("2", "b")}
    for ds, tables in all_tables.items():
        name = DATASET_NAMES[ds]
        for t, df in tables.items():
            df.to_csv(out / f"{ds}_{t}.csv.gz", index=False, float_format="%.6g")
        lines += [f"### {name}" + (" (JPEG-derived images)" if ds == "cifar10" else ""), ""]
        if ds == "cifar10":
            lines += [f"*{CIFAR_NOTE}.*", ""]
        header = ["epoch", "test accuracy", "test NLL before → after", "test ECE before → after", "temperature"]
        lines += _md_table(header, metrics_rows(tables["scores"], tables["calibration"], tables["history"])) + [""]
        for fig in FIGURES:
            src = results / "figures" / ds / f"{fig}.png"
            if not src.exists():
                continue
            save_png(src, out / f"{ds}_{fig}.png")
            title = FIGURE_TITLES[fig].format(fig=fig_no[ds][0], panel=fig_no[ds][1])
            lines += [f"![{name}: {title}](results/study/{ds}_{fig}.png)", ""]
        lines += calibrator_section(results, ds, tables, out)
    lines += [
        "### The verdict: every result statement of the paper against these runs",
        "",
        f"{_counts(verdict)} (of {len(verdict)} statements; full text with per-seed values: "
        "[results/study/reproduction.md](results/study/reproduction.md)). *Interval*: the 95 % interval of "
        "the seed mean, a percentile bootstrap over resamples of the test set widened by the seeds' "
        "t·sd/√n in quadrature; **reproduced** when it lies wholly inside the band, **not reproduced** when "
        "wholly outside, **inconclusive** otherwise (README: Reproduction notes).",
        "",
    ]
    lines += _md_table(
        ["Statement (section: the paper's words)", "Paper", "Ours", "Interval", "Reproduced when", "Verdict"],
        verdict_rows(verdict),
    ) + [""]
    by_id = verdict.set_index("claim_id")
    lines += ["**Statements that contradict each other, with our numbers:**", ""]
    for t in TENSIONS:
        if all(c in by_id.index for c in t.claims):
            ours = "; ".join(f"`{c}` {_fmt(by_id.at[c, 'measured_mean'])} ({by_id.at[c, 'verdict']})" for c in t.claims)
            lines.append(f"- {t.text} Ours: {ours}.")
    trust = [results / ds / f"seed{s}" / "trust.csv" for ds, ss in runs.items() for s in ss]
    history = [p.with_name("history.csv") for p in trust]
    lines += [f"- {invariance_note(load_runs(trust, history))}", ""]
    if author_dir is not None:
        authors = author_verdicts(author_dir, out)
        if authors:
            lines += [
                "### The same claims on the author's published predictions",
                "",
                "`trustcal assess --paper-claims` on `../shared/reference/author-predictions/` (one run each, "
                "no seeds, no bootstrap; the CIFAR files come from a WideResNet, not the paper's CNN): "
                + "; ".join(f"{DATASET_NAMES[ds]}: {_counts(t)}" for ds, t in authors.items())
                + ".",
                "",
            ]
            for ds, t in authors.items():
                flagged = t[t["reason"].fillna("").str.contains("softmax twice")]
                only = flagged[flagged["reason"].str.contains("reproduced only with")]
                if len(only):
                    levels = t.set_index("claim_id")
                    shown = [
                        c for c in ("cifar10_trust_before_late", "cifar10_disbelief_before_late") if c in levels.index
                    ]
                    if shown:
                        lines += [
                            "On those files the before-calibration plateau is "
                            + ", ".join(f"`{c}` {_fmt(levels.at[c, 'measured_mean'])}" for c in shown)
                            + " (the paper: 0.48 and 0.58), from predictions that went through softmax twice.",
                            "",
                        ]
                    lines += [
                        f"On the author's {DATASET_NAMES[ds]} files, {len(only)} claims are reproduced only "
                        "with predictions that went through softmax twice (every before-calibration file and "
                        "epoch 1 after calibration; largest probability ≤ e/(e + 9) = 0.232): "
                        + ", ".join(f"`{c}`" for c in only["claim_id"])
                        + ". Without those predictions "
                        "they cannot be evaluated. Details: "
                        f"[results/study/author_{ds}_verdict.md](results/study/author_{ds}_verdict.md).",
                        "",
                    ]
    lines += [END]
    block = "\n".join(lines)
    (out / "study.md").write_text(block + "\n", encoding="utf-8")
    readme = repo / "README.md"
    text = readme.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
        with atomic_path(readme) as tmp:
            tmp.write_text(text, encoding="utf-8")
    return block
