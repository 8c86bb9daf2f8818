"""The one-screen summary of an assessment (``summary.txt``, what ``trustcal assess`` prints) and the
JSON document for scripts (``trustcal assess --json``, :meth:`trustcal.api.AssessmentResult.to_dict`).

Each function takes an :class:`~trustcal.assessment.result.Assessment` (``a``), or its tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from trustcal import __version__
from trustcal.calibration.states import paper_states

SUMMARY_MAX_EPOCHS = 30  # more epochs than this: the summary shows the first and last 15


SUMMARY_SCORES = ("accuracy", "ece", "nll", "net_trust_score")
SUMMARY_OPINION = ("belief", "disbelief", "uncertainty")


def _with_intervals(df: pd.DataFrame, names: Sequence[str]) -> list[str]:
    return [c for n in names for c in (n, f"{n}_lo", f"{n}_hi") if c in df.columns]


def calibrator_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per epoch and calibrator (``none``: the raw model), on the test predictions: accuracy, ECE, NLL,
    NTS and the network opinion, each with its bootstrap interval where there is one."""
    scores = tables["scores"]
    scores = scores[scores["split"] == "test"]
    scores = scores[["epoch", "calibrator", *_with_intervals(scores, SUMMARY_SCORES)]]
    trust = tables["trust"]
    net = trust[trust["label"].astype(str) == "network"]
    net = net[["epoch", "calibrator", *_with_intervals(net, SUMMARY_OPINION)]]
    order = {c: i for i, c in enumerate(dict.fromkeys(scores["calibrator"]))}  # none, then as fitted
    table = scores.merge(net, on=["epoch", "calibrator"])
    return table.sort_values(
        ["epoch", "calibrator"], key=lambda c: c.map(order) if c.name == "calibrator" else c
    ).reset_index(drop=True)


def summary_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`calibrator_table` for the paper's two states, with a boolean ``calibrated`` column."""
    return paper_states(calibrator_table(tables)).drop(columns="calibrator")


