"""Figures of docs/method.md §13: the per-prediction opinion as a selective-prediction signal
(``selective.csv``), the calibration and refinement terms of the loss per epoch and the smooth
reliability diagram with its bootstrap band (``scores.csv``, ``smooth_reliability.csv``).

Lines are the mean over seeds; bands are the bootstrap interval over resamples of the test set
(``*_lo`` / ``*_hi``, averaged over seeds), or, for a number without one, ± one sd over seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from trustcal.calibration.states import RAW
from trustcal.reporting.figures.calibrators import calibrator_name
from trustcal.reporting.figures.style import (
    FIGURE_SIZES,
    STATE_COLOURS,
    chosen_columns,
    chosen_epochs,
    figure_legend,
    heading,
    integer_epochs,
    interval_handle,
    layer_markersize,
    layer_width,
    marker_every,
    n_seeds,
    new_figure,
    plain_numbers,
    save,
    seed_note,
    select_chosen,
    states_of,
    with_state,
)

SCORE_STYLES = {  # score of selective.csv → (legend name, colour, marker); Okabe–Ito
    "max_probability": ("max probability", "#000000", "o"),
    "belief": ("belief b", "#0072B2", "s"),
    "projected_probability": ("projected probability b + a·u", "#009E73", "^"),
    "evidence": ("evidence 1 − u", "#CC79A7", "D"),
}
OTHER_SCORE = ("0.5", "p")  # a score of selective.csv not named above: grey pentagons
BAND_ALPHA = 0.18


def score_style(score: str, position: int, points: int = 0) -> dict:
    """The ``plot`` keywords of the score drawn ``position``-th (0: first) over ``points`` points: its colour and
    marker, the width and marker size of its position, the first widest (where u ≈ 0, belief b and the projected
    probability b + a·u are equal: the later line lies inside the earlier one)."""
    _, colour, marker = SCORE_STYLES.get(score, (score, *OTHER_SCORE))
    return dict(
        color=colour,
        marker=marker,
        markersize=layer_markersize(position) - 1.0,
        markevery=marker_every(points, position),
        linewidth=layer_width(position),
        markeredgecolor="white",
        markeredgewidth=0.4,
    )


def score_name(score: str) -> str:
    return SCORE_STYLES.get(score, (score,))[0]


def _model_rows(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The raw model's rows (the first calibrator's where there are none) and how a title names them (the
    calibrator's name of every figure, :data:`~.calibrators.CALIBRATOR_NAMES`)."""
    names = list(dict.fromkeys(df["calibrator"].astype(str)))
    chosen = RAW if RAW in names else names[0]
    return df[df["calibrator"].astype(str) == chosen], calibrator_name(chosen)


def _band_line(ax: plt.Axes, df: pd.DataFrame, column: str, colour: str, **line) -> None:
    """Mean over seeds of ``column`` against the epoch, with its band (bootstrap, else ± sd over seeds); ``line``:
    the ``plot`` keywords (by default a dot on each of fewer than 15 epochs)."""
    if df.empty or column not in df or df[column].isna().all():
        return
    g = df.groupby("epoch")
    mean = g[column].mean()
    if f"{column}_lo" in df and df[f"{column}_lo"].notna().any():
        lo, hi = g[f"{column}_lo"].mean(), g[f"{column}_hi"].mean()
    elif df["seed"].nunique() > 1:
        sd = g[column].std()
        lo, hi = mean - sd, mean + sd
    else:
        lo = hi = None
    if lo is not None:
        ax.fill_between(mean.index, lo, hi, color=colour, alpha=BAND_ALPHA, linewidth=0)
    line = {"marker": "o" if len(mean) < 15 else None, "markersize": 3, **line, "color": colour}
    ax.plot(mean.index, mean.values, **line)


# --------------------------------------------------------------------------- §13.1 selective prediction


def _risk_columns(df: pd.DataFrame) -> list[tuple[float, str]]:
    """(coverage, column) of the risk columns of selective.csv (``risk_05`` … ``risk_100``), in order."""
    found = [(int(c[5:]) / 100, c) for c in df.columns if c.startswith("risk_") and c[5:].isdigit()]
    return sorted(found)


