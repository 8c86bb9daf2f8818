"""Figures rendered from the tidy tables with seaborn / matplotlib.

Every figure is a pure function of tidy DataFrames (one row per seed × epoch ×
calibrated × …, with a ``seed`` column) and writes one file per path given
(PNG and PDF, format from the suffix). Several seeds are drawn as their mean
with a band of ± one standard deviation (seaborn's ``errorbar="sd"``); the
seed count is in every legend.

One style throughout: Okabe–Ito colours for categories, the same colour for
the same thing in every figure (before calibration vermillion, after
calibration blue; training grey, validation green; label z the same viridis
shade everywhere), fonts of 7–9 pt at the printed size, legends outside the
axes. Figure sizes are fixed (``FIGURE_SIZES``, inches at ``DPI``), so a PNG
always has the same pixel size.

``render_figures`` draws any subset of ``FIGURES`` for one dataset from the
workflow's per-seed CSV files; it is what the Snakemake rules call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import sys

import matplotlib

if "ipykernel" not in sys.modules:  # in a notebook, keep its backend: figures of the API are shown inline
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from trustcal.errors import TrustcalError
from trustcal.files import atomic_path, read_csv
from trustcal.measures.trust import TRUST_COLUMNS

DATASET_TITLES = {"mnist": "MNIST (MLP)", "cifar10": "CIFAR-10 (CNN)"}
LABEL_NAMES = {
    "cifar10": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"],
}

# --------------------------------------------------------------------------- style

DPI = 200
COLUMN_WIDTH = 3.4  # inches, one column of a two-column paper
FULL_WIDTH = 7.0  # inches, the full text width
FIGURE_SIZES: dict[str, tuple[float, float]] = {
    "trust_grid": (FULL_WIDTH, 4.3),
    "loss_curves": (COLUMN_WIDTH, 2.9),
    "calibration_metrics": (FULL_WIDTH, 4.4),
    "geometric_metrics": (FULL_WIDTH, 2.6),
    "network_opinion": (FULL_WIDTH, 2.5),
    "reliability": (FULL_WIDTH, 5.6),
    "trust_spectrum": (FULL_WIDTH, 2.8),
    "trust_density": (FULL_WIDTH, 5.6),
    "cluster_sweep": (FULL_WIDTH, 4.5),
    "opinion_triangle": (FULL_WIDTH, 3.3),
}

BEFORE, AFTER = "Before calibration", "After calibration"
STATE_NAMES = {False: BEFORE, True: AFTER}
STATE_COLOURS = {BEFORE: "#D55E00", AFTER: "#0072B2"}  # Okabe–Ito vermillion / blue
SET_COLOURS = {"Training": "#555555", "Validation": "#009E73"}  # grey / bluish green
LABEL_CMAP = "viridis"
COMPONENTS = (("belief", "Belief (trust)"), ("disbelief", "Disbelief"), ("uncertainty", "Uncertainty"))
WHICH = ("first", "best", "last")
WHICH_TITLES = {"first": "First epoch", "best": "Best validation loss", "last": "Last epoch"}
DASHED = (4, 2)
DENSITY_FLOOR = 1e-2  # lower y limit of the log-scale trust densities


def set_style() -> None:
    sns.set_theme(context="paper", style="whitegrid")
    plt.rcParams.update({
        "font.size": 8, "axes.titlesize": 8.5, "axes.labelsize": 8, "xtick.labelsize": 7,
        "ytick.labelsize": 7, "legend.fontsize": 7, "legend.title_fontsize": 7.5,
        "figure.titlesize": 9.5, "figure.dpi": 100, "savefig.dpi": DPI,
        "lines.linewidth": 1.2, "axes.linewidth": 0.6, "grid.linewidth": 0.4,
        "pdf.fonttype": 42, "ps.fonttype": 42,  # embed TrueType: editable text in the PDF
    })


def new_figure(name: str, **subplots) -> tuple[plt.Figure, np.ndarray | plt.Axes]:
    set_style()
    return plt.subplots(figsize=FIGURE_SIZES[name], layout="constrained", **subplots)


def save(fig: plt.Figure, paths: Sequence[str | Path]) -> plt.Figure:
    """Save one figure to each path (format from the suffix), atomically, at a fixed size; return it.

    No ``bbox_inches="tight"``: the constrained layout keeps everything inside
    the canvas, and a PNG is always ``FIGURE_SIZES[name] × DPI`` pixels. The
    figure is closed in pyplot (no figure piles up, and a notebook shows a
    returned figure once); with no paths it is only returned (the Python API).
    """
    for path in paths:
        fmt = Path(path).suffix.lstrip(".")
        metadata = {"CreationDate": None} if fmt == "pdf" else None  # byte-stable PDFs
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=DPI, metadata=metadata)
        fig.set_layout_engine("none")  # keep the layout of the first save: it is the slow part
    plt.close(fig)
    return fig


# --------------------------------------------------------------------------- tidy helpers


def concat_seeds(paths: Iterable[str | Path], columns: tuple[str, ...], rule: str) -> pd.DataFrame:
    """Read one table per seed (``…/seed{N}/…``) into one frame with a ``seed`` column."""
    frames = []
    for path in paths:
        df = read_csv(path, columns, rule=rule)
        seed = next((p[4:] for p in Path(path).parts if p.startswith("seed") and p[4:].isdigit()), "0")
        frames.append(df.assign(seed=int(seed)))
    if not frames:
        raise TrustcalError(f"no {rule} table given")
    return pd.concat(frames, ignore_index=True)


def _bool(series: pd.Series) -> pd.Series:
    return series.astype(str).str.lower().isin(("true", "1", "1.0"))


def with_state(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``state`` ("Before calibration" / "After calibration") from ``calibrated``."""
    df = df.copy()
    df["calibrated"] = _bool(df["calibrated"])
    df["state"] = df["calibrated"].map(STATE_NAMES)
    if "seed" not in df:
        df["seed"] = 0
    return df


