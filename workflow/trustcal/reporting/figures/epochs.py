"""Figures with the epoch on the x axis: the paper's trust grid and loss curves, the network
opinion, and the calibration and geometric metrics per epoch."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from trustcal.calibration.states import temperature_rows
from trustcal.reporting.figures import style

# --------------------------------------------------------------------------- paper figures 1–3


LAYERED_NOTE = "where the states agree, the blue line lies inside the wider vermillion one"
SMALL_MULTIPLES = 20  # up to this many labels: a row of panels per label; with more, the paper's layout
ROW_HEIGHT = 0.58  # inches per label row of the small multiples


def trust_grid_size(n_labels: int) -> tuple[float, float]:
    """The trust grid's size for ``n_labels`` labels: a row per label (FIGURE_SIZES' is that of 10)."""
    if n_labels > SMALL_MULTIPLES:
        return style.FULL_WIDTH, 4.3
    return style.FULL_WIDTH, round(1.0 + ROW_HEIGHT * n_labels, 2)


def trust_grid(
    trust: pd.DataFrame, title: str, paths: Sequence[str | Path], classes: Sequence[str] | None = None
) -> plt.Figure:
    """Paper Figures 1/2 as small multiples: a row per label, columns b/d/u, in each panel the label before
    (vermillion) and after (blue) calibration, mean over seeds ± sd; the y axis shared down each column, so
    that labels compare by height. Beyond ``SMALL_MULTIPLES`` labels, the paper's own layout (rows
    before/after, a line per label in its viridis shade, a colour bar); beyond ``MANY_LABELS``, that layout
    with the median over the labels and the band of 10–90 % of them instead of a line per label."""
    per_label = style.with_state(style.class_rows(trust))
    k = style.label_count(per_label["label"], classes)
    if per_label["label"].nunique() > style.MANY_LABELS:
        return _trust_grid_across_labels(per_label, title, paths)
    if k > SMALL_MULTIPLES:
        return _trust_grid_lines(per_label, k, title, paths, classes)
    names = style.named_classes(classes)
    names = names if names and len(names) == k else None
    states = style.states_of(per_label)
    stats = (
        per_label.groupby(["label", "state", "epoch"])[[c for c, _ in style.COMPONENTS]]
        .agg(["mean", "std"])
        .sort_index()
    )
    fig, axes = style.new_figure("trust_grid", size=trust_grid_size(k), nrows=k, ncols=3, sharex=True, sharey="col")
    several = style.n_seeds(per_label) > 1
    for z in range(k):
        for col, (component, name) in enumerate(style.COMPONENTS):
            ax = axes[z, col]
            for state in states:
                if (z, state) not in stats.index.droplevel("epoch"):
                    continue
                s = stats.loc[(z, state)]
                mean, sd = s[(component, "mean")], s[(component, "std")]
                colour = style.STATE_COLOURS[state]
                if several:
                    ax.fill_between(mean.index, mean - sd, mean + sd, color=colour, alpha=0.2, linewidth=0)
                ax.plot(mean.index, mean.to_numpy(), color=colour, linewidth=style.STATE_WIDTHS[state])  # before: wider
            ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(3))
            ax.tick_params(labelsize=6, pad=1.5)
            style.plain_numbers(ax)
            style.integer_epochs(ax)
            if z == 0:
                ax.set_title(name)
            ax.set_xlabel("Epoch" if z == k - 1 else "")
            ax.set_ylabel(f"{z} {names[z]}" if names else f"label {z}", rotation=0, ha="right", va="center")
            if col:
                ax.set_ylabel("")
    fig.suptitle(style.heading(title, "trust opinion per label on the test set (opinion mass)"))
    handles = [h for h in style.state_handles(layered=True) if h.get_label() in states]
    notes = [style.seed_note(per_label)] + ([LAYERED_NOTE] if len(states) == 2 else [])
    style.figure_legend(fig, handles, "; ".join(n for n in notes if n))
    return style.save(fig, paths)


def _trust_grid_lines(per_label: pd.DataFrame, k: int, title: str, paths, classes: Sequence[str] | None) -> plt.Figure:
    """The paper's layout: rows before/after calibration, columns b/d/u, a line per label in its shade."""
    palette = style.label_colours(k)
    states = style.states_of(per_label)
    fig, axes = style.new_figure(
        "trust_grid", size=trust_grid_size(k), nrows=len(states), ncols=3, sharex=True, sharey="col", squeeze=False
    )
    for row, state in enumerate(states):
        sub = per_label[per_label["state"] == state]
        for col, (component, name) in enumerate(style.COMPONENTS):
            ax = axes[row, col]
            sns.lineplot(
                data=sub,
                x="epoch",
                y=component,
                hue="label",
                palette=palette,
                legend=False,
                errorbar=style.errorbar(per_label),
                ax=ax,
                linewidth=0.9,
            )
            _label_state_panel(ax, name, component, state, row == 0, row == len(states) - 1, col == 0)
    for ax in axes[:, 2]:
        style.plain_numbers(ax)
    style.label_colourbar(fig, axes, k, classes, shrink=0.85, pad=0.01)
    fig.suptitle(style.heading(title, f"trust opinion per label on the test set ({style.seed_note(per_label)})"))
    return style.save(fig, paths)


