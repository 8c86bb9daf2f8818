"""The ranking's files (:func:`write_ranking`) and the figure of ``calibrator_ranking.png``
(:mod:`trustcal.study.ranking`): per score, each calibrator's
difference from temperature scaling with its paired interval, a row per calibrator, a colour per run, filled
at the best-validation epoch and open at the last; below, the test-NLL win rates with their bootstrap
intervals, sorted, against every other calibrator and against temperature scaling."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from trustcal.files import atomic_path
from trustcal.reporting.figures.calibrators import CALIBRATOR_COLOURS, CALIBRATOR_NAMES
from trustcal.reporting.figures.style import FULL_WIDTH, save, set_style
from trustcal.study.png import save_png
from trustcal.study.ranking import (
    ALL,
    BASELINE,
    FILES,
    METRIC_NAMES,
    OTHERS,
    POINTS,
    Ranking,
    frame,
    ranking_markdown,
    ranking_of,
)
from trustcal.study.tables import in_order

FALLBACK = "0.45"  # a calibrator without a colour of its own
# a colour per run: Tol's muted scheme, apart from the calibrators' Okabe–Ito colours
RUN_COLOURS = ("#332288", "#CC6677", "#117733", "#88CCEE", "#AA4499", "#DDCC77", "#44AA99", "#882255")
ROW = 0.34  # inches per calibrator row
CLIP = 4.0  # a difference panel reaches this many times the median interval's farthest end from 0


def run_colours(runs) -> dict[str, str]:
    return {r: RUN_COLOURS[i % len(RUN_COLOURS)] for i, r in enumerate(runs)}


def axis_limit(lo: np.ndarray, hi: np.ndarray, factor: float = CLIP) -> float | None:
    """How far from 0 a difference panel reaches: ``factor`` × the median of the intervals' farthest ends,
    when some interval reaches beyond that (None: the axis holds every interval)."""
    far = np.fmax(np.abs(lo), np.abs(hi))
    far = far[np.isfinite(far)]
    if len(far) == 0:
        return None
    cap = factor * float(np.median(far))
    return cap if cap > 0 and far.max() > cap else None


def _rows(ax, n: int) -> None:
    ax.set_ylim(n - 0.5, -0.5)
    for y in np.arange(n - 1) + 0.5:
        ax.axhline(y, color="0.88", lw=0.5, zorder=0)
    ax.grid(axis="y", visible=False)


def _draw_differences(top, diff, titles, runs, colours, metrics, cals) -> None:
    """The top of :func:`ranking_figure`: each calibrator's differences from temperature scaling, a panel a metric."""
    axes = top.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    step = 0.8 / max(2 * len(runs), 1)
    for ax, m in zip(axes, metrics):
        d = diff[(diff["metric"] == m) & diff["calibrator"].isin(cals)]
        cap = axis_limit(d["lo"].to_numpy(float), d["hi"].to_numpy(float))
        left, right = -np.inf, np.inf
        if cap is not None:  # the panel's reach: the intervals within the cap, and 0
            inside = d[(d["lo"] >= -cap) & (d["hi"] <= cap)]
            left, right = min(inside["lo"].min(), 0.0), max(inside["hi"].max(), 0.0)
            pad = 0.06 * (right - left)
            left, right = left - pad, right + pad
            ax.set_xlim(left, right)
        for i, c in enumerate(cals):
            for k, run in enumerate(runs):
                for j, point in enumerate(POINTS):
                    r = d[(d["calibrator"] == c) & (d["run"] == run) & (d["point"] == point)]
                    if r.empty or not np.isfinite(r["estimate"].iloc[0]):
                        continue
                    est, lo, hi = (float(r[x].iloc[0]) for x in ("estimate", "lo", "hi"))
                    y = i + (2 * k + j - (2 * len(runs) - 1) / 2) * step
                    face = colours[run] if point == "best" else "white"
                    ax.plot([max(lo, left), min(hi, right)], [y, y], color=colours[run], lw=1.0,
                            solid_capstyle="butt")  # fmt: skip
                    if left <= est <= right:
                        ax.plot(est, y, "o", ms=3.6, mec=colours[run], mew=0.9, mfc=face)
                    for edge, beyond, marker in ((right, hi > right, ">"), (left, lo < left, "<")):
                        if beyond:  # the interval runs off the panel: an arrow at its edge
                            ax.plot(edge, y, marker, ms=4, mec=colours[run], mew=0.9, mfc=face, clip_on=False)
        if cap is None:  # 0 in sight even where every interval lies on one side of it
            lo_x, hi_x = ax.get_xlim()
            pad = 0.04 * (hi_x - lo_x)
            ax.set_xlim(min(lo_x, -pad), max(hi_x, pad))
        ax.axvline(0, color="0.2", lw=0.8, zorder=1)
        ax.set_title(f"Test {METRIC_NAMES[m]}")
        ax.tick_params(axis="x", labelsize=6.5)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        _rows(ax, len(cals))
    axes[0].set_yticks(range(len(cals)), [CALIBRATOR_NAMES.get(c, c) for c in cals])
    ncol = max(len(runs), 3)
    blank = Line2D([], [], lw=0, label=" ")
    first = [Line2D([], [], color=colours[r], marker="o", ms=4, lw=1.0, label=titles[r]) for r in runs]
    second = [
        Line2D([], [], color="0.3", marker="o", ms=4, lw=0, mfc=mfc, label=label)
        for mfc, label in (("0.3", "best-validation epoch"), ("white", "last epoch"))
    ]
    second.append(Line2D([], [], color="0.3", marker=">", ms=4, lw=0, label="interval beyond the axis"))
    rows = [first + [blank] * (ncol - len(first)), second + [blank] * (ncol - len(second))]
    handles = [rows[r][c] for c in range(ncol) for r in range(2)]  # the legend fills column by column
    top.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False, fontsize=7)
    top.suptitle(
        "Calibrator minus temperature scaling: mean over seeds, paired 95 % interval (below 0: better)",
        fontsize=8.5,
    )


