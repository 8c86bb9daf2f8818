"""The data every figure plots (its lines, bars, bands, markers and tick labels), read from the figure's artists
and compared with values worked out here from small hand-built tables (issue 33).

The tables hold two seeds and a few epochs with every value different (drawn at random, or written out), and the
rows a figure must leave out (validation rows, a third calibrator, the per-label rows of a network figure) hold
values of their own: two series swapped, a panel plotting the wrong column, a band of the wrong statistic or
rows of the wrong split each change what is read here. The expected values are the mean over the seeds and the
sample sd (``ddof=1``) computed with NumPy on an array [seed, epoch] the test assembles row by row.
"""

import re
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.container import BarContainer

from trustcal.reporting import figures
from trustcal.reporting.figures.calibrators import CALIBRATOR_COLOURS
from trustcal.reporting.figures.style import AFTER, BEFORE, SET_COLOURS, STATE_COLOURS

SEEDS, EPOCHS = (0, 1), (1, 2, 3, 4)
STATES = {BEFORE: "none", AFTER: "temperature"}  # the paper's two states and the calibrator of each
CALIBRATORS = ("none", "temperature", "vector")
SQRT3_2 = np.sqrt(3) / 2

# A history whose mean validation loss is least at epoch 2, seed 0's at epoch 3 (the least of all rows) and seed 1's
# at epoch 2.
HISTORY = pd.DataFrame(
    dict(
        seed=[0] * 4 + [1] * 4,
        epoch=list(EPOCHS) * 2,
        train_loss=[1.2, 0.9, 0.7, 0.6, 1.1, 0.95, 0.65, 0.5],
        val_loss=[1.0, 0.6, 0.45, 0.7, 0.9, 0.5, 0.7, 0.8],
    )
)
FITTED = pd.DataFrame(dict(epoch=EPOCHS, calibrator="vector", fit_split="val"))  # calibration.csv of the legends
CHOSEN = {"first": {0: 1, 1: 1}, "best": {0: 3, 1: 2}, "last": {0: 4, 1: 4}}  # column → seed → epoch


# --------------------------------------------------------------------------- tables and expected values


def table(keys: dict[str, tuple], columns: list[str], seed: int = 0, low: float = 0.05, high: float = 0.95):
    """Every combination of seed × epoch × ``keys`` (column → values), each of ``columns`` drawn uniformly."""
    index = pd.MultiIndex.from_product([SEEDS, EPOCHS, *keys.values()], names=["seed", "epoch", *keys])
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.uniform(low, high, len(index)) for c in columns}, index=index).reset_index()


def with_bounds(df: pd.DataFrame, columns: list[str], seed: int = 1) -> pd.DataFrame:
    """``<c>_lo`` and ``<c>_hi`` of each column: the value minus and plus offsets of their own."""
    rng = np.random.default_rng(seed)
    for c in columns:
        df[f"{c}_lo"] = df[c] - rng.uniform(0.01, 0.05, len(df))
        df[f"{c}_hi"] = df[c] + rng.uniform(0.01, 0.05, len(df))
    return df


def per_seed(df: pd.DataFrame, column: str, epochs=EPOCHS, **where) -> np.ndarray:
    """The one value of ``column`` at each (seed, epoch) among the rows where the columns equal ``where``:
    an array [seed, epoch]; ``epochs`` maps a seed to its epoch for a column of chosen epochs."""
    out = np.empty((len(SEEDS), len(epochs) if not isinstance(epochs, dict) else 1))
    for i, s in enumerate(SEEDS):
        for j, e in enumerate([epochs[s]] if isinstance(epochs, dict) else epochs):
            mask = (df["seed"] == s) & (df["epoch"] == e)
            for key, value in where.items():
                mask &= df[key] == value
            (out[i, j],) = df.loc[mask, column].to_numpy()
    return out


