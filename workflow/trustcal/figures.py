"""Figures rendered from the tidy tables with seaborn / matplotlib.

Several seeds are drawn as their mean with a band of ± one standard deviation.
Labels keep the same colour in every figure (viridis over the class index).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from .io import atomic_path, read_csv  # noqa: E402
from .trust import TRUST_COLUMNS  # noqa: E402

DATASET_TITLES = {"mnist": "MNIST (MLP)", "cifar10": "CIFAR-10 (CNN)"}
COMPONENTS = (("belief", "Trust (belief)"), ("disbelief", "Disbelief"), ("uncertainty", "Uncertainty"))
STATE_TITLES = {False: "Before calibration", True: "After calibration"}
LABEL_CMAP = "viridis"
# Paper column width is ~3.3 in; a full-width figure ~7 in.
FULL_WIDTH = 7.0


def set_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 200, "axes.titlesize": 9, "axes.labelsize": 8})


def save(fig: plt.Figure, paths: Sequence[str | Path]) -> None:
    """Save one figure to each path (format from the suffix), atomically."""
    for path in paths:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix.lstrip("."), bbox_inches="tight")
    plt.close(fig)


def concat_seeds(paths: Iterable[str | Path], columns: tuple[str, ...], rule: str) -> pd.DataFrame:
    """Read one table per seed (``…/seed{N}/…``) into one frame with a ``seed`` column."""
    frames = []
    for path in paths:
        df = read_csv(path, columns, rule=rule)
        seed = next((p[4:] for p in Path(path).parts if p.startswith("seed") and p[4:].isdigit()), "0")
        frames.append(df.assign(seed=int(seed)))
    return pd.concat(frames, ignore_index=True)


def _seed_note(df: pd.DataFrame) -> str:
    n = df["seed"].nunique() if "seed" in df else 1
    return f"mean ± sd over {n} seeds" if n > 1 else "1 seed"


def trust_grid(trust: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> None:
    """Paper Figures 1/2: rows before/after calibration, columns b/d/u, a line per label."""
    set_style()
    per_label = trust[trust["label"].astype(str) != "network"].copy()
    per_label["label"] = per_label["label"].astype(int)
    labels = sorted(per_label["label"].unique())
    norm = matplotlib.colors.Normalize(vmin=min(labels), vmax=max(labels))
    palette = {lab: matplotlib.colormaps[LABEL_CMAP](norm(lab)) for lab in labels}
    fig, axes = plt.subplots(2, 3, figsize=(FULL_WIDTH, 4.4), sharex=True, constrained_layout=True)
    for row, calibrated in enumerate((False, True)):
        sub = per_label[per_label["calibrated"].astype(str).str.lower() == str(calibrated).lower()]
        for col, (component, name) in enumerate(COMPONENTS):
            ax = axes[row, col]
            sns.lineplot(
                data=sub, x="epoch", y=component, hue="label", palette=palette, legend=False,
                errorbar="sd", ax=ax, linewidth=1.0,
            )
            ax.set_title(name if row == 0 else "")
            ax.set_xlabel("Epoch" if row == 1 else "")
            ax.set_ylabel(f"{STATE_TITLES[calibrated]}\n{component}" if col == 0 else component)
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    sm = matplotlib.cm.ScalarMappable(norm=norm, cmap=LABEL_CMAP)
    cbar = fig.colorbar(sm, ax=axes, shrink=0.8, pad=0.02, ticks=labels)
    cbar.set_label("Label")
    fig.suptitle(f"{title}: trust opinion per label ({_seed_note(trust)})", fontsize=10)
    save(fig, paths)


def loss_curves(history: pd.DataFrame, title: str, paths: Sequence[str | Path]) -> None:
    """Paper Figure 3: training and validation loss per epoch."""
    set_style()
    long = history.melt(
        id_vars=["epoch", "seed"], value_vars=["train_loss", "val_loss"], var_name="set", value_name="loss"
    )
    long["set"] = long["set"].map({"train_loss": "Training", "val_loss": "Validation"})
    fig, ax = plt.subplots(figsize=(3.4, 2.6), constrained_layout=True)
    sns.lineplot(data=long, x="epoch", y="loss", hue="set", errorbar="sd", ax=ax, marker="o" if history["epoch"].nunique() < 15 else None)
    ax.set_xlabel("Epoch")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_ylabel("Cross-entropy loss (nats)")
    ax.set_title(f"{title}: loss ({_seed_note(history)})")
    ax.legend(title=None, frameon=True)
    save(fig, paths)


def paper_figures(dataset: str, trust_paths, history_paths, *, trust_grid_paths: Sequence[str], loss_paths: Sequence[str]) -> None:
    title = DATASET_TITLES.get(dataset, dataset)
    trust = concat_seeds(trust_paths, TRUST_COLUMNS, rule="trust")
    history = concat_seeds(history_paths, ("epoch", "train_loss", "val_loss"), rule="train")
    trust_grid(trust, title, trust_grid_paths)
    loss_curves(history, title, loss_paths)
