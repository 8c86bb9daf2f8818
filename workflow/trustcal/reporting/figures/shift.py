"""Figures of calibration and trust under dataset shift, from a run's ``shift.csv`` and ``shift_ood.csv``
(:mod:`trustcal.reporting.shift`; the rule ``shift_figures``, registry ``SHIFT_FIGURES``).

A row of figures per entry of ``shift.epochs`` (``epoch_label``: best, last or an epoch number). Severity 0
is the clean test images (set ``clean``); a corrupted set's severities follow (1–5 for CIFAR-10-C, 1 for
MNIST-C). Every calibrator of the table is drawn in its colour and name of :mod:`.calibrators` (the raw
model, ``none``, vermillion; temperature scaling blue). Lines that coincide stay visible: the first
calibrator's line is the widest and each has its own marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from trustcal.reporting.figures.calibrators import CALIBRATOR_COLOURS, CALIBRATOR_NAMES, calibrators_of
from trustcal.reporting.figures.style import (
    FULL_WIDTH,
    WHICH_TITLES,
    epochs_text,
    figure_legend,
    heading,
    log_ticks,
    new_figure,
    plain_numbers,
    save,
)

CLEAN = "clean"  # the set of the clean rows (severity 0), trustcal.shift.sets.CLEAN
METRICS = (
    ("accuracy", "Accuracy (fraction correct)"),
    ("nll", "NLL (nats per sample)"),
    ("brier", "Brier score (per sample)"),
    ("ece", "ECE (top-label, fraction)"),
)
OPINION = (("belief", "Belief (trust)"), ("disbelief", "Disbelief"), ("uncertainty", "Uncertainty"))
SIGNAL_NAMES = {
    "max_probability": "max probability",
    "negative_entropy": "negative entropy",
    "belief": "belief (opinion)",
    "uncertainty": "uncertainty (opinion, −u)",
}
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*")
EPOCH_TITLES = {"best": WHICH_TITLES["best"], "last": WHICH_TITLES["last"]}


# --------------------------------------------------------------------------- shared helpers


def _colour(calibrator: str) -> str:
    return CALIBRATOR_COLOURS.get(calibrator, "0.4")


def _name(calibrator: str) -> str:
    return CALIBRATOR_NAMES.get(calibrator, calibrator)


def style_of(calibrators: Sequence[str], calibrator: str) -> dict:
    """Line and marker of a calibrator: the first drawn widest, so that a later line on top of it (temperature
    scaling's accuracy is the raw model's) leaves it visible on both sides."""
    i = list(calibrators).index(calibrator)
    return dict(
        color=_colour(calibrator),
        marker=MARKERS[i % len(MARKERS)],
        linewidth=max(2.4 - 0.5 * i, 0.9),
        markersize=max(5.5 - 0.6 * i, 3.0),
        zorder=2 + i,
    )


def epoch_labels(df: pd.DataFrame) -> list[str]:
    """The entries of ``shift.epochs`` in the table, in its order."""
    return list(dict.fromkeys(df["epoch_label"].astype(str)))


def epoch_title(df: pd.DataFrame, label: str) -> str:
    """A row's title: "Best validation loss (epoch 7)", "Last epoch (epochs 9, 10)" (seeds may differ), "Epoch 5"."""
    epochs = df.loc[df["epoch_label"].astype(str) == label, "epoch"]
    if label in EPOCH_TITLES:
        return f"{EPOCH_TITLES[label]} ({epochs_text(epochs)})"
    return epochs_text(epochs).capitalize()


def seed_sets_note(df: pd.DataFrame) -> str:
    corrupted = sorted(set(df.loc[df["set"].astype(str) != CLEAN, "set"].astype(str)))
    seeds = df["seed"].nunique() if "seed" in df else 1
    return f"{len(corrupted)} corruption{'s' * (len(corrupted) != 1)}, {seeds} seed{'s' * (seeds != 1)}"