def mean_sd(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return values.mean(axis=0), values.std(axis=0, ddof=1)


# --------------------------------------------------------------------------- reading the artists


def same_colour(a, b) -> bool:
    return np.allclose(to_rgba(a)[:3], to_rgba(b)[:3])


def lines(ax, colour, linestyle=None) -> list:
    """The lines of ``colour`` in ``ax``: the data lines (not dotted), or those of ``linestyle``."""
    return [
        line
        for line in ax.get_lines()
        if same_colour(line.get_color(), colour)
        and (line.get_linestyle() == linestyle if linestyle else line.get_linestyle() != ":")
    ]


def line(ax, colour, linestyle=None):
    (found,) = lines(ax, colour, linestyle)
    return found


def bands(ax, colour) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(x, lower, upper) of each filled band of ``colour`` in ``ax``, read from its polygons' vertices
    (the lowest and the highest vertex at each x)."""
    out = []
    for c in ax.collections:
        if isinstance(c, PolyCollection) and len(c.get_facecolor()) and same_colour(c.get_facecolor()[0], colour):
            pts = np.concatenate([p.vertices for p in c.get_paths()])
            xs = np.unique(pts[:, 0])
            out.append(
                (
                    xs,
                    np.array([pts[pts[:, 0] == x, 1].min() for x in xs]),
                    np.array([pts[pts[:, 0] == x, 1].max() for x in xs]),
                )
            )
    return out


def band(ax, colour):
    (found,) = bands(ax, colour)
    return found


def assert_band(ax, colour, x, lo, hi):
    bx, blo, bhi = band(ax, colour)
    np.testing.assert_allclose(bx, x)
    np.testing.assert_allclose(blo, lo, atol=1e-12)
    np.testing.assert_allclose(bhi, hi, atol=1e-12)


def assert_line(ax, colour, x, y, linestyle=None):
    found = line(ax, colour, linestyle)
    np.testing.assert_allclose(found.get_xdata(), x)
    np.testing.assert_allclose(found.get_ydata(), y, atol=1e-12)


def axis_titled(fig, title: str):
    (ax,) = [ax for ax in fig.axes if ax.get_title() == title]
    return ax


# --------------------------------------------------------------------------- paper figures and metrics per epoch


def test_loss_curves_plot_the_mean_losses_their_sd_and_the_least_mean_validation_loss():
    """Written out: the mean of the two seeds' losses, the band ± their sd (|a − b| / √2 for two values), and
    the dotted line at epoch 2, where the mean validation loss is least (seed 0's own least, the least of all
    rows, is at epoch 3)."""
    fig = figures.draw("loss_curves", {"history": HISTORY}, "m", [])
    (ax,) = fig.axes
    training = [1.15, 0.925, 0.675, 0.55]
    validation = [0.95, 0.55, 0.575, 0.75]
    training_sd = np.array([0.1, 0.05, 0.05, 0.1]) / np.sqrt(2)
    validation_sd = np.array([0.1, 0.1, 0.25, 0.1]) / np.sqrt(2)
    assert_line(ax, SET_COLOURS["Training"], EPOCHS, training)
    assert_line(ax, SET_COLOURS["Validation"], EPOCHS, validation)
    assert_band(ax, SET_COLOURS["Training"], EPOCHS, training - training_sd, training + training_sd)
    assert_band(ax, SET_COLOURS["Validation"], EPOCHS, validation - validation_sd, validation + validation_sd)
    assert list(line(ax, SET_COLOURS["Validation"], ":").get_xdata()) == [2, 2]
    assert "Min. validation loss (epoch 2)" in [t.get_text() for t in fig.legends[0].get_texts()]


SCORE_PANELS = {  # calibration_metrics: the title of each panel → its column of scores.csv
    "Accuracy": "accuracy",
    "ECE (10 equal-width bins)": "ece",
    "Negative log-likelihood": "nll",
    "Brier score": "brier",
    "NetTrustScore": "net_trust_score",
}


def test_calibration_metrics_plot_each_column_before_and_after_and_the_fitted_temperature():
    scores = table(dict(calibrator=CALIBRATORS, split=("test", "val")), list(SCORE_PANELS.values()))
    calibration = table(dict(calibrator=("temperature", "vector")), ["temperature"], seed=2, low=0.5, high=3.0)
    fig = figures.draw("calibration_metrics", {"scores": scores, "calibration": calibration}, "m", [])
    for title, column in SCORE_PANELS.items():
        ax = axis_titled(fig, title)
        for state, calibrator in STATES.items():
            mean, sd = mean_sd(per_seed(scores, column, calibrator=calibrator, split="test"))
            assert_line(ax, STATE_COLOURS[state], EPOCHS, mean)
            assert_band(ax, STATE_COLOURS[state], EPOCHS, mean - sd, mean + sd)
    ax = axis_titled(fig, "Fitted temperature")
    mean, sd = mean_sd(per_seed(calibration, "temperature", calibrator="temperature"))
    assert_line(ax, "black", EPOCHS, mean)
    assert_band(ax, "black", EPOCHS, mean - sd, mean + sd)
    assert list(line(ax, "0.6", ":").get_ydata()) == [1, 1]  # T = 1: no scaling


GEOMETRIC = {"Geometric accuracy (ρ = 0)": "geometric_accuracy", "Decisiveness (ρ = 1)": "decisiveness"}
GEOMETRIC["Robustness (ρ = −2/3)"] = "robustness"


def test_geometric_metrics_plot_the_reported_solid_and_the_measured_dashed():
    columns = [c for name in GEOMETRIC.values() for c in (name, f"{name}_measured")]
    scores = table(dict(calibrator=CALIBRATORS, split=("test", "val")), columns)
    fig = figures.draw("geometric_metrics", {"scores": scores}, "m", [])
    for title, column in GEOMETRIC.items():
        ax = axis_titled(fig, title)
        for state, calibrator in STATES.items():
            colour = STATE_COLOURS[state]
            expected = []
            for name, style in ((column, "-"), (f"{column}_measured", "--")):
                mean, sd = mean_sd(per_seed(scores, name, calibrator=calibrator, split="test"))
                assert_line(ax, colour, EPOCHS, mean, linestyle=style)
                expected.append(np.r_[mean - sd, mean + sd])
            drawn = [np.r_[lo, hi] for _, lo, hi in bands(ax, colour)]
            assert len(drawn) == 2
            for want in expected:  # each line's ± sd band, in the line's colour
                assert any(np.allclose(d, want, atol=1e-12) for d in drawn), (title, state)


def trust_table(labels=("network", "0", "1", "2"), seed: int = 3, bounds: bool = False) -> pd.DataFrame:
    """trust.csv's layout: a row per seed, epoch, calibrator and label (``network`` or a label number)."""
    df = table(dict(calibrator=CALIBRATORS, label=labels), ["belief", "disbelief", "uncertainty"], seed=seed)
    return with_bounds(df, ["belief", "disbelief", "uncertainty"]) if bounds else df


def test_network_opinion_plots_the_network_rows_before_and_after():
    trust = trust_table()
    fig = figures.draw("network_opinion", {"trust": trust}, "m", [])
    for title, component in (("Belief (trust)", "belief"), ("Disbelief", "disbelief"), ("Uncertainty", "uncertainty")):
        ax = axis_titled(fig, title)
        for state, calibrator in STATES.items():
            mean, sd = mean_sd(per_seed(trust, component, calibrator=calibrator, label="network"))
            assert_line(ax, STATE_COLOURS[state], EPOCHS, mean)
            assert_band(ax, STATE_COLOURS[state], EPOCHS, mean - sd, mean + sd)


def test_trust_grid_plots_every_label_component_and_state():
    """A panel per label (rows) and component (columns): the label's mean over seeds before and after
    calibration, each with its ± sd band."""
    trust = trust_table()
    fig = figures.draw("trust_grid", {"trust": trust}, "m", [])
    assert len(fig.axes) == 3 * 3
    for z in range(3):
        for col, component in enumerate(("belief", "disbelief", "uncertainty")):
            ax = fig.axes[3 * z + col]
            assert ax.get_ylabel() == (f"label {z}" if col == 0 else "")
            for state, calibrator in STATES.items():
                mean, sd = mean_sd(per_seed(trust, component, calibrator=calibrator, label=str(z)))
                assert_line(ax, STATE_COLOURS[state], EPOCHS, mean)
                assert_band(ax, STATE_COLOURS[state], EPOCHS, mean - sd, mean + sd)


# 40 labels in a shuffled order, label z holding the rank RANK[z] (0 … 39); the 10 %, 50 % and 90 % quantiles of the
# ranks by linear interpolation: 39·q, between the ranks ⌊39q⌋ and ⌊39q⌋ + 1.
RANK = np.random.default_rng(4).permutation(40)
RANK_QUANTILES = {10: 3.9, 50: 19.5, 90: 35.1}


def test_trust_grid_of_many_labels_plots_the_median_and_the_10_to_90_percent_band_of_the_labels():
    """40 labels, one seed: per epoch and component, label z's value is a + rank[z]/100 (a per epoch, state and
    component), so the median and the band are a + the quantiles of the ranks / 100."""
    rank, q = RANK, RANK_QUANTILES
    rows = []
    for calibrator, shift in (("none", 0.0), ("temperature", 0.3), ("vector", 0.5)):
        for epoch in EPOCHS:
            for c, component in enumerate(("belief", "disbelief", "uncertainty")):
                for z in range(40):
                    value = shift + 0.05 * epoch + 0.01 * c + rank[z] / 100
                    rows.append(
                        dict(epoch=epoch, calibrator=calibrator, label=str(z), component=component, value=value)
                    )
    long = pd.DataFrame(rows)
    trust = long.pivot_table(index=["epoch", "calibrator", "label"], columns="component", values="value")
    trust = trust.reset_index().assign(seed=0)
    fig = figures.draw("trust_grid", {"trust": trust}, "m", [])
    for row, (state, shift) in enumerate(((BEFORE, 0.0), (AFTER, 0.3))):
        for c in range(3):
            ax = fig.axes[3 * row + c]
            a = shift + 0.05 * np.array(EPOCHS) + 0.01 * c
            assert_line(ax, STATE_COLOURS[state], EPOCHS, a + q[50] / 100)
            assert_band(ax, STATE_COLOURS[state], EPOCHS, a + q[10] / 100, a + q[90] / 100)


# --------------------------------------------------------------------------- chosen epochs


def chosen_mean_sd(df: pd.DataFrame, column: str, which: str, **where):
    return mean_sd(per_seed(df, column, epochs=CHOSEN[which], **where))


def test_trust_spectrum_bars_are_each_labels_mean_at_each_seeds_chosen_epoch():
    """Bars of the mean over seeds at each seed's own chosen epoch (the best: epoch 3 of seed 0, 2 of seed 1),
    before calibration left of the label and after right, whiskers ± sd; the title's NTS from the scores."""
    spectrum = table(dict(calibrator=CALIBRATORS, split=("test", "val"), label=(0, 1, 2)), ["trust"], seed=5)
    scores = table(dict(calibrator=CALIBRATORS, split=("test", "val")), ["net_trust_score"], seed=6)
    fig = figures.draw(
        "trust_spectrum",
        {"trust_spectrum": spectrum, "history": HISTORY, "scores": scores},
        "m",
        [],
        classes=("ash", "elm", "oak"),
    )
    assert len(fig.axes) == 3
    for ax, which in zip(fig.axes, ("first", "best", "last")):
        (bars_before, bars_after) = [c for c in ax.containers if isinstance(c, BarContainer)]
        nts = []
        for offset, bars, calibrator in ((-0.2, bars_before, "none"), (0.2, bars_after, "temperature")):
            state = BEFORE if calibrator == "none" else AFTER
            values = np.hstack(
                [
                    per_seed(spectrum, "trust", CHOSEN[which], calibrator=calibrator, split="test", label=z)
                    for z in range(3)
                ]
            )  # [seed, label]
            mean, sd = mean_sd(values)
            assert all(same_colour(b.get_facecolor(), STATE_COLOURS[state]) for b in bars.patches)
            np.testing.assert_allclose([b.get_x() + b.get_width() / 2 for b in bars.patches], np.arange(3) + offset)
            np.testing.assert_allclose([b.get_height() for b in bars.patches], mean, atol=1e-12)
            segments = bars.errorbar.lines[2][0].get_segments()
            np.testing.assert_allclose([(s[0][1], s[1][1]) for s in segments], np.c_[mean - sd, mean + sd], atol=1e-12)
            nts.append(chosen_mean_sd(scores, "net_trust_score", which, calibrator=calibrator, split="test")[0][0])
        assert ax.get_title().endswith(f"NTS {nts[0]:.3f} → {nts[1]:.3f}")
        assert [t.get_text() for t in ax.get_xticklabels()] == ["ash", "elm", "oak"]


def test_trust_spectrum_of_many_labels_is_each_states_values_sorted_from_the_highest():
    """40 labels, two seeds, one set of predictions: T(z) of seed s is (RANK[z] + s)/100 before calibration and
    (RANK[z] + s)/50 after, so the mean over seeds is (RANK[z] + ½)/100 and /50; label 0 has no test sample (T
    undefined in both seeds) and is left out: 39 ranks."""
    rows = [
        dict(seed=s, epoch=1, calibrator=c, split=split, label=z, trust=(RANK[z] + s) / d if z else np.nan)
        for s in SEEDS
        for c, d in (("none", 100), ("temperature", 50), ("vector", 20))
        for split in ("test", "val")
        for z in range(40)
    ]
    spectrum = pd.DataFrame(rows)
    spectrum.loc[spectrum["split"] == "val", "trust"] /= 2
    history = pd.DataFrame(dict(seed=list(SEEDS), epoch=1, val_loss=1.0))
    scores = table(dict(calibrator=CALIBRATORS, split=("test", "val")), ["net_trust_score"], seed=16)
    scores = scores[scores["epoch"] == 1]
    fig = figures.draw("trust_spectrum", {"trust_spectrum": spectrum, "history": history, "scores": scores}, "m", [])
    (ax,) = fig.axes
    nts = [
        per_seed(scores, "net_trust_score", (1,), calibrator=c, split="test").mean() for c in ("none", "temperature")
    ]
    assert ax.get_title() == f"NTS {nts[0]:.3f} → {nts[1]:.3f}"
    ranks = np.sort(RANK[1:])[::-1] + 0.5  # the labels' mean ranks, highest first
    for state, d in ((BEFORE, 100), (AFTER, 50)):
        assert_line(ax, STATE_COLOURS[state], np.arange(1, 40), ranks / d)
    assert "39 labels sorted" in fig._suptitle.get_text()


def test_reliability_bars_ticks_and_counts_are_the_means_over_seeds_of_each_chosen_epoch():
    """Four equal bins of the raw model and temperature scaling at every epoch of two seeds: the bar of a bin is the
    mean of its observed frequency, the black tick at the bin's centre the mean of its mean confidence, the
    count below the mean of its counts; the title's ECE the mean ± sd of the scores' ECE."""
    edges = np.linspace(0, 1, 5)
    curves = table(
        dict(calibrator=CALIBRATORS, split=("test", "val"), curve=("top_label", "classwise"), bin=range(4)),
        ["observed_frequency", "mean_predicted", "count"],
        seed=7,
    )
    curves["count"] = np.round(curves["count"] * 100) + 1
    curves["bin_lower"], curves["bin_upper"] = edges[curves["bin"]], edges[curves["bin"] + 1]
    scores = table(dict(calibrator=CALIBRATORS, split=("test", "val")), ["ece"], seed=8)
    fig = figures.draw("reliability", {"reliability": curves, "history": HISTORY, "scores": scores}, "m", [])
    for c, which in enumerate(("first", "best", "last")):
        for r, (state, calibrator) in enumerate(STATES.items()):
            diagram, counts = fig.axes[(2 * r) * 3 + c], fig.axes[(2 * r + 1) * 3 + c]
            where = dict(calibrator=calibrator, split="test", curve="top_label")
            freq = [chosen_mean_sd(curves, "observed_frequency", which, bin=b, **where)[0][0] for b in range(4)]
            conf = [chosen_mean_sd(curves, "mean_predicted", which, bin=b, **where)[0][0] for b in range(4)]
            n = [chosen_mean_sd(curves, "count", which, bin=b, **where)[0][0] for b in range(4)]
            np.testing.assert_allclose([b.get_height() for b in diagram.patches], freq, atol=1e-12)
            assert all(same_colour(b.get_facecolor(), STATE_COLOURS[state]) for b in diagram.patches)
            (ticks,) = [col for col in diagram.collections if isinstance(col, PathCollection)]
            np.testing.assert_allclose(ticks.get_offsets(), np.c_[edges[:-1] + 0.125, conf], atol=1e-12)
            np.testing.assert_allclose([b.get_height() for b in counts.patches], n, atol=1e-12)
            ece, sd = chosen_mean_sd(scores, "ece", which, calibrator=calibrator, split="test")
            assert diagram.get_title().endswith(f"ECE {ece[0]:.3f} ± {sd[0]:.3f}")


def density_table(labels=(0, 1, 2), seeds=SEEDS, seed: int = 9) -> pd.DataFrame:
    grid = (0.0, 0.25, 0.5, 0.75, 1.0)
    df = table(dict(calibrator=CALIBRATORS, split=("test", "val"), label=labels, trust=grid), ["density"], seed=seed)
    df["density"] *= 5
    return df[df["seed"].isin(seeds)]


def test_trust_density_plots_each_labels_mean_in_its_colour_with_the_range_over_seeds():
    density = density_table()
    fig = figures.draw("trust_density", {"trust_density": density, "history": HISTORY}, "m", [])
    viridis = matplotlib.colormaps["viridis"]
    grid = [0.0, 0.25, 0.5, 0.75, 1.0]
    for r, which in enumerate(("first", "best", "last")):
        for c, (state, calibrator) in enumerate(STATES.items()):
            ax = fig.axes[2 * r + c]
            assert ax.get_title().endswith(f" · {state}")
            for z in range(3):
                where = dict(calibrator=calibrator, split="test", label=z)
                values = np.hstack([per_seed(density, "density", CHOSEN[which], trust=t, **where) for t in grid])
                colour = viridis(z / 2)
                assert_line(ax, colour, grid, values.mean(axis=0))
                assert_band(ax, colour, grid, values.min(axis=0), values.max(axis=0))


def test_trust_density_of_many_labels_plots_the_median_and_the_10_to_90_percent_band():
    """40 labels, one seed, one set of predictions: label z's density at trust t is (1 + t + s)·(1 + rank[z]),
    s = 0 before and 1 after calibration, so the median and the band are (1 + t + s)·(1 + the ranks' quantiles)."""
    rank, q = RANK, RANK_QUANTILES
    grid = np.array([0.0, 0.5, 1.0])
    rows = [
        dict(seed=0, epoch=1, calibrator=calibrator, split=split, label=z, trust=t, density=(1 + t + s) * (1 + rank[z]))
        for calibrator, s in (("none", 0), ("temperature", 1), ("vector", 2))
        for split in ("test", "val")
        for z in range(40)
        for t in grid
    ]
    density = pd.DataFrame(rows)
    density.loc[density["split"] == "val", "density"] *= 10
    history = pd.DataFrame(dict(seed=[0], epoch=[1], val_loss=[1.0]))
    fig = figures.draw("trust_density", {"trust_density": density, "history": history}, "m", [])
    for ax, (state, s) in zip(fig.axes, ((BEFORE, 0), (AFTER, 1))):
        assert_line(ax, STATE_COLOURS[state], grid, (1 + grid + s) * (1 + q[50]))
        assert_band(ax, STATE_COLOURS[state], grid, (1 + grid + s) * (1 + q[10]), (1 + grid + s) * (1 + q[90]))


def test_smooth_reliability_plots_the_mean_curve_where_confidences_are_its_band_and_its_density():
    """The curve and its band are drawn where the mean density is at least 1 % of its largest (the grid point
    where it is 0.005 of it is left blank), the density strip everywhere."""
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    smooth = table(
        dict(calibrator=CALIBRATORS, split=("test", "val"), confidence=grid), ["accuracy", "density"], seed=10
    )
    smooth = with_bounds(smooth, ["accuracy"])
    thin = (smooth["confidence"] == 0.2) & (smooth["calibrator"] == "none")
    smooth.loc[thin, "density"] = 0.001  # below 1 % of the largest mean density (about 0.5 or more)
    fig = figures.draw("smooth_reliability", {"smooth_reliability": smooth, "history": HISTORY}, "m", [])
    for c, which in enumerate(("first", "best", "last")):
        ax, strip = fig.axes[c], fig.axes[3 + c]
        for state, calibrator in STATES.items():
            where = dict(calibrator=calibrator, split="test")
            per = {  # column → [seed, grid point]
                column: np.hstack([per_seed(smooth, column, CHOSEN[which], confidence=t, **where) for t in grid])
                for column in ("accuracy", "accuracy_lo", "accuracy_hi", "density")
            }
            density = per["density"].mean(axis=0)
            shown = density >= 0.01 * density.max()
            assert shown.all() == (calibrator != "none")
            curve = np.where(shown, per["accuracy"].mean(axis=0), np.nan)
            assert_line(ax, STATE_COLOURS[state], grid, curve)
            assert_line(strip, STATE_COLOURS[state], grid, density)
            bx, blo, bhi = band(ax, STATE_COLOURS[state])
            np.testing.assert_allclose(bx, np.array(grid)[shown])
            np.testing.assert_allclose(blo, per["accuracy_lo"].mean(axis=0)[shown], atol=1e-12)
            np.testing.assert_allclose(bhi, per["accuracy_hi"].mean(axis=0)[shown], atol=1e-12)


def reliability_curves(seed: int) -> pd.DataFrame:
    """reliability.csv's top-label rows of every calibrator and split: 4 equal bins, 1 to 101 samples each."""
    edges = np.linspace(0, 1, 5)
    curves = table(
        dict(calibrator=CALIBRATORS, split=("test", "val"), curve=("top_label",), bin=range(4)),
        ["observed_frequency", "mean_predicted", "count"],
        seed=seed,
    )
    curves["count"] = np.round(curves["count"] * 100) + 1
    curves["bin_lower"], curves["bin_upper"] = edges[curves["bin"]], edges[curves["bin"] + 1]
    return curves


def test_calibrator_reliability_marks_each_calibrators_bins_at_each_seeds_best_epoch():
    """A marker per non-empty bin at (mean confidence, observed frequency) of the calibrator's rows at the seed's
    best-validation epoch (3 and 2), one set per seed, in the calibrator's colour; the count strip the mean."""
    curves = reliability_curves(seed=11)
    fig = figures.draw(
        "calibrator_reliability", {"reliability": curves, "history": HISTORY, "calibration": FITTED}, "m", []
    )
    diagrams = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    strips = [ax for ax in fig.axes if ax.get_visible() and not ax.get_title()]
    assert [ax.get_title() for ax in diagrams] == ["raw model", "temperature scaling", "vector scaling"]
    for ax, strip, calibrator in zip(diagrams, strips, CALIBRATORS):
        where = dict(calibrator=calibrator, split="test")
        markers = [col for col in ax.collections if isinstance(col, PathCollection)]
        assert len(markers) == len(SEEDS)
        for i, marks in enumerate(markers):  # a seed each
            conf = [per_seed(curves, "mean_predicted", CHOSEN["best"], bin=b, **where)[i, 0] for b in range(4)]
            freq = [per_seed(curves, "observed_frequency", CHOSEN["best"], bin=b, **where)[i, 0] for b in range(4)]
            np.testing.assert_allclose(marks.get_offsets(), np.c_[conf, freq], atol=1e-12)
            assert same_colour(marks.get_facecolor()[0], CALIBRATOR_COLOURS[calibrator])
        n = [per_seed(curves, "count", CHOSEN["best"], bin=b, **where)[:, 0].mean() for b in range(4)]
        np.testing.assert_allclose([b.get_height() for b in strip.patches], n, atol=1e-12)


# --------------------------------------------------------------------------- trust variants


def sweep_table(epochs=(5,)) -> pd.DataFrame:
    df = table(
        dict(calibrator=CALIBRATORS, clusters=(2, 5, 10, 20), representative=("midpoint", "mean")),
        ["belief", "disbelief", "uncertainty"],
        seed=12,
    )
    df["epoch"] = df["epoch"] + 4  # epochs 5 … 8
    return df[df["epoch"].isin(epochs)]


def test_cluster_sweep_of_one_epoch_plots_both_representatives_of_each_state_against_m():
    sweep = sweep_table()
    fig = figures.draw("cluster_sweep", {"trust_sweep": sweep}, "m", [], clusters=10)
    clusters = [2, 5, 10, 20]
    for ax, component in zip(fig.axes, ("belief", "disbelief", "uncertainty")):
        assert list(line(ax, "0.4", ":").get_xdata()) == [10, 10]  # this run's M
        for state, calibrator in STATES.items():
            colour = STATE_COLOURS[state]
            drawn = {ln.get_marker(): ln for ln in lines(ax, colour)}
            assert set(drawn) == {"o", "s"}  # midpoint: circles, cluster mean: squares
            expected = []
            for representative, marker in (("midpoint", "o"), ("mean", "s")):
                where = dict(calibrator=calibrator, representative=representative)
                values = np.hstack(
                    [per_seed(sweep, component, (5,), clusters=m, **where) for m in clusters]
                )  # [seed, M]
                mean, sd = mean_sd(values)
                np.testing.assert_allclose(drawn[marker].get_xdata(), clusters)
                np.testing.assert_allclose(drawn[marker].get_ydata(), mean, atol=1e-12)
                expected.append(np.r_[mean - sd, mean + sd])
            shown = [np.r_[lo, hi] for _, lo, hi in bands(ax, colour)]
            assert len(shown) == 2 and all(any(np.allclose(s, e, atol=1e-12) for s in shown) for e in expected)


def test_cluster_sweep_of_a_series_draws_a_row_per_state_and_a_colour_per_epoch():
    """Two epochs: the raw model's row above temperature scaling's, in each a midpoint line per epoch in the
    epoch's shade of seaborn's "crest" palette, the mean over seeds of that epoch's rows."""
    import seaborn as sns

    sweep = sweep_table(epochs=(5, 7))
    fig = figures.draw("cluster_sweep", {"trust_sweep": sweep}, "m", [], clusters=5)
    palette = dict(zip((5, 7), sns.color_palette("crest", 2)))
    for row, calibrator in enumerate(("none", "temperature")):
        for c, component in enumerate(("belief", "disbelief", "uncertainty")):
            ax = fig.axes[3 * row + c]
            for epoch, colour in palette.items():
                (midpoint,) = [ln for ln in lines(ax, colour) if ln.get_marker() == "o"]
                want = [
                    per_seed(sweep, component, (epoch,), calibrator=calibrator, clusters=m, representative="midpoint")
                    for m in (2, 5, 10, 20)
                ]
                np.testing.assert_allclose(midpoint.get_ydata(), np.hstack(want).mean(axis=0), atol=1e-12)


def test_opinion_triangle_places_the_mean_network_opinion_of_each_epoch():
    """The triangle: (b + u/2, u·√3/2) of the mean opinion over seeds; the zoom: the mean (b, u) with markers, a
    thin line per seed, and the first and the last epoch written at their points."""
    trust = trust_table(seed=13)
    fig = figures.draw("opinion_triangle", {"trust": trust}, "m", [])
    tri, zoom = fig.axes
    for state, calibrator in STATES.items():
        colour = STATE_COLOURS[state]
        b, u = (per_seed(trust, c, calibrator=calibrator, label="network") for c in ("belief", "uncertainty"))
        assert_line(tri, colour, b.mean(axis=0) + u.mean(axis=0) / 2, u.mean(axis=0) * SQRT3_2)
        (mean,) = [ln for ln in lines(zoom, colour) if ln.get_marker() == "o"]
        np.testing.assert_allclose(mean.get_xdata(), b.mean(axis=0))
        np.testing.assert_allclose(mean.get_ydata(), u.mean(axis=0))
        thin = [ln for ln in lines(zoom, colour) if ln.get_marker() != "o"]
        assert len(thin) == len(SEEDS)
        for ln, i in zip(thin, range(len(SEEDS))):
            np.testing.assert_allclose(ln.get_xdata(), b[i])
            np.testing.assert_allclose(ln.get_ydata(), u[i])
        notes = {t.get_text(): t.xy for t in zoom.texts if same_colour(t.get_color(), colour)}
        assert set(notes) == {"1", "4"}
        np.testing.assert_allclose(notes["1"], (b.mean(axis=0)[0], u.mean(axis=0)[0]))
        np.testing.assert_allclose(notes["4"], (b.mean(axis=0)[-1], u.mean(axis=0)[-1]))


# --------------------------------------------------------------------------- calibrators


def test_calibrator_trust_plots_each_calibrator_with_the_bootstrap_band_of_the_network_and_the_sd_of_labels():
    """Left: the network's mean over seeds with the mean of its ``_lo`` / ``_hi``; right: each seed's mean over
    the labels, then their mean over seeds ± sd."""
    trust = trust_table(seed=14, bounds=True)
    fig = figures.draw("calibrator_trust", {"trust": trust, "calibration": FITTED}, "m", [])
    for component in ("belief", "disbelief", "uncertainty"):
        network = axis_titled(fig, f"{component.capitalize()}, network")
        labels = axis_titled(fig, f"{component.capitalize()}, mean over labels")
        for calibrator in CALIBRATORS:
            colour = CALIBRATOR_COLOURS[calibrator]
            mean = per_seed(trust, component, calibrator=calibrator, label="network").mean(axis=0)
            lo = per_seed(trust, f"{component}_lo", calibrator=calibrator, label="network").mean(axis=0)
            hi = per_seed(trust, f"{component}_hi", calibrator=calibrator, label="network").mean(axis=0)
            assert_line(network, colour, EPOCHS, mean)
            assert_band(network, colour, EPOCHS, lo, hi)
            over_labels = sum(per_seed(trust, component, calibrator=calibrator, label=z) for z in "012") / 3
            mean, sd = mean_sd(over_labels)
            assert_line(labels, colour, EPOCHS, mean)
            assert_band(labels, colour, EPOCHS, mean - sd, mean + sd)


def test_calibrator_metrics_plot_each_calibrator_with_its_bootstrap_band_or_the_sd_over_seeds():
    """ECE, NLL and Brier score have bootstrap bounds (their band: the mean of ``_lo`` / ``_hi``); the smooth ECE
    has none here (its band: ± sd over seeds); the validation rows are left out."""
    scores = with_bounds(
        table(dict(calibrator=CALIBRATORS, split=("test", "val")), ["ece", "smece", "nll", "brier"], seed=15),
        ["ece", "nll", "brier"],
    )
    fig = figures.draw("calibrator_metrics", {"scores": scores, "calibration": FITTED}, "m", [])
    for title, column in (
        ("ECE (top-label)", "ece"),
        ("smooth ECE", "smece"),
        ("NLL", "nll"),
        ("Brier score", "brier"),
    ):
        ax = axis_titled(fig, title)
        for calibrator in CALIBRATORS:
            colour = CALIBRATOR_COLOURS[calibrator]
            where = dict(calibrator=calibrator, split="test")
            mean, sd = mean_sd(per_seed(scores, column, **where))
            assert_line(ax, colour, EPOCHS, mean)
            if column == "smece":
                assert_band(ax, colour, EPOCHS, mean - sd, mean + sd)
            else:
                lo, hi = (per_seed(scores, f"{column}_{end}", **where).mean(axis=0) for end in ("lo", "hi"))
                assert_band(ax, colour, EPOCHS, lo, hi)


# --------------------------------------------------------------------------- nothing hides (issue 42)
#
# Each figure drawn from tables in which the lines that hid each other hold equal values, or the bins and epochs
# that were drawn badly: the earlier line is drawn first and wider (its rim shows around the later one), the two
# carry different marks, and the legend's samples are the lines'.

COMPONENTS = ["belief", "disbelief", "uncertainty"]
LAST = {0: 4, 1: 4}  # each seed's last epoch, and its best-validation epoch in HISTORY_BEST_LAST
FIRST = {0: 1, 1: 1}
HISTORY_BEST_LAST = HISTORY.assign(val_loss=[1.0, 0.8, 0.6, 0.5, 0.9, 0.7, 0.65, 0.6])  # least at the last epoch


def equal_to(df: pd.DataFrame, key: str, copy: str, source: str, columns: list[str]) -> pd.DataFrame:
    """``df`` with the ``columns`` of the rows whose ``key`` is ``copy`` replaced by those of ``source`` (the rows
    of every key come in the same order: :func:`table`'s product)."""
    df = df.copy()
    df.loc[df[key] == copy, columns] = df.loc[df[key] == source, columns].to_numpy()
    return df


def assert_drawn_under(ax, first, then, markers: bool = True):
    """Lines ``first`` and ``then`` (line artists) hold the same values; ``first`` is drawn before ``then`` and
    wider by at least 0.4 pt (a rim of 0.2 pt each side), with a different and larger marker."""
    np.testing.assert_allclose(then.get_ydata(), first.get_ydata(), atol=1e-12)
    drawn = ax.get_lines()
    assert drawn.index(first) < drawn.index(then) and first.get_zorder() <= then.get_zorder()
    assert first.get_linewidth() >= then.get_linewidth() + 0.4
    if markers:
        assert first.get_marker() != then.get_marker() and first.get_markersize() > then.get_markersize()


def legend_entries(fig) -> dict:
    """The entries of the figure's legend: text → the handle drawn beside it."""
    (legend,) = fig.legends
    return {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles)}


