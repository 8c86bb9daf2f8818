"""The figures of trust under dataset shift (trustcal.reporting.figures.shift, registry SHIFT_FIGURES), tested on the
data they plot: each box's quartiles and median, each line's points, each dot's position, read from the artists and
compared with values worked out here from a small synthetic shift.csv / shift_ood.csv (two corruptions at severities
1–5 and the clean set at 0, three calibrators, two seeds, two epochs of shift.epochs; every value different).
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.workflow import REPO
from matplotlib.collections import PathCollection
from matplotlib.colors import to_rgb

from trustcal.files import write_csv
from trustcal.reporting.figures import registry, shift_registry
from trustcal.reporting.figures.calibrators import CALIBRATOR_COLOURS, CALIBRATOR_NAMES
from trustcal.reporting.shift import CURVE_COLUMNS, OOD_COLUMNS, SIGNALS, shift_columns

SEEDS, CALIBRATORS, CORRUPTIONS = (0, 1), ("none", "temperature", "vector"), ("fog", "gaussian_noise")
LABELS = {"best": {0: 3, 1: 2}, "last": {0: 5, 1: 5}}  # epoch label → seed → epoch
VALUES = ("accuracy", "nll", "brier", "ece", "belief", "disbelief", "uncertainty")


def shift_table(seed: int = 0) -> pd.DataFrame:
    """shift.csv's rows: the clean set at severity 0 and each corruption at 1–5, per seed, epoch and calibrator."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in SEEDS:
        for label, epochs in LABELS.items():
            sets = [("clean", "clean", 0)] + [(c, "corruption", v) for c in CORRUPTIONS for v in range(1, 6)]
            for name, kind, severity in sets:
                for c in CALIBRATORS:
                    values = dict(zip(VALUES, rng.uniform(0.05, 0.95, len(VALUES))))
                    values["nll"] = 0.3 + severity * 0.2 + rng.uniform(0, 0.1)  # within a decade: a linear axis
                    rows.append(
                        dict(run="mnist", seed=s, epoch=epochs[s], epoch_label=label, set=name, kind=kind)
                        | dict(severity=severity, calibrator=c, n=100, **values)
                    )
    df = pd.DataFrame(rows)
    for v in VALUES:
        df[f"{v}_lo"], df[f"{v}_hi"] = df[v] - 0.02, df[v] + 0.03
    return df.reindex(columns=shift_columns(True))  # the paired differences: not drawn, left empty