def selective_prediction(
    selective: pd.DataFrame, history: pd.DataFrame, title: str, paths: Sequence[str | Path]
) -> plt.Figure:
    """Top: risk–coverage curves of every confidence score at the best-validation and the last epoch.
    Bottom: AURC per epoch with its bootstrap band, and the AURC of each opinion score minus that of the
    max probability with its paired band (below 0: the score ranks the errors later). The raw model."""
    rows, model = _model_rows(selective)
    scores = [s for s in SCORE_STYLES if s in set(rows["score"])] + sorted(set(rows["score"]) - set(SCORE_STYLES))
    chosen = chosen_epochs(history)
    columns = [(w, t) for w, t in chosen_columns(chosen) if w != "first"]
    picked = select_chosen(rows, chosen)
    risks = _risk_columns(rows)
    fig, axes = new_figure("selective_prediction", nrows=2, ncols=2, squeeze=False)
    for ax, (which, which_title) in zip(axes[0], columns + [(None, "")] * (2 - len(columns))):
        if which is None:
            ax.set_visible(False)
            continue
        at = picked[picked["which"] == which]
        for position, score in enumerate(scores):
            curve = at[at["score"] == score][[c for _, c in risks]].mean()
            ax.plot([c for c, _ in risks], curve.to_numpy(), **{**score_style(score, position), "markevery": None})
        ax.set_title(f"Risk–coverage, {which_title[:1].lower() + which_title[1:]}" if which_title else "Risk–coverage")
        ax.set_xlabel("Coverage (fraction of predictions accepted)")
        ax.set_ylabel("Selective risk (error rate)")
        ax.set_xlim(0, 1)
        plain_numbers(ax)
    area, diff = axes[1]
    epochs = rows["epoch"].nunique()
    for position, score in enumerate(scores):
        part = rows[rows["score"] == score]
        style = score_style(score, position, epochs)
        colour = style.pop("color")
        _band_line(area, part, "aurc", colour, **style)
        if score != "max_probability":
            _band_line(diff, part, "diff_aurc", colour, **style)
    diff.axhline(0, color="0.4", linestyle=":", linewidth=0.8)
    area.set_title("AURC per epoch (lower: errors ranked later)")
    diff.set_title("AURC of the score − AURC of the max probability")
    for ax in (area, diff):
        ax.set_xlabel("Epoch")
        integer_epochs(ax)
        plain_numbers(ax)
    fig.suptitle(heading(title, f"per-prediction opinion as a selective-prediction signal ({model}, test set)"))
    handles = [Line2D([], [], label=score_name(s), **score_style(s, i)) for i, s in enumerate(scores)]
    handles.append(interval_handle("95 % bootstrap interval (band of each score's colour;\npaired for the difference)"))
    figure_legend(fig, handles, seed_note(rows), ncols=3)
    return save(fig, paths)


# --------------------------------------------------------------------------- §13.2 calibration and refinement


LOSSES = (("nll", "NLL", " (nats / sample)"), ("brier", "Brier score", ""))
TERM_COLOURS = {"loss": "#000000", "refinement": "#0072B2", "calibration": "#D55E00", "validation": "#009E73"}
TERM_STYLES = {  # the loss and its refinement share a panel and are equal where the calibration term is 0
    "loss": dict(linewidth=layer_width(0), markersize=layer_markersize(0) - 1.0),
    "refinement": dict(linewidth=1.0, marker="s", markersize=3),
}