def assert_interval_swatch(fig, words: str):
    """The legend's interval entry is a hatched outline (no fill) whose text says whose colour the bands take; no
    other entry is a filled grey swatch that could pass for a band of a line."""
    from matplotlib.patches import Rectangle

    swatches = {text: h for text, h in legend_entries(fig).items() if isinstance(h, Rectangle)}
    (text,) = [t for t in swatches if "95 % bootstrap interval" in t]
    assert words in text.replace("\n", " ")
    assert swatches[text].get_hatch() and swatches[text].get_facecolor()[3] == 0
    assert all(h.get_facecolor()[3] == 0 for h in swatches.values())


def test_trust_grid_draws_before_calibration_wider_under_after_where_they_agree():
    """Temperature scaling's rows equal to the raw model's: in every panel the two lines hold the same values, the
    vermillion one drawn first and wider, so that it shows around the blue one; the legend's samples are as wide."""
    trust = equal_to(trust_table(), "calibrator", "temperature", "none", COMPONENTS)
    fig = figures.draw("trust_grid", {"trust": trust}, "m", [])
    for ax in fig.axes:
        assert_drawn_under(ax, line(ax, STATE_COLOURS[BEFORE]), line(ax, STATE_COLOURS[AFTER]), markers=False)
    entries = legend_entries(fig)
    for state in (BEFORE, AFTER):
        assert entries[state].get_linewidth() == line(fig.axes[0], STATE_COLOURS[state]).get_linewidth()


