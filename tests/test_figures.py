"""Every figure, drawn from small synthetic tables in the workflow's layout (one seed and three seeds)."""

import re
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from trustcal.errors import TrustcalError
from trustcal.files import write_csv
from trustcal.measures.bootstrap import BootstrapParams
from trustcal.measures.trust import TrustParams
from trustcal.reporting import figures
from trustcal.reporting.figures import registry
from trustcal.reporting.tables import MetricParams, Predictions, SweepParams, score_tables, trust_tables

REPO = Path(__file__).resolve().parents[1]
EPOCHS = 5
BOOTSTRAP = BootstrapParams(resamples=50)
N, K = 150, 10


def predictions(seed: int, epochs: int = EPOCHS) -> list[Predictions]:
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
                out.append(Predictions(epoch, calibrator, split, p / p.sum(axis=1, keepdims=True), labels))
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


@pytest.fixture(scope="module", params=[(0,), (0, 1, 2)], ids=["1seed", "3seeds"])
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
        assert spec.job in registry.JOBS and spec.stage in registry.STAGES, spec.name
        assert (report / spec.caption).is_file(), spec.caption
        assert set(spec.params) <= set(config), spec.params
        assert spec.summary and "|" not in spec.summary
    # every caption file belongs to a figure (or to the verdict / the report's front page)
    captions = {spec.caption for spec in figures.FIGURES.values()}
    assert {p.name for p in report.glob("*.rst")} == captions | {"verdict.rst", "workflow.rst"}
    # each report section is introduced on the report's front page
    front = (report / "workflow.rst").read_text()
    for stage in registry.STAGES:
        assert f"**{stage}**" in front, stage
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
    from workflow_utils import make_workdir, snakemake

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


def test_the_readme_table_of_figures_is_the_registrys():
    readme = (REPO / "README.md").read_text()
    marker = "<!-- The table of figures is the registry's"
    assert readme.count(marker) == 1
    table = readme.split(marker, 1)[1].split("\n", 1)[1].split("\n\n", 1)[0] + "\n"
    assert table == registry.readme_table(), (
        "README.md's table of figures differs from the registry; replace it by the output of\n"
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


def test_cifar_label_names(tmp_path):
    write_run(tmp_path, "cifar10", 0)
    ins = inputs(tmp_path, "cifar10", (0,))
    out = tmp_path / "fig"
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


def test_colours_are_consistent_across_figures():
    assert figures.label_colours(10)[3] == figures.label_colours(10)[3]
    assert len(set(figures.label_colours(10).values())) == 10
    assert set(figures.STATE_COLOURS) == {figures.BEFORE, figures.AFTER}
    assert not set(figures.STATE_COLOURS.values()) & set(figures.SET_COLOURS.values())


def test_barycentric_corners():
    x, y = figures.barycentric([1, 0, 0], [0, 1, 0], [0, 0, 1])
    np.testing.assert_allclose(x, [1, 0, 0.5])
    np.testing.assert_allclose(y, [0, 0, np.sqrt(3) / 2])
