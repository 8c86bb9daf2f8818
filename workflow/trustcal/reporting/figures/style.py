"""The look shared by every figure, and the tidy-table helpers the figures share.

One style throughout: Okabe–Ito colours for categories, the same colour for
the same thing in every figure (before calibration vermillion, after
calibration blue; training grey, validation green; label z the same viridis
shade everywhere), fonts of 7–9 pt at the printed size, legends outside the
axes. Figure sizes are fixed (``FIGURE_SIZES``, inches at ``DPI``), so a PNG
always has the same pixel size (a single set of predictions, drawn with fewer
panels, has its own sizes, set where it is drawn). seaborn's theme is written out
(``SEABORN_PAPER_WHITEGRID``): a figure that draws no seaborn plot never imports it.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import matplotlib

if "ipykernel" not in sys.modules:  # in a notebook, keep its backend: figures of the API are shown inline
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from cycler import cycler  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from trustcal.calibration.states import paper_states  # noqa: E402
from trustcal.files import atomic_path  # noqa: E402

# --------------------------------------------------------------------------- style

DPI = 200
COLUMN_WIDTH = 3.4  # inches, one column of a two-column paper
FULL_WIDTH = 7.0  # inches, the full text width
FIGURE_SIZES: dict[str, tuple[float, float]] = {
    "trust_grid": (FULL_WIDTH, 6.8),  # 10 labels: a row each (epochs.trust_grid_size; beyond 20 labels 4.3)
    "loss_curves": (COLUMN_WIDTH, 2.9),
    "calibration_metrics": (FULL_WIDTH, 4.4),
    "geometric_metrics": (FULL_WIDTH, 2.6),
    "network_opinion": (FULL_WIDTH, 2.5),
    "reliability": (FULL_WIDTH, 5.6),
    "trust_spectrum": (FULL_WIDTH, 2.8),
    "trust_density": (FULL_WIDTH, 5.6),
    "cluster_sweep": (FULL_WIDTH, 4.5),
    "opinion_triangle": (FULL_WIDTH, 3.3),
    "calibrator_trust": (FULL_WIDTH, 6.0),
    "calibrator_metrics": (FULL_WIDTH, 2.9),
    "calibrator_reliability": (FULL_WIDTH, 4.6),
    "selective_prediction": (FULL_WIDTH, 5.0),
    "calibration_refinement": (FULL_WIDTH, 4.4),
    "smooth_reliability": (FULL_WIDTH, 3.6),
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
# Above this many labels the per-label figures (trust grid, trust spectrum, trust densities) show summaries
# across the labels instead of one mark per label: a bar, a line or a tick label per class is unreadable
# at 100 classes and beyond, and a tick per class exceeds matplotlib's tick limit (its warnings on stderr).
MANY_LABELS = 30
LABEL_QUANTILES = (0.1, 0.5, 0.9)  # the band and the line of those summaries: 10 % and 90 % of the labels, median


# seaborn's theme (context "paper", style "whitegrid", palette "deep"; seaborn 0.13), written out so that
# figures that need no seaborn plot do not import it (about a second of every `trustcal assess`).
SEABORN_PAPER_WHITEGRID = {
    "axes.axisbelow": True,
    "axes.edgecolor": ".8",
    "axes.grid": True,
    "axes.labelcolor": ".15",
    "axes.prop_cycle": cycler(
        color=["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974"]
        + ["#64B5CD"]
    ),
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"],
    "grid.color": ".8",
    "lines.markersize": 4.8,
    "lines.solid_capstyle": "round",
    "patch.edgecolor": "w",
    "patch.force_edgecolor": True,
    "patch.linewidth": 0.8,
    "text.color": ".15",
    "xtick.bottom": False,
    "xtick.color": ".15",
    "xtick.major.size": 4.8,
    "xtick.major.width": 1.0,
    "xtick.minor.size": 3.2,
    "xtick.minor.width": 0.8,
    "ytick.color": ".15",
    "ytick.left": False,
    "ytick.major.size": 4.8,
    "ytick.major.width": 1.0,
    "ytick.minor.size": 3.2,
    "ytick.minor.width": 0.8,
}


def set_style() -> None:
    plt.rcParams.update(SEABORN_PAPER_WHITEGRID)
    plt.rcParams.update(
        {
            "font.size": 8,
            "axes.titlesize": 8.5,
            "axes.labelsize": 8,
            "xtick.labelsize": 7,
            "ytick.labelsize": 7,
            "legend.fontsize": 7,
            "legend.title_fontsize": 7.5,
            "figure.titlesize": 9.5,
            "figure.dpi": 100,
            "savefig.dpi": DPI,
            "lines.linewidth": 1.2,
            "axes.linewidth": 0.6,
            "grid.linewidth": 0.4,
            "pdf.fonttype": 42,
            "ps.fonttype": 42,  # embed TrueType: editable text in the PDF
        }
    )


def new_figure(
    name: str, size: tuple[float, float] | None = None, **subplots
) -> tuple[plt.Figure, np.ndarray | plt.Axes]:
    """A figure of ``FIGURE_SIZES[name]`` (or ``size``: the one-column figures of a single prediction set)."""
    set_style()
    return plt.subplots(figsize=size or FIGURE_SIZES[name], layout="constrained", **subplots)


def heading(title: str, what: str) -> str:
    """A figure's title: "{title}: {what}", or ``what`` alone without a title (never a bare ": …")."""
    return f"{title}: {what}" if title else what[:1].upper() + what[1:]


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