def test_calibration_metrics_keep_the_raw_accuracy_visible_under_temperature_scalings():
    """Temperature scaling keeps the argmax: the accuracy before and after is the same; the vermillion line is drawn
    first, wider and with larger dots."""
    scores = table(dict(calibrator=CALIBRATORS, split=("test", "val")), list(SCORE_PANELS.values()))
    scores = equal_to(scores, "calibrator", "temperature", "none", ["accuracy"])
    calibration = table(dict(calibrator=("temperature",)), ["temperature"], seed=2, low=0.5, high=3.0)
    fig = figures.draw("calibration_metrics", {"scores": scores, "calibration": calibration}, "m", [])
    ax = axis_titled(fig, "Accuracy")
    before, after = line(ax, STATE_COLOURS[BEFORE]), line(ax, STATE_COLOURS[AFTER])
    assert_drawn_under(ax, before, after, markers=False)
    assert before.get_markersize() > after.get_markersize()
    mean, _ = mean_sd(per_seed(scores, "accuracy", calibrator="none", split="test"))
    np.testing.assert_allclose(before.get_ydata(), mean, atol=1e-12)


def test_calibrator_metrics_keep_the_raw_model_visible_under_an_equal_calibrator():
    """Temperature scaling's NLL and Brier score (with their bounds) equal to the raw model's: in those panels the
    raw model's line is drawn first and widest with the largest marker, each calibrator with a marker of its own;
    the legend names the calibrators by the one vocabulary with the lines' own samples, and the bands' entry is a
    hatched outline, not a grey band like isotonic regression's."""
    from trustcal.reporting.figures.calibrators import CALIBRATOR_NAMES

    scores = with_bounds(
        table(dict(calibrator=CALIBRATORS, split=("test", "val")), ["ece", "smece", "nll", "brier"], seed=15),
        ["ece", "nll", "brier"],
    )
    scores = equal_to(
        scores, "calibrator", "temperature", "none", [f"{c}{e}" for c in ("nll", "brier") for e in ("", "_lo", "_hi")]
    )
    fig = figures.draw("calibrator_metrics", {"scores": scores, "calibration": FITTED}, "m", [])
    for title, column in (("NLL", "nll"), ("Brier score", "brier")):
        ax = axis_titled(fig, title)
        raw, temperature, vector = (line(ax, CALIBRATOR_COLOURS[c]) for c in CALIBRATORS)
        np.testing.assert_allclose(
            raw.get_ydata(), mean_sd(per_seed(scores, column, calibrator="none", split="test"))[0]
        )
        assert_drawn_under(ax, raw, temperature)
        drawn = ax.get_lines()
        assert drawn.index(temperature) < drawn.index(vector) and temperature.get_linewidth() > vector.get_linewidth()
        assert len({raw.get_marker(), temperature.get_marker(), vector.get_marker()}) == 3
    entries = legend_entries(fig)
    names = [CALIBRATOR_NAMES[c] for c in CALIBRATORS]
    assert list(entries)[:3] == names == ["raw model", "temperature scaling", "vector scaling"]
    ax = axis_titled(fig, "NLL")
    for name, c in zip(names, CALIBRATORS):  # the legend's sample of a calibrator is its line
        drawn, sample = line(ax, CALIBRATOR_COLOURS[c]), entries[name]
        assert same_colour(sample.get_color(), drawn.get_color()) and sample.get_marker() == drawn.get_marker()
        assert sample.get_linewidth() == drawn.get_linewidth()
    assert_interval_swatch(fig, "(band of each calibrator's colour)")


