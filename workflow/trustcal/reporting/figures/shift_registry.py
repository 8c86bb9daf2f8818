"""The figures of a run under dataset shift (workflow/rules/shift.smk, rule ``shift_figures``), declared once as
:mod:`.registry` declares the others (a :class:`~.registry.FigureSpec` each, its caption in workflow/report/), and
:func:`render_shift_figures`, what the rule calls.

Apart from ``FIGURES``: they exist only when ``shift:`` asks for sets, their tables are the run's (every seed in
one file), and their drawing code (:mod:`.shift`) is no part of the other figure jobs' code digest. Reading this
module imports no matplotlib.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trustcal.errors import TrustcalError
from trustcal.files import read_result_csv
from trustcal.reporting.figures.registry import SHIFT_SECTION, FigureSpec, _paths


def _draw(name: str):
    """The drawing function ``name`` of :mod:`.shift`, imported when first called (matplotlib with it)."""

    def draw(tables, title, paths, options):
        from trustcal.reporting.figures import shift

        return getattr(shift, name)(tables[SHIFT_FIGURES[name].tables[0]], title, paths)

    return draw


# The run's tables (one file each, every seed in it): shift.csv (a corrupted set's rows, and the clean rows
# at severity 0) and shift_ood.csv.
SHIFT_TABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "shift": (
        ("seed", "epoch", "epoch_label", "set", "severity", "calibrator", "accuracy", "nll", "brier", "ece")
        + ("belief", "disbelief", "uncertainty"),
        "shift_table",
    ),
    "shift_ood": (("seed", "epoch", "epoch_label", "set", "calibrator", "signal", "auroc"), "shift_ood_table"),
    "shift_ood_curves": (("seed", "epoch_label", "set", "calibrator", "signal", "curve", "x", "y"), "shift_ood_table"),
}


def _shift_figure(name: str, summary: str, table: str = "shift") -> FigureSpec:
    """A figure of the shift_figures job, drawn from one table, its caption ``<name>.rst``."""
    return FigureSpec(
        name,
        _draw(name),
        tables=(table,),
        job="shift_figures",
        section=SHIFT_SECTION,
        series=False,
        summary=summary,
    )


SHIFT_FIGURES: dict[str, FigureSpec] = {
    f.name: f
    for f in (
        _shift_figure(
            "shift_metrics",
            "Ovadia et al. (2019) Fig. 2: accuracy, NLL, Brier score and ECE against corruption severity, "
            "a box per calibrator over the corruptions and seeds",
        ),
        _shift_figure(
            "shift_trust",
            "the network opinion (belief, disbelief, uncertainty) against corruption severity per "
            "calibrator, mean over corruptions and seeds with ± sd bands",
        ),
        _shift_figure(
            "shift_trust_accuracy",
            "network belief against accuracy, a point per corruption, severity and calibrator, with y = x",
        ),
        _shift_figure(
            "shift_ood",
            "AUROC of telling clean test images from each out-of-distribution set, per signal and calibrator",
            table="shift_ood",
        ),
        _shift_figure(
            "shift_ood_curves",
            "each signal's histogram on clean test images and on each out-of-distribution set, and its ROC "
            "curve, of the raw model at the best-validation epoch, over the seeds",
            table="shift_ood_curves",
        ),
    )
}


def render_shift_figures(
    inputs: Mapping[str, Sequence[str] | str],
    outputs: Mapping[str, Sequence[str]],
    title: str = "",
) -> list[str]:
    """Draw each figure of ``SHIFT_FIGURES`` named in ``outputs`` (name → its PNG/PDF paths) whose table has rows,
    from ``inputs`` (table name of ``SHIFT_TABLES`` → the run's file); return the names drawn. A figure whose
    table is not given or has no rows is not drawn (the caller says why: the rule ``shift_figures`` writes a
    notice in its place)."""
    unknown = sorted(set(outputs) - set(SHIFT_FIGURES))
    if unknown:
        raise TrustcalError(f"unknown shift figure(s) {unknown}; known: {sorted(SHIFT_FIGURES)}")
    tables = {}
    for name, paths in inputs.items():
        if name in SHIFT_TABLES and _paths(paths):
            columns, rule = SHIFT_TABLES[name]
            tables[name] = read_result_csv(_paths(paths)[0], columns, rule=rule)
    drawn = []
    for name, paths in outputs.items():
        spec = SHIFT_FIGURES[name]
        if all(t in tables and not tables[t].empty for t in spec.tables):
            spec.draw(tables, title, _paths(paths), {})
            drawn.append(name)
    return drawn
