"""Figures of distributions: reliability diagrams, trust spectrum and trust densities at the
first, best-validation and last epoch (a single set of predictions: that one set); the network
opinion against the number of clusters and in the opinion triangle.

Drawn with matplotlib alone (no seaborn): means and bands over seeds are computed here, and
``trustcal assess`` on one file does not pay for importing seaborn."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from trustcal.measures.bins import clopper_pearson
from trustcal.reporting.figures import style

# --------------------------------------------------------------------------- chosen epochs


def count_alpha(counts: pd.Series | np.ndarray, low: float = 0.15, high: float = 0.8) -> np.ndarray:
    """Opacity of a bin's mark by its number of samples: ``low + (high − low)·√(count / max count)``,
    so that a bin of one sample is faint beside the bins that hold the data (0 for an empty bin)."""
    counts = np.asarray(counts, dtype=float)
    top = np.nanmax(counts) if counts.size and np.nanmax(counts) > 0 else 1.0
    share = np.sqrt(np.clip(np.nan_to_num(counts) / top, 0, 1))
    return np.where(share > 0, low + (high - low) * share, 0.0)


def count_axis(ax: plt.Axes, label: str) -> None:
    """The counts under a reliability diagram: log scale from one sample, plain numbers, few ticks."""
    ax.set_yscale("log")
    top = max(ax.get_ylim()[1], 10.0)
    ax.set_ylim(0.7, top * 2.5)
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, numticks=4))
    ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.0f}"))
    ax.set_ylabel(label)


ACCURACY_LEVEL = 0.95  # the level of each bin's interval in the reliability diagrams


def _reliability_bins(curves: pd.DataFrame, chosen: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The test set's top-label bins at the chosen epochs, each with its Clopper–Pearson interval (``acc_lo``,
    ``acc_hi``), and their mean over seeds per (which, state, bin): ``lower``, ``upper``, ``freq``, ``freq_lo``,
    ``freq_hi``, ``conf``, ``count``."""
    top = style.with_state(curves[(curves["curve"] == "top_label") & (curves["split"] == "test")])
    top = style.select_chosen(top, chosen)
    count = top["count"].fillna(0).round()
    correct = (top["observed_frequency"].fillna(0) * count).round().clip(0, count)
    acc_lo, acc_hi = clopper_pearson(correct.to_numpy(), count.to_numpy(), ACCURACY_LEVEL)
    top = top.assign(acc_lo=acc_lo, acc_hi=acc_hi)
    agg = (
        top.groupby(["which", "state", "bin"])
        .agg(
            lower=("bin_lower", "first"),
            upper=("bin_upper", "first"),
            freq=("observed_frequency", "mean"),
            freq_lo=("acc_lo", "mean"),
            freq_hi=("acc_hi", "mean"),
            conf=("mean_predicted", "mean"),
            count=("count", "mean"),
        )
        .reset_index()
    )
    return top, agg


def _reliability_panels(columns: list[tuple[str, str]], states: list[str]) -> tuple[plt.Figure, list[tuple]]:
    """The figure of :func:`reliability` and its panels: (diagram, counts, (which, title), state, column, bottom
    row); a single set of predictions (one column): its states side by side, else a column per chosen epoch."""
    if len(columns) == 1:
        fig, axes = style.new_figure(
            "reliability",
            size=(max(0.9 + 2.6 * len(states), 4.8), 3.9),  # room for the legend
            nrows=2,
            ncols=len(states),
            sharex=True,
            squeeze=False,
            gridspec_kw=dict(height_ratios=[3, 1]),
        )
        return fig, [(axes[0, c], axes[1, c], columns[0], state, c, True) for c, state in enumerate(states)]
    fig, axes = style.new_figure(
        "reliability",
        nrows=2 * len(states),
        ncols=len(columns),
        sharex=True,
        squeeze=False,
        gridspec_kw=dict(height_ratios=[3, 1] * len(states)),
    )
    panels = [
        (axes[2 * r, c], axes[2 * r + 1, c], column, state, c, r == len(states) - 1)
        for c, column in enumerate(columns)
        for r, state in enumerate(states)
    ]
    return fig, panels