def test_reliability_draws_the_best_validation_epoch_once_when_it_is_the_last():
    """The best-validation epoch is the last for both seeds: two columns (the first epoch; the best = last), not
    three with the last drawn twice; the merged column's bars the means at epoch 4."""
    curves = reliability_curves(seed=7)
    scores = table(dict(calibrator=CALIBRATORS, split=("test", "val")), ["ece"], seed=8)
    tables = {"reliability": curves, "history": HISTORY_BEST_LAST, "scores": scores}
    fig = figures.draw("reliability", tables, "m", [])
    assert len(fig.axes) == 2 * 2 * 2  # two columns × (a diagram and its counts) × two states
    assert fig.axes[0].get_title().startswith("First epoch (epoch 1)")
    assert fig.axes[1].get_title().startswith("Best validation loss = last epoch (epoch 4)")
    for c, epochs in enumerate((FIRST, LAST)):
        for r, (state, calibrator) in enumerate(STATES.items()):
            diagram = fig.axes[2 * r * 2 + c]
            where = dict(calibrator=calibrator, split="test", curve="top_label")
            freq = [per_seed(curves, "observed_frequency", epochs, bin=b, **where).mean() for b in range(4)]
            np.testing.assert_allclose([b.get_height() for b in diagram.patches], freq, atol=1e-12)
            assert all(same_colour(b.get_facecolor(), STATE_COLOURS[state]) for b in diagram.patches)