def format_summary(a) -> str:
    table = summary_table(a.tables)
    states = sorted(table["calibrated"].unique())
    wide = table.pivot(index="epoch", columns="calibrated")
    same_acc = len(states) == 2 and np.allclose(wide["accuracy"][False], wide["accuracy"][True], rtol=0, atol=1e-12)
    block = ["ECE", "NTS", "b", "d", "u"] if same_acc else ["acc", "ECE", "NTS", "b", "d", "u"]
    widths = dict(acc=6, ECE=6, NTS=6, b=5, d=5, u=7)
    key = dict(acc="accuracy", ECE="ece", NTS="net_trust_score", b="belief", d="disbelief", u="uncertainty")
    fmt = dict(acc="{:.4f}", ECE="{:.4f}", NTS="{:.4f}", b="{:.3f}", d="{:.3f}", u="{:.1e}")
    block_width = sum(widths[c] for c in block) + len(block) - 1
    single = list(wide.index) == [0]  # one prediction set whose name holds no epoch: no epoch column
    lead_width = (0 if single else 5) + (10 if same_acc else 0)

    def cells(values: dict) -> str:
        return " ".join(
            fmt[c].format(values[c]).rjust(widths[c]) if pd.notna(values[c]) else "–".rjust(widths[c]) for c in block
        )

    groups = " " * lead_width + "".join(
        "  " + (" after calibration " if s else " before calibration ").center(block_width, "-") for s in states
    )
    header = (
        ("" if single else "epoch")
        + ("  accuracy" if same_acc else "")
        + "".join("  " + " ".join(c.rjust(widths[c]) for c in block) for _ in states)
    )
    epochs = list(wide.index)
    if len(epochs) > SUMMARY_MAX_EPOCHS:
        half = SUMMARY_MAX_EPOCHS // 2
        epochs = epochs[:half] + [None] + epochs[-half:]
    rows = []
    for e in epochs:
        if e is None:
            rows.append(
                f"{'…':>5}  ({len(wide) - 2 * (SUMMARY_MAX_EPOCHS // 2)} more epochs in scores.csv and trust.csv)"
            )
            continue
        line = "" if single else f"{e:>5}"
        if same_acc:
            line += f"  {wide['accuracy'][False][e]:>8.4f}"
        for s in states:
            line += "  " + cells({c: wide[key[c]][s].get(e, np.nan) for c in block})
        rows.append(line)
    files = a.files
    n_samples = ", ".join(map(str, a.samples))
    head = [
        f"trustcal assess: {len(files)} prediction file{'s' if len(files) > 1 else ''} "
        f"({', '.join(p.name for p in [f.path for f in files][:2])}{', …' if len(files) > 2 else ''}), "
        f"{a.classes} classes, {n_samples} test samples per file",
    ]
    if a.class_names:
        head.append("classes: " + ", ".join(f"{k} {name}" for k, name in enumerate(a.class_names)))
    if "calibration" in a.tables:  # each calibrator by name; T only for temperature scaling (others have none)
        cal = a.tables["calibration"]
        t = cal.loc[cal["calibrator"] == "temperature", "temperature"]
        others = [c for c in dict.fromkeys(cal["calibrator"]) if c != "temperature"]
        if len(t):
            spread = f"{t.min():.3g}" if len(t) == 1 else f"{t.min():.3g} … {t.max():.3g}"
            head.append(f"temperature scaling fitted on the validation data: T = {spread}")
        if others:
            head.append(f"also fitted on the validation data: {', '.join(others)}")
    if a.history_file is not None:
        head.append(f"training history: {a.history_file}")
    if a.skipped:
        head.append(f"skipped (no epoch number in the name): {', '.join(p.name for p in a.skipped)}")
    foot = [
        f"ECE: top-label, {a.ece_bins} bins; NTS: NetTrustScore; b, d, u: network trust opinion (belief, disbelief, uncertainty)"
    ]
    foot += calibrator_lines(a)
    by_need: dict[str, list[str]] = {}
    for name in a.figures_left_out:
        by_need.setdefault(a.figures_need.get(name, "more input"), []).append(name)
    foot += [f"figures not drawn (need {need}): {', '.join(names)}" for need, names in by_need.items()]
    foot += [
        f"{len(a.warnings)} warning{'s' if len(a.warnings) != 1 else ''}" + (" (warnings.txt)" if a.warnings else ""),
    ]
    if single:  # no epoch column: drop the two spaces that would separate it from the rest
        groups, header, rows = groups[2:], header[2:], [r[2:] for r in rows]
    return "\n".join(head + ["", groups, header, *rows, ""] + foot)


def _interval(row: pd.Series, name: str, fmt: str) -> str:
    value = fmt.format(row[name]) if pd.notna(row[name]) else "–"
    lo, hi = row.get(f"{name}_lo"), row.get(f"{name}_hi")
    if lo is None or pd.isna(lo):
        return value
    return f"{value} [{fmt.format(lo)}, {fmt.format(hi)}]"


# the numbers of calibrator_lines with an interval: (column, name in the summary)
INTERVAL_SHOWN = (("accuracy", "accuracy"), ("ece", "ECE"), ("nll", "NLL"), ("net_trust_score", "NTS"), ("belief", "b"))
BOOTSTRAP_SECTION = "docs/method.md §10.3"  # the bootstrap, and how to read an interval that misses its point
# why a point lies outside its own percentile interval, for the statistics whose estimator is biased that way
OUTSIDE_WHY = {
    ("ece", "below"): "the binned ECE is biased upward (it sums absolute gaps, and the noise a resample adds only "
    "widens them), so resamples overstate it",
    ("belief", "above"): "the disbelief's evidence sums absolute gaps, which resampling widens, so resamples "
    "understate the belief",
}
OUTSIDE_OTHER = "the resamples' values of a skewed or biased statistic need not straddle it"


def outside_notes(table: pd.DataFrame) -> list[str]:
    """One line per number of the summary (:data:`INTERVAL_SHOWN`) and side whose point estimate lies outside
    its own bootstrap interval in some row of ``table`` (a block of :func:`calibrator_table`), saying why
    (:data:`OUTSIDE_WHY`) and where the method says more; the calibrators concerned named when the block has
    several."""
    lines = []
    several = table["calibrator"].nunique() > 1
    for column, shown in INTERVAL_SHOWN:
        if f"{column}_lo" not in table:
            continue
        for side, outside in (
            ("below", table[column] < table[f"{column}_lo"]),
            ("above", table[column] > table[f"{column}_hi"]),
        ):
            if not outside.any():
                continue
            which = f" ({', '.join(map(str, table.loc[outside, 'calibrator']))})" if several else ""
            why = OUTSIDE_WHY.get((column, side), OUTSIDE_OTHER)
            lines.append(
                f"note: {shown}'s point lies {side} its bootstrap interval{which}: {why}; see {BOOTSTRAP_SECTION}"
            )
    return lines