def _reliability_diagram(ax: plt.Axes, hist: plt.Axes, d: pd.DataFrame, state: str) -> None:
    """One diagram of :func:`reliability` from the rows ``d`` of its bins: the bars of the bins' accuracy with
    their intervals, the ticks of their mean confidence, the diagonal, and the counts in ``hist`` below."""
    width = (d["upper"] - d["lower"]).to_numpy()
    colour = style.STATE_COLOURS[state]
    freq = d["freq"].to_numpy()
    yerr = np.nan_to_num(np.vstack([freq - d["freq_lo"].to_numpy(), d["freq_hi"].to_numpy() - freq])).clip(0)
    ax.bar(
        d["lower"],
        d["freq"].fillna(0),
        width=width,
        align="edge",
        color=[to_rgba(colour, a) for a in count_alpha(d["count"])],
        edgecolor="white",
        linewidth=0.5,
        yerr=yerr,
        error_kw=dict(elinewidth=0.7, capsize=1.5, ecolor="0.3"),
    )
    ax.scatter(  # as faint as the bar: a bin of one sample does not catch the eye
        d["lower"] + width / 2,
        d["conf"],
        marker="_",
        s=49,
        linewidths=1.4,
        color=[(0, 0, 0, a) for a in count_alpha(d["count"], low=0.3, high=1.0)],
        zorder=3,
    )
    ax.plot([0, 1], [0, 1], linestyle=":", color="0.4", linewidth=0.8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    hist.bar(d["lower"], d["count"].fillna(0), width=width, align="edge", color=colour, alpha=0.75, linewidth=0)


def _reliability_handles(states: list[str], seeds: int) -> list:
    """The legend entries of :func:`reliability`."""
    handles = [Patch(color=style.STATE_COLOURS[s], alpha=0.75, label=f"{s}: observed accuracy") for s in states]
    handles += [
        Patch(color="0.55", alpha=count_alpha([1, 100])[0], label="paler bar: fewer samples in the bin"),
        Line2D(
            [],
            [],
            color="0.3",
            marker="|",
            markersize=7,
            linestyle="none",
            label=f"{ACCURACY_LEVEL * 100:.0f} % Clopper–Pearson interval of the bin's accuracy"
            + (" (per seed, averaged)" if seeds > 1 else ""),
        ),
        Line2D(
            [],
            [],
            color="black",
            marker="_",
            markersize=7,
            markeredgewidth=1.4,
            linestyle="none",
            label="mean confidence of the bin",
        ),
        Line2D([], [], color="0.4", linestyle=":", label="perfect calibration"),
    ]
    return handles


def reliability(
    curves: pd.DataFrame,
    history: pd.DataFrame,
    title: str,
    paths: Sequence[str | Path],
    scores: pd.DataFrame | None = None,
) -> plt.Figure:
    """Top-label reliability diagrams over the number of samples per confidence bin, first / best / last
    epoch (a single set of predictions: one column per state).

    Bars: observed accuracy per confidence bin, paler the fewer samples the bin holds (:func:`count_alpha`),
    with its 95 % Clopper–Pearson interval (:func:`~trustcal.measures.bins.clopper_pearson`; with several
    seeds, each seed's bounds averaged, as the bootstrap bands elsewhere); black ticks: the bin's mean
    confidence; the dotted diagonal is perfect calibration. Below each diagram: the test samples per bin
    (mean over seeds; log scale).
    """
    chosen = style.chosen_epochs(history)
    top, agg = _reliability_bins(curves, chosen)
    ece = None
    if scores is not None:
        s = style.select_chosen(style.with_state(scores[scores["split"] == "test"]), chosen)
        ece = s.groupby(["which", "state"])["ece"].agg(["mean", "std"])
    columns, states, seeds = style.chosen_columns(chosen), style.states_of(top), style.n_seeds(top)
    single = len(columns) == 1
    fig, panels = _reliability_panels(columns, states)
    for ax, hist, (which, which_title), state, col, bottom in panels:
        d = agg[(agg["which"] == which) & (agg["state"] == state)]
        _reliability_diagram(ax, hist, d, state)
        head = [which_title] if which_title and (single or state == states[0]) else []
        head += [state] if single else []
        if ece is not None and (which, state) in ece.index:
            m, sd = ece.loc[(which, state)]
            head.append(f"ECE {m:.3f}" + (f" ± {sd:.3f}" if seeds > 1 else ""))
        ax.set_title("\n".join(head), fontsize=7.5)
        ax.set_ylabel(("observed accuracy" if single else f"{state}\nobserved accuracy") if col == 0 else "")
        count_axis(hist, ("samples" if seeds == 1 else "samples (mean)") if col == 0 else "")
        hist.set_xlabel("Confidence (max. probability)" if bottom else "")
    fig.suptitle(style.heading(title, "reliability diagrams, top label, test set"))
    style.figure_legend(fig, _reliability_handles(states, seeds), style.seed_note(top), ncols=2)
    return style.save(fig, paths)


def _mean_sd(df: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """Mean and sd over seeds of ``value`` per ``keys`` (sd NaN for one seed)."""
    return df.groupby(keys, sort=True)[value].agg(["mean", "std"]).reset_index()


def trust_spectrum(
    spectrum: pd.DataFrame,
    history: pd.DataFrame,
    title: str,
    paths: Sequence[str | Path],
    classes: Sequence[str] | None = None,
    scores: pd.DataFrame | None = None,
) -> plt.Figure:
    """Trust spectrum T(z) per label (Wong et al.), first / best / last epoch, before vs after;
    bars: the mean over seeds, whiskers ± one sd. Beyond ``MANY_LABELS`` labels, each state's per-label
    values (mean over seeds) sorted from the highest as a line over the labels' ranks, a few ticks."""
    chosen = style.chosen_epochs(history)
    test = style.select_chosen(style.with_state(spectrum[spectrum["split"] == "test"]), chosen)
    test["label"] = test["label"].astype(int)
    nts = None
    if scores is not None:
        s = style.select_chosen(style.with_state(scores[scores["split"] == "test"]), chosen)
        nts = s.groupby(["which", "state"])["net_trust_score"].mean()
    columns, states = style.chosen_columns(chosen), style.states_of(test)
    size = (style.COLUMN_WIDTH + 0.6, 2.6) if len(columns) == 1 else None
    fig, axes = style.new_figure("trust_spectrum", size=size, ncols=len(columns), sharey=True, squeeze=False)
    if test["label"].nunique() > style.MANY_LABELS:
        return _sorted_spectrum(test, fig, axes[0], columns, states, nts, title, paths)
    names = style.named_classes(classes)
    bar = 0.8 / len(states)
    for ax, (which, which_title) in zip(axes[0], columns):
        d = _mean_sd(test[test["which"] == which], ["state", "label"], "trust")
        for i, state in enumerate(states):
            rows = d[d["state"] == state]
            ax.bar(
                rows["label"] + (i - (len(states) - 1) / 2) * bar,
                rows["mean"],
                width=bar,
                color=style.STATE_COLOURS[state],
                yerr=rows["std"].fillna(0) if style.n_seeds(test) > 1 else None,
                error_kw=dict(elinewidth=0.7, ecolor="0.25"),
                linewidth=0,
            )
        head = [which_title] if which_title else []
        if nts is not None:
            head.append("NTS " + " → ".join(f"{nts.get((which, s), np.nan):.3f}" for s in states))
        ax.set_title("\n".join(head), fontsize=7.5)
        ax.set_ylim(0, 1.0)
        labels = sorted(test["label"].unique())
        ax.set_xticks(labels)
        ax.grid(axis="x", visible=False)
        ax.set_xlabel("True label z")
        ax.set_ylabel("Trust spectrum T(z)" if which == columns[0][0] else "")
        if names and test["label"].nunique() == len(names):
            ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=6)
    fig.suptitle(style.heading(title, "trust spectrum on the test set"))
    style.figure_legend(fig, [Patch(color=style.STATE_COLOURS[s], label=s) for s in states], style.seed_note(test))
    return style.save(fig, paths)


def _sorted_spectrum(
    test: pd.DataFrame, fig: plt.Figure, axes, columns, states, nts, title: str, paths: Sequence[str | Path]
) -> plt.Figure:
    """The trust spectrum of many labels, drawn into ``axes`` (a panel per column of :func:`trust_spectrum`):
    per state, T(z) of every label (mean over seeds) sorted from the highest, against the label's rank; labels
    without a test sample (T undefined) left out."""
    k, ranked = test["label"].nunique(), 1
    for ax, (which, which_title) in zip(axes, columns):
        d = _mean_sd(test[test["which"] == which], ["state", "label"], "trust")
        for state in states:
            values = d.loc[d["state"] == state, "mean"].to_numpy(dtype=float)
            values = np.sort(values[~np.isnan(values)])[::-1]
            ax.plot(np.arange(1, len(values) + 1), values, color=style.STATE_COLOURS[state], linewidth=1.1)
            ranked = max(ranked, len(values))
        head = [which_title] if which_title else []
        if nts is not None:
            head.append("NTS " + " → ".join(f"{nts.get((which, s), np.nan):.3f}" for s in states))
        ax.set_title("\n".join(head), fontsize=7.5)
        ax.set_ylim(0, 1.0)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5, integer=True, min_n_ticks=2))
        ax.set_xlabel("Label rank (by T(z), highest first)")
        ax.set_ylabel("Trust spectrum T(z)" if which == columns[0][0] else "")
    for ax in axes:
        ax.set_xlim(1, max(ranked, 2))
    unseen = f"{k - ranked} of the {k} labels have no test sample (T undefined)" if ranked < k else ""
    fig.suptitle(style.heading(title, f"trust spectrum on the test set, {ranked} labels sorted"))
    handles = [Line2D([], [], color=style.STATE_COLOURS[s], linewidth=1.1, label=s) for s in states]
    style.figure_legend(fig, handles, "; ".join(note for note in (style.seed_note(test), unseen) if note))
    return style.save(fig, paths)