def test_trust_density_draws_the_best_validation_epoch_once_when_it_is_the_last():
    """Two rows (the first epoch; the best = last epoch), the merged row's lines the means at epoch 4."""
    density = density_table()
    fig = figures.draw("trust_density", {"trust_density": density, "history": HISTORY_BEST_LAST}, "m", [])
    panels = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
    assert len(panels) == 2 * 2
    grid = [0.0, 0.25, 0.5, 0.75, 1.0]
    viridis = matplotlib.colormaps["viridis"]
    for r, epochs in enumerate((FIRST, LAST)):
        for c, (state, calibrator) in enumerate(STATES.items()):
            ax = panels[2 * r + c]
            title = ax.get_title()
            assert title.startswith(
                "First epoch (epoch 1)" if r == 0 else "Best validation loss = last epoch (epoch 4)"
            )
            assert title.endswith(state)
            for z in range(3):
                where = dict(calibrator=calibrator, split="test", label=z)
                values = np.hstack([per_seed(density, "density", epochs, trust=t, **where) for t in grid])
                assert_line(ax, viridis(z / 2), grid, values.mean(axis=0))


def test_chosen_columns_merge_only_epochs_that_are_the_same_for_every_seed():
    """First = best (validation loss least at epoch 1 for both seeds): one column titled by both, its ``which`` the
    later; best = last for one seed only: three columns."""
    first_best = HISTORY.assign(val_loss=[0.4, 0.6, 0.7, 0.8, 0.3, 0.5, 0.6, 0.7])
    assert figures.chosen_columns(figures.chosen_epochs(first_best)) == [
        ("best", "First epoch = best validation loss (epoch 1)"),
        ("last", "Last epoch (epoch 4)"),
    ]
    one_seed = HISTORY.assign(val_loss=[1.0, 0.8, 0.6, 0.5, 0.9, 0.5, 0.7, 0.8])  # seed 0: best 4; seed 1: best 2
    assert [w for w, _ in figures.chosen_columns(figures.chosen_epochs(one_seed))] == ["first", "best", "last"]


