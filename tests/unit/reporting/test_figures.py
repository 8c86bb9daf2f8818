"""Every figure, drawn from small synthetic tables in the workflow's layout (one seed and three seeds)."""

import re
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.workflow import REPO
from PIL import Image

from trustcal.errors import TrustcalError
from trustcal.evaluation import MetricParams, PredictionSet, SweepParams, score_tables, trust_tables
from trustcal.files import write_csv
from trustcal.measures.bootstrap import BootstrapParams
from trustcal.measures.trust import TrustParams
from trustcal.registry import CIFAR10_CLASSES
from trustcal.reporting import figures
from trustcal.reporting.figures import registry, shift_registry
from trustcal.reporting.figures.style import MANY_LABELS

EPOCHS = 5
BOOTSTRAP = BootstrapParams(resamples=50)
N, K = 150, 10


def predictions(seed: int, epochs: int = EPOCHS) -> list[PredictionSet]:
    """Logits that grow sharper with the epochs (an increasingly overconfident model)."""
    rng = np.random.default_rng(seed)
    out = []
    for split, n in (("test", N), ("val", N // 2)):
        labels = rng.permutation(np.arange(n) % K)
        noise = rng.normal(size=(n, K))
        for epoch in range(1, epochs + 1):
            logits = (1.0 + epoch) * (np.eye(K)[labels] + 0.8 * noise)
            # the raw model, the paper's temperature scaling and a third calibrator (the comparison figures)
            for calibrator, t in (("none", 1.0), ("temperature", 1.0 + 0.4 * epoch), ("vector", 1.2 + 0.3 * epoch)):
                z = logits / t
                p = np.exp(z - z.max(axis=1, keepdims=True))
                out.append(PredictionSet(epoch, calibrator, split, p / p.sum(axis=1, keepdims=True), labels))
    return out


def history(seed: int, epochs: int = EPOCHS) -> pd.DataFrame:
    e = np.arange(1, epochs + 1)
    val = 0.5 + 0.05 * (e - 3) ** 2 + 0.01 * seed  # minimum at epoch 3
    return pd.DataFrame(
        dict(epoch=e, train_loss=1.0 / e, train_accuracy=0.9, val_loss=val, val_accuracy=0.8, seconds=1.0)
    )


def write_run(root, dataset: str, seed: int) -> None:
    run = root / "results" / dataset / f"seed{seed}"
    preds = predictions(seed)
    mp = MetricParams(density_points=21)
    tables = {
        **trust_tables(preds, TrustParams(), SweepParams(clusters=(2, 5, 10, 20), epochs=(1, 3)), BOOTSTRAP),
        **score_tables(preds, mp, BOOTSTRAP),
        "history": history(seed),
        "calibration": pd.DataFrame(
            dict(
                epoch=range(1, EPOCHS + 1),
                calibrator="temperature",
                temperature=[1.0 + 0.4 * e for e in range(1, EPOCHS + 1)],
                fit_split="val",
            )
        ),
    }
    for name, df in tables.items():
        write_csv(df, run / f"{name}.csv")


def inputs(root, dataset, seeds):
    return {
        name: [str(root / "results" / dataset / f"seed{s}" / f"{name}.csv") for s in seeds] for name in figures.TABLES
    }


# Three seeds draw every figure again (about 30 s): in the full suite only (the slow marker).
@pytest.fixture(scope="module", params=[(0,), pytest.param((0, 1, 2), marks=pytest.mark.slow)], ids=["1seed", "3seeds"])
def drawn(request, tmp_path_factory):
    """Every figure of FIGURES for mnist, from one seed or three."""
    root = tmp_path_factory.mktemp("figs")
    seeds = request.param
    for s in seeds:
        write_run(root, "mnist", s)
    outputs = {name: [str(root / "figures" / f"{name}.{ext}") for ext in ("png", "pdf")] for name in figures.FIGURES}
    figures.render_figures("mnist", inputs(root, "mnist", seeds), outputs, clusters=10)
    return outputs


@pytest.mark.parametrize("name", sorted(figures.FIGURE_SIZES))
def test_every_figure_is_a_png_of_its_size_and_a_pdf(drawn, name):
    png, pdf = drawn[name]
    with Image.open(png) as im:
        w, h = figures.FIGURE_SIZES[name]
        assert im.size == (round(w * figures.DPI), round(h * figures.DPI))
        pixels = np.asarray(im.convert("L"), dtype=float)
    assert pixels.std() > 5, "blank image"
    assert (pixels < 128).mean() > 0.005, "almost nothing drawn"
    with open(pdf, "rb") as fh:
        assert fh.read(5) == b"%PDF-"
    assert len(open(pdf, "rb").read()) > 5_000


def test_every_figure_has_a_size_and_a_drawer():
    assert set(figures.FIGURES) == set(figures.FIGURE_SIZES)
    for name, spec in figures.FIGURES.items():
        assert spec.name == name and callable(spec.draw)
        assert spec.tables and set(spec.tables) <= set(figures.TABLES)


def test_every_figure_is_declared_once_with_a_rule_a_report_section_and_a_caption():
    report = REPO / "workflow" / "report"
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    for spec in figures.FIGURES.values():
        assert spec.job in registry.JOBS and spec.section in registry.SECTIONS, spec.name
        assert (report / spec.caption).is_file(), spec.caption
        assert set(spec.params) <= set(config), spec.params
        assert spec.summary and "|" not in spec.summary
    # every caption file belongs to a figure (or to the verdict / the report's front page); the shift figures'
    # (shift_registry.SHIFT_FIGURES) are tested in test_shift_figures.py
    captions = {spec.caption for spec in (*figures.FIGURES.values(), *shift_registry.SHIFT_FIGURES.values())}
    assert {p.name for p in report.glob("*.rst")} == captions | {"verdict.rst", "summary.rst", "workflow.rst"}
    # each report section is introduced on the report's front page
    front = (report / "workflow.rst").read_text()
    for section in registry.SECTIONS:
        assert f"**{section}**" in front, section
    assert figures.FIGURE_NAMES == tuple(figures.FIGURES)


def test_common_smk_takes_the_figure_list_from_the_registry():
    text = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert "from trustcal.reporting.figures.registry import FIGURES" in text
    assert "FIGURE_NAMES = list(FIGURES)" in text
    for name in figures.FIGURES:  # no name retyped in the rules
        for rules in ("common.smk", "figures.smk"):
            assert f'"{name}"' not in (REPO / "workflow" / "rules" / rules).read_text(), (rules, name)


def test_the_rules_draw_what_the_registry_declares(tmp_path):
    """A dry run: each figure rule reads the tables of its figures and writes their PNG and PDF."""
    pytest.importorskip("snakemake")
    from helpers.workflow import make_workdir, snakemake

    workdir = make_workdir(tmp_path / "work", n_train=40, n_test=20, datasets=["mnist"])
    proc = snakemake(workdir, "--dry-run", "--forceall")
    out = proc.stdout + proc.stderr
    jobs = {
        m.group(1): (set(m.group(2).split(", ")), set(m.group(3).split(", ")))
        for m in re.finditer(r"^rule (\w*figures):\n    input: (.*)\n    output: (.*)$", out, flags=re.M)
    }
    assert set(jobs) == set(registry.JOBS)
    for job, (ins, outs) in jobs.items():
        specs = [s for s in figures.FIGURES.values() if s.job == job]
        assert {Path(p).name for p in ins} == {f"{t}.csv" for s in specs for t in s.tables}, job
        assert outs == {f"results/figures/mnist/{s.name}.{ext}" for s in specs for ext in ("png", "pdf")}, job


def test_the_documented_table_of_figures_is_the_registrys():
    page = (REPO / "docs" / "usage.md").read_text()  # "Results"
    marker = "<!-- The table of figures is the registry's"
    assert page.count(marker) == 1
    table = page.split(marker, 1)[1].split("\n", 1)[1].split("\n\n", 1)[0] + "\n"
    assert table == registry.readme_table(), (
        "docs/usage.md's table of figures differs from the registry; replace it by the output of\n"
        "  python -c 'from trustcal.reporting.figures import readme_table; print(readme_table(), end=\"\")'"
    )


def test_calibration_figure_says_where_the_temperature_was_fitted(tmp_path):
    preds = predictions(0)
    scores = score_tables(preds, MetricParams(density_points=21))["scores"]
    calibration = pd.DataFrame(dict(epoch=range(1, EPOCHS + 1), temperature=2.0))

    def legend(**columns):
        fig = figures.draw(
            "calibration_metrics",
            {"scores": scores, "calibration": calibration.assign(**columns)},
            "",
            [tmp_path / "c.png"],
        )
        return [t.get_text() for leg in fig.legends for t in leg.get_texts()]

    assert "Temperature (fitted on validation)" in legend(fit_split="val")
    assert "Temperature (fitted on test)" in legend(fit_split="test")
    assert "Temperature" in legend()  # no fit_split column: no claim
    assert not any("validation" in t for t in legend(fit_split="test"))


@pytest.mark.parametrize("fit_on", ["validation", "test"])
def test_calibration_caption_says_where_the_temperature_was_fitted(fit_on):
    """The report caption is a Jinja template that Snakemake renders with the run's config."""
    jinja2 = pytest.importorskip("jinja2")
    spec = figures.FIGURES["calibration_metrics"]
    source = (REPO / "workflow" / "report" / spec.caption).read_text()
    snakemake = types.SimpleNamespace(config={"calibration": {"fit_on": fit_on}})
    text = " ".join(jinja2.Environment().from_string(source).render(snakemake=snakemake).split())
    assert f"fitted on the {fit_on} set" in text
    assert ("seen the test labels" in text) == (fit_on == "test")


def test_cifar10_figures_name_the_labels_with_the_registrys_class_names(tmp_path, monkeypatch):
    """render_figures for the dataset cifar10 names the labels with the registry's class names (the figures it
    draws are kept to read their text)."""
    write_run(tmp_path, "cifar10", 0)
    ins = inputs(tmp_path, "cifar10", (0,))
    out = tmp_path / "fig"
    drawn, draw = {}, registry.draw
    monkeypatch.setattr(registry, "draw", lambda name, *a, **k: drawn.setdefault(name, draw(name, *a, **k)))
    figures.render_figures(
        "cifar10",
        ins,
        {
            "trust_grid": [out / "grid.png"],
            "loss_curves": [out / "loss.png", out / "loss.pdf"],
            "trust_spectrum": [str(out / "spectrum.png")],
        },
    )
    for f in ("grid.png", "loss.png", "loss.pdf", "spectrum.png"):
        assert (out / f).stat().st_size > 10_000
    # the text drawn: the registry's CIFAR-10 class names beside the labels, the dataset in the title
    assert [ax.get_ylabel() for ax in drawn["trust_grid"].axes[::3]] == [
        f"{z} {name}" for z, name in enumerate(CIFAR10_CLASSES)
    ]
    for ax in drawn["trust_spectrum"].axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == list(CIFAR10_CLASSES)
    assert drawn["loss_curves"].axes[0].get_title().startswith("CIFAR-10")


def test_draw_from_in_memory_tables_without_a_seed_column(tmp_path):
    preds = predictions(0)
    tables = {
        **trust_tables(preds, TrustParams()),
        **score_tables(preds, MetricParams(density_points=21)),
        "history": history(0),
    }
    for name in ("trust_grid", "reliability", "opinion_triangle"):
        figures.draw(name, tables, "Someone's model", [tmp_path / f"{name}.png"])
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    # the tables read as one seed: the trust grid's lines are the table's values, without a band over seeds
    fig = figures.draw("trust_grid", tables, "", [])
    trust = tables["trust"]
    for z, component in ((0, "belief"), (4, "uncertainty")):
        ax = fig.axes[3 * z + ("belief", "disbelief", "uncertainty").index(component)]
        assert not ax.collections
        for line, calibrator in zip(_lines(ax), ("none", "temperature")):
            want = trust[(trust["label"].astype(str) == str(z)) & (trust["calibrator"] == calibrator)]
            np.testing.assert_allclose(line.get_ydata(), want.sort_values("epoch")[component])


def test_unknown_figure_or_missing_table_is_a_readable_error(tmp_path):
    with pytest.raises(TrustcalError, match="unknown figure"):
        figures.render_figures("mnist", {}, {"nope": [str(tmp_path / "x.png")]})
    with pytest.raises(TrustcalError, match="needs the trust table"):
        figures.render_figures("mnist", {}, {"trust_grid": [str(tmp_path / "x.png")]})


def test_chosen_epochs_are_first_min_val_loss_and_last_per_seed():
    h = pd.concat([history(0).assign(seed=0), history(1, epochs=7).assign(seed=1)])
    h.loc[(h["seed"] == 1) & (h["epoch"] == 6), "val_loss"] = 0.1  # seed 1's best is epoch 6
    chosen = figures.chosen_epochs(h).set_index(["seed", "which"])["epoch"]
    assert chosen[(0, "first")] == 1 and chosen[(0, "best")] == 3 and chosen[(0, "last")] == 5
    assert chosen[(1, "best")] == 6 and chosen[(1, "last")] == 7
    assert figures.which_titles(figures.chosen_epochs(h))["best"] == "Best validation loss (epochs 3, 6)"


def test_label_colours_are_viridis_in_the_trust_densities_and_their_colour_bar():
    """Label z is drawn in viridis(z/9) (10 labels): its line in every panel of the trust densities and its cell
    of the colour bar that names it, read from the figure's artists."""
    import matplotlib
    from matplotlib.colors import to_rgba

    viridis = [matplotlib.colormaps["viridis"](z / 9) for z in range(10)]
    assert list(figures.label_colours(10).values()) == viridis
    assert len(set(figures.label_colours(10).values())) == 10
    t = {**score_tables(predictions(0), MetricParams(density_points=21)), "history": history(0)}
    fig = figures.draw("trust_density", t, "m", [])
    bars = [ax._colorbar for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]
    assert len(bars) == 1 and [tuple(c) for c in bars[0].cmap.colors] == viridis
    panels = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
    assert len(panels) == 6  # first, best and last epoch × before and after
    for ax in panels:
        assert [to_rgba(line.get_color()) for line in ax.get_lines()] == viridis, ax.get_title()
    assert set(figures.STATE_COLOURS) == {figures.BEFORE, figures.AFTER}
    assert not set(figures.STATE_COLOURS.values()) & set(figures.SET_COLOURS.values())


def test_barycentric_corners():
    x, y = figures.barycentric([1, 0, 0], [0, 1, 0], [0, 0, 1])
    np.testing.assert_allclose(x, [1, 0, 0.5])
    np.testing.assert_allclose(y, [0, 0, np.sqrt(3) / 2])


# --------------------------------------------------------------------------- a single set of predictions


def single_set(seed=0, n=400, k=4, validation=True, **kwargs):
    """trustcal.assess on one set of overconfident logits (with validation logits: temperature scaling)."""
    import trustcal

    rng = np.random.default_rng(seed)

    def logits(n):
        labels = np.arange(n) % k
        z = 3.0 * (rng.normal(size=(n, k)) + 1.5 * np.eye(k)[labels])
        return z, labels

    z, y = logits(n)
    val = logits(n // 2) if validation else None
    return trustcal.assess(z, y, kind="logits", validation=val, bootstrap=None, **kwargs)


def texts(fig) -> list[str]:
    """Every piece of text of a figure: titles, labels, tick labels, legends."""
    import matplotlib.text

    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


@pytest.mark.parametrize("validation", [True, False], ids=["with_validation", "without"])
def test_a_single_set_of_predictions_is_drawn_as_one(tmp_path, validation):
    """One file, no epochs: no epoch anywhere, no seed count, one column per state (no repeated first /
    best / last columns, no empty "after" panels); the summary lists no figure as not drawn (those against
    the epoch do not apply, nor those comparing calibrators when temperature scaling is the only one)."""
    from trustcal.assessment import draw_figures, figure_tables

    result = single_set(validation=validation)
    a = result.assessment
    drawn = draw_figures(a, tmp_path / "figures", "model")
    assert {Path(p).stem for p in drawn} == {
        "cluster_sweep",
        "reliability",
        "trust_density",
        "trust_spectrum",
        "smooth_reliability",
    }
    assert a.figures_left_out == [] and "figures not drawn" not in result.summary()
    states = 2 if validation else 1
    tables = figure_tables(a)
    for name in ("reliability", "trust_spectrum", "trust_density", "cluster_sweep"):
        fig = figures.draw(name, tables, "model", [])
        words = " ".join(texts(fig)).lower()
        assert "epoch" not in words and "seed" not in words, (name, words)
        assert fig._suptitle.get_text().startswith("model: "), name
        assert ("after calibration" in words) == validation, name
    panels = [ax for ax in figures.draw("reliability", tables, "model", []).axes if ax.get_visible()]
    assert len(panels) == 2 * states  # a diagram and its counts per state
    assert len(figures.draw("trust_density", tables, "", []).axes) == states + 1  # and the colour bar


def test_titles_name_the_predictions_never_a_bare_separator(tmp_path):
    from trustcal.assessment import default_title

    result = single_set()
    fig = result.reliability_diagram()  # the API's title="" default
    assert fig._suptitle.get_text() == "Reliability diagrams, top label, test set"
    assert result.figure("cluster_sweep", title="my model")._suptitle.get_text().startswith("my model: network")
    (tmp_path / "runs" / "b").mkdir(parents=True)
    for name in ("model.csv.gz", "model.npz", "preds.v2.csv"):
        (tmp_path / "runs" / name).write_text("")
    assert default_title([tmp_path / "runs" / "model.csv.gz"]) == "model"
    assert default_title([str(tmp_path / "runs" / "model.npz")]) == "model"
    assert default_title([tmp_path / "runs" / "preds.v2.csv"]) == "preds.v2"
    assert default_title([tmp_path / "runs"]) == "runs"  # a series: its directory
    assert default_title([f"{tmp_path}/runs/*.npz"]) == "runs"


def reliability_rows(counts, freqs, calibrator="none") -> pd.DataFrame:
    """A top-label reliability table of one epoch: 10 equal bins with these counts and accuracies."""
    edges = np.linspace(0, 1, 11)
    return pd.DataFrame(
        dict(
            epoch=1,
            calibrator=calibrator,
            split="test",
            curve="top_label",
            bin=np.arange(10),
            bin_lower=edges[:-1],
            bin_upper=edges[1:],
            mean_predicted=np.where(np.asarray(counts) > 0, edges[:-1] + 0.05, np.nan),
            observed_frequency=np.where(np.asarray(counts) > 0, freqs, np.nan),
            count=counts,
        )
    )


COUNTS = [0, 1, 0, 40, 80, 120, 160, 200, 300, 99]  # a one-sample bin beside an empty one
FREQS = [0, 1.0, 0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


def test_reliability_shows_the_counts_and_a_one_sample_bin_is_faint():
    history = pd.DataFrame(dict(epoch=[1], train_loss=np.nan, val_loss=np.nan, seed=0))
    fig = figures.reliability(reliability_rows(COUNTS, FREQS).assign(seed=0), history, "m", [])  # no scores: no ECE
    diagram, counts = fig.axes[0], fig.axes[1]
    bars = diagram.patches
    assert [round(b.get_height(), 12) for b in bars] == FREQS
    alpha = [b.get_facecolor()[3] for b in bars]
    assert alpha[1] < 0.25 and alpha[8] == pytest.approx(0.8) and alpha[0] == alpha[2] == 0  # by √(count / max)
    assert alpha[1] == pytest.approx(0.15 + 0.65 * np.sqrt(1 / 300))
    assert [b.get_height() for b in counts.patches] == COUNTS  # samples per bin, not shares
    assert counts.get_yscale() == "log" and counts.get_ylim()[0] < 1  # a one-sample bin is visible


def test_calibrator_reliability_never_joins_bins_across_an_empty_one():
    rows = pd.concat([reliability_rows(COUNTS, FREQS, c) for c in ("none", "temperature", "vector")])
    history = pd.DataFrame(dict(epoch=[1], train_loss=np.nan, val_loss=np.nan))
    calibration = pd.DataFrame(dict(epoch=[1, 1], calibrator=["temperature", "vector"], fit_split="val"))
    fig = figures.draw(
        "calibrator_reliability", {"reliability": rows, "history": history, "calibration": calibration}, "m", []
    )
    empty = (0.2, 0.3)  # bin 2 holds nothing: bins 1 and 3 are not adjacent
    diagrams = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert len(diagrams) == 3
    for ax in diagrams:
        for line in ax.get_lines()[1:]:  # the first is the diagonal
            x = line.get_xdata()
            assert not (min(x) < empty[0] and max(x) > empty[1]), x
        (markers,) = ax.collections
        sizes = markers.get_sizes()
        assert sizes[0] < sizes[-2] / 10  # the one-sample bin's marker beside the 300-sample bin's
    strips = [ax for ax in fig.axes if ax.get_visible() and not ax.get_title()]
    assert [b.get_height() for b in strips[0].patches] == COUNTS


def _overlapping_labels(ax) -> list[tuple[str, str]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(ax.figure)  # the figure is closed in pyplot: render it as save() does
    canvas.draw()
    renderer = canvas.get_renderer()
    labels = [t for t in ax.get_yticklabels(minor=False) + ax.get_yticklabels(minor=True) if t.get_text()]
    labels = [t for t in labels if t.get_visible() and ax.get_ylim()[0] <= t.get_position()[1] <= ax.get_ylim()[1]]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
    return [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1 :] if ba.overlaps(bb)]


@pytest.mark.parametrize("spread", [6, 40, 2000])
def test_log_axis_tick_labels_never_overlap(spread):
    """The NLL panel turns logarithmic when the NLL spreads over more than a factor 5; its labels are
    measured on the rendered figure."""
    epochs = np.arange(1, 11)
    nll = 0.2 * spread ** (epochs / 10)
    scores = pd.DataFrame(
        dict(
            epoch=np.tile(epochs, 2),
            calibrator=np.repeat(["none", "temperature"], 10),
            split="test",
            ece=0.1,
            nll=np.concatenate([nll, np.full(10, 0.2)]),
            brier=0.3,
        )
    )
    fig = figures.calibrator_metrics(scores.assign(seed=0), None, "m", [])
    (nll_axis,) = [ax for ax in fig.axes if ax.get_title() == "NLL"]
    assert nll_axis.get_yscale() == "log"
    assert len([t for t in nll_axis.get_yticklabels() if t.get_text()]) >= 2
    assert _overlapping_labels(nll_axis) == []


@pytest.mark.skipif(sys.platform != "linux", reason="figures are drawn in forked workers on Linux only")
def test_figures_drawn_in_worker_processes_equal_those_drawn_here(tmp_path, monkeypatch):
    """draw_figures draws in forked workers (``processes``, the CLI's cores): the same pixels as drawn in
    this process (the library's default), and
    a figure that fails in a worker is skipped with a warning naming it, its file not left behind."""
    from dataclasses import replace

    from trustcal import assessment

    a = single_set().assessment

    def broken(*args):
        raise RuntimeError("broken on purpose")

    monkeypatch.setitem(registry.FIGURES, "trust_spectrum", replace(registry.FIGURES["trust_spectrum"], draw=broken))
    drawn = {}
    for workers in (2, 1):
        a.warnings.clear()
        drawn[workers] = assessment.draw_figures(
            a, tmp_path / str(workers) / "figures", "m", formats=("png",), processes=workers
        )
        (skipped,) = a.warnings
        assert skipped.code == "figure_skipped"
        assert skipped.message == "figure trust_spectrum skipped (RuntimeError: broken on purpose)."
        assert not (tmp_path / str(workers) / "figures" / "trust_spectrum.png").exists()
    names = ("reliability", "trust_density", "cluster_sweep", "smooth_reliability")
    assert drawn[2] == drawn[1] == [f"figures/{n}.png" for n in names]
    for path in drawn[1]:
        with Image.open(tmp_path / "1" / path) as one, Image.open(tmp_path / "2" / path) as two:
            assert np.array_equal(np.asarray(one), np.asarray(two)), path


def test_the_temperature_log_axis_labels_never_overlap():
    preds = predictions(0)
    scores = score_tables(preds, MetricParams(density_points=21))["scores"]
    calibration = pd.DataFrame(dict(epoch=range(1, EPOCHS + 1), temperature=[0.05, 0.3, 2.0, 9.0, 60.0]))
    fig = figures.draw("calibration_metrics", {"scores": scores, "calibration": calibration}, "", [])
    (axis,) = [ax for ax in fig.axes if ax.get_title() == "Fitted temperature"]
    assert axis.get_yscale() == "log" and _overlapping_labels(axis) == []


# --------------------------------------------------------------------------- docs/method.md §13


def _lines(ax):
    """The data lines of an axes (not the dotted reference lines)."""
    return [line for line in ax.get_lines() if line.get_linestyle() != ":"]


def test_selective_prediction_draws_the_curves_and_areas_of_the_table():
    """The risk–coverage panels plot the table's risk columns of each score at the best-validation and last
    epoch; the AURC panel one line per score, the difference panel one per opinion score (not the baseline)."""
    preds = predictions(0)
    selective = trust_tables(preds, TrustParams(), None, BOOTSTRAP)["selective"].assign(seed=0)
    fig = figures.draw("selective_prediction", {"selective": selective, "history": history(0)}, "m", [])
    best, last, area, diff = fig.axes[:4]
    raw = selective[selective["calibrator"] == "none"]
    risk = [f"risk_{c:02d}" for c in range(5, 101, 5)]
    for ax, epoch in ((best, 3), (last, EPOCHS)):  # history(): the validation minimum at epoch 3
        lines = _lines(ax)
        assert len(lines) == 4 and str(epoch) in ax.get_title()
        for line, score in zip(lines, ("max_probability", "belief", "projected_probability", "evidence")):
            want = raw[(raw["epoch"] == epoch) & (raw["score"] == score)][risk].to_numpy()[0]
            np.testing.assert_allclose(line.get_ydata(), want)
    assert len(_lines(area)) == 4 and len(_lines(diff)) == 3
    np.testing.assert_allclose(
        _lines(diff)[0].get_ydata(), raw[raw["score"] == "belief"].sort_values("epoch")["diff_aurc"].to_numpy()
    )


def test_calibration_refinement_plots_the_loss_its_refinement_and_their_difference():
    scores = score_tables(predictions(0), MetricParams(density_points=21), BOOTSTRAP)["scores"].assign(seed=0)
    fig = figures.draw("calibration_refinement", {"scores": scores}, "m", [])
    raw = scores[(scores["split"] == "test") & (scores["calibrator"] == "none")].sort_values("epoch")
    for row, loss in enumerate(("nll", "brier")):
        (total, refinement), (calibration,) = _lines(fig.axes[2 * row]), _lines(fig.axes[2 * row + 1])
        np.testing.assert_allclose(total.get_ydata(), raw[loss])
        np.testing.assert_allclose(refinement.get_ydata(), raw[f"{loss}_refinement"])
        np.testing.assert_allclose(calibration.get_ydata(), total.get_ydata() - refinement.get_ydata(), atol=1e-12)
    # the logits of predictions() only sharpen with the epoch (a temperature): the refinement stays put
    assert np.ptp(raw["nll_refinement"]) < 1e-6 < np.ptp(raw["nll"])


def test_smooth_reliability_of_a_single_set_is_one_column_without_a_band():
    from trustcal.assessment import figure_tables

    result = single_set()
    tables = figure_tables(result.assessment)
    fig = figures.draw("smooth_reliability", tables, "model", [])
    diagram, strip = fig.axes
    assert len(_lines(diagram)) == 2 and len(_lines(strip)) == 2  # before and after calibration
    words = " ".join(texts(fig)).lower()
    assert "epoch" not in words and "seed" not in words and "band" not in words
    assert not diagram.collections  # no band without resamples


# --------------------------------------------------------------------------- readable per-label figures, uncertain bins


def test_trust_grid_is_a_row_of_panels_per_label_each_before_and_after(tmp_path):
    """Small multiples: a label can be told from another (issue 29), its states side by side."""
    trust = trust_tables(predictions(0), TrustParams())["trust"]
    fig = figures.draw("trust_grid", {"trust": trust}, "m", [tmp_path / "grid.png"], classes=CIFAR10_CLASSES)
    assert len(fig.axes) == 3 * K
    rows = [ax.get_ylabel() for ax in fig.axes[::3]]
    assert rows == [f"{z} {name}" for z, name in enumerate(CIFAR10_CLASSES)]
    per_label = trust[trust["label"].astype(str) != "network"]
    for z in (0, 7):
        ax = fig.axes[3 * z]  # belief of label z
        before, after = _lines(ax)
        assert before.get_color() == figures.STATE_COLOURS[figures.BEFORE]
        want = per_label[(per_label["label"].astype(int) == z) & (per_label["calibrator"] == "none")]
        np.testing.assert_allclose(before.get_ydata(), want.sort_values("epoch")["belief"])
    with Image.open(tmp_path / "grid.png") as im:
        assert im.size == tuple(round(v * figures.DPI) for v in figures.FIGURE_SIZES["trust_grid"])


def test_trust_grid_of_many_labels_keeps_the_paper_layout():
    import matplotlib
    from matplotlib.colors import to_rgba

    rng = np.random.default_rng(0)
    k = 30
    labels = np.arange(300) % k
    rows = []
    for epoch in (1, 2, 3):
        logits = 3 * np.eye(k)[labels] + rng.normal(size=(300, k))
        p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        rows.append(PredictionSet(epoch, "none", "test", p, labels))
    trust = trust_tables(rows, TrustParams())["trust"]
    fig = figures.draw("trust_grid", {"trust": trust}, "m", [])
    assert len(fig.axes) == 3 + 1  # one row of panels, and the colour bar naming the shades
    per_label = trust[trust["label"].astype(str) != "network"]
    for ax, component in zip(fig.axes, ("belief", "disbelief", "uncertainty")):
        drawn = ax.get_lines()
        assert len(drawn) == k  # a line per label, label z in viridis(z / 29)
        for z in (0, 13, 29):
            assert to_rgba(drawn[z].get_color()) == matplotlib.colormaps["viridis"](z / (k - 1))
            want = per_label[per_label["label"].astype(int) == z].sort_values("epoch")[component]
            np.testing.assert_allclose(drawn[z].get_ydata(), want)


def test_reliability_bars_carry_the_clopper_pearson_interval_of_the_bin():
    """The interval written out from its definition (the 2.5 % quantile of Beta(k, n − k + 1) and the 97.5 % one
    of Beta(k + 1, n − k), 0 and 1 at k = 0 and k = n), scipy's beta distribution its quantiles."""
    from scipy.stats import beta

    def clopper_pearson(k, n):
        k, n = np.asarray(k, float), np.asarray(n, float)
        with np.errstate(invalid="ignore"):
            lo = np.where(k > 0, beta.ppf(0.025, k, n - k + 1), 0.0)
            hi = np.where(k < n, beta.ppf(0.975, k + 1, n - k), 1.0)
        return lo, hi

    tables = score_tables(predictions(0), MetricParams(density_points=21))
    fig = figures.draw("reliability", {**tables, "history": history(0)}, "m", [])
    curves = tables["reliability"]
    top = curves[(curves["curve"] == "top_label") & (curves["split"] == "test") & (curves["calibrator"] == "none")]
    first = top[top["epoch"] == 1].sort_values("bin")
    lo, hi = clopper_pearson((first["observed_frequency"].fillna(0) * first["count"]).round(), first["count"])
    ax = fig.axes[0]  # first epoch, before calibration
    (bars,) = [c for c in ax.containers if hasattr(c, "errorbar") and c.errorbar is not None]
    segments = bars.errorbar.lines[2][0].get_segments()
    shown = [(s[0][1], s[1][1]) for s in segments]
    filled = first["count"].to_numpy() > 0
    np.testing.assert_allclose([s for s, f in zip(shown, filled) if f], np.c_[lo, hi][filled], atol=1e-9)
    assert "Clopper–Pearson" in " ".join(texts(fig))


@pytest.mark.parametrize("epochs, wanted", [(1, "calibrators fitted on the validation split"), (5, "per epoch")])
def test_the_calibrator_figures_say_per_epoch_only_for_a_series(epochs, wanted):
    from trustcal.reporting.figures.calibrators import fitted_note

    calibration = pd.DataFrame(dict(epoch=range(1, epochs + 1), calibrator="vector", fit_split="val"))
    note = fitted_note(calibration)
    assert wanted in note and (epochs > 1) == ("per epoch" in note)


def test_figures_of_a_1000_class_series_summarise_the_labels_and_print_nothing(tmp_path, capfd):
    """Three epochs of 1,000 classes (400 test and 400 validation samples each, temperature scaling fitted), assessed
    with a training history and every figure: each figure's file is written, and nothing reaches stderr (the trust
    grid and the trust densities drew a colour bar of 1,000 ticks, and matplotlib logged "Locator attempting to
    generate 1000 ticks" 96 times; the trust spectrum drew 1,000 bars and tick labels). Beyond MANY_LABELS labels,
    the trust spectrum is each state's per-label values sorted, a line over the labels' ranks with a few ticks; the
    trust grid and the densities, the median over the labels and the band of 10–90 % of them."""
    from helpers.synthetic import many_class_logits

    from trustcal.assessment import assess_to_dir
    from trustcal.assessment.figures import figure_tables
    from trustcal.predictions import ReadOptions
    from trustcal.settings import Settings

    k = 1000
    src = tmp_path / "preds"
    src.mkdir()
    for epoch in (1, 2, 3):
        z, y = many_class_logits(400, k, seed=epoch, overconfidence=1.0 + 0.5 * epoch)
        z_val, y_val = many_class_logits(400, k, seed=10 + epoch, overconfidence=1.0 + 0.5 * epoch)
        np.savez(src / f"epoch{epoch:03d}.npz", logits=z, labels=y, val_logits=z_val, val_labels=y_val)
    pd.DataFrame(dict(epoch=[1, 2, 3], train_loss=[2.0, 1.5, 1.2], val_loss=[2.1, 1.9, 2.0])).to_csv(
        tmp_path / "history.csv", index=False
    )
    capfd.readouterr()
    a = assess_to_dir(
        [str(src)],
        tmp_path / "out",
        ReadOptions(),
        Settings(bootstrap=None),
        history=tmp_path / "history.csv",
        figures=True,
        processes=1,
    )
    err = capfd.readouterr().err
    assert "Locator" not in err and "matplotlib" not in err.lower() and "Warning" not in err, err
    assert {"trust_grid", "trust_spectrum", "trust_density", "reliability"} <= {Path(f).stem for f in a.figures}
    for name in a.figures:
        assert (tmp_path / "out" / name).stat().st_size > 10_000, name
    assert not [w for w in a.warnings if w.code == "figure_skipped"]
    tables = figure_tables(a)
    spectrum = figures.draw("trust_spectrum", tables, "t", [])
    for ax in spectrum.axes:
        assert not ax.patches and len(ax.get_lines()) == 2  # a line per state, no bars
        assert len([t for t in ax.get_xticklabels() if t.get_text()]) <= 6
        ranked = ax.get_lines()[0].get_ydata()
        assert len(ranked) > MANY_LABELS and (np.diff(ranked) <= 0).all()  # sorted, highest first
    for name in ("trust_grid", "trust_density"):
        fig = figures.draw(name, tables, "t", [])
        assert len(fig.axes) == 6  # no colour bar of the labels
        assert all(len(ax.get_lines()) == 1 and len(ax.collections) == 1 for ax in fig.axes)  # median, band


@pytest.mark.parametrize("classes", [None, ("ash", "elm", "oak")])
def test_a_three_class_run_draws_three_label_rows_named_by_its_classes(classes):
    """A dataset of three classes (a user's own): the trust grid and the densities show three labels, not ten,
    named by the run's class names when it has them."""
    k = 3
    rng = np.random.default_rng(0)
    labels = rng.permutation(np.arange(60) % k)
    rows = []
    for epoch in (1, 2, 3):
        z = (1.0 + epoch) * (np.eye(k)[labels] + 0.8 * rng.normal(size=(60, k)))
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        rows += [PredictionSet(epoch, c, s, p, labels) for c in ("none", "temperature") for s in ("test", "val")]
    trust = trust_tables(rows, TrustParams())["trust"]
    fig = figures.draw("trust_grid", {"trust": trust}, "m", [], classes=classes)
    assert len(fig.axes) == 3 * k
    names = [ax.get_ylabel() for ax in fig.axes[::3]]
    assert names == ([f"{z} {c}" for z, c in enumerate(classes)] if classes else [f"label {z}" for z in range(k)])
    t = {**score_tables(rows, MetricParams(density_points=21)), "history": history(0, 3)}
    density = figures.draw("trust_density", t, "m", [], classes=classes)
    panels = [ax for ax in density.axes if getattr(ax, "_colorbar", None) is None]
    assert all(len(ax.get_lines()) == k for ax in panels)