def calibrator_lines(a) -> list[str]:
    """The last epoch of every calibrator (the raw model's too) with its test accuracy, ECE, NLL, NTS and belief,
    and their bootstrap intervals where there are some (no lines for the raw model alone without intervals),
    then a line for each number whose point lies outside its interval (:func:`outside_notes`)."""
    table = calibrator_table(a.tables)
    if table.empty or ("ece_lo" not in table and table["calibrator"].nunique() < 2):
        return []
    last = table[table["epoch"] == table["epoch"].max()]
    epoch = int(last["epoch"].iloc[0])
    lines = [
        "",
        ("test set" if epoch == 0 and table["epoch"].nunique() == 1 else f"epoch {epoch}, test set")
        + (", [95 % bootstrap interval]" if "ece_lo" in table else "")
        + ":",
    ]
    width = max(len(str(c)) for c in last["calibrator"])
    for _, row in last.iterrows():
        lines.append(
            f"  {str(row['calibrator']):<{width}}  accuracy {_interval(row, 'accuracy', '{:.4f}')}  "
            f"ECE {_interval(row, 'ece', '{:.4f}')}  NLL {_interval(row, 'nll', '{:.4f}')}  "
            f"NTS {_interval(row, 'net_trust_score', '{:.4f}')}  "
            f"b {_interval(row, 'belief', '{:.3f}')}"
        )
    return lines + outside_notes(last)


def file_list(a) -> list[dict]:
    return [dict(path=str(f.path), epoch=f.epoch, calibrated=f.calibrated) for f in a.files]


def _records(df: pd.DataFrame) -> list[dict]:
    return json.loads(df.to_json(orient="records", double_precision=15))  # NaN → null, numpy → Python numbers


def _temperature_records(calibration: pd.DataFrame | None) -> list[dict]:
    """epoch and T of each temperature-scaling fit (the other calibrators have no temperature)."""
    if calibration is None:
        return []
    return _records(calibration.loc[calibration["calibrator"] == "temperature", ["epoch", "temperature"]])


def _notes(a) -> list[str]:
    """:func:`outside_notes` of the summary's last epoch (without ``note: ``)."""
    table = calibrator_table(a.tables)
    if table.empty:
        return []
    return [line.removeprefix("note: ") for line in outside_notes(table[table["epoch"] == table["epoch"].max()])]


def summary_dict(a, wording: Callable[[str, Sequence[str]], str] | None = None) -> dict:
    """The summary for scripts (``trustcal assess --json``): per epoch and state on the test predictions,
    accuracy, ECE, NLL, NetTrustScore and the network trust opinion (belief, disbelief, uncertainty), each with
    its bootstrap interval (``*_lo``, ``*_hi``); the same per calibrator (``calibrators``); the files,
    the temperatures fitted, the figures, ``notes`` (the summary's lines on points outside their
    intervals, :func:`outside_notes`) and every warning (its message put in the caller's words by
    ``wording``, :data:`~trustcal.assessment.result.Wording`). Undefined numbers are null."""
    wording = wording or (lambda message, options: message)
    return dict(
        trustcal_version=__version__,
        files=file_list(a),
        skipped=[str(p) for p in a.skipped],
        classes=a.classes,
        class_names=list(a.class_names) if a.class_names else None,
        test_samples=a.samples,
        clusters=a.clusters,
        ece_bins=a.ece_bins,
        history=str(a.history_file) if a.history_file else None,
        epochs=_records(summary_table(a.tables)),
        calibrators=_records(calibrator_table(a.tables)),
        temperatures=_temperature_records(a.tables.get("calibration")),
        figures=a.figures,
        figures_left_out=a.figures_left_out,
        notes=_notes(a),
        warnings=[dict(code=w.code, file=w.file, message=wording(w.message, w.options)) for w in a.warnings],
    )