def n_seeds(df: pd.DataFrame) -> int:
    return int(df["seed"].nunique()) if "seed" in df else 1


def seed_note(df: pd.DataFrame) -> str:
    n = n_seeds(df)
    return f"mean ± sd over {n} seeds" if n > 1 else "1 seed"


def errorbar(df: pd.DataFrame):
    return "sd" if n_seeds(df) > 1 else None


def class_rows(trust: pd.DataFrame) -> pd.DataFrame:
    """The per-label rows of a trust table, with an integer ``label``."""
    out = trust[trust["label"].astype(str) != "network"].copy()
    out["label"] = out["label"].astype(float).astype(int)
    return out


def network_rows(trust: pd.DataFrame) -> pd.DataFrame:
    return trust[trust["label"].astype(str) == "network"].copy()


def label_colours(n_labels: int) -> dict[int, tuple]:
    """Label z → its viridis shade; the same in every figure of ``n_labels`` labels."""
    cmap = matplotlib.colormaps[LABEL_CMAP]
    return {z: cmap(z / max(n_labels - 1, 1)) for z in range(n_labels)}


def _n_labels(labels: Iterable[int]) -> int:
    return max(10, int(max(labels)) + 1)


def label_colourbar(fig: plt.Figure, axes, n_labels: int, dataset: str | None = None, **kw) -> None:
    """A discrete colour bar naming each label (paper Figures 1–2 style)."""
    colours = label_colours(n_labels)
    cmap = matplotlib.colors.ListedColormap([colours[z] for z in range(n_labels)])
    norm = matplotlib.colors.BoundaryNorm(np.arange(n_labels + 1) - 0.5, n_labels)
    cbar = fig.colorbar(matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes, ticks=range(n_labels), **kw)
    names = LABEL_NAMES.get(dataset or "")
    if names and len(names) == n_labels:
        cbar.ax.set_yticklabels([f"{z} {n}" for z, n in enumerate(names)])
    cbar.ax.tick_params(labelsize=6.5, length=0)
    cbar.set_label("Label")
    cbar.outline.set_linewidth(0.4)


def state_handles() -> list:
    return [Line2D([], [], color=c, label=s) for s, c in STATE_COLOURS.items()]


