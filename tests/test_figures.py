"""Every figure, drawn from small synthetic tables in the workflow's layout (one seed and three seeds)."""

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from trustcal.reporting import figures
from trustcal.errors import TrustcalError
from trustcal.files import write_csv
from trustcal.reporting.tables import MetricParams, Predictions, SweepParams, score_tables, trust_tables
from trustcal.measures.trust import TrustParams

EPOCHS = 5
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
            for calibrated, t in ((False, 1.0), (True, 1.0 + 0.4 * epoch)):
                z = logits / t
                p = np.exp(z - z.max(axis=1, keepdims=True))
                out.append(Predictions(epoch, calibrated, split, p / p.sum(axis=1, keepdims=True), labels))
    return out


def history(seed: int, epochs: int = EPOCHS) -> pd.DataFrame:
    e = np.arange(1, epochs + 1)
    val = 0.5 + 0.05 * (e - 3) ** 2 + 0.01 * seed  # minimum at epoch 3
    return pd.DataFrame(dict(epoch=e, train_loss=1.0 / e, train_accuracy=0.9, val_loss=val, val_accuracy=0.8, seconds=1.0))


def write_run(root, dataset: str, seed: int) -> None:
    run = root / "results" / dataset / f"seed{seed}"
    preds = predictions(seed)
    mp = MetricParams(density_points=21)
    tables = {
        **trust_tables(preds, TrustParams(), SweepParams(clusters=(2, 5, 10, 20), epochs=(1, 3))),
        **score_tables(preds, mp),
        "history": history(seed),
        "calibration": pd.DataFrame(dict(epoch=range(1, EPOCHS + 1), temperature=[1.0 + 0.4 * e for e in range(1, EPOCHS + 1)])),
    }
    for name, df in tables.items():
        write_csv(df, run / f"{name}.csv")


def inputs(root, dataset, seeds):
    return {name: [str(root / "results" / dataset / f"seed{s}" / f"{name}.csv") for s in seeds] for name in figures.TABLES}


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
    for needs, _ in figures.FIGURES.values():
        assert set(needs) <= set(figures.TABLES)


def test_figure_names_match_the_workflow_targets():
    text = (figures.Path(__file__).resolve().parents[1] / "workflow" / "rules" / "common.smk").read_text()
    for name in figures.FIGURES:
        assert f'"{name}"' in text, name


def test_cifar_label_names_and_paper_figures_wrapper(tmp_path):
    write_run(tmp_path, "cifar10", 0)
    ins = inputs(tmp_path, "cifar10", (0,))
    out = tmp_path / "fig"
    figures.paper_figures("cifar10", ins["trust"], ins["history"],
                          trust_grid_paths=[out / "grid.png"], loss_paths=[out / "loss.png", out / "loss.pdf"])
    figures.render_figures("cifar10", ins, {"trust_spectrum": [str(out / "spectrum.png")]})
    for f in ("grid.png", "loss.png", "loss.pdf", "spectrum.png"):
        assert (out / f).stat().st_size > 10_000


def test_draw_from_in_memory_tables_without_a_seed_column(tmp_path):
    preds = predictions(0)
    tables = {**trust_tables(preds, TrustParams()), **score_tables(preds, MetricParams(density_points=21)),
              "history": history(0)}
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