def with_state(df: pd.DataFrame) -> pd.DataFrame:
    """The paper's two states (the raw model and temperature scaling, :func:`~trustcal.calibration.states.paper_states`)
    with ``state`` ("Before calibration" / "After calibration")."""
    df = paper_states(df)
    df["state"] = df["calibrated"].map(STATE_NAMES)
    if "seed" not in df:
        df["seed"] = 0
    return df


FIT_SPLITS = {"val": "validation", "test": "test"}  # calibration.csv's fit_split → the legends' words


def fit_splits(calibration: pd.DataFrame | None) -> list[str]:
    """Where the calibrators were fitted, from calibration.csv's ``fit_split`` (none without that column)."""
    if calibration is None or "fit_split" not in calibration:
        return []
    return sorted({FIT_SPLITS.get(str(s), str(s)) for s in calibration["fit_split"].dropna()})


def n_seeds(df: pd.DataFrame) -> int:
    return int(df["seed"].nunique()) if "seed" in df else 1


def single_set(df: pd.DataFrame) -> bool:
    """One seed and one epoch: a single set of predictions (``trustcal assess`` on one file)."""
    return n_seeds(df) == 1 and ("epoch" not in df or df["epoch"].nunique() <= 1)


def seed_note(df: pd.DataFrame) -> str:
    """The legend's title: how seeds are summarised (nothing for a single set of predictions)."""
    n = n_seeds(df)
    return f"mean ± sd over {n} seeds" if n > 1 else "" if single_set(df) else "1 seed"


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


def label_count(labels: Iterable[int], classes: Sequence[str] | None = None) -> int:
    """The number of labels a figure shows: every class of ``classes`` when named, else up to the highest label
    seen (a class without a test sample still gets its row)."""
    return max(len(classes or ()), int(max(labels)) + 1)


def named_classes(classes: Sequence[str] | None) -> list[str] | None:
    """The class names worth printing beside the labels: None for none, or for digits named by themselves."""
    names = list(classes or ())
    return None if not names or names == [str(z) for z in range(len(names))] else names


def label_colourbar(
    fig: plt.Figure, axes, n_labels: int, classes: Sequence[str] | None = None, dashed: bool = False, **kw
) -> None:
    """A discrete colour bar naming each label (paper Figures 1–2 style); ``dashed``: each odd label's cell crossed
    by a dashed line, as its line is drawn (``distributions.label_dashes``)."""
    colours = label_colours(n_labels)
    cmap = matplotlib.colors.ListedColormap([colours[z] for z in range(n_labels)])
    norm = matplotlib.colors.BoundaryNorm(np.arange(n_labels + 1) - 0.5, n_labels)
    cbar = fig.colorbar(matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes, **kw)
    if dashed and n_labels <= MANY_LABELS:
        for z in range(1, n_labels, 2):
            r, g, b, _ = colours[z]
            ink = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.55 else "black"
            cbar.ax.plot(
                [0.1, 0.9], [z, z], color=ink, linewidth=0.9, dashes=DASHED, transform=cbar.ax.get_yaxis_transform()
            )
    if n_labels <= MANY_LABELS:  # a tick per label; beyond, a few (a tick per class is unreadable)
        cbar.set_ticks(range(n_labels))
    else:
        cbar.ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(6, integer=True))
    names = named_classes(classes)
    if names and len(names) == n_labels:
        cbar.ax.set_yticklabels([f"{z} {n}" for z, n in enumerate(names)])
    cbar.ax.tick_params(labelsize=6.5, length=0)
    cbar.set_label("Label")
    cbar.outline.set_linewidth(0.4)