def severities_of(df: pd.DataFrame) -> list[int]:
    return sorted(int(s) for s in df["severity"].unique())


def severity_axis(ax: plt.Axes, severities: Sequence[int], label: bool = True) -> None:
    ax.set_xticks(list(severities), [f"{s}\nclean" if s == 0 else str(s) for s in severities])
    ax.set_xlim(min(severities) - 0.6, max(severities) + 0.6)
    ax.set_xlabel("Corruption severity" if label else "")


def rows_at(df: pd.DataFrame, label: str, calibrator: str | None = None) -> pd.DataFrame:
    mask = df["epoch_label"].astype(str) == label
    if calibrator is not None:
        mask &= df["calibrator"].astype(str) == calibrator
    return df[mask]


def calibrator_handles(calibrators: Sequence[str], patches: bool = False) -> list:
    if patches:
        return [Patch(facecolor=_colour(c), alpha=0.6, edgecolor=_colour(c), label=_name(c)) for c in calibrators]
    return [Line2D([], [], **{**style_of(calibrators, c), "zorder": None}, label=_name(c)) for c in calibrators]


def rows_of_figure(fig: plt.Figure, labels: Sequence[str], ncols: int, **subplots) -> list[tuple[str, np.ndarray]]:
    """A subfigure per epoch label (titled in :func:`draw_rows`), each a row of ``ncols`` panels."""
    subfigs = np.atleast_1d(fig.subfigures(len(labels), 1))
    return [(label, np.atleast_1d(sf.subplots(1, ncols, **subplots))) for label, sf in zip(labels, subfigs)]


def _empty(df: pd.DataFrame | None) -> bool:
    return df is None or df.empty


# --------------------------------------------------------------------------- the figures