def _trust_grid_across_labels(per_label: pd.DataFrame, title: str, paths) -> plt.Figure:
    """The trust grid of many labels: rows before/after, columns b/d/u, per epoch the median over the labels of
    each label's opinion (mean over seeds) and the band of 10–90 % of the labels, in the state's colour."""
    states = style.states_of(per_label)
    labels = per_label["label"].nunique()
    fig, axes = style.new_figure(
        "trust_grid", size=trust_grid_size(labels), nrows=len(states), ncols=3, sharex=True, sharey="col", squeeze=False
    )
    for row, state in enumerate(states):
        sub = per_label[per_label["state"] == state]
        colour = style.STATE_COLOURS[state]
        for col, (component, name) in enumerate(style.COMPONENTS):
            ax = axes[row, col]
            values = sub.groupby(["label", "epoch"], sort=True)[component].mean().unstack("epoch")
            lo, mid, hi = style.across_labels(values)
            epochs = values.columns.to_numpy()
            ax.fill_between(epochs, lo, hi, color=colour, alpha=0.25, linewidth=0)
            ax.plot(epochs, mid, color=colour, linewidth=1.1)
            _label_state_panel(ax, name, component, state, row == 0, row == len(states) - 1, col == 0)
    for ax in axes[:, 2]:
        style.plain_numbers(ax)
    fig.suptitle(
        style.heading(title, f"trust opinion across {labels} labels on the test set ({style.seed_note(per_label)})")
    )
    style.figure_legend(fig, style.label_band_handles(), "")
    return style.save(fig, paths)


def _label_state_panel(ax, name: str, component: str, state: str, top: bool, bottom: bool, left: bool) -> None:
    """The titles of a panel of the paper's trust-grid layout (rows: states, columns: b/d/u)."""
    ax.set_title(name if top else "")
    ax.set_xlabel("Epoch" if bottom else "")
    ax.set_ylabel(f"{state}\n{component} (opinion mass)" if left else f"{component} (opinion mass)")
    style.integer_epochs(ax)