DIRECT_LABELS = 12  # up to this many labels, each line of the trust densities carries its label's number


def label_dashes(label: int) -> dict:
    """The line style of label z in the trust densities: odd labels dashed, so that two neighbouring viridis
    shades (the ones hard to tell apart) never share a style."""
    return dict(dashes=style.DASHED) if label % 2 else {}


def label_lines(ax: plt.Axes, palette: dict[int, tuple]) -> None:
    """A chip with its label's number on each label's line of ``ax`` (the lines of the palette's colours), on the
    point of the line furthest from the other lines and the chips already placed (distances in points, the y axis
    as drawn: logarithmic), away from the panel's edges and never over another chip where there is room."""
    from matplotlib.colors import to_rgba

    ax.get_xlim(), ax.get_ylim()  # the limits as drawn (autoscaled)
    to_axes = ax.transData + ax.transAxes.inverted()
    curves = {}
    for line in ax.get_lines():
        found = [z for z, c in palette.items() if np.allclose(to_rgba(line.get_color()), c)]
        xy = to_axes.transform(np.c_[line.get_xdata(), line.get_ydata()])
        xy = xy[np.isfinite(xy).all(axis=1)]
        if found and len(xy) > 2:
            curves[found[0]] = xy
    box = ax.get_position()
    width, height = (box.width, box.height) * ax.figure.get_size_inches() * 72  # the panel in points
    chip = np.array([9.0, 10.0])  # a chip's extent in points (one digit at 5.5 pt, with its padding)
    placed = np.empty((0, 2))
    for z, xy in sorted(curves.items()):
        pts = xy * (width, height)
        others = np.concatenate([o for k, o in curves.items() if k != z] + [np.empty((0, 2))]) * (width, height)
        near = [others, placed * (width, height)]
        room = np.full(len(pts), np.inf)
        for q in near:
            if len(q):
                room = np.minimum(room, np.hypot(*(pts[:, None, :] - q[None, :, :]).transpose(2, 0, 1)).min(axis=1))
        inside = ((xy > 0.05) & (xy < 0.95)).all(axis=1)
        clear = np.ones(len(pts), bool)
        for q in placed * (width, height):
            clear &= ~((np.abs(pts - q) < chip).all(axis=1))
        for allowed in (inside & clear, inside):
            if allowed.any():
                i = int(np.argmax(np.where(allowed, room, -np.inf)))
                break
        else:
            continue
        placed = np.vstack([placed, xy[i]])
        r, g, b, _ = palette[z]
        ax.text(
            *xy[i],
            str(z),
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=5.5,
            color="white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.55 else "black",
            bbox=dict(boxstyle="round,pad=0.15", facecolor=palette[z], edgecolor="none"),
            zorder=4,
        )