def ood_table(seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [
        dict(run="mnist", seed=s, epoch=epochs[s], epoch_label=label, set="ood-noise_uniform", calibrator=c)
        | dict(signal=g, auroc=rng.uniform(0.3, 1.0), fpr95=0.5, n_in=100, n_out=100, mean_in=0.8, mean_out=0.4)
        for s in SEEDS
        for label, epochs in LABELS.items()
        for c in CALIBRATORS
        for g in SIGNALS
    ]
    return pd.DataFrame(rows, columns=list(OOD_COLUMNS))


def curves_table(seed: int = 2) -> pd.DataFrame:
    """shift_ood_curves.csv's rows: every curve of every signal, per seed, epoch label and calibrator."""
    rng = np.random.default_rng(seed)
    rows = [
        dict(run="mnist", seed=s, epoch=epochs[s], epoch_label=label, set="ood-noise_uniform", calibrator=c)
        | dict(signal=g, curve=curve, x=x, y=rng.uniform(0, 1))
        for s in SEEDS
        for label, epochs in LABELS.items()
        for c in CALIBRATORS[:2]
        for g in SIGNALS
        for curve, xs in (
            ("in", np.arange(0.025, 1, 0.05)),
            ("out", np.arange(0.025, 1, 0.05)),
            ("roc", np.linspace(0, 1, 51)),
        )
        for x in xs
    ]
    return pd.DataFrame(rows, columns=list(CURVE_COLUMNS))


SHIFT, OOD, CURVES = shift_table(), ood_table(), curves_table()


def draw(name: str, tmp_path: Path, **tables):
    tables = {"shift": SHIFT, "shift_ood": OOD, "shift_ood_curves": CURVES, **tables}
    return shift_registry.SHIFT_FIGURES[name].draw(tables, "MNIST (MLP)", [tmp_path / f"{name}.png"], {})


def legend_texts(fig) -> list[str]:
    return [t.get_text() for leg in fig.legends for t in leg.get_texts()]


def rows_of(label: str, **where) -> pd.DataFrame:
    mask = SHIFT["epoch_label"] == label
    for key, value in where.items():
        mask &= SHIFT[key] == value
    return SHIFT[mask]


def test_shift_metrics_draw_a_box_per_severity_and_calibrator_over_the_corruptions_and_seeds(tmp_path):
    fig = draw("shift_metrics", tmp_path)
    assert [sf._suptitle.get_text() for sf in fig.subfigs] == [
        "Best validation loss (epochs 2, 3)",
        "Last epoch (epoch 5)",
    ]
    assert fig._suptitle.get_text().startswith("MNIST (MLP): ")
    for sf, label in zip(fig.subfigs, LABELS):
        for ax, column in zip(sf.axes, ("accuracy", "nll", "brier", "ece")):
            boxes = {p.get_gid(): p for p in ax.patches if p.get_gid()}
            medians = {ln.get_gid(): ln for ln in ax.get_lines() if ln.get_gid()}
            assert len(boxes) == len(medians) == 6 * len(CALIBRATORS)
            for c in CALIBRATORS:
                for severity in range(6):
                    values = rows_of(label, calibrator=c, severity=severity)[column].to_numpy()
                    assert len(values) == (len(SEEDS) if severity == 0 else len(SEEDS) * len(CORRUPTIONS))
                    y = boxes[f"{c}@{severity}"].get_path().vertices[:, 1]
                    assert np.allclose([y.min(), y.max()], np.percentile(values, [25, 75]))
                    assert np.allclose(medians[f"{c}@{severity}"].get_ydata(), np.median(values))
                    x = medians[f"{c}@{severity}"].get_xdata().mean()
                    assert severity - 0.4 < x < severity + 0.4  # in its severity's slot, calibrators side by side
                    assert np.allclose(boxes[f"{c}@{severity}"].get_facecolor()[:3], to_rgb(CALIBRATOR_COLOURS[c]))
    assert legend_texts(fig)[: len(CALIBRATORS)] == [CALIBRATOR_NAMES[c] for c in CALIBRATORS]


def test_shift_trust_plots_the_mean_opinion_over_corruptions_and_seeds_with_an_sd_band(tmp_path):
    fig = draw("shift_trust", tmp_path)
    for sf, label in zip(fig.subfigs, LABELS):
        for ax, column in zip(sf.axes, ("belief", "disbelief", "uncertainty")):
            lines = {ln.get_gid(): ln for ln in ax.get_lines() if ln.get_gid()}
            assert set(lines) == set(CALIBRATORS)
            for c in CALIBRATORS:
                expected = [rows_of(label, calibrator=c, severity=s)[column].mean() for s in range(6)]
                assert np.allclose(lines[c].get_xdata(), range(6))
                assert np.allclose(lines[c].get_ydata(), expected)
            assert ax.get_title() == {"belief": "Belief (trust)"}.get(column, column.capitalize())
    assert legend_texts(fig) == [CALIBRATOR_NAMES[c] for c in CALIBRATORS]


def test_shift_trust_accuracy_places_each_corruption_and_severity_and_draws_y_equals_x(tmp_path):
    fig = draw("shift_trust_accuracy", tmp_path)
    assert len(fig.axes) == len(LABELS)
    for ax, label in zip(fig.axes, LABELS):
        (identity,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
        assert np.allclose(identity.get_xdata(), identity.get_ydata())
        lo, hi = ax.get_xlim()
        assert np.allclose(ax.get_ylim(), (lo, hi)) and np.allclose(identity.get_xdata(), [lo, hi])
        dots = {c.get_gid(): c for c in ax.collections if isinstance(c, PathCollection) and c.get_gid()}
        assert set(dots) == set(CALIBRATORS)
        for c in CALIBRATORS:
            expected = rows_of(label, calibrator=c).groupby(["set", "severity"])[["accuracy", "belief"]].mean()
            assert len(expected) == 1 + 5 * len(CORRUPTIONS)
            got = sorted(map(tuple, np.round(dots[c].get_offsets(), 10)))
            assert got == sorted(map(tuple, np.round(expected.to_numpy(), 10)))
    assert legend_texts(fig)[: len(CALIBRATORS)] == [CALIBRATOR_NAMES[c] for c in CALIBRATORS]
    assert "y = x" in legend_texts(fig)


def test_shift_ood_plots_each_signals_mean_auroc_per_calibrator_with_the_sd_over_seeds(tmp_path):
    fig = draw("shift_ood", tmp_path)
    assert len(fig.axes) == len(LABELS)  # one out-of-distribution set, two epochs
    for ax, label in zip(fig.axes, LABELS):
        assert ax.get_title().startswith("ood-noise_uniform, ")
        points = {ln.get_gid(): ln for ln in ax.get_lines() if ln.get_gid()}
        assert set(points) == set(CALIBRATORS)
        for c in CALIBRATORS:
            rows = OOD[(OOD["epoch_label"] == label) & (OOD["calibrator"] == c)]
            expected = rows.groupby("signal", sort=False)["auroc"].mean().reindex(list(SIGNALS))
            assert np.allclose(points[c].get_xdata(), expected.to_numpy())
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()][0] == "max probability"
    assert legend_texts(fig) == [CALIBRATOR_NAMES[c] for c in CALIBRATORS]
    assert "bars ± 1 sd" in fig.legends[0].get_title().get_text()


def test_shift_ood_uses_the_tables_interval_where_it_has_one(tmp_path):
    ood = OOD.assign(auroc_lo=OOD["auroc"] - 0.05, auroc_hi=OOD["auroc"] + 0.1)
    fig = draw("shift_ood", tmp_path, shift_ood=ood)
    assert "each seed's 95 % bootstrap interval" in fig.legends[0].get_title().get_text()


def test_a_run_without_ood_rows_gets_no_ood_figure_and_no_error(tmp_path):
    write_csv(SHIFT, tmp_path / "shift.csv")
    write_csv(OOD.iloc[:0], tmp_path / "shift_ood.csv")
    outputs = {n: [str(tmp_path / f"{n}.png")] for n in shift_registry.SHIFT_FIGURES}
    inputs = {"shift": [str(tmp_path / "shift.csv")], "shift_ood": [str(tmp_path / "shift_ood.csv")]}
    drawn = shift_registry.render_shift_figures(inputs, outputs, title="MNIST (MLP)")
    assert drawn == ["shift_metrics", "shift_trust", "shift_trust_accuracy"]
    assert not (tmp_path / "shift_ood.png").exists()
    assert all((tmp_path / f"{n}.png").stat().st_size > 10_000 for n in drawn)
    assert shift_registry.SHIFT_FIGURES["shift_ood"].draw({"shift_ood": OOD.iloc[:0]}, "", [], {}) is None
    # no shift_ood.csv at all (no out-of-distribution set configured): the same
    del inputs["shift_ood"]
    assert "shift_ood" not in shift_registry.render_shift_figures(inputs, {"shift_ood": outputs["shift_ood"]})


@pytest.mark.parametrize("name", list(shift_registry.SHIFT_FIGURES))
def test_every_shift_figure_is_registered_with_a_caption(name):
    spec = shift_registry.SHIFT_FIGURES[name]
    assert spec.name == name and spec.job == "shift_figures" and spec.section == registry.SHIFT_SECTION
    assert set(spec.tables) <= set(shift_registry.SHIFT_TABLES) and spec.summary and "|" not in spec.summary
    assert (REPO / "workflow" / "report" / spec.caption).is_file()
    assert name not in registry.FIGURES


def test_shift_ood_curves_draws_the_raw_models_roc_and_histograms_averaged_over_seeds(tmp_path):
    """A ROC line per signal, and per signal its two histograms (clean filled, the set outlined): each the mean over
    seeds of the raw model's rows at the first epoch label; temperature scaling's rows are not drawn."""
    fig = draw("shift_ood_curves", tmp_path)
    roc_ax, *hist_axes = fig.axes
    raw = CURVES[(CURVES["calibrator"] == "none") & (CURVES["epoch_label"] == "best")]
    lines = {ln.get_gid(): ln for ln in roc_ax.get_lines() if ln.get_gid()}
    assert set(lines) == {f"roc:{g}" for g in SIGNALS}
    for g in SIGNALS:
        want = raw[(raw["signal"] == g) & (raw["curve"] == "roc")].groupby("x")["y"].mean()
        assert np.allclose(lines[f"roc:{g}"].get_xdata(), want.index) and np.allclose(
            lines[f"roc:{g}"].get_ydata(), want
        )
    assert len(hist_axes) == len(SIGNALS)
    for ax, g in zip(hist_axes, SIGNALS):
        stairs = {p.get_gid(): p for p in ax.patches if p.get_gid()}
        for side in ("in", "out"):
            want = raw[(raw["signal"] == g) & (raw["curve"] == side)].groupby("x", sort=False)["y"].mean()
            assert np.allclose(stairs[f"hist:{g}:{side}"].get_data().values, want.to_numpy())
        assert stairs[f"hist:{g}:in"].get_fill() and not stairs[f"hist:{g}:out"].get_fill()
    assert "max probability" in legend_texts(fig) and "clean test images" in legend_texts(fig)
    assert draw("shift_ood_curves", tmp_path, shift_ood_curves=CURVES.iloc[:0]) is None