def across_labels(values: pd.DataFrame) -> np.ndarray:
    """The quantiles :data:`LABEL_QUANTILES` of each column of ``values`` (a row per label), 3 × columns; NaN
    entries (a label without test samples) left out, a column of NaN only gives NaN (and no warning)."""
    v = values.to_numpy(dtype=float)
    if not len(v):
        return np.full((len(LABEL_QUANTILES), v.shape[1]), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice encountered"
        return np.nanquantile(v, LABEL_QUANTILES, axis=0)


def label_band_handles(colour: str = "0.35", what: str = "labels") -> list:
    """Legend entries of the summaries across labels (:func:`across_labels`)."""
    from matplotlib.patches import Patch

    lo, _, hi = (round(100 * q) for q in LABEL_QUANTILES)
    return [
        Line2D([], [], color=colour, linewidth=1.1, label=f"median over the {what}"),
        Patch(color=colour, alpha=0.25, linewidth=0, label=f"{lo}–{hi} % of the {what}"),
    ]


def state_handles(layered: bool = False) -> list:
    """Legend entries of the two states; ``layered``: with the widths of :data:`STATE_WIDTHS` (the figures that
    draw the states over each other)."""
    return [
        Line2D([], [], color=c, linewidth=STATE_WIDTHS[s] if layered else None, label=s)
        for s, c in STATE_COLOURS.items()
    ]


# --------------------------------------------------------------------------- lines that coincide

# Lines that may coincide (the raw model and a calibrator that changes little, two scores equal where u ≈ 0) are
# drawn in a fixed order, the first widest: a line drawn over an equal one leaves the earlier one's rim visible.
# A calibrator or a score also has its own marker shape, the earlier ones larger (from SPARSE_MARKERS points on, a
# few markers only).
LAYER_WIDEST, LAYER_STEP, LAYER_NARROWEST = 2.0, 0.4, 0.8
STATE_WIDTHS = {BEFORE: 1.8, AFTER: 0.9}  # before calibration under after, wherever they agree
SPARSE_MARKERS = 15  # from this many points on, a marker every few points only (each series at its own offset)


def layer_width(position: int) -> float:
    """The line width of the series drawn ``position``-th (0: first) among series that may coincide."""
    return max(LAYER_NARROWEST, LAYER_WIDEST - LAYER_STEP * position)


def layer_markersize(position: int) -> float:
    """The marker size of the series drawn ``position``-th: larger for the earlier ones, as their lines are wider."""
    return 2.6 + layer_width(position)


def marker_every(points: int, position: int):
    """``markevery`` of a series of ``points`` points drawn ``position``-th: every point below
    :data:`SPARSE_MARKERS` points, else about eight markers, each series at its own offset (markers of equal
    series do not pile up on the same points)."""
    if points < SPARSE_MARKERS:
        return None
    step = -(-points // 8)
    return (position % step, step)


INTERVAL_HATCH = "/////"


def interval_handle(label: str):
    """The legend entry of the bands of an interval: an outlined, hatched swatch, which no series' own band (a
    filled swatch of its colour, pale grey included) can be mistaken for."""
    from matplotlib.patches import Patch

    return Patch(facecolor="none", edgecolor="0.35", hatch=INTERVAL_HATCH, linewidth=0.6, label=label)


def figure_legend(fig: plt.Figure, handles: list, title: str, ncols: int | None = None) -> None:
    """One legend for the figure, below the panels (it never covers data)."""
    fig.legend(handles=handles, loc="outside lower center", ncols=ncols or len(handles), title=title, frameon=False)


def integer_epochs(ax: plt.Axes) -> None:
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))


def plain_numbers(ax: plt.Axes, axis: str = "y") -> None:
    """Tick labels as plain numbers (0.0012), never an offset or ×10ⁿ text that could hit a title."""
    fmt = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}")
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(fmt)


def log_ticks(ax: plt.Axes) -> None:
    """Labels on a log y axis that never overlap: at the decades, and at 2 and 5 times them when the
    axis spans less than two decades; plain numbers (0.2 and 1000, not 2×10⁻¹ and 1e+03); unlabelled minor ticks."""
    lo, hi = ax.get_ylim()
    subs = (1.0, 2.0, 5.0) if hi < 100 * lo else (1.0,)
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.0f}" if v >= 1 else f"{v:.3g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


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


def chosen_columns(chosen: pd.DataFrame) -> list[tuple[str, str]]:
    """(which, title) of the columns of the figures at the chosen epochs: first, best-validation and last;
    where every seed has a single epoch (one set of predictions), that epoch alone, untitled.

    Two chosen epochs that are the same epoch for every seed (the best-validation epoch is the last, or the
    first) are one column, titled by both ("Best validation loss = last epoch (epoch 4)"), its ``which`` the
    later one: the same diagram is never drawn twice."""
    if chosen["epoch"].nunique() <= 1:
        return [("last", "")]
    epochs = chosen.pivot(index="seed", columns="which", values="epoch")
    groups: list[list[str]] = []
    for w in WHICH:
        if groups and (epochs[w] == epochs[groups[-1][-1]]).all():
            groups[-1].append(w)
        else:
            groups.append([w])
    titles = which_titles(chosen)
    columns = []
    for group in groups:
        if len(group) == 1:
            columns.append((group[0], titles[group[0]]))
            continue
        names = [WHICH_TITLES[group[0]]] + [WHICH_TITLES[w][:1].lower() + WHICH_TITLES[w][1:] for w in group[1:]]
        at = epochs_text(chosen.loc[chosen["which"] == group[-1], "epoch"])
        columns.append((group[-1], f"{' = '.join(names)} ({at})"))
    return columns


def states_of(df: pd.DataFrame) -> list[str]:
    """The states of ``with_state(df)`` that have rows, in order (no empty "after" panels without calibration)."""
    present = set(df["state"])
    return [s for s in (BEFORE, AFTER) if s in present]


def select_chosen(df: pd.DataFrame, chosen: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``df`` at each seed's chosen epochs, with a ``which`` column (a row may serve twice)."""
    return df.merge(chosen, on=["seed", "epoch"], how="inner")