def test_trust_density_of_ten_labels_dashes_every_other_shade_and_writes_each_label_on_its_line():
    """Ten labels: two neighbouring viridis shades never share a line style (odd labels dashed, as crossed in the
    colour bar), and each line carries a chip of its label's colour with its number, on one of the line's points."""
    grid = np.linspace(0, 1, 21)
    density = table(dict(calibrator=CALIBRATORS, split=("test",), label=range(10), trust=grid), ["density"], seed=18)
    density["density"] *= 5
    fig = figures.draw("trust_density", {"trust_density": density, "history": HISTORY}, "m", [])
    viridis = [matplotlib.colormaps["viridis"](z / 9) for z in range(10)]
    panels = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
    assert len(panels) == 6
    for ax in panels:
        drawn = [line(ax, viridis[z]) for z in range(10)]
        assert [ln.get_linestyle() for ln in drawn] == ["-", "--"] * 5
        chips = {t.get_text(): t for t in ax.texts}
        assert set(chips) == {str(z) for z in range(10)}
        to_axes = ax.transData + ax.transAxes.inverted()
        for z, ln in enumerate(drawn):
            points = to_axes.transform(np.c_[ln.get_xdata(), ln.get_ydata()])
            assert np.hypot(*(points - chips[str(z)].get_position()).T).min() < 1e-9  # on its line
            assert same_colour(chips[str(z)].get_bbox_patch().get_facecolor(), viridis[z])
    (bar,) = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]
    crossed = [ln for ln in bar.get_lines() if ln.get_linestyle() == "--"]
    assert sorted(ln.get_ydata()[0] for ln in crossed) == [1, 3, 5, 7, 9]


def selective_table() -> pd.DataFrame:
    """selective.csv's layout; the projected probability's rows equal to the belief's (u ≈ 0)."""
    risks = [f"risk_{c:02d}" for c in range(5, 101, 5)]
    scores = ("max_probability", "belief", "projected_probability", "evidence")
    df = table(dict(calibrator=CALIBRATORS, score=scores), ["aurc", "diff_aurc", *risks], seed=17)
    df = with_bounds(df, ["aurc", "diff_aurc"])
    columns = ["aurc", "diff_aurc", *risks] + [f"{c}_{e}" for c in ("aurc", "diff_aurc") for e in ("lo", "hi")]
    return equal_to(df, "score", "projected_probability", "belief", columns)