def loss_curves(history: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure:
    """Paper Figure 3: training and validation loss per epoch; the validation minimum marked."""
    history = history if "seed" in history else history.assign(seed=0)
    long = history.melt(
        id_vars=["epoch", "seed"], value_vars=["train_loss", "val_loss"], var_name="set", value_name="loss"
    )
    long["set"] = long["set"].map({"train_loss": "Training", "val_loss": "Validation"})
    fig, ax = style.new_figure("loss_curves")
    few = history["epoch"].nunique() < 15
    sns.lineplot(
        data=long,
        x="epoch",
        y="loss",
        hue="set",
        palette=style.SET_COLOURS,
        errorbar=style.errorbar(history),
        ax=ax,
        legend=False,
        marker="o" if few else None,
        markersize=3,
    )
    mean_val = history.groupby("epoch")["val_loss"].mean()
    best = int(mean_val.idxmin())
    ax.axvline(best, color=style.SET_COLOURS["Validation"], linestyle=":", linewidth=1.0)
    ax.set_xlabel("Epoch")
    style.integer_epochs(ax)
    ax.set_ylabel("Cross-entropy loss (nats)")
    ax.set_title(style.heading(title, "loss per epoch"))
    handles = [Line2D([], [], color=c, label=s) for s, c in style.SET_COLOURS.items()]
    handles.append(
        Line2D(
            [], [], color=style.SET_COLOURS["Validation"], linestyle=":", label=f"Min. validation loss (epoch {best})"
        )
    )
    style.figure_legend(fig, handles, style.seed_note(history), ncols=2)
    return style.save(fig, paths)


# --------------------------------------------------------------------------- metrics per epoch

METRIC_PANELS = (
    ("accuracy", "Accuracy", "fraction correct"),
    ("ece", "ECE (10 equal-width bins)", "|accuracy − confidence|"),
    ("nll", "Negative log-likelihood", "NLL (nats / sample)"),
    ("brier", "Brier score", "squared error / sample"),
    ("net_trust_score", "NetTrustScore", "NTS (0–1)"),
)
GEOMETRIC_PANELS = (
    ("geometric_accuracy", "Geometric accuracy (ρ = 0)"),
    ("decisiveness", "Decisiveness (ρ = 1)"),
    ("robustness", "Robustness (ρ = −2/3)"),
)


def temperature_label(calibration: pd.DataFrame) -> str:
    """The legend entry of the temperature: where it was fitted, from calibration.csv's ``fit_split``
    (``val`` unless the config sets ``calibration: fit_on: test``); no claim without that column."""
    splits = style.fit_splits(calibration)
    return f"Temperature (fitted on {' and '.join(splits)})" if splits else "Temperature"


def _by_state(ax, df, y, *, dashes=None, style_column=None, err=None) -> None:
    """``y`` against the epoch per state, before calibration first and wider (:data:`STATE_WIDTHS`), its markers
    larger, so that where temperature scaling changes nothing (the accuracy) the vermillion line stays visible
    around the blue one."""
    kw = dict(style=style_column, dashes=dashes) if style_column else {}
    few = df["epoch"].nunique() < 15
    for position, state in enumerate((style.BEFORE, style.AFTER)):
        rows = df[df["state"] == state]
        if rows.empty:
            continue
        sns.lineplot(
            data=rows,
            x="epoch",
            y=y,
            color=style.STATE_COLOURS[state],
            linewidth=style.STATE_WIDTHS[state],
            errorbar=err,
            ax=ax,
            legend=False,
            marker="o" if few else None,
            markersize=style.layer_markersize(2 * position),
            **kw,
        )


def calibration_metrics(
    scores: pd.DataFrame, calibration: pd.DataFrame, title: str, paths: Sequence[str | Path]
) -> plt.Figure:
    """Accuracy, ECE, NLL, Brier, NetTrustScore (test set) before/after calibration, and T per epoch."""
    test = style.with_state(scores[scores["split"] == "test"])
    fig, axes = style.new_figure("calibration_metrics", nrows=2, ncols=3, sharex=True)
    for ax, (column, name, unit) in zip(axes.flat, METRIC_PANELS):
        _by_state(ax, test, column, err=style.errorbar(test))
        ax.set_title(name)
        ax.set_ylabel(unit)
    ax = axes.flat[-1]
    cal = temperature_rows(calibration)
    cal = cal if "seed" in cal else cal.assign(seed=0)
    sns.lineplot(
        data=cal,
        x="epoch",
        y="temperature",
        color="black",
        errorbar=style.errorbar(cal),
        ax=ax,
        marker="o" if cal["epoch"].nunique() < 15 else None,
        markersize=3,
    )
    ax.axhline(1.0, color="0.6", linestyle=":", linewidth=0.8)
    if cal["temperature"].max() / max(cal["temperature"].min(), 1e-12) > 20:
        ax.set_yscale("log")
        style.log_ticks(ax)
    ax.set_title("Fitted temperature")
    ax.set_ylabel("T (1 = no scaling)")
    for ax in axes.flat:
        style.integer_epochs(ax)
        ax.set_xlabel("Epoch" if ax in axes[1] else "")
    fig.suptitle(style.heading(title, "calibration metrics on the test set"))
    handles = style.state_handles(layered=True) + [Line2D([], [], color="black", label=temperature_label(cal))]
    style.figure_legend(fig, handles, style.seed_note(test))
    return style.save(fig, paths)


def geometric_metrics(scores: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure:
    """Geometric accuracy, decisiveness and robustness, reported (solid) and measured (dashed)."""
    test = style.with_state(scores[scores["split"] == "test"])
    fig, axes = style.new_figure("geometric_metrics", ncols=3, sharex=True, sharey=True)
    for ax, (column, name) in zip(axes, GEOMETRIC_PANELS):
        long = test.melt(
            id_vars=["epoch", "seed", "state"],
            value_vars=[column, f"{column}_measured"],
            var_name="kind",
            value_name="value",
        )
        long["kind"] = long["kind"].map({column: "Reported", f"{column}_measured": "Measured"})
        _by_state(
            ax,
            long,
            "value",
            style_column="kind",
            dashes={"Reported": "", "Measured": style.DASHED},
            err=style.errorbar(test),
        )
        ax.set_title(name)
        ax.set_ylabel("generalized mean of p(true class)" if ax is axes[0] else "")
        ax.set_xlabel("Epoch")
        style.integer_epochs(ax)
    handles = style.state_handles(layered=True) + [
        Line2D([], [], color="0.3", label="Reported"),
        Line2D([], [], color="0.3", linestyle="--", label="Measured"),
    ]
    fig.suptitle(style.heading(title, "geometric accuracy family on the test set"))
    style.figure_legend(fig, handles, style.seed_note(test))
    return style.save(fig, paths)


def network_opinion(trust: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure:
    """The network opinion (b, d, u) per epoch, before and after calibration."""
    net = style.with_state(style.network_rows(trust))
    fig, axes = style.new_figure("network_opinion", ncols=3, sharex=True)
    for ax, (component, name) in zip(axes, style.COMPONENTS):
        _by_state(ax, net, component, err=style.errorbar(net))
        ax.set_title(name)
        ax.set_ylabel(f"{component} (opinion mass)")
        ax.set_xlabel("Epoch")
        style.integer_epochs(ax)
    style.plain_numbers(axes[2])
    fig.suptitle(style.heading(title, "network opinion (cumulative fusion of the label opinions)"))
    style.figure_legend(fig, style.state_handles(layered=True), style.seed_note(net))
    return style.save(fig, paths)