def _draw_win_rates(bottom, table, wins, runs, colours, ranked) -> None:
    """The bottom of :func:`ranking_figure`: the test-NLL win rates, against every other calibrator and the baseline."""
    left, right = bottom.subplots(1, 2, sharey=True)
    vs = wins[wins["against"] == BASELINE].set_index("calibrator")
    others = wins[wins["against"] == OTHERS].set_index("calibrator")
    per_run = table[(table["table"] == "win_rate") & (table["against"] == OTHERS) & (table["run"] != ALL)]
    for ax, source, what in ((left, others, "every other calibrator"), (right, vs, "temperature scaling")):
        for i, c in enumerate(ranked):
            colour = CALIBRATOR_COLOURS.get(c, FALLBACK)
            if c not in source.index:
                ax.text(0.5, i, "the baseline", ha="center", va="center", fontsize=6.5, color="0.4")
                continue
            r = source.loc[c]
            ax.plot([r["lo"], r["hi"]], [i, i], color=colour, lw=1.6, solid_capstyle="butt")
            ax.plot(r["estimate"], i, "o", ms=5, color=colour, mec="white", mew=0.5, zorder=3)
            if source is others:
                for run in runs:
                    at = per_run[(per_run["run"] == run) & (per_run["calibrator"] == c)]
                    if len(at):
                        ax.plot(float(at["estimate"].iloc[0]), i + 0.28, "v", ms=3.2, color=colours[run],
                                zorder=2)  # fmt: skip
        ax.axvline(0.5, color="0.2", lw=0.8, zorder=1)
        ax.set_xlim(-0.03, 1.03)
        ax.set_title(f"Test-NLL win rate against {what}")
        _rows(ax, len(ranked))
    n, g = int(others["prediction_sets"].max()), int(others["clusters"].max())
    left.set_yticks(range(len(ranked)), [CALIBRATOR_NAMES.get(c, c) for c in ranked])
    left.set_xlabel("all runs (dot, 95 % cluster-bootstrap interval); ▾ each run's own", fontsize=6.5)
    right.set_xlabel("share of prediction sets with lower test NLL", fontsize=6.5)
    bottom.suptitle(
        f"Ranking: {n} prediction sets (run, seed, best-validation and last epoch) in {g} (run, seed) clusters",
        fontsize=8.5,
    )


def ranking_figure(table: pd.DataFrame, titles: Mapping[str, str], path: Path | None = None) -> plt.Figure:
    """Draw the figure of ``table`` (:func:`trustcal.study.ranking.ranking_table`; ``titles``: run → title)
    and save it to ``path`` (none: only return it)."""
    set_style()
    diff = table[table["table"] == "difference"]
    wins = table[(table["table"] == "win_rate") & (table["run"] == ALL)]
    runs = [r for r in titles if r in set(table["run"])]
    colours = run_colours(runs)
    metrics = [m for m in METRIC_NAMES if m in set(diff["metric"])]
    cals = [c for c in in_order(diff["calibrator"].unique()) if c != BASELINE]
    ranked = list(
        wins[wins["against"] == OTHERS].sort_values(["rank", "estimate"], ascending=[True, False])["calibrator"]
    )
    top_h, bottom_h = 0.9 + ROW * max(len(cals), 1), 0.9 + ROW * max(len(ranked), 1)
    fig = plt.figure(figsize=(FULL_WIDTH, top_h + bottom_h + 0.5), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[top_h, bottom_h])

    if metrics and cals:
        _draw_differences(top, diff, titles, runs, colours, metrics, cals)
    if ranked:
        _draw_win_rates(bottom, table, wins, runs, colours, ranked)
    if path is not None:
        save(fig, [path])
    return fig


def write_ranking(out: Path, runs: Mapping[str, str]) -> Ranking | None:
    """Write ``calibrator_ranking.csv``, ``.md`` and ``.png`` into ``out`` from the runs' tables there
    (:func:`ranking_of`); returns the ranking, or None (nothing written) when no run compares calibrators."""
    ranking, best = ranking_of(out, runs)
    if not ranking.rows:
        return None
    table = frame(ranking)
    with atomic_path(out / FILES[0]) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    with atomic_path(out / FILES[1]) as tmp:
        tmp.write_text(ranking_markdown(ranking, best), encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:  # drawn in full colour, kept as save_png's 128-colour copy
        ranking_figure(table, ranking.runs, Path(tmp) / FILES[2])
        save_png(Path(tmp) / FILES[2], out / FILES[2])
    return ranking