def trust_density(
    density: pd.DataFrame,
    history: pd.DataFrame,
    title: str,
    paths: Sequence[str | Path],
    classes: Sequence[str] | None = None,
) -> plt.Figure:
    """Trust density per label (Wong et al. §2.2), rows first / best / last epoch, columns before / after;
    lines: the mean over seeds, bands: their range (a ± sd band would cross 0 on the log axis). Beyond
    ``MANY_LABELS`` labels, the median over the labels of each label's density (mean over seeds) and the band
    of 10–90 % of them, in the state's colour, instead of a line per label."""
    chosen = style.chosen_epochs(history)
    test = style.select_chosen(style.with_state(density[density["split"] == "test"]), chosen)
    test["label"] = test["label"].astype(int)
    many = test["label"].nunique() > style.MANY_LABELS
    k = style.label_count(test["label"], classes)
    palette = style.label_colours(k)
    columns, states, seeds = style.chosen_columns(chosen), style.states_of(test), style.n_seeds(test)
    size = (0.9 + 3.0 * len(states), 2.7) if len(columns) == 1 else None
    fig, axes = style.new_figure(
        "trust_density", size=size, nrows=len(columns), ncols=len(states), sharex=True, sharey=True, squeeze=False
    )
    for r, (which, which_title) in enumerate(columns):
        for c, state in enumerate(states):
            ax = axes[r, c]
            d = test[(test["which"] == which) & (test["state"] == state)]
            if many:
                per_label = d.groupby(["label", "trust"], sort=True)["density"].mean().unstack("trust")
                lo, mid, hi = style.across_labels(per_label)
                grid = per_label.columns.to_numpy(dtype=float)
                colour = style.STATE_COLOURS[state]
                ax.fill_between(grid, lo, hi, color=colour, alpha=0.25, linewidth=0)
                ax.plot(grid, mid, color=colour, linewidth=1.1)
            g = d.groupby(["label", "trust"], sort=True)["density"].agg(["mean", "min", "max"]).reset_index()
            for label, rows in g.groupby("label") if not many else ():
                colour = palette[int(label)]
                ax.plot(rows["trust"], rows["mean"], color=colour, linewidth=0.9, **label_dashes(int(label)))
                if seeds > 1:
                    ax.fill_between(rows["trust"], rows["min"], rows["max"], color=colour, alpha=0.2, linewidth=0)
            ax.set_yscale("log")
            ax.set_ylim(style.DENSITY_FLOOR, None)
            ax.set_xlim(0, 1)
            style.log_ticks(ax)
            head = f"{which_title} · {state}" if which_title else state
            ax.set_title(head if len(head) <= 58 else f"{which_title}\n{state}", fontsize=7.5)  # long: two lines
            ax.set_ylabel("density" if c == 0 else "")
            ax.set_xlabel("")
    narrow = "\n" if len(states) == 1 else " "  # one column: the label on two lines, within the figure
    fig.supxlabel(
        f"Question-answer trust Q{narrow}(confidence C if the prediction is right, 1 − C if wrong)", fontsize=8
    )
    if many:  # no colour per label: the band and the line are said in the title
        labels = test["label"].nunique()
        each = f", each the mean over {seeds} seeds" if seeds > 1 else ""
        note = f"median and 10–90 % band of the {labels} labels{each}; log scale"
        fig.suptitle(style.heading(title, f"trust densities across labels on the test set\n({note})"))
        return style.save(fig, paths)
    if k <= DIRECT_LABELS:
        for ax in axes.flat:  # after every panel: the shared y limits are final
            label_lines(ax, palette)
    style.label_colourbar(fig, axes, k, classes, shrink=0.6 if len(columns) > 1 else 0.9, pad=0.01, dashed=True)
    note = f"mean and range over {seeds} seeds; log scale" if seeds > 1 else "log scale"
    fig.suptitle(style.heading(title, f"trust densities per label on the test set ({note})"))
    return style.save(fig, paths)


