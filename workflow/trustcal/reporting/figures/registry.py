"""Every figure of the workflow, declared once, and the entry points that draw them.

A :class:`FigureSpec` holds all that the rest of the project needs to know
about one figure: the rules (workflow/rules/figures.smk, through
workflow/rules/figures_helpers.smk) take their inputs, outputs, parameters and report entries
from it, ``trustcal assess`` and the Python API the tables it needs,
docs/usage.md its line in the table of figures (:func:`readme_table`, checked by
tests/unit/reporting/test_figures.py), and the tests the list of figures. Adding a figure
is a drawing function (in :mod:`.epochs` or :mod:`.distributions`, with its
size in ``style.FIGURE_SIZES``), a record in ``FIGURES`` and its caption file
``{name}.rst`` in workflow/report/.

Reading this module imports no matplotlib: Snakemake reads it each time it
parses the workflow, and the drawing modules are imported when a figure is
first drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trustcal.errors import TrustcalError
from trustcal.files import read_seeds
from trustcal.measures.trust import TRUST_COLUMNS
from trustcal.registry import class_names, dataset_title
from trustcal.reporting import figures  # its drawing modules load on first use (PEP 562, figures/__init__.py)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

# Table name → (the columns a figure needs, the rule that writes the table); the workflow's
# file of a table is ``{name}.csv`` of each seed.
TABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "trust": (TRUST_COLUMNS, "trust"),
    "history": (("epoch", "train_loss", "val_loss"), "train"),
    "trust_sweep": (
        ("epoch", "calibrator", "clusters", "representative", "belief", "disbelief", "uncertainty"),
        "trust",
    ),
    "scores": (("epoch", "calibrator", "split", "accuracy", "nll", "ece", "brier", "net_trust_score"), "scores"),
    "calibration": (("epoch", "temperature", "fit_split"), "calibration_table"),
    "reliability": (
        (
            "epoch",
            "calibrator",
            "split",
            "curve",
            "bin",
            "bin_lower",
            "bin_upper",
            "mean_predicted",
            "observed_frequency",
            "count",
        ),
        "scores",
    ),
    "trust_spectrum": (("epoch", "calibrator", "split", "label", "trust"), "scores"),
    "trust_density": (("epoch", "calibrator", "split", "label", "trust", "density"), "scores"),
    "selective": (("epoch", "calibrator", "score", "aurc", "augrc", "diff_aurc", "diff_augrc"), "trust"),
    "smooth_reliability": (("epoch", "calibrator", "split", "confidence", "accuracy", "density"), "scores"),
}

# The rules that draw the figures (workflow/rules/figures.smk), split by what they read so that a
# trust parameter redraws only the trust figures.
JOBS = {
    "figures": "the trust tables and the training history",
    "metric_figures": "the score tables",
}
# Report sections under each dataset (Snakemake report subcategories), in reading order.
PAPER, PER_EPOCH, CHOSEN, VARIANTS = "1 Paper figures", "2 Metrics per epoch", "3 Chosen epochs", "4 Trust variants"
CALIBRATOR_SECTION = "5 Calibrators"
SHIFT_SECTION = "6 Dataset shift"  # the figures of shift_registry.SHIFT_FIGURES, when `shift:` is configured
SECTIONS = (PAPER, PER_EPOCH, CHOSEN, VARIANTS, CALIBRATOR_SECTION, SHIFT_SECTION)

# draw(tables, title, paths, options) → the figure; tables maps a name of TABLES to its frame (with a
# ``seed`` column), options holds ``classes`` (the label names) and the config values of ``FigureSpec.params``.
Drawer = Callable[[Mapping[str, "pd.DataFrame"], str, Sequence[str], Mapping[str, Any]], "Figure"]


@dataclass(frozen=True)
class FigureSpec:
    """One figure: how to draw it, what it reads, where it goes and how it is described."""

    name: str  # file stem: results/figures/{dataset}/{name}.{png,pdf}
    draw: Drawer
    tables: tuple[str, ...]  # the tables of TABLES it reads
    job: str  # the rule of JOBS that draws it
    section: str  # its section of the Snakemake report (SECTIONS), under its dataset
    summary: str  # what it shows, in one line: the table of figures of docs/usage.md
    series: bool  # the epoch on the x axis: trustcal assess draws it only for two or more epochs
    params: tuple[str, ...] = ()  # config keys it reads: rule params (a change redraws it) and draw options

    @property
    def caption(self) -> str:
        """Its caption in the report, ``{name}.rst``: a reStructuredText file of workflow/report/ (Jinja:
        snakemake.config)."""
        return f"{self.name}.rst"


FIGURES: dict[str, FigureSpec] = {
    f.name: f
    for f in (
        FigureSpec(
            "trust_grid",
            lambda t, title, paths, o: figures.epochs.trust_grid(t["trust"], title, paths, o.get("classes")),
            tables=("trust",),
            job="figures",
            section=PAPER,
            series=True,
            summary="paper Fig. 1/2: belief, disbelief and uncertainty per label against epoch, before and after "
            "calibration",
        ),
        FigureSpec(
            "loss_curves",
            lambda t, title, paths, o: figures.epochs.loss_curves(t["history"], title, paths),
            tables=("history",),
            job="figures",
            section=PAPER,
            series=True,
            summary="paper Fig. 3: training and validation loss; the validation minimum is marked",
        ),
        FigureSpec(
            "calibration_metrics",
            lambda t, title, paths, o: figures.epochs.calibration_metrics(t["scores"], t["calibration"], title, paths),
            tables=("scores", "calibration"),
            job="metric_figures",
            section=PER_EPOCH,
            series=True,
            summary="accuracy, ECE, NLL, Brier and NetTrustScore against epoch, before and after calibration, and the "
            "fitted temperature",
        ),
        FigureSpec(
            "geometric_metrics",
            lambda t, title, paths, o: figures.epochs.geometric_metrics(t["scores"], title, paths),
            tables=("scores",),
            job="metric_figures",
            section=PER_EPOCH,
            series=True,
            summary="geometric accuracy, decisiveness and robustness against epoch, reported (solid) and measured "
            "(dashed)",
        ),
        FigureSpec(
            "network_opinion",
            lambda t, title, paths, o: figures.epochs.network_opinion(t["trust"], title, paths),
            tables=("trust",),
            job="figures",
            section=PER_EPOCH,
            series=True,
            summary="the network opinion (b, d, u) against epoch, before and after calibration",
        ),
        FigureSpec(
            "reliability",
            lambda t, title, paths, o: figures.distributions.reliability(
                t["reliability"], t["history"], title, paths, t["scores"]
            ),
            tables=("reliability", "history", "scores"),
            job="metric_figures",
            section=CHOSEN,
            series=False,
            summary="top-label reliability diagrams, each bin's accuracy with its 95 % Clopper–Pearson interval, with the "
            "confidence histogram, for the first, best-validation-loss and last epoch",
        ),
        FigureSpec(
            "trust_spectrum",
            lambda t, title, paths, o: figures.distributions.trust_spectrum(
                t["trust_spectrum"], t["history"], title, paths, o.get("classes"), t["scores"]
            ),
            tables=("trust_spectrum", "history", "scores"),
            job="metric_figures",
            section=CHOSEN,
            series=False,
            summary="NetTrustScore trust spectrum T(z) per label at the same three epochs",
        ),
        FigureSpec(
            "trust_density",
            lambda t, title, paths, o: figures.distributions.trust_density(
                t["trust_density"], t["history"], title, paths, o.get("classes")
            ),
            tables=("trust_density", "history"),
            job="metric_figures",
            section=CHOSEN,
            series=False,
            summary="trust density per label at the same three epochs (log scale)",
        ),
        FigureSpec(
            "cluster_sweep",
            lambda t, title, paths, o: figures.distributions.cluster_sweep(
                t["trust_sweep"], title, paths, o.get("clusters") or 10
            ),
            tables=("trust_sweep",),
            job="figures",
            section=VARIANTS,
            series=False,
            params=("clusters",),
            summary="network opinion against the number of clusters M (2–100), midpoint against cluster-mean "
            "representative",
        ),
        FigureSpec(
            "opinion_triangle",
            lambda t, title, paths, o: figures.distributions.opinion_triangle(t["trust"], title, paths),
            tables=("trust",),
            job="figures",
            section=VARIANTS,
            series=True,
            summary="the network opinion of every epoch in the (b, d, u) triangle, with a zoomed view",
        ),
        FigureSpec(
            "calibrator_trust",
            lambda t, title, paths, o: figures.calibrators.calibrator_trust(t["trust"], t["calibration"], title, paths),
            tables=("trust", "calibration"),
            job="figures",
            section=CALIBRATOR_SECTION,
            series=True,
            summary="belief, disbelief and uncertainty (network and mean over labels) against epoch for the raw model "
            "and every calibrator, with bootstrap bands",
        ),
        FigureSpec(
            "calibrator_metrics",
            lambda t, title, paths, o: figures.calibrators.calibrator_metrics(
                t["scores"], t["calibration"], title, paths
            ),
            tables=("scores", "calibration"),
            job="metric_figures",
            section=CALIBRATOR_SECTION,
            series=True,
            summary="ECE, smooth ECE, NLL and Brier score against epoch for the raw model and every calibrator, with "
            "bootstrap bands",
        ),
        FigureSpec(
            "calibrator_reliability",
            lambda t, title, paths, o: figures.calibrators.calibrator_reliability(
                t["reliability"], t["history"], t["calibration"], title, paths
            ),
            tables=("reliability", "history", "calibration"),
            job="metric_figures",
            section=CALIBRATOR_SECTION,
            series=False,
            summary="top-label reliability diagram of the raw model and every calibrator at the best-validation epoch",
        ),
        FigureSpec(
            "selective_prediction",
            lambda t, title, paths, o: figures.refinement.selective_prediction(
                t["selective"], t["history"], title, paths
            ),
            tables=("selective", "history"),
            job="figures",
            section=PER_EPOCH,
            series=True,
            summary="risk–coverage curves of the max probability and of the per-prediction opinion's scores at the "
            "best-validation and last epoch, and their AURC per epoch with paired bootstrap bands",
        ),
        FigureSpec(
            "calibration_refinement",
            lambda t, title, paths, o: figures.refinement.calibration_refinement(t["scores"], title, paths),
            tables=("scores",),
            job="metric_figures",
            section=PER_EPOCH,
            series=True,
            summary="NLL and Brier score of the raw model split into refinement (after cross-fitted temperature "
            "scaling) and calibration per epoch, with bootstrap bands",
        ),
        FigureSpec(
            "smooth_reliability",
            lambda t, title, paths, o: figures.refinement.smooth_reliability(
                t["smooth_reliability"], t["history"], title, paths
            ),
            tables=("smooth_reliability", "history"),
            job="metric_figures",
            section=CHOSEN,
            series=False,
            summary="smooth reliability diagram (kernel estimate at the smooth ECE's bandwidth) with its bootstrap "
            "band, before and after calibration, at the first, best-validation and last epoch",
        ),
    )
}
FIGURE_NAMES = tuple(FIGURES)


def _paths(value) -> list[str]:
    return [str(value)] if isinstance(value, (str, Path)) else [str(v) for v in value]


def draw(
    name: str,
    tables: Mapping[str, pd.DataFrame],
    title: str,
    paths: Sequence[str | Path],
    classes: Sequence[str] | None = None,
    clusters: int | None = None,
    **options,
) -> Figure:
    """Draw figure ``name`` of ``FIGURES`` from in-memory tables (a missing ``seed`` column means one seed);
    save it to ``paths`` (none: only return it) and return the figure.

    ``tables`` maps a table name of ``TABLES`` to its DataFrame (the workflow's
    CSV columns); only the tables the figure needs are looked up. ``classes`` names the labels (their
    names beside the label colours; none: numbers only). ``clusters`` and the other ``options`` are the
    config values of ``FigureSpec.params``.
    """
    if name not in FIGURES:
        raise TrustcalError(f"unknown figure {name!r}; known: {sorted(FIGURES)}")

    class _Seeded(dict):
        def __missing__(self, key):
            df = tables[key]
            self[key] = df if "seed" in df else df.assign(seed=0)
            return self[key]

    return FIGURES[name].draw(_Seeded(), title, _paths(paths), dict(options, classes=classes, clusters=clusters))


def render_figures(
    dataset: str,
    inputs: Mapping[str, Sequence[str]],
    outputs: Mapping[str, Sequence[str]],
    clusters: int | None = None,
    run: Mapping[str, Any] | None = None,
    **options,
) -> None:
    """Draw each figure named in ``outputs`` (name → its PNG/PDF paths) from the per-seed CSV files in ``inputs``.

    ``inputs`` maps a table name of ``TABLES`` to its files, one per seed
    (``…/seed{N}/…``); each table is read once, when a figure first needs it.
    ``run`` gives the run's ``title`` and ``classes`` (the rule's params; by default the registry's, for a
    registered dataset's name). ``clusters`` and the other ``options`` (the rule's params) go to :func:`draw`.
    The workflow's figures stage calls it (:func:`trustcal.stages.figures_stage`).
    """
    unknown = sorted(set(outputs) - set(FIGURES))
    if unknown:
        raise TrustcalError(f"unknown figure(s) {unknown}; known: {sorted(FIGURES)}")

    class _Tables(dict):
        def __missing__(self, name):
            if name not in inputs:
                raise TrustcalError(f"a figure needs the {name} table, but no {name} file was given")
            columns, rule = TABLES[name]
            self[name] = read_seeds(_paths(inputs[name]), columns, rule=rule)
            return self[name]

    tables = _Tables()
    run = run or {}
    title = run.get("title") or dataset_title(dataset)
    classes = run.get("classes") or class_names(dataset)
    for name, paths in outputs.items():
        draw(name, tables, title, paths, classes=classes, clusters=clusters, **options)


def readme_table() -> str:
    """The table of figures of docs/usage.md (Markdown), one row per figure of ``FIGURES``."""
    rows = ["| figure | shows |", "|---|---|"] + [f"| `{f.name}` | {f.summary} |" for f in FIGURES.values()]
    return "\n".join(rows) + "\n"
