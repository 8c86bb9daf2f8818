"""Figures of distributions: reliability diagrams, trust spectrum and trust densities at the
first, best-validation and last epoch; the network opinion against the number of clusters and
in the opinion triangle."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from trustcal.reporting.figures.style import (
    AFTER,
    BEFORE,
    COMPONENTS,
    DASHED,
    DENSITY_FLOOR,
    LABEL_NAMES,
    STATE_COLOURS,
    WHICH,
    chosen_epochs,
    errorbar,
    figure_legend,
    label_colourbar,
    label_colours,
    label_count,
    n_seeds,
    network_rows,
    new_figure,
    plain_numbers,
    save,
    seed_note,
    select_chosen,
    state_handles,
    which_titles,
    with_state,
)

# --------------------------------------------------------------------------- chosen epochs


def reliability(
    curves: pd.DataFrame,
    history: pd.DataFrame,
    title: str,
    paths: Sequence[str | Path],
    scores: pd.DataFrame | None = None,
) -> plt.Figure:
    """Top-label reliability diagrams over the confidence histogram, first / best / last epoch.

    Bars: observed accuracy per confidence bin; black ticks: the bin's mean
    confidence; the dotted diagonal is perfect calibration. Below each
    diagram: the share of test samples per bin (log scale).
    """
    chosen = chosen_epochs(history)
    top = with_state(curves[(curves["curve"] == "top_label") & (curves["split"] == "test")])
    top = select_chosen(top, chosen)
    totals = top.groupby(["seed", "which", "state"])["count"].transform("sum")
    top["share"] = top["count"] / totals
    agg = (
        top.groupby(["which", "state", "bin"])
        .agg(
            lower=("bin_lower", "first"),
            upper=("bin_upper", "first"),
            freq=("observed_frequency", "mean"),
            freq_sd=("observed_frequency", "std"),
            conf=("mean_predicted", "mean"),
            share=("share", "mean"),
        )
        .reset_index()
    )
    ece = None
    if scores is not None:
        s = select_chosen(with_state(scores[scores["split"] == "test"]), chosen)
        ece = s.groupby(["which", "state"])["ece"].agg(["mean", "std"])
    titles = which_titles(chosen)
    fig, axes = new_figure("reliability", nrows=4, ncols=3, sharex=True, gridspec_kw=dict(height_ratios=[3, 1, 3, 1]))
    for col, which in enumerate(WHICH):
        for r, state in enumerate((BEFORE, AFTER)):
            ax, hist = axes[2 * r, col], axes[2 * r + 1, col]
            d = agg[(agg["which"] == which) & (agg["state"] == state)]
            width = (d["upper"] - d["lower"]).to_numpy()
            colour = STATE_COLOURS[state]
            yerr = d["freq_sd"].fillna(0).to_numpy() if n_seeds(top) > 1 else None
            ax.bar(
                d["lower"],
                d["freq"].fillna(0),
                width=width,
                align="edge",
                color=colour,
                alpha=0.75,
                edgecolor="white",
                linewidth=0.5,
                yerr=yerr,
                error_kw=dict(elinewidth=0.6, capsize=1.5, ecolor="0.45"),
            )
            ax.plot(
                d["lower"] + width / 2,
                d["conf"],
                linestyle="none",
                marker="_",
                markersize=7,
                markeredgewidth=1.4,
                color="black",
            )
            ax.plot([0, 1], [0, 1], linestyle=":", color="0.4", linewidth=0.8)
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1.02)
            head = f"{titles[which]}\n" if r == 0 else ""
            if ece is not None and (which, state) in ece.index:
                m, sd = ece.loc[(which, state)]
                head += f"ECE {m:.3f}" + (f" ± {sd:.3f}" if n_seeds(top) > 1 else "")
            ax.set_title(head, fontsize=7.5)
            ax.set_ylabel(f"{state}\nobserved accuracy" if col == 0 else "")
            hist.bar(
                d["lower"],
                d["share"].fillna(0),
                width=width,
                align="edge",
                color=colour,
                alpha=0.75,
                edgecolor="white",
                linewidth=0.5,
            )
            hist.set_yscale("log")
            hist.set_ylim(1e-3, 1.5)
            hist.set_ylabel("share" if col == 0 else "")
            hist.set_xlabel("Confidence (max. probability)" if r == 1 else "")
    handles = [Patch(color=c, alpha=0.75, label=f"{s}: observed accuracy") for s, c in STATE_COLOURS.items()]
    handles += [
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
    fig.suptitle(f"{title}: reliability diagrams, top label, test set")
    figure_legend(fig, handles, seed_note(top), ncols=2)
    return save(fig, paths)


def trust_spectrum(
    spectrum: pd.DataFrame,
    history: pd.DataFrame,
    title: str,
    paths: Sequence[str | Path],
    dataset: str | None = None,
    scores: pd.DataFrame | None = None,
) -> plt.Figure:
    """Trust spectrum T(z) per label (Wong et al.), first / best / last epoch, before vs after."""
    chosen = chosen_epochs(history)
    test = select_chosen(with_state(spectrum[spectrum["split"] == "test"]), chosen)
    test["label"] = test["label"].astype(int)
    nts = None
    if scores is not None:
        s = select_chosen(with_state(scores[scores["split"] == "test"]), chosen)
        nts = s.groupby(["which", "state"])["net_trust_score"].mean()
    titles = which_titles(chosen)
    fig, axes = new_figure("trust_spectrum", ncols=3, sharey=True)
    names = LABEL_NAMES.get(dataset or "")
    for ax, which in zip(axes, WHICH):
        d = test[test["which"] == which]
        sns.barplot(
            data=d,
            x="label",
            y="trust",
            hue="state",
            hue_order=[BEFORE, AFTER],
            palette=STATE_COLOURS,
            errorbar=errorbar(test),
            ax=ax,
            legend=False,
            err_kws=dict(linewidth=0.7),
            saturation=1.0,
        )
        head = titles[which]
        if nts is not None:
            head += "\nNTS " + " → ".join(f"{nts.get((which, s), np.nan):.3f}" for s in (BEFORE, AFTER))
        ax.set_title(head, fontsize=7.5)
        ax.set_ylim(0, 1.0)
        ax.set_xlabel("True label z")
        ax.set_ylabel("Trust spectrum T(z)" if which == "first" else "")
        if names and test["label"].nunique() == len(names):
            ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=6)
    fig.suptitle(f"{title}: trust spectrum on the test set")
    figure_legend(fig, [Patch(color=c, label=s) for s, c in STATE_COLOURS.items()], seed_note(test))
    return save(fig, paths)


def trust_density(
    density: pd.DataFrame, history: pd.DataFrame, title: str, paths: Sequence[str | Path], dataset: str | None = None
) -> plt.Figure:
    """Trust density per label (Wong et al. §2.2), rows first / best / last epoch, columns before / after."""
    chosen = chosen_epochs(history)
    test = select_chosen(with_state(density[density["split"] == "test"]), chosen)
    test["label"] = test["label"].astype(int)
    k = label_count(test["label"])
    palette = label_colours(k)
    titles = which_titles(chosen)
    fig, axes = new_figure("trust_density", nrows=3, ncols=2, sharex=True, sharey=True)
    for r, which in enumerate(WHICH):
        for c, state in enumerate((BEFORE, AFTER)):
            ax = axes[r, c]
            d = test[(test["which"] == which) & (test["state"] == state)]
            # the band is the range over seeds: a ± sd band would cross 0 on the log axis
            sns.lineplot(
                data=d,
                x="trust",
                y="density",
                hue="label",
                palette=palette,
                legend=False,
                errorbar=("pi", 100) if n_seeds(test) > 1 else None,
                ax=ax,
                linewidth=0.9,
            )
            ax.set_yscale("log")
            ax.set_ylim(DENSITY_FLOOR, None)
            ax.set_xlim(0, 1)
            ax.set_title(f"{titles[which]} · {state}", fontsize=7.5)
            ax.set_ylabel("density" if c == 0 else "")
            ax.set_xlabel("")
    fig.supxlabel("Question-answer trust Q (confidence C if the prediction is right, 1 − C if wrong)", fontsize=8)
    label_colourbar(fig, axes, k, dataset, shrink=0.6, pad=0.01)
    note = f"mean and range over {n_seeds(test)} seeds" if n_seeds(test) > 1 else "1 seed"
    fig.suptitle(f"{title}: trust densities per label on the test set ({note}; log scale)")
    return save(fig, paths)


# --------------------------------------------------------------------------- trust variants


def cluster_sweep(sweep: pd.DataFrame, title: str, paths: Sequence[str | Path], clusters: int = 10) -> plt.Figure:
    """Network opinion against the number of clusters M, midpoint vs cluster-mean representative."""
    sweep = with_state(sweep)
    epochs = sorted(sweep["epoch"].unique())
    palette = dict(zip(epochs, sns.color_palette("crest", len(epochs))))
    dashes = {"midpoint": "", "mean": DASHED}
    fig, axes = new_figure("cluster_sweep", nrows=2, ncols=3, sharex=True, sharey="col")
    for r, state in enumerate((BEFORE, AFTER)):
        sub = sweep[sweep["state"] == state]
        for c, (component, name) in enumerate(COMPONENTS):
            ax = axes[r, c]
            sns.lineplot(
                data=sub,
                x="clusters",
                y=component,
                hue="epoch",
                palette=palette,
                style="representative",
                dashes=dashes,
                markers={"midpoint": "o", "mean": "s"},
                markersize=3,
                errorbar=errorbar(sweep),
                ax=ax,
                legend=False,
            )
            ax.axvline(clusters, color="0.4", linestyle=":", linewidth=0.8)
            ax.set_xscale("log")
            ax.set_xticks(sorted(sweep["clusters"].unique()))
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_title(name if r == 0 else "")
            ax.set_ylabel(f"{state}\nnetwork {component}" if c == 0 else f"network {component}")
            ax.set_xlabel("Number of clusters M (log scale)" if r == 1 else "")
            ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    for ax in axes[:, 2]:
        plain_numbers(ax)
    handles = [Line2D([], [], color=palette[e], label=f"epoch {e}") for e in epochs]
    handles += [
        Line2D([], [], color="0.3", marker="o", markersize=3, label="midpoint RP (paper)"),
        Line2D([], [], color="0.3", marker="s", markersize=3, linestyle="--", label="cluster-mean RP"),
        Line2D([], [], color="0.4", linestyle=":", label=f"M = {clusters} (this run)"),
    ]
    fig.suptitle(f"{title}: network opinion against the number of clusters")
    figure_legend(fig, handles, seed_note(sweep), ncols=(len(handles) + 1) // 2)
    return save(fig, paths)


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
    net = with_state(network_rows(trust))
    mean = net.groupby(["state", "epoch"])[["belief", "disbelief", "uncertainty"]].mean().reset_index()
    fig, (tri, zoom) = new_figure("opinion_triangle", ncols=2, gridspec_kw=dict(width_ratios=[1, 1.1]))
    _triangle_frame(tri)
    many = n_seeds(net) > 1
    for state, colour in STATE_COLOURS.items():
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
    plain_numbers(zoom)
    zoom.margins(0.12)
    zoom.set_title("Zoom (epoch numbers at the ends)")
    tri.set_title("Network opinion per epoch")
    fig.suptitle(f"{title}: network opinion over training in the opinion triangle")
    note = seed_note(net) if not many else f"mean of {n_seeds(net)} seeds (thin: each seed)"
    figure_legend(fig, state_handles(), note)
    return save(fig, paths)