def figure_legend(fig: plt.Figure, handles: list, title: str, ncols: int | None = None) -> None:
    """One legend for the figure, below the panels (it never covers data)."""
    fig.legend(handles=handles, loc="outside lower center", ncols=ncols or len(handles), title=title, frameon=False)


def integer_epochs(ax: plt.Axes) -> None:
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))


def plain_numbers(ax: plt.Axes, axis: str = "y") -> None:
    """Tick labels as plain numbers (0.0012), never an offset or ×10ⁿ text that could hit a title."""
    fmt = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}")
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(fmt)


def chosen_epochs(history: pd.DataFrame) -> pd.DataFrame:
    """Per seed: the first epoch, the best-validation epoch and the last epoch.

    "Best" is the epoch of minimum validation loss (``val_loss`` in history.csv;
    the earliest on a tie), as early stopping would choose it — the same
    criterion as the overfitting onset of the reproduction verdict.
    """
    rows = []
    for seed, h in history.groupby("seed"):
        h = h.sort_values("epoch")
        loss = h["val_loss"].astype(float)
        best = int(h.loc[loss.idxmin(), "epoch"]) if loss.notna().any() else int(h["epoch"].iloc[-1])
        for which, epoch in zip(WHICH, (int(h["epoch"].iloc[0]), best, int(h["epoch"].iloc[-1]))):
            rows.append(dict(seed=seed, which=which, epoch=epoch))
    return pd.DataFrame(rows, columns=["seed", "which", "epoch"])


def epochs_text(epochs: Iterable[int]) -> str:
    e = sorted(set(int(x) for x in epochs))
    if len(e) == 1:
        return f"epoch {e[0]}"
    if len(e) <= 4:
        return "epochs " + ", ".join(map(str, e))
    return f"epochs {e[0]}–{e[-1]}"


def which_titles(chosen: pd.DataFrame) -> dict[str, str]:
    return {w: f"{WHICH_TITLES[w]} ({epochs_text(chosen.loc[chosen['which'] == w, 'epoch'])})" for w in WHICH}


