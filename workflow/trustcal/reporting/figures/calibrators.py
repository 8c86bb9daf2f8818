"""Figures that compare the calibrators (calibration.methods) with the raw model, per epoch.

Every calibrator has one name (``CALIBRATOR_NAMES``: the one vocabulary of every figure's legends and titles,
and of the study's ranking), one colour (``CALIBRATOR_COLOURS``; the raw model, ``none``, and temperature
scaling keep the paper figures' before/after colours) and one marker (``CALIBRATOR_MARKERS``). Lines are the
mean over seeds, drawn in the order of :data:`trustcal.calibration.METHODS`, the first widest
(:func:`~.style.layer_width`), so that a calibrator equal to the raw model leaves the raw model's line visible;
bands are the bootstrap interval over resamples of the test set (``*_lo`` / ``*_hi``, averaged over seeds),
or, for a number without one, ± one sd over seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D

from trustcal.calibration import METHODS
from trustcal.calibration.states import PAPER_CALIBRATOR, RAW
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
    interval_handle,
    layer_markersize,
    layer_width,
    log_ticks,
    marker_every,
    network_rows,
    new_figure,
    plain_numbers,
    save,
    seed_note,
)

CALIBRATOR_NAMES = {  # calibrator id → its name in every figure: the method's name, lower case but for names
    RAW: "raw model",
    PAPER_CALIBRATOR: "temperature scaling",
    "vector": "vector scaling",
    "matrix": "matrix scaling",
    "dirichlet": "Dirichlet scaling",
    "histogram": "histogram binning",
    "isotonic": "isotonic regression",
    "sms": "structured matrix scaling",
    "svs": "structured vector scaling",
    "ets": "ensemble temperature scaling",
    "irm": "multiclass isotonic regression",
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
CALIBRATOR_MARKERS = {  # a shape each: equal values of two calibrators stay two marks
    RAW: "o",
    PAPER_CALIBRATOR: "s",
    "vector": "^",
    "matrix": "v",
    "dirichlet": "D",
    "histogram": "P",
    "isotonic": "X",
    "sms": "<",
    "svs": ">",
    "ets": "h",
    "irm": "*",
}
OTHER_COLOUR, OTHER_MARKER = "0.4", "p"  # a user's own calibrator (package.module:Class)


def calibrator_name(calibrator: str) -> str:
    """The calibrator's name in every figure (``CALIBRATOR_NAMES``; a user's own calibrator: its key)."""
    return CALIBRATOR_NAMES.get(calibrator, calibrator)


def calibrator_style(calibrator: str, position: int, points: int = 0) -> dict:
    """The ``plot`` keywords of the calibrator drawn ``position``-th (0: first) of a figure, over ``points``
    epochs: its colour and marker, the line width and marker size of its position (the first widest)."""
    return dict(
        color=CALIBRATOR_COLOURS.get(calibrator, OTHER_COLOUR),
        marker=CALIBRATOR_MARKERS.get(calibrator, OTHER_MARKER),
        markersize=layer_markersize(position),
        markevery=marker_every(points, position),
        linewidth=layer_width(position),
        markeredgecolor="white",
        markeredgewidth=0.4,
    )


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


def _line(ax: plt.Axes, df: pd.DataFrame, column: str, calibrator: str, position: int) -> str | None:
    """Mean over seeds of ``column`` against the epoch, with its band (bootstrap, else ± sd over seeds), in the
    style of the ``position``-th calibrator; the kind of band drawn ("bootstrap", "sd" or None)."""
    rows = df[df["calibrator"].astype(str) == calibrator]
    if rows.empty or column not in rows or rows[column].isna().all():
        return None
    g = rows.groupby("epoch")
    mean = g[column].mean()
    style = calibrator_style(calibrator, position, len(mean))
    if f"{column}_lo" in rows and rows[f"{column}_lo"].notna().any():
        lo, hi, kind = g[f"{column}_lo"].mean(), g[f"{column}_hi"].mean(), "bootstrap"
    elif rows["seed"].nunique() > 1:
        sd = g[column].std()
        lo, hi, kind = mean - sd, mean + sd, "sd"
    else:
        lo = hi = kind = None
    if lo is not None:
        ax.fill_between(mean.index, lo, hi, color=style["color"], alpha=0.18, linewidth=0)
    ax.plot(mean.index, mean.values, **style)
    return kind


def _handles(calibrators: Sequence[str]) -> list:
    """A legend entry per calibrator, styled as its line (colour, marker, width of its position)."""
    return [Line2D([], [], label=calibrator_name(c), **calibrator_style(c, i)) for i, c in enumerate(calibrators)]


BAND_NAMES = {
    "bootstrap": "95 % bootstrap interval",
    "sd": "± one sd over seeds",
}


def band_handle(kinds: set[str | None]) -> list:
    """The legend entry of the bands drawn (none without a band): a hatched swatch, never a calibrator's."""
    named = [BAND_NAMES[k] for k in BAND_NAMES if k in kinds]
    return [interval_handle(f"{' or '.join(named)}\n(band of each calibrator's colour)")] if named else []


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
            for position, c in enumerate(calibrators):
                _line(ax, table, component, c, position)
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
    kinds = set()
    for ax, (column, name) in zip(axes[0], panels):
        for position, c in enumerate(calibrators):
            kinds.add(_line(ax, test, column, c, position))
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
        _handles(calibrators) + band_handle(kinds),
        f"{seed_note(test)}\n{fitted_note(calibration)}",
        ncols=min(len(calibrators) + 1, 4),
    )
    return save(fig, paths)