# --------------------------------------------------------------------------- trust variants

SWEEP_STYLES = {"midpoint": dict(linestyle="-", marker="o"), "mean": dict(linestyle=(0, style.DASHED), marker="s")}


def _epoch_colours(epochs: list[int]) -> dict[int, tuple]:
    import seaborn as sns  # only a series needs its palette

    return dict(zip(epochs, sns.color_palette("crest", len(epochs))))


def cluster_sweep(sweep: pd.DataFrame, title: str, paths: Sequence[str | Path], clusters: int = 10) -> plt.Figure:
    """Network opinion against the number of clusters M, midpoint vs cluster-mean representative; mean
    over seeds with a ± sd band. A series: a row per state, a colour per epoch. One epoch: one row, the
    states in their colours (before vermillion, after blue)."""
    sweep = style.with_state(sweep)
    epochs = sorted(sweep["epoch"].unique())
    states = style.states_of(sweep)
    seeds = style.n_seeds(sweep)
    one_epoch = len(epochs) == 1
    rows = [("", states)] if one_epoch else [(state, [state]) for state in states]
    palette = {} if one_epoch else _epoch_colours(epochs)

    def colour_of(state: str, epoch: int):
        return style.STATE_COLOURS[state] if one_epoch else palette[epoch]

    size = (style.FULL_WIDTH, 0.9 + 1.8 * len(rows)) if len(rows) == 1 else None
    fig, axes = style.new_figure(
        "cluster_sweep", size=size, nrows=len(rows), ncols=3, sharex=True, sharey="col", squeeze=False
    )
    ticks = sorted(sweep["clusters"].unique())
    for r, (row_name, row_states) in enumerate(rows):
        for c, (component, name) in enumerate(style.COMPONENTS):
            ax = axes[r, c]
            sub = sweep[sweep["state"].isin(row_states)]
            stats = _mean_sd(sub, ["state", "epoch", "representative", "clusters"], component)
            for (state, epoch, rep), line in stats.groupby(["state", "epoch", "representative"]):
                colour = colour_of(state, epoch)
                ax.plot(line["clusters"], line["mean"], color=colour, markersize=3, **SWEEP_STYLES.get(rep, {}))
                if seeds > 1:
                    lo, hi = line["mean"] - line["std"], line["mean"] + line["std"]
                    ax.fill_between(line["clusters"], lo, hi, color=colour, alpha=0.15, linewidth=0)
            ax.axvline(clusters, color="0.4", linestyle=":", linewidth=0.8)
            ax.set_xscale("log")
            ax.set_xticks(ticks)
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_title(name if r == 0 else "")
            ax.set_ylabel(f"{row_name}\nnetwork {component}" if row_name and c == 0 else f"network {component}")
            ax.set_xlabel("Number of clusters M (log scale)" if r == len(rows) - 1 else "")
            ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    for ax in axes[:, 2]:
        style.plain_numbers(ax)
    handles = (
        [Patch(color=style.STATE_COLOURS[s], label=s) for s in states]
        if one_epoch
        else [Line2D([], [], color=palette[e], label=f"epoch {e}") for e in epochs]
    )
    handles += [
        Line2D([], [], color="0.3", marker="o", markersize=3, label="midpoint RP (paper)"),
        Line2D([], [], color="0.3", marker="s", markersize=3, linestyle="--", label="cluster-mean RP"),
        Line2D([], [], color="0.4", linestyle=":", label=f"M = {clusters} (this run)"),
    ]
    fig.suptitle(style.heading(title, "network opinion against the number of clusters"))
    style.figure_legend(fig, handles, style.seed_note(sweep), ncols=(len(handles) + 1) // 2)
    return style.save(fig, paths)


SQRT3_2 = np.sqrt(3) / 2


def barycentric(b, d, u) -> tuple[np.ndarray, np.ndarray]:
    """(b, d, u) → triangle coordinates: disbelief (0, 0), belief (1, 0), uncertainty (½, √3/2)."""
    b, u = np.asarray(b, float), np.asarray(u, float)
    return b + u / 2, u * SQRT3_2


def _triangle_frame(ax: plt.Axes) -> None:
    corners = np.array([[0, 0], [1, 0], [0.5, SQRT3_2], [0, 0]])
    for t in (0.2, 0.4, 0.6, 0.8):  # iso-lines of each component
        for pts in (
            barycentric([t, t], [1 - t, 0], [0, 1 - t]),
            barycentric([1 - t, 0], [t, t], [0, 1 - t]),
            barycentric([1 - t, 0], [0, 1 - t], [t, t]),
        ):
            ax.plot(*pts, color="0.88", linewidth=0.5, zorder=0)
    ax.plot(corners[:, 0], corners[:, 1], color="0.3", linewidth=0.8)
    ax.text(-0.02, -0.03, "disbelief", ha="right", va="top", fontsize=7)
    ax.text(1.02, -0.03, "belief", ha="left", va="top", fontsize=7)
    ax.text(0.5, SQRT3_2 + 0.03, "uncertainty", ha="center", va="bottom", fontsize=7)
    ax.set_xlim(-0.2, 1.2)
    ax.set_ylim(-0.1, SQRT3_2 + 0.1)
    ax.set_aspect("equal")
    ax.axis("off")


def opinion_triangle(trust: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure:
    """The network opinion of every epoch in the (b, d, u) triangle, and a zoom on where it lies."""
    net = style.with_state(style.network_rows(trust))
    mean = net.groupby(["state", "epoch"])[["belief", "disbelief", "uncertainty"]].mean().reset_index()
    fig, (tri, zoom) = style.new_figure("opinion_triangle", ncols=2, gridspec_kw=dict(width_ratios=[1, 1.1]))
    _triangle_frame(tri)
    many = style.n_seeds(net) > 1
    for state in style.states_of(net):
        colour = style.STATE_COLOURS[state]
        m = mean[mean["state"] == state].sort_values("epoch")
        x, y = barycentric(m["belief"], m["disbelief"], m["uncertainty"])
        tri.plot(x, y, color=colour, marker="o", markersize=2.5, linewidth=0.9)
        if many:
            for _, s in net[net["state"] == state].groupby("seed"):
                s = s.sort_values("epoch")
                zoom.plot(s["belief"], s["uncertainty"], color=colour, linewidth=0.5, alpha=0.35)
        zoom.plot(m["belief"], m["uncertainty"], color=colour, marker="o", markersize=3, linewidth=1.0)
        for row in (m.iloc[0], m.iloc[-1]):
            zoom.annotate(
                f"{int(row['epoch'])}",
                (row["belief"], row["uncertainty"]),
                textcoords="offset points",
                xytext=(4, -9),
                fontsize=6.5,
                color=colour,
                bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.8),
            )
    zoom.set_xlabel("Belief b (disbelief d = 1 − b − u)")
    zoom.set_ylabel("Uncertainty u")
    style.plain_numbers(zoom)
    zoom.margins(0.12)
    zoom.set_title("Zoom (epoch numbers at the ends)")
    tri.set_title("Network opinion per epoch")
    fig.suptitle(style.heading(title, "network opinion over training in the opinion triangle"))
    note = style.seed_note(net) if not many else f"mean of {style.n_seeds(net)} seeds (thin: each seed)"
    style.figure_legend(fig, style.state_handles(), note)
    return style.save(fig, paths)