def select_chosen(df: pd.DataFrame, chosen: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``df`` at each seed's chosen epochs, with a ``which`` column (a row may serve twice)."""
    return df.merge(chosen, on=["seed", "epoch"], how="inner")


# --------------------------------------------------------------------------- paper figures 1–3


def trust_grid(trust: pd.DataFrame, title: str, paths: Sequence[str | Path], dataset: str | None = None) -> plt.Figure:
    """Paper Figures 1/2: rows before/after calibration, columns b/d/u, a line per label."""
    per_label = with_state(class_rows(trust))
    k = _n_labels(per_label["label"])
    palette = label_colours(k)
    fig, axes = new_figure("trust_grid", nrows=2, ncols=3, sharex=True, sharey="col")
    for row, state in enumerate((BEFORE, AFTER)):
        sub = per_label[per_label["state"] == state]
        for col, (component, name) in enumerate(COMPONENTS):
            ax = axes[row, col]
            sns.lineplot(data=sub, x="epoch", y=component, hue="label", palette=palette, legend=False,
                         errorbar=errorbar(per_label), ax=ax, linewidth=0.9)
            ax.set_title(name if row == 0 else "")
            ax.set_xlabel("Epoch" if row == 1 else "")
            ax.set_ylabel(f"{state}\n{component} (opinion mass)" if col == 0 else f"{component} (opinion mass)")
            integer_epochs(ax)
    for ax in axes[:, 2]:
        plain_numbers(ax)
    label_colourbar(fig, axes, k, dataset, shrink=0.85, pad=0.01)
    fig.suptitle(f"{title}: trust opinion per label on the test set ({seed_note(per_label)})")
    return save(fig, paths)


def loss_curves(history: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure:
    """Paper Figure 3: training and validation loss per epoch; the validation minimum marked."""
    history = history if "seed" in history else history.assign(seed=0)
    long = history.melt(id_vars=["epoch", "seed"], value_vars=["train_loss", "val_loss"], var_name="set", value_name="loss")
    long["set"] = long["set"].map({"train_loss": "Training", "val_loss": "Validation"})
    fig, ax = new_figure("loss_curves")
    few = history["epoch"].nunique() < 15
    sns.lineplot(data=long, x="epoch", y="loss", hue="set", palette=SET_COLOURS, errorbar=errorbar(history),
                 ax=ax, legend=False, marker="o" if few else None, markersize=3)
    mean_val = history.groupby("epoch")["val_loss"].mean()
    best = int(mean_val.idxmin())
    ax.axvline(best, color=SET_COLOURS["Validation"], linestyle=":", linewidth=1.0)
    ax.set_xlabel("Epoch")
    integer_epochs(ax)
    ax.set_ylabel("Cross-entropy loss (nats)")
    ax.set_title(f"{title}: loss per epoch")
    handles = [Line2D([], [], color=c, label=s) for s, c in SET_COLOURS.items()]
    handles.append(Line2D([], [], color=SET_COLOURS["Validation"], linestyle=":", label=f"Min. validation loss (epoch {best})"))
    figure_legend(fig, handles, seed_note(history), ncols=2)
    return save(fig, paths)


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


def _by_state(ax, df, y, *, dashes=None, style=None, legend=False, err=None) -> None:
    kw = dict(style=style, dashes=dashes) if style else {}
    sns.lineplot(data=df, x="epoch", y=y, hue="state", hue_order=[BEFORE, AFTER], palette=STATE_COLOURS,
                 errorbar=err, ax=ax, legend=legend, marker="o" if df["epoch"].nunique() < 15 else None,
                 markersize=3, **kw)


def calibration_metrics(scores: pd.DataFrame, calibration: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure:
    """Accuracy, ECE, NLL, Brier, NetTrustScore (test set) before/after calibration, and T per epoch."""
    test = with_state(scores[scores["split"] == "test"])
    fig, axes = new_figure("calibration_metrics", nrows=2, ncols=3, sharex=True)
    for ax, (column, name, unit) in zip(axes.flat, METRIC_PANELS):
        _by_state(ax, test, column, err=errorbar(test))
        ax.set_title(name)
        ax.set_ylabel(unit)
    ax = axes.flat[-1]
    cal = calibration if "seed" in calibration else calibration.assign(seed=0)
    sns.lineplot(data=cal, x="epoch", y="temperature", color="black", errorbar=errorbar(cal), ax=ax,
                 marker="o" if cal["epoch"].nunique() < 15 else None, markersize=3)
    ax.axhline(1.0, color="0.6", linestyle=":", linewidth=0.8)
    if cal["temperature"].max() / max(cal["temperature"].min(), 1e-12) > 20:
        ax.set_yscale("log")
    ax.set_title("Fitted temperature")
    ax.set_ylabel("T (1 = no scaling)")
    for ax in axes.flat:
        integer_epochs(ax)
        ax.set_xlabel("Epoch" if ax in axes[1] else "")
    fig.suptitle(f"{title}: calibration metrics on the test set")
    handles = state_handles() + [Line2D([], [], color="black", label="Temperature (fitted on validation)")]
    figure_legend(fig, handles, seed_note(test))
    return save(fig, paths)


def geometric_metrics(scores: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure:
    """Geometric accuracy, decisiveness and robustness, reported (solid) and measured (dashed)."""
    test = with_state(scores[scores["split"] == "test"])
    fig, axes = new_figure("geometric_metrics", ncols=3, sharex=True, sharey=True)
    for ax, (column, name) in zip(axes, GEOMETRIC_PANELS):
        long = test.melt(id_vars=["epoch", "seed", "state"], value_vars=[column, f"{column}_measured"],
                         var_name="kind", value_name="value")
        long["kind"] = long["kind"].map({column: "Reported", f"{column}_measured": "Measured"})
        _by_state(ax, long, "value", style="kind", dashes={"Reported": "", "Measured": DASHED}, err=errorbar(test))
        ax.set_title(name)
        ax.set_ylabel("generalized mean of p(true class)" if ax is axes[0] else "")
        ax.set_xlabel("Epoch")
        integer_epochs(ax)
    handles = state_handles() + [Line2D([], [], color="0.3", label="Reported"),
                                 Line2D([], [], color="0.3", linestyle="--", label="Measured")]
    fig.suptitle(f"{title}: geometric accuracy family on the test set")
    figure_legend(fig, handles, seed_note(test))
    return save(fig, paths)


def network_opinion(trust: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> plt.Figure:
    """The network opinion (b, d, u) per epoch, before and after calibration."""
    net = with_state(network_rows(trust))
    fig, axes = new_figure("network_opinion", ncols=3, sharex=True)
    for ax, (component, name) in zip(axes, COMPONENTS):
        _by_state(ax, net, component, err=errorbar(net))
        ax.set_title(name)
        ax.set_ylabel(f"{component} (opinion mass)")
        ax.set_xlabel("Epoch")
        integer_epochs(ax)
    plain_numbers(axes[2])
    fig.suptitle(f"{title}: network opinion (cumulative fusion of the label opinions)")
    figure_legend(fig, state_handles(), seed_note(net))
    return save(fig, paths)


# --------------------------------------------------------------------------- chosen epochs


def reliability(curves: pd.DataFrame, history: pd.DataFrame, title: str, paths: Sequence[str | Path],
                scores: pd.DataFrame | None = None) -> plt.Figure:
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
    agg = top.groupby(["which", "state", "bin"]).agg(
        lower=("bin_lower", "first"), upper=("bin_upper", "first"), freq=("observed_frequency", "mean"),
        freq_sd=("observed_frequency", "std"), conf=("mean_predicted", "mean"), share=("share", "mean"),
    ).reset_index()
    ece = None
    if scores is not None:
        s = select_chosen(with_state(scores[scores["split"] == "test"]), chosen)
        ece = s.groupby(["which", "state"])["ece"].agg(["mean", "std"])
    titles = which_titles(chosen)
    fig, axes = new_figure("reliability", nrows=4, ncols=3, sharex=True,
                           gridspec_kw=dict(height_ratios=[3, 1, 3, 1]))
    for col, which in enumerate(WHICH):
        for r, state in enumerate((BEFORE, AFTER)):
            ax, hist = axes[2 * r, col], axes[2 * r + 1, col]
            d = agg[(agg["which"] == which) & (agg["state"] == state)]
            width = (d["upper"] - d["lower"]).to_numpy()
            colour = STATE_COLOURS[state]
            yerr = d["freq_sd"].fillna(0).to_numpy() if n_seeds(top) > 1 else None
            ax.bar(d["lower"], d["freq"].fillna(0), width=width, align="edge", color=colour, alpha=0.75,
                   edgecolor="white", linewidth=0.5, yerr=yerr,
                   error_kw=dict(elinewidth=0.6, capsize=1.5, ecolor="0.45"))
            ax.plot(d["lower"] + width / 2, d["conf"], linestyle="none", marker="_", markersize=7,
                    markeredgewidth=1.4, color="black")
            ax.plot([0, 1], [0, 1], linestyle=":", color="0.4", linewidth=0.8)
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1.02)
            head = f"{titles[which]}\n" if r == 0 else ""
            if ece is not None and (which, state) in ece.index:
                m, sd = ece.loc[(which, state)]
                head += f"ECE {m:.3f}" + (f" ± {sd:.3f}" if n_seeds(top) > 1 else "")
            ax.set_title(head, fontsize=7.5)
            ax.set_ylabel(f"{state}\nobserved accuracy" if col == 0 else "")
            hist.bar(d["lower"], d["share"].fillna(0), width=width, align="edge", color=colour, alpha=0.75,
                     edgecolor="white", linewidth=0.5)
            hist.set_yscale("log")
            hist.set_ylim(1e-3, 1.5)
            hist.set_ylabel("share" if col == 0 else "")
            hist.set_xlabel("Confidence (max. probability)" if r == 1 else "")
    handles = [Patch(color=c, alpha=0.75, label=f"{s}: observed accuracy") for s, c in STATE_COLOURS.items()]
    handles += [Line2D([], [], color="black", marker="_", markersize=7, markeredgewidth=1.4, linestyle="none",
                       label="mean confidence of the bin"),
                Line2D([], [], color="0.4", linestyle=":", label="perfect calibration")]
    fig.suptitle(f"{title}: reliability diagrams, top label, test set")
    figure_legend(fig, handles, seed_note(top), ncols=2)
    return save(fig, paths)


def trust_spectrum(spectrum: pd.DataFrame, history: pd.DataFrame, title: str, paths: Sequence[str | Path],
                   dataset: str | None = None, scores: pd.DataFrame | None = None) -> plt.Figure:
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
        sns.barplot(data=d, x="label", y="trust", hue="state", hue_order=[BEFORE, AFTER], palette=STATE_COLOURS,
                    errorbar=errorbar(test), ax=ax, legend=False, err_kws=dict(linewidth=0.7), saturation=1.0)
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


def trust_density(density: pd.DataFrame, history: pd.DataFrame, title: str, paths: Sequence[str | Path],
                  dataset: str | None = None) -> plt.Figure:
    """Trust density per label (Wong et al. §2.2), rows first / best / last epoch, columns before / after."""
    chosen = chosen_epochs(history)
    test = select_chosen(with_state(density[density["split"] == "test"]), chosen)
    test["label"] = test["label"].astype(int)
    k = _n_labels(test["label"])
    palette = label_colours(k)
    titles = which_titles(chosen)
    fig, axes = new_figure("trust_density", nrows=3, ncols=2, sharex=True, sharey=True)
    for r, which in enumerate(WHICH):
        for c, state in enumerate((BEFORE, AFTER)):
            ax = axes[r, c]
            d = test[(test["which"] == which) & (test["state"] == state)]
            # the band is the range over seeds: a ± sd band would cross 0 on the log axis
            sns.lineplot(data=d, x="trust", y="density", hue="label", palette=palette, legend=False,
                         errorbar=("pi", 100) if n_seeds(test) > 1 else None, ax=ax, linewidth=0.9)
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
            sns.lineplot(data=sub, x="clusters", y=component, hue="epoch", palette=palette, style="representative",
                         dashes=dashes, markers={"midpoint": "o", "mean": "s"}, markersize=3, errorbar=errorbar(sweep),
                         ax=ax, legend=False)
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
    handles += [Line2D([], [], color="0.3", marker="o", markersize=3, label="midpoint RP (paper)"),
                Line2D([], [], color="0.3", marker="s", markersize=3, linestyle="--", label="cluster-mean RP"),
                Line2D([], [], color="0.4", linestyle=":", label=f"M = {clusters} (this run)")]
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
        for pts in (barycentric([t, t], [1 - t, 0], [0, 1 - t]), barycentric([1 - t, 0], [t, t], [0, 1 - t]),
                    barycentric([1 - t, 0], [0, 1 - t], [t, t])):
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
            zoom.annotate(f"{int(row['epoch'])}", (row["belief"], row["uncertainty"]), textcoords="offset points",
                          xytext=(4, -9), fontsize=6.5, color=colour,
                          bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.8))
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


# --------------------------------------------------------------------------- workflow entry points

Drawer = Callable[..., None]
# Table name → (the columns a figure needs, the rule that writes the table).
TABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "trust": (TRUST_COLUMNS, "trust"),
    "history": (("epoch", "train_loss", "val_loss"), "train"),
    "trust_sweep": (("epoch", "calibrated", "clusters", "representative", "belief", "disbelief", "uncertainty"), "trust"),
    "scores": (("epoch", "calibrated", "split", "accuracy", "nll", "ece", "brier", "net_trust_score"), "scores"),
    "calibration": (("epoch", "temperature"), "calibrate"),
    "reliability": (("epoch", "calibrated", "split", "curve", "bin", "bin_lower", "bin_upper", "mean_predicted",
                     "observed_frequency", "count"), "scores"),
    "trust_spectrum": (("epoch", "calibrated", "split", "label", "trust"), "scores"),
    "trust_density": (("epoch", "calibrated", "split", "label", "trust", "density"), "scores"),
}
# Figure name → (the tables it needs, draw(tables, title, paths, options)).
FIGURES: dict[str, tuple[tuple[str, ...], Drawer]] = {
    "trust_grid": (("trust",), lambda t, title, paths, o: trust_grid(t["trust"], title, paths, o.get("dataset"))),
    "loss_curves": (("history",), lambda t, title, paths, o: loss_curves(t["history"], title, paths)),
    "network_opinion": (("trust",), lambda t, title, paths, o: network_opinion(t["trust"], title, paths)),
    "opinion_triangle": (("trust",), lambda t, title, paths, o: opinion_triangle(t["trust"], title, paths)),
    "cluster_sweep": (("trust_sweep",), lambda t, title, paths, o: cluster_sweep(
        t["trust_sweep"], title, paths, o.get("clusters") or 10)),
    "calibration_metrics": (("scores", "calibration"), lambda t, title, paths, o: calibration_metrics(
        t["scores"], t["calibration"], title, paths)),
    "geometric_metrics": (("scores",), lambda t, title, paths, o: geometric_metrics(t["scores"], title, paths)),
    "reliability": (("reliability", "history", "scores"), lambda t, title, paths, o: reliability(
        t["reliability"], t["history"], title, paths, t["scores"])),
    "trust_spectrum": (("trust_spectrum", "history", "scores"), lambda t, title, paths, o: trust_spectrum(
        t["trust_spectrum"], t["history"], title, paths, o.get("dataset"), t["scores"])),
    "trust_density": (("trust_density", "history"), lambda t, title, paths, o: trust_density(
        t["trust_density"], t["history"], title, paths, o.get("dataset"))),
}


def _paths(value) -> list[str]:
    return [str(value)] if isinstance(value, (str, Path)) else [str(v) for v in value]


def draw(name: str, tables: Mapping[str, pd.DataFrame], title: str, paths: Sequence[str | Path],
         dataset: str | None = None, clusters: int | None = None) -> plt.Figure:
    """Draw figure ``name`` of ``FIGURES`` from in-memory tables (a missing ``seed`` column means one seed);
    save it to ``paths`` (none: only return it) and return the figure.

    ``tables`` maps a table name of ``TABLES`` to its DataFrame (the workflow's
    CSV columns); only the tables the figure needs are looked up.
    """
    if name not in FIGURES:
        raise TrustcalError(f"unknown figure {name!r}; known: {sorted(FIGURES)}")
    needs, drawer = FIGURES[name]

    class _Seeded(dict):
        def __missing__(self, key):
            df = tables[key]
            self[key] = df if "seed" in df else df.assign(seed=0)
            return self[key]

    return drawer(_Seeded(), title, _paths(paths), dict(dataset=dataset, clusters=clusters))


def render_figures(dataset: str, inputs: Mapping[str, Sequence[str]], outputs: Mapping[str, Sequence[str]],
                   clusters: int | None = None) -> None:
    """Draw each figure named in ``outputs`` (name → its PNG/PDF paths) from the per-seed CSV files in ``inputs``.

    ``inputs`` maps a table name of ``TABLES`` to its files, one per seed
    (``…/seed{N}/…``); each table is read once, when a figure first needs it.
    """
    unknown = sorted(set(outputs) - set(FIGURES))
    if unknown:
        raise TrustcalError(f"unknown figure(s) {unknown}; known: {sorted(FIGURES)}")

    class _Lazy(dict):
        def __missing__(self, name):
            if name not in inputs:
                raise TrustcalError(f"a figure needs the {name} table, but no {name} file was given")
            columns, rule = TABLES[name]
            self[name] = concat_seeds(_paths(inputs[name]), columns, rule=rule)
            return self[name]

    tables = _Lazy()
    title = DATASET_TITLES.get(dataset, dataset)
    for name, paths in outputs.items():
        draw(name, tables, title, paths, dataset=dataset, clusters=clusters)


def paper_figures(dataset: str, trust_paths, history_paths, *, trust_grid_paths: Sequence[str], loss_paths: Sequence[str]) -> None:
    """The paper's Figures 1/2 (trust grid) and 3 (loss curves) for one dataset."""
    render_figures(dataset, {"trust": trust_paths, "history": history_paths},
                   {"trust_grid": trust_grid_paths, "loss_curves": loss_paths})
