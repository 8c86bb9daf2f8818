"""Figures that compare the calibrators (calibration.methods) with the raw model, per epoch.

Every calibrator has its colour (``CALIBRATOR_COLOURS``; the raw model, ``none``, and temperature
scaling keep the paper figures' before/after colours). Lines are the mean over seeds; bands are the
bootstrap interval over resamples of the test set (``*_lo`` / ``*_hi``, averaged over seeds), or,
for a number without one, ± one sd over seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from trustcal.calibration import METHODS
from trustcal.files import PAPER_CALIBRATOR, RAW
from trustcal.reporting.figures.style import (
    AFTER,
    BEFORE,
    STATE_COLOURS,
    chosen_epochs,
    class_rows,
    figure_legend,
    fit_splits,
    heading,
    integer_epochs,
    log_ticks,
    network_rows,
    new_figure,
    plain_numbers,
    save,
    seed_note,
)

CALIBRATOR_NAMES = {
    RAW: "none (raw model)",
    "temperature": "temperature",
    "vector": "vector scaling",
    "matrix": "matrix scaling (ODIR)",
    "dirichlet": "Dirichlet (ODIR)",
    "histogram": "histogram binning",
    "isotonic": "isotonic regression",
    "sms": "structured matrix scaling",
    "svs": "structured vector scaling",
    "ets": "ensemble temperature scaling",
    "irm": "multiclass isotonic (IRM)",
}
CALIBRATOR_COLOURS = {  # Okabe–Ito; none and temperature as "before" and "after" in the paper figures
    RAW: STATE_COLOURS[BEFORE],
    PAPER_CALIBRATOR: STATE_COLOURS[AFTER],
    "vector": "#009E73",
    "matrix": "#CC79A7",
    "dirichlet": "#E69F00",
    "histogram": "#56B4E9",
    "isotonic": "#000000",
    "sms": "#882255",  # beyond Okabe–Ito's eight: Tol's wine and olive
    "svs": "#999933",
    "ets": "#44AA99",  # Tol's teal
    "irm": "#332288",  # Tol's indigo
}


def calibrators_of(df: pd.DataFrame) -> list[str]:
    """The calibrators of a table, in the order of :data:`trustcal.calibration.METHODS` (others after)."""
    present = list(dict.fromkeys(df["calibrator"].astype(str)))
    return sorted(present, key=lambda c: METHODS.index(c) if c in METHODS else len(METHODS))


def fitted_note(calibration: pd.DataFrame | None) -> str:
    """Where the calibrators were fitted, from calibration.csv's ``fit_split``; "per epoch" only for a series
    (one set of predictions, e.g. a single file or ``trustcal.assess``, has one fit per calibrator)."""
    splits = fit_splits(calibration)
    epochs = calibration["epoch"].nunique() if calibration is not None and "epoch" in calibration else 0
    fitted = "calibrators fitted per epoch" if epochs > 1 else "calibrators fitted"
    if not splits:
        return fitted
    leak = " (leaks test labels)" if "test" in splits else ""
    return f"{fitted} on the {' and '.join(splits)} split{leak}"


def _line(ax: plt.Axes, df: pd.DataFrame, column: str, calibrator: str) -> None:
    """Mean over seeds of ``column`` against the epoch, with its band (bootstrap, else ± sd over seeds)."""
    rows = df[df["calibrator"].astype(str) == calibrator]
    if rows.empty or column not in rows or rows[column].isna().all():
        return
    g = rows.groupby("epoch")
    mean = g[column].mean()
    colour = CALIBRATOR_COLOURS.get(calibrator, "0.4")
    if f"{column}_lo" in rows and rows[f"{column}_lo"].notna().any():
        lo, hi = g[f"{column}_lo"].mean(), g[f"{column}_hi"].mean()
    elif rows["seed"].nunique() > 1:
        sd = g[column].std()
        lo, hi = mean - sd, mean + sd
    else:
        lo = hi = None
    if lo is not None:
        ax.fill_between(mean.index, lo, hi, color=colour, alpha=0.18, linewidth=0)
    ax.plot(mean.index, mean.values, color=colour, linewidth=1.0, marker="o" if len(mean) < 15 else None, markersize=3)


def _handles(calibrators: Sequence[str]) -> list:
    return [
        Line2D([], [], color=CALIBRATOR_COLOURS.get(c, "0.4"), label=CALIBRATOR_NAMES.get(c, c)) for c in calibrators
    ]


def calibrator_trust(
    trust: pd.DataFrame, calibration: pd.DataFrame | None, title: str, paths: Sequence[str | Path]
) -> plt.Figure:
    """Belief, disbelief and uncertainty per epoch, of the network and the mean over labels, per calibrator."""
    net = network_rows(trust)
    labels = class_rows(trust)
    keys = ["seed", "epoch", "calibrator"]
    label_mean = labels.groupby(keys, as_index=False)[["belief", "disbelief", "uncertainty"]].mean()
    calibrators = calibrators_of(trust)
    fig, axes = new_figure("calibrator_trust", nrows=3, ncols=2, sharex=True)
    for row, component in enumerate(("belief", "disbelief", "uncertainty")):
        for col, (table, name) in enumerate(((net, "network"), (label_mean, "mean over labels"))):
            ax = axes[row, col]
            for c in calibrators:
                _line(ax, table, component, c)
            ax.set_title(f"{component.capitalize()}, {name}")
            plain_numbers(ax)
            integer_epochs(ax)
            ax.set_xlabel("Epoch" if row == 2 else "")
    fig.suptitle(heading(title, "trust opinion per calibrator (test set)"))
    band = "bands: 95 % bootstrap interval (network), ± sd over seeds (labels)"
    figure_legend(
        fig,
        _handles(calibrators),
        f"{seed_note(trust)}; {fitted_note(calibration)}\n{band}",
        ncols=min(len(calibrators), 4),
    )
    return save(fig, paths)


METRIC_PANELS = (
    ("ece", "ECE (top-label)"),
    ("smece", "smooth ECE"),
    ("nll", "NLL"),
    ("brier", "Brier score"),
)


def calibrator_metrics(
    scores: pd.DataFrame, calibration: pd.DataFrame | None, title: str, paths: Sequence[str | Path]
) -> plt.Figure:
    """ECE, smooth ECE, NLL and Brier score on the test set per epoch, per calibrator, with bootstrap bands."""
    test = scores[scores["split"] == "test"]
    calibrators = calibrators_of(test)
    panels = [(c, n) for c, n in METRIC_PANELS if c in test and test[c].notna().any()]
    fig, axes = new_figure("calibrator_metrics", nrows=1, ncols=len(panels), sharex=True, squeeze=False)
    for ax, (column, name) in zip(axes[0], panels):
        for c in calibrators:
            _line(ax, test, column, c)
        ax.set_title(name)
        ax.set_xlabel("Epoch")
        integer_epochs(ax)
        if column == "nll" and test[column].max() > 5 * max(test[column].min(), 1e-12):
            ax.set_yscale("log")
        if ax.get_yscale() == "log":
            log_ticks(ax)
        else:
            plain_numbers(ax)
    fig.suptitle(heading(title, "calibration error per calibrator (test set)"))
    figure_legend(
        fig,
        _handles(calibrators) + [Patch(color="0.6", alpha=0.3, label="95 % bootstrap interval")],
        f"{seed_note(test)}\n{fitted_note(calibration)}",
        ncols=min(len(calibrators) + 1, 4),
    )
    return save(fig, paths)


def calibrator_reliability(
    reliability: pd.DataFrame,
    history: pd.DataFrame,
    calibration: pd.DataFrame | None,
    title: str,
    paths: Sequence[str | Path],
) -> plt.Figure:
    """Top-label reliability diagram of every calibrator at each seed's best-validation epoch (test set).

    A marker per non-empty bin, its area proportional to the bin's samples and its opacity by
    :func:`~.distributions.count_alpha`, so a bin of one sample cannot dominate; lines join adjacent
    bins only, never across an empty one. Below each diagram: the samples per bin (log scale).
    """
    from trustcal.reporting.figures.distributions import count_alpha, count_axis

    chosen = chosen_epochs(history)
    best = chosen[chosen["which"] == "best"][["seed", "epoch"]]
    top = reliability[(reliability["curve"] == "top_label") & (reliability["split"] == "test")]
    top = top.merge(best, on=["seed", "epoch"], how="inner")
    calibrators = calibrators_of(top)
    ncols = min(len(calibrators), 4)
    nrows = -(-len(calibrators) // ncols)
    single = top["seed"].nunique() == 1 and best["epoch"].nunique() == 1 and history["epoch"].nunique() == 1
    size = (0.6 + 2.4 * ncols, 0.9 + 2.9 * nrows) if single else None
    fig, axes = new_figure(
        "calibrator_reliability",
        size=size,
        nrows=2 * nrows,
        ncols=ncols,
        sharex=True,
        squeeze=False,
        gridspec_kw=dict(height_ratios=[3, 1] * nrows),
    )
    diagrams, strips = axes[0::2].flat, axes[1::2].flat
    for i, (ax, strip) in enumerate(zip(axes[0::2].flat, axes[1::2].flat)):
        if i >= len(calibrators):
            ax.set_visible(False)
            strip.set_visible(False)
    largest = max(top["count"].max(), 1)
    for i, (ax, strip, c) in enumerate(zip(diagrams, strips, calibrators)):
        rows = top[top["calibrator"].astype(str) == c]
        colour = CALIBRATOR_COLOURS.get(c, "0.4")
        ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=0.8)
        for _, curve in rows.groupby("seed"):
            curve = curve.sort_values("bin")
            full = curve[curve["count"] > 0]
            runs = (full["bin"].diff() != 1).cumsum()  # adjacent non-empty bins
            for _, run in full.groupby(runs):
                if len(run) > 1:
                    ax.plot(run["mean_predicted"], run["observed_frequency"], color=colour, linewidth=0.8, alpha=0.6)
            ax.scatter(
                full["mean_predicted"],
                full["observed_frequency"],
                s=4 + 60 * full["count"] / largest,
                color=[to_rgba(colour, a) for a in count_alpha(full["count"], low=0.3, high=0.95)],
                linewidths=0,
                zorder=3,
            )
        counts = rows.groupby("bin").agg(
            lower=("bin_lower", "first"), upper=("bin_upper", "first"), n=("count", "mean")
        )
        width = counts["upper"] - counts["lower"]
        strip.bar(counts["lower"], counts["n"], width=width, align="edge", color=colour, alpha=0.7, linewidth=0)
        count_axis(strip, "samples" if i % ncols == 0 else "")
        ax.set_title(CALIBRATOR_NAMES.get(c, c))
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_ylabel("Accuracy" if i % ncols == 0 else "")
        strip.set_xlabel("Confidence" if i + ncols >= len(calibrators) else "")
    what = "reliability per calibrator, test set"
    if not single:
        epochs = sorted(best["epoch"].unique())
        what = f"reliability at the best-validation epoch ({', '.join(map(str, epochs))}), test set, one line per seed"
    fig.suptitle(
        f"{heading(title, what)}\n{fitted_note(calibration)}\nmarker area: samples in the bin; dotted: perfect calibration",
        fontsize="medium",
    )
    return save(fig, paths)