def test_selective_prediction_keeps_the_belief_visible_under_the_equal_projected_probability():
    """Where u ≈ 0, b + a·u = b: in the risk–coverage panels (the mean risk at each seed's chosen epoch) and the AURC
    panels, the belief's line is drawn before the projected probability's, wider, with a larger marker of another
    shape; the bands' entry is a hatched outline."""
    selective = selective_table()
    fig = figures.draw("selective_prediction", {"selective": selective, "history": HISTORY}, "m", [])
    best, last, area, diff = fig.axes[:4]
    belief, projected = "#0072B2", "#009E73"
    risks = [f"risk_{c:02d}" for c in range(5, 101, 5)]
    for ax, which in ((best, "best"), (last, "last")):
        want = np.hstack([per_seed(selective, r, CHOSEN[which], calibrator="none", score="belief") for r in risks])
        assert_line(ax, belief, np.arange(5, 101, 5) / 100, want.mean(axis=0))
        assert_drawn_under(ax, line(ax, belief), line(ax, projected))
    for ax, column in ((area, "aurc"), (diff, "diff_aurc")):
        mean = per_seed(selective, column, calibrator="none", score="belief").mean(axis=0)
        assert_line(ax, belief, EPOCHS, mean)
        assert_drawn_under(ax, line(ax, belief), line(ax, projected))
    assert_interval_swatch(fig, "(band of each score's colour;")


def test_calibration_refinement_keeps_the_loss_visible_under_an_equal_refinement():
    """A calibration term of 0 (the refinement equal to the loss): the loss's black line is drawn first and wider."""
    columns = [f"{loss}{part}" for loss in ("nll", "brier") for part in ("", "_refinement", "_calibration")]
    scores = table(dict(calibrator=CALIBRATORS, split=("test", "val")), columns, seed=19)
    for loss in ("nll", "brier"):
        scores[f"{loss}_refinement"], scores[f"{loss}_calibration"] = scores[loss], 0.0
    fig = figures.draw("calibration_refinement", {"scores": scores}, "m", [])
    for row, loss in enumerate(("nll", "brier")):
        ax = fig.axes[2 * row]
        total, refinement = line(ax, "#000000"), line(ax, "#0072B2")
        np.testing.assert_allclose(
            total.get_ydata(), per_seed(scores, loss, calibrator="none", split="test").mean(axis=0)
        )
        assert_drawn_under(ax, total, refinement)


def reliability_bins(counts, freqs, confidences, calibrator: str) -> pd.DataFrame:
    """A calibrator's ten top-label bins of one epoch: these counts, accuracies and mean confidences."""
    edges = np.linspace(0, 1, 11)
    counts = np.asarray(counts)
    return pd.DataFrame(
        dict(
            seed=0,
            epoch=1,
            calibrator=calibrator,
            split="test",
            curve="top_label",
            bin=np.arange(10),
            bin_lower=edges[:-1],
            bin_upper=edges[1:],
            mean_predicted=np.where(counts > 0, confidences, np.nan),
            observed_frequency=np.where(counts > 0, freqs, np.nan),
            count=counts,
        )
    )


def test_calibrator_reliability_marks_every_bin_whole_however_few_its_samples():
    """A random forest's votes (``trustcal assess``): the raw model's bins at confidence 1.0 and accuracy 1.0;
    Dirichlet scaling's bin of one sample at accuracy 0 beside fuller ones (its line dropped to 0 with no marker
    seen); isotonic regression's two bins only. Every non-empty bin has a marker at (confidence, accuracy) with an
    opaque outline of the calibrator's colour, unclipped, inside axes that reach beyond 0 and 1; each run of
    adjacent bins a line through its markers."""
    from trustcal.reporting.figures.calibrators import MARKER_AREA

    centres = np.linspace(0.05, 0.95, 10)
    cases = {
        "none": ([0, 0, 0, 0, 0, 2, 5, 10, 40, 300], [0, 0, 0, 0, 0, 0.5, 0.6, 0.9, 1.0, 1.0], [*centres[:9], 1.0]),
        "dirichlet": ([0, 0, 1, 10, 12, 19, 32, 36, 0, 248], [0, 0, 0.0, 0.7, 0.4, 0.6, 0.9, 0.95, 0, 1.0], centres),
        "isotonic": ([0] * 8 + [60, 240], [0] * 8 + [0.85, 0.99], centres),
    }
    curves = pd.concat([reliability_bins(*case, calibrator) for calibrator, case in cases.items()])
    history = pd.DataFrame(dict(seed=[0], epoch=[1], train_loss=[0.5], val_loss=[0.6]))
    calibration = pd.DataFrame(dict(epoch=[1, 1], calibrator=["dirichlet", "isotonic"], fit_split="val"))
    fig = figures.draw(
        "calibrator_reliability", {"reliability": curves, "history": history, "calibration": calibration}, "m", []
    )
    diagrams = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert [ax.get_title() for ax in diagrams] == ["raw model", "Dirichlet scaling", "isotonic regression"]
    for ax, (calibrator, (counts, freqs, conf)) in zip(diagrams, cases.items()):
        full = np.asarray(counts) > 0
        (marks,) = ax.collections
        np.testing.assert_allclose(marks.get_offsets(), np.c_[np.asarray(conf)[full], np.asarray(freqs)[full]])
        edges = marks.get_edgecolor()
        assert all(same_colour(e, CALIBRATOR_COLOURS[calibrator]) and e[3] == 1 for e in edges)
        assert marks.get_linewidths()[0] > 0 and marks.get_sizes().min() >= MARKER_AREA[0]
        assert not marks.get_clip_on()
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        assert x0 < 0 and x1 > 1 and y0 < 0 and y1 > 1
        joined = [ln for ln in ax.get_lines() if ln.get_linestyle() != ":"]
        drawn = np.concatenate([np.c_[ln.get_xdata(), ln.get_ydata()] for ln in joined])
        assert {tuple(p) for p in drawn} <= {tuple(p) for p in marks.get_offsets()}  # every vertex a marker
    dirichlet = diagrams[1]
    (dropping,) = [ln for ln in dirichlet.get_lines() if ln.get_linestyle() != ":" and 0.0 in ln.get_ydata()]
    assert dropping.get_xdata()[0] == centres[2]  # the one-sample bin at accuracy 0 starts the line, marked
    assert len([ln for ln in diagrams[2].get_lines() if ln.get_linestyle() != ":"]) == 1  # two bins: one line


def test_every_figure_of_the_registry_is_drawn_by_a_test_that_reads_its_data():
    """A figure added to the registry without a test here fails this."""
    drawn = set(re.findall(r'figures\.draw\(\s*"(\w+)"', Path(__file__).read_text()))
    assert set(figures.FIGURES) - drawn == set()