def calibration_refinement(scores: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure:
    """Per epoch, on the test set and for the raw model: the NLL and the Brier score with their refinement
    term (the loss after a cross-fitted temperature scaling; left) and the calibration term (the loss minus
    the refinement; right), with bootstrap bands. Dotted verticals: the epoch of the least validation NLL
    (from the validation rows of scores.csv, where there are any) and of the least test refinement."""
    test = scores[scores["split"] == "test"]
    rows, model = _model_rows(test)
    val, _ = _model_rows(scores[scores["split"] == "val"]) if (scores["split"] == "val").any() else (None, None)
    fig, axes = new_figure("calibration_refinement", nrows=2, ncols=2, sharex=True, squeeze=False)
    marks = []
    for r, (loss, name, unit) in enumerate(LOSSES):
        left, right = axes[r]
        _band_line(left, rows, loss, TERM_COLOURS["loss"], **TERM_STYLES["loss"])  # under the refinement, wider
        _band_line(left, rows, f"{loss}_refinement", TERM_COLOURS["refinement"], **TERM_STYLES["refinement"])
        _band_line(right, rows, f"{loss}_calibration", TERM_COLOURS["calibration"], linewidth=1.0)
        right.axhline(0, color="0.4", linestyle=":", linewidth=0.8)
        left.set_title(f"{name} and its refinement{unit}")
        right.set_title(f"{name}: calibration term")
        for ax in (left, right):
            plain_numbers(ax)
            integer_epochs(ax)
            ax.set_xlabel("Epoch" if r == len(LOSSES) - 1 else "")
    refinement = rows.groupby("epoch")["nll_refinement"].mean() if "nll_refinement" in rows else pd.Series(dtype=float)
    if refinement.notna().any():
        marks.append((int(refinement.idxmin()), TERM_COLOURS["refinement"], "least test NLL refinement"))
    if val is not None and val["nll"].notna().any():
        marks.append(
            (int(val.groupby("epoch")["nll"].mean().idxmin()), TERM_COLOURS["validation"], "least validation NLL")
        )
    for epoch, colour, _ in marks:
        for ax in axes.flat:
            ax.axvline(epoch, color=colour, linestyle=":", linewidth=1.0)
    fig.suptitle(heading(title, f"calibration and refinement per epoch ({model}, test set)"))
    handles = [
        Line2D([], [], color=TERM_COLOURS["loss"], marker="o", label="loss", **TERM_STYLES["loss"]),
        Line2D(
            [],
            [],
            color=TERM_COLOURS["refinement"],
            label="refinement (after cross-fitted temperature scaling)",
            **TERM_STYLES["refinement"],
        ),
        Line2D([], [], color=TERM_COLOURS["calibration"], label="calibration = loss − refinement"),
    ] + [Line2D([], [], color=c, linestyle=":", label=f"{label} (epoch {e})") for e, c, label in marks]
    bands = "bands: 95 % bootstrap interval, the recalibration held fixed"
    figure_legend(fig, handles, f"{seed_note(rows)}; {bands}" if seed_note(rows) else bands, ncols=3)
    return save(fig, paths)


# --------------------------------------------------------------------------- §13.3 smooth reliability diagram


def smooth_reliability(
    smooth: pd.DataFrame, history: pd.DataFrame, title: str, paths: Sequence[str | Path]
) -> plt.Figure:
    """The smooth reliability diagram (kernel estimate of the accuracy at each confidence, at the smooth
    ECE's bandwidth) before and after calibration, at the first, best-validation and last epoch (a single
    set of predictions: one column), with the bootstrap band of the curve; below, the density of the
    confidences. The curve is drawn where the density is at least 1 % of its largest value."""
    chosen = chosen_epochs(history)
    rows = with_state(smooth[smooth["split"] == "test"] if "split" in smooth else smooth)
    picked = select_chosen(rows, chosen)
    columns, states = chosen_columns(chosen), states_of(rows)
    fig, axes = new_figure(
        "smooth_reliability",
        size=FIGURE_SIZES["smooth_reliability"] if len(columns) > 1 else (4.2, 3.9),
        nrows=2,
        ncols=len(columns),
        sharex=True,
        squeeze=False,
        gridspec_kw=dict(height_ratios=[3, 1]),
    )
    seeds = n_seeds(rows)
    banded = "accuracy_lo" in rows and rows["accuracy_lo"].notna().any()
    for c, (which, which_title) in enumerate(columns):
        ax, strip = axes[0, c], axes[1, c]
        ax.plot([0, 1], [0, 1], linestyle=":", color="0.4", linewidth=0.8)
        for state in states:
            part = picked[(picked["which"] == which) & (picked["state"] == state)]
            if part.empty:
                continue
            g = part.groupby("confidence")
            t = g["accuracy"].mean().index.to_numpy()
            accuracy, density = g["accuracy"].mean().to_numpy(), g["density"].mean().to_numpy()
            shown = density >= 0.01 * density.max()
            colour = STATE_COLOURS[state]
            if banded:
                lo, hi = g["accuracy_lo"].mean().to_numpy(), g["accuracy_hi"].mean().to_numpy()
                ax.fill_between(
                    t, np.where(shown, lo, np.nan), np.where(shown, hi, np.nan), color=colour, alpha=0.25, linewidth=0
                )
            ax.plot(t, np.where(shown, accuracy, np.nan), color=colour, linewidth=1.2)
            strip.plot(t, density, color=colour, linewidth=1.0)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_title(which_title, fontsize=7.5)
        ax.set_ylabel("Accuracy (smoothed)" if c == 0 else "")
        strip.set_xlabel("Confidence")
        strip.set_ylabel("Density" if c == 0 else "")
        plain_numbers(strip)
    fig.suptitle(heading(title, "smooth reliability diagram, top label, test set"))
    notes = ["band: 95 % bootstrap interval of the curve"] if banded else []
    notes += [f"curves{' and bands' if banded else ''}: mean over {seeds} seeds"] if seeds > 1 else []
    note = "; ".join(notes)
    handles = [Line2D([], [], color=STATE_COLOURS[s], label=s) for s in states]
    handles.append(Line2D([], [], color="0.4", linestyle=":", label="perfect calibration"))
    figure_legend(fig, handles, note, ncols=len(handles))
    return save(fig, paths)