MARKER_AREA = (6.0, 80.0)  # a bin's marker area: the least (pt²), and what the bin of the most samples adds
UNIT_MARGIN = 0.03  # beyond 0 and 1 on the reliability diagrams' axes


def calibrator_reliability(
    reliability: pd.DataFrame,
    history: pd.DataFrame,
    calibration: pd.DataFrame | None,
    title: str,
    paths: Sequence[str | Path],
) -> plt.Figure:
    """Top-label reliability diagram of every calibrator at each seed's best-validation epoch (test set).

    A marker per non-empty bin, its area growing with the bin's samples and its fill's opacity by
    :func:`~.distributions.count_alpha`, so a bin of one sample cannot dominate, but with an opaque outline, so
    that every bin is seen; lines join adjacent bins only, never across an empty one; the axes reach a little
    beyond 0 and 1, so that a mark at confidence 1 is whole. Below each diagram: the samples per bin (log scale).
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
        colour = CALIBRATOR_COLOURS.get(c, OTHER_COLOUR)
        ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=0.8)
        for _, curve in rows.groupby("seed"):
            curve = curve.sort_values("bin")
            full = curve[(curve["count"] > 0) & curve["mean_predicted"].notna() & curve["observed_frequency"].notna()]
            runs = (full["bin"].diff() != 1).cumsum()  # adjacent non-empty bins
            for _, run in full.groupby(runs):
                if len(run) > 1:
                    ax.plot(run["mean_predicted"], run["observed_frequency"], color=colour, linewidth=0.8, alpha=0.6)
            ax.scatter(  # every bin a mark, however few its samples: a pale fill, but always its outline
                full["mean_predicted"],
                full["observed_frequency"],
                s=MARKER_AREA[0] + MARKER_AREA[1] * full["count"] / largest,
                facecolor=[to_rgba(colour, a) for a in count_alpha(full["count"], low=0.3, high=0.95)],
                edgecolor=colour,
                linewidths=0.6,
                zorder=3,
                clip_on=False,
            )
        counts = rows.groupby("bin").agg(
            lower=("bin_lower", "first"), upper=("bin_upper", "first"), n=("count", "mean")
        )
        width = counts["upper"] - counts["lower"]
        strip.bar(counts["lower"], counts["n"], width=width, align="edge", color=colour, alpha=0.7, linewidth=0)
        count_axis(strip, "samples" if i % ncols == 0 else "")
        ax.set_title(calibrator_name(c))
        ax.set_xlim(-UNIT_MARGIN, 1 + UNIT_MARGIN)  # a mark at confidence or accuracy 0 or 1 is whole
        ax.set_ylim(-UNIT_MARGIN, 1 + UNIT_MARGIN)
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