def shift_metrics(shift: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure | None:
    """Ovadia et al. (2019), Figure 2: per metric, a box per severity and calibrator over the corruptions and seeds
    of that severity (severity 0: the clean set, one value per seed); a row per epoch of ``shift.epochs``."""
    if _empty(shift):
        return None
    labels, calibrators, severities = epoch_labels(shift), calibrators_of(shift), severities_of(shift)
    fig, _ = new_figure("shift_metrics", size=(FULL_WIDTH, 0.9 + 2.3 * len(labels)), squeeze=False)
    fig.delaxes(fig.axes[0])
    width = 0.8 / len(calibrators)
    for label, axes in rows_of_figure(fig, labels, len(METRICS), sharex=True):
        axes[0].figure.suptitle(epoch_title(shift, label), fontsize="medium")
        for ax, (column, axis_name) in zip(axes, METRICS):
            for i, c in enumerate(calibrators):
                rows = rows_at(shift, label, c)
                for s in severities:
                    values = rows.loc[rows["severity"] == s, column].dropna().to_numpy(dtype=float)
                    if len(values):
                        box_at(ax, values, s + (i - (len(calibrators) - 1) / 2) * width, 0.85 * width, c, s)
            values = shift.loc[shift["epoch_label"].astype(str) == label, column]
            if column == "nll" and values.max() > 5 * max(values.min(), 1e-12):
                ax.set_yscale("log")
                log_ticks(ax)
            else:
                plain_numbers(ax)
            ax.set_title(axis_name, fontsize="small")
            severity_axis(ax, severities)
    fig.suptitle(heading(title, "calibration under corruption, test set"))
    note = f"boxes over {seed_sets_note(shift)} per severity (quartiles, whiskers 1.5 IQR); calibrators fitted on clean data"
    figure_legend(fig, calibrator_handles(calibrators, patches=True), note, ncols=min(len(calibrators), 4))
    return save(fig, paths)


def box_at(ax: plt.Axes, values: np.ndarray, x: float, width: float, calibrator: str, severity: int) -> None:
    """One box of ``values``; its patch and median carry ``gid`` "calibrator@severity" (the tests read them)."""
    parts = ax.boxplot(
        [values],
        positions=[x],
        widths=width,
        patch_artist=True,
        manage_ticks=False,
        showfliers=True,
        flierprops=dict(marker=".", markersize=3, markerfacecolor=_colour(calibrator), markeredgewidth=0),
        medianprops=dict(color="0.1", linewidth=1.0),
        whiskerprops=dict(color=_colour(calibrator), linewidth=0.8),
        capprops=dict(color=_colour(calibrator), linewidth=0.8),
    )
    (box,), (median,) = parts["boxes"], parts["medians"]
    box.set(facecolor=_colour(calibrator), alpha=0.6, edgecolor=_colour(calibrator), linewidth=0.8)
    for artist in (box, median):
        artist.set_gid(f"{calibrator}@{severity}")
    if len(values) < 3:  # a flat box (one seed's clean value) shows no colour: its values as dots of it
        ax.scatter(np.full(len(values), x), values, s=14, color=_colour(calibrator), zorder=4, linewidths=0)


def mean_spread(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per severity: the mean of ``column`` over the corruptions and seeds, and ± one sd (none of a single value)."""
    g = rows.groupby("severity")[column]
    out = pd.DataFrame(dict(mean=g.mean(), sd=g.std(ddof=1)))
    return out.sort_index()


def shift_trust(shift: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure | None:
    """The network opinion (belief, disbelief, uncertainty) against severity per calibrator: the mean over the
    corruptions and seeds with a band of ± one sd; a row per epoch of ``shift.epochs``."""
    if _empty(shift):
        return None
    labels, calibrators, severities = epoch_labels(shift), calibrators_of(shift), severities_of(shift)
    fig, _ = new_figure("shift_trust", size=(FULL_WIDTH, 0.9 + 2.2 * len(labels)), squeeze=False)
    fig.delaxes(fig.axes[0])
    for label, axes in rows_of_figure(fig, labels, len(OPINION), sharex=True, sharey=True):
        axes[0].figure.suptitle(epoch_title(shift, label), fontsize="medium")
        for ax, (column, axis_name) in zip(axes, OPINION):
            for c in calibrators:
                stats = mean_spread(rows_at(shift, label, c), column)
                if stats.empty:
                    continue
                st = style_of(calibrators, c)
                x = stats.index.to_numpy(dtype=float)
                lo, hi = (np.clip(stats["mean"] + k * stats["sd"], 0.0, 1.0) for k in (-1, 1))  # masses: 0–1
                ax.fill_between(x, lo, hi, color=st["color"], alpha=0.15, lw=0)
                line = ax.plot(x, stats["mean"], **st)[0]
                line.set_gid(c)
            ax.set_title(axis_name, fontsize="small")
            severity_axis(ax, severities)
            plain_numbers(ax)
        axes[0].set_ylabel("Opinion mass (0–1)")
    fig.suptitle(heading(title, "network opinion under corruption, test set"))
    note = f"mean over {seed_sets_note(shift)} per severity; bands ± 1 sd; calibrators fitted on clean data"
    figure_legend(fig, calibrator_handles(calibrators), note, ncols=min(len(calibrators), 4))
    return save(fig, paths)


def trust_accuracy_points(shift: pd.DataFrame, label: str, calibrator: str) -> pd.DataFrame:
    """Per (set, severity) of a calibrator: accuracy and belief, mean over seeds."""
    rows = rows_at(shift, label, calibrator)
    return rows.groupby(["set", "severity"], as_index=False)[["accuracy", "belief"]].mean()


def shift_trust_accuracy(shift: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure | None:
    """Network trust (belief) against accuracy, a point per (corruption, severity) and calibrator (mean over
    seeds; the clean set ringed), with the line y = x; a panel per epoch of ``shift.epochs``."""
    if _empty(shift):
        return None
    labels, calibrators = epoch_labels(shift), calibrators_of(shift)
    size = (min(FULL_WIDTH, 0.6 + 3.1 * len(labels)), 3.9)
    fig, axes = new_figure("shift_trust_accuracy", size=size, ncols=len(labels), squeeze=False)
    values = shift[["accuracy", "belief"]].to_numpy(dtype=float)
    lo, hi = np.nanmin(values), np.nanmax(values)
    pad = 0.05 * max(hi - lo, 0.05)
    lo, hi = max(lo - pad, 0.0), min(hi + pad, 1.0)
    most = max(severities_of(shift)) or 1
    for ax, label in zip(axes[0], labels):
        ax.plot([lo, hi], [lo, hi], color="0.5", linestyle=":", linewidth=0.9, zorder=1)
        for c in calibrators:
            points = trust_accuracy_points(shift, label, c)
            st = style_of(calibrators, c)
            clean = points["set"].astype(str) == CLEAN
            dots = ax.scatter(
                points["accuracy"],
                points["belief"],
                s=8 + 22 * points["severity"] / most,
                marker=st["marker"],
                color=st["color"],
                alpha=0.75,
                linewidths=0,
                zorder=st["zorder"],
            )
            dots.set_gid(c)
            ax.scatter(
                points.loc[clean, "accuracy"],
                points.loc[clean, "belief"],
                s=70,
                facecolors="none",
                edgecolors=st["color"],
                linewidths=1.0,
                zorder=st["zorder"],
            )
        ax.set(xlim=(lo, hi), ylim=(lo, hi), aspect="equal")
        ax.set_title(epoch_title(shift, label), fontsize="small")
        ax.set_xlabel("Accuracy (fraction correct)")
        plain_numbers(ax)
        plain_numbers(ax, "x")
    axes[0, 0].set_ylabel("Network belief (trust)")
    fig.suptitle(heading(title, "trust against accuracy under corruption, test set"))
    extra = [
        Line2D([], [], color="0.5", linestyle=":", label="y = x"),
        Line2D([], [], marker="o", color="0.3", markerfacecolor="none", linestyle="", label="clean (severity 0)"),
    ]
    note = f"a point per corruption and severity (mean over seeds; larger: more severe); {seed_sets_note(shift)}"
    ncols = len(calibrators) + 2 if len(calibrators) <= 4 else 4
    figure_legend(fig, calibrator_handles(calibrators) + extra, note, ncols=ncols)
    return save(fig, paths)


def ood_summary(ood: pd.DataFrame) -> pd.DataFrame:
    """Per (set, epoch label, calibrator, signal): AUROC's mean over seeds and its interval: the mean of the
    table's ``auroc_lo`` / ``auroc_hi`` where it has them, else ± one sd over seeds (none for one seed)."""
    keys = ["set", "epoch_label", "calibrator", "signal"]
    df = ood.assign(epoch_label=ood["epoch_label"].astype(str), set=ood["set"].astype(str))
    g = df.groupby(keys, sort=False)
    out = g["auroc"].mean().rename("auroc").to_frame()
    if {"auroc_lo", "auroc_hi"} <= set(df) and df["auroc_lo"].notna().any():
        out["lo"], out["hi"] = g["auroc_lo"].mean(), g["auroc_hi"].mean()
    else:
        sd = g["auroc"].std(ddof=1)
        out["lo"], out["hi"] = out["auroc"] - sd, out["auroc"] + sd
    out["lo"], out["hi"] = out["lo"].clip(0.0, 1.0), out["hi"].clip(0.0, 1.0)  # an AUROC lies in 0–1
    return out.reset_index()


def ood_interval_note(ood: pd.DataFrame) -> str:
    if {"auroc_lo", "auroc_hi"} <= set(ood) and ood["auroc_lo"].notna().any():
        return "bars: each seed's 95 % bootstrap interval, averaged over seeds"
    seeds = ood["seed"].nunique() if "seed" in ood else 1
    return f"mean over {seeds} seeds, bars ± 1 sd" if seeds > 1 else "1 seed, no interval"


def shift_ood(ood: pd.DataFrame | None, title: str, paths: Sequence[str | Path]) -> plt.Figure | None:
    """AUROC of telling the clean test images from an out-of-distribution set's, per signal and calibrator (a
    dot each, with its interval); a row per out-of-distribution set, a column per epoch of ``shift.epochs``.
    None (no figure) for a table without rows."""
    if _empty(ood):
        return None
    summary = ood_summary(ood)
    sets, labels, calibrators = list(dict.fromkeys(summary["set"])), epoch_labels(ood), calibrators_of(ood)
    signals = [s for s in SIGNAL_NAMES if s in set(summary["signal"])]
    signals += [s for s in dict.fromkeys(summary["signal"]) if s not in signals]
    height = 0.9 + (0.45 + 0.3 * len(signals) * max(len(calibrators), 2) / 3) * len(sets)
    fig, axes = new_figure(
        "shift_ood", size=(FULL_WIDTH, height), nrows=len(sets), ncols=len(labels), squeeze=False, sharey=True
    )
    step = 0.7 / len(calibrators)
    for r, ood_set in enumerate(sets):
        for col, label in enumerate(labels):
            ax = axes[r, col]
            ax.axvline(0.5, color="0.5", linestyle="--", linewidth=0.8, zorder=1)
            for i, c in enumerate(calibrators):
                rows = summary[
                    (summary["set"] == ood_set) & (summary["epoch_label"] == label) & (summary["calibrator"] == c)
                ]
                rows = rows.set_index("signal").reindex(signals)
                y = np.arange(len(signals)) + (i - (len(calibrators) - 1) / 2) * step
                st = style_of(calibrators, c)
                err = np.vstack([rows["auroc"] - rows["lo"], rows["hi"] - rows["auroc"]])
                bars = ax.errorbar(
                    rows["auroc"],
                    y,
                    xerr=np.where(np.isfinite(err), err, 0.0),
                    fmt=st["marker"],
                    color=st["color"],
                    markersize=4.5,
                    elinewidth=1.0,
                    capsize=1.5,
                    zorder=st["zorder"],
                )
                bars.lines[0].set_gid(c)
            ax.set_yticks(range(len(signals)), [SIGNAL_NAMES.get(s, s) for s in signals])
            ax.set_xlim(-0.04, 1.04)
            ax.set_xticks([0, 0.25, 0.5, 0.75, 1])
            ax.set_title(f"{ood_set}, {epoch_title(ood, label)}", fontsize="small")
            ax.set_xlabel("AUROC (clean test vs set; 0.5: chance)" if r == len(sets) - 1 else "")
            plain_numbers(ax, "x")
    axes[0, 0].invert_yaxis()  # the first signal on top (the y axis is shared)
    fig.suptitle(heading(title, "out-of-distribution detection, clean test images as positives"))
    note = f"{ood_interval_note(ood)}; calibrators fitted on clean data"
    figure_legend(fig, calibrator_handles(calibrators), note, ncols=min(len(calibrators), 4))
    return save(fig, paths)


# the signals' colours in the curves figure (Okabe–Ito; none of them a calibrator's meaning there)
SIGNAL_COLOURS = {
    "max_probability": "#000000",
    "negative_entropy": "#E69F00",
    "belief": "#009E73",
    "uncertainty": "#CC79A7",
}
CURVE_SIDES = {"in": ("clean test images", "0.55"), "out": ("out-of-distribution set", "#0072B2")}


def curves_of(curves: pd.DataFrame, calibrator: str = "none") -> tuple[pd.DataFrame, str]:
    """The rows of ``calibrator`` at the first entry of ``shift.epochs`` with the curve's ``y`` averaged over
    seeds, and that entry."""
    df = curves.assign(epoch_label=curves["epoch_label"].astype(str), set=curves["set"].astype(str))
    label = epoch_labels(df)[0]
    df = df[(df["calibrator"] == calibrator) & (df["epoch_label"] == label)]
    keys = ["set", "signal", "curve", "x"]
    return df.groupby(keys, sort=False)["y"].mean().reset_index(), label


def shift_ood_curves(curves: pd.DataFrame | None, title: str, paths: Sequence[str | Path]) -> plt.Figure | None:
    """Per out-of-distribution set (a row): each signal's ROC curve (clean test images the positives), then
    each signal's histogram on the clean test images (grey, filled) and on the set (blue, outlined); the raw
    model at the first entry of ``shift.epochs``, the fractions averaged over seeds. None for no rows."""
    if _empty(curves) or not (curves["calibrator"] == "none").any():
        return None
    mean, label = curves_of(curves)
    sets = list(dict.fromkeys(mean["set"]))
    signals = [s for s in SIGNAL_NAMES if s in set(mean["signal"])]
    fig, axes = new_figure(
        "shift_ood_curves",
        size=(FULL_WIDTH, 0.9 + 1.75 * len(sets)),
        nrows=len(sets),
        ncols=1 + len(signals),
        squeeze=False,
    )
    for r, ood_set in enumerate(sets):
        rows = mean[mean["set"] == ood_set]
        ax = axes[r, 0]
        ax.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=0.8, zorder=1)
        for i, signal in enumerate(signals):
            roc = rows[(rows["signal"] == signal) & (rows["curve"] == "roc")]
            ax.plot(
                roc["x"],
                roc["y"],
                color=SIGNAL_COLOURS.get(signal, "0.3"),
                linewidth=2.2 - 0.4 * i,
                zorder=2 + i,
                gid=f"roc:{signal}",
            )
        ax.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="FPR (set accepted)" if r == len(sets) - 1 else "")
        ax.set_ylabel(f"{ood_set}\nTPR (clean accepted)", fontsize="small")
        for c, signal in enumerate(signals, start=1):
            ax = axes[r, c]
            for side, (_, colour) in CURVE_SIDES.items():
                hist = rows[(rows["signal"] == signal) & (rows["curve"] == side)]
                width = float(np.diff(hist["x"].to_numpy()[:2])[0]) if len(hist) > 1 else 1.0
                edges = np.r_[hist["x"].to_numpy() - width / 2, hist["x"].to_numpy()[-1:] + width / 2]
                filled = side == "in"
                ax.stairs(
                    hist["y"],
                    edges,
                    fill=filled,
                    color=colour,
                    alpha=0.55 if filled else 1.0,
                    linewidth=1.6,
                    gid=f"hist:{signal}:{side}",
                )
            if r == 0:
                ax.set_title(SIGNAL_NAMES.get(signal, signal).replace(", −u", ""), fontsize="small")
            ax.set_yticks([])
            plain_numbers(ax, "x")
        if r == 0:
            axes[0, 0].set_title("ROC curve", fontsize="small")
    fig.suptitle(heading(title, f"out-of-distribution signals, raw model, {epoch_title(curves, label)}"))
    handles = [
        Line2D([], [], color=SIGNAL_COLOURS.get(s, "0.3"), linewidth=2, label=SIGNAL_NAMES.get(s, s)) for s in signals
    ]
    handles += [
        Patch(facecolor=c, alpha=0.55, label=n) if side == "in" else Line2D([], [], color=c, label=n)
        for side, (n, c) in CURVE_SIDES.items()
    ]
    note = f"fractions of inputs per bin and ROC points averaged over {curves['seed'].nunique()} seed(s)"
    figure_legend(fig, handles, note, ncols=3)
    return save(fig, paths)


def notice(text: str, title: str, what: str, paths: Sequence[str | Path]) -> plt.Figure:
    """A figure that says why it shows nothing (a run without the rows a shift figure of the workflow needs)."""
    fig, ax = new_figure("notice", size=(FULL_WIDTH, 1.6))
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    fig.suptitle(heading(title, what))
    return save(fig, paths)
