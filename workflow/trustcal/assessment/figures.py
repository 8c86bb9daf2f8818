"""The figures of an assessment: which the tables allow, each drawn into a file per format, in forked
processes where that is safe (:func:`figure_workers`); a figure that fails is skipped with a warning,
except on a full disk (:class:`~trustcal.files.DiskError`), which stops the assessment.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import warnings as pywarnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.assessment.result import Assessment, Progress, no_progress
from trustcal.assessment.workers import forked, worker_count
from trustcal.calibration.states import PAPER_CALIBRATOR, RAW
from trustcal.files import DiskError, disk_error, full_disk_cause
from trustcal.predictions import InputWarning
from trustcal.reporting.figures.registry import CALIBRATOR_SECTION, FIGURES

FIGURE_FORMATS = ("png", "pdf")

# Figures with the epoch on the x axis (FigureSpec.series): drawn only for a series of two or more epochs.
SERIES_FIGURES = {name for name, spec in FIGURES.items() if spec.series}


def figure_tables(a: Assessment) -> dict[str, pd.DataFrame]:
    """The tables the figures are drawn from: the assessment's, plus the training history when there is one.
    A single epoch is its own first, best and last epoch (a history of that one epoch, without losses)."""
    epochs = a.tables["trust"]["epoch"].unique()
    tables = dict(a.tables)
    if a.history is not None:
        tables["history"] = a.history
    if len(epochs) < 2:
        tables["history"] = pd.DataFrame({"epoch": epochs[:1], "train_loss": np.nan, "val_loss": np.nan})
    return tables


# What a figure's missing table takes (the summary's "figures not drawn (need …)").
TABLE_NEEDS = {
    "history": "a training history",
    "calibration": "validation data",
    "trust_sweep": "the cluster sweep",
}


def _figure_jobs(a: Assessment, title: str) -> tuple[list[tuple[str, Callable]], dict[str, str]]:
    """(name, draw(paths)) for every figure of figures.FIGURES the tables allow, and for each figure left
    out that more input would allow, what it needs (:data:`TABLE_NEEDS`).

    Figures that need the training history (the loss curves, and those showing the first, best-validation
    and last epochs) are drawn for a series only with a history (given as ``history``, or one found in a
    prediction directory by :func:`~trustcal.predictions.history_beside`). Those comparing calibrators are drawn when
    calibrators other than the paper's temperature scaling were fitted (the paper's figures show that one
    before and after), and those with the epoch on the x axis for a series; neither is listed as missing
    where it does not apply. A single epoch is drawn as itself (one column, no epoch):
    its reliability, trust spectrum and trust density figures are always drawn.
    """
    from trustcal.reporting import figures

    series = a.tables["trust"]["epoch"].nunique() >= 2
    paper_only = set(a.tables["scores"]["calibrator"].astype(str)) <= {RAW, PAPER_CALIBRATOR}
    tables = figure_tables(a)
    jobs, need = [], {}
    for name, spec in FIGURES.items():
        missing = [t for t in spec.tables if t not in tables]
        if name in SERIES_FIGURES and not series:
            continue
        if spec.section == CALIBRATOR_SECTION and paper_only:
            continue  # the raw model against temperature scaling alone: the paper's before/after figures
        if missing:
            need[name] = " and ".join(dict.fromkeys(TABLE_NEEDS.get(t, f"the {t} table") for t in missing))
        else:
            jobs.append((name, lambda paths, name=name: figures.draw(name, tables, title, paths, clusters=a.clusters)))
    return jobs, need


def draw_figures(
    a: Assessment,
    fig_dir: Path,
    title: str,
    progress: Progress = no_progress,
    formats: Sequence[str] = FIGURE_FORMATS,
    processes: int = 1,
) -> list[str]:
    """Draw every figure into ``fig_dir``, a file per format of ``formats``, in up to ``processes``
    processes (:func:`figure_workers`); a figure that fails is skipped with a warning, but a write the
    disk refused raises :class:`~trustcal.files.DiskError` (a full disk fails every figure that follows)."""
    fig_dir.mkdir(parents=True, exist_ok=True)
    drawn = []
    jobs, a.figures_need = _figure_jobs(a, title)
    a.figures_left_out = list(a.figures_need)
    named = [(name, [fig_dir / f"{name}.{ext}" for ext in formats]) for name, _ in jobs]
    errors = _drawn([(draw, paths) for (_, draw), (_, paths) in zip(jobs, named)], figure_workers(len(jobs), processes))
    for (name, paths), error in zip(progress(named, "figures", "figure"), errors):
        if error is None:
            drawn += [str(p.relative_to(fig_dir.parent)) for p in paths]
            continue
        for p in paths:
            p.unlink(missing_ok=True)
        a.warnings.append(InputWarning("figure_skipped", "", f"figure {name} skipped ({error})."))
    return drawn


def figure_workers(figures: int, processes: int) -> int:
    """Processes that draw ``figures`` figures (:func:`~trustcal.assessment.workers.worker_count`): at
    most ``processes``, at most one per figure, forked where that is safe, else this process alone."""
    return worker_count(figures, processes)


def available_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _draw_quietly(draw: Callable, paths: list[Path]) -> str | None:
    """Draw one figure: None, or what stopped it (an optional figure must not break the assessment).
    A write the disk refused is no such thing: it raises :class:`~trustcal.files.DiskError`, also when
    the library that wrote failed again as it cleaned up (:func:`~trustcal.files.full_disk_cause`)."""
    try:
        with pywarnings.catch_warnings():
            pywarnings.simplefilter("ignore")
            draw(paths)
    except DiskError:
        raise
    except Exception as exc:
        cause = full_disk_cause(exc)
        if cause is not None:
            raise disk_error(cause.filename or paths[0], cause) from None
        return f"{type(exc).__name__}: {exc}"
    return None


def _drawn(jobs: list[tuple[Callable, list[Path]]], workers: int) -> Iterable[str | None]:
    """What :func:`_draw_quietly` says of each job, in order, each as soon as it is drawn (in ``workers``
    forked processes, :func:`~trustcal.assessment.workers.forked`); its
    :class:`~trustcal.files.DiskError`, raised in a worker, is raised here (the figures not yet begun
    cancelled, those being drawn stopped, and what they had half written removed)."""
    if workers < 2:
        yield from (_draw_quietly(draw, paths) for draw, paths in jobs)
        return
    from trustcal.reporting.figures import style

    style.set_style()  # matplotlib imported once, before the fork
    try:
        with contextlib.closing(
            forked([functools.partial(_draw_quietly, draw, paths) for draw, paths in jobs], workers)
        ) as futures:
            for future in futures:
                try:
                    (result,) = future.result()
                except DiskError:
                    raise
                except Exception as exc:  # a worker that died (memory): that figure is skipped
                    result = f"{type(exc).__name__}: {exc}"
                yield result
    except BaseException:  # the workers were stopped (forked): their figures' temporaries go too
        _remove_half_written(jobs)
        raise


def _remove_half_written(jobs: list[tuple[Callable, list[Path]]]) -> None:
    """The temporary files (:func:`trustcal.files.atomic_path`: ``.{name}.{random}.tmp`` beside each) of the
    figures of ``jobs`` that a stopped worker was writing."""
    for _, paths in jobs:
        for path in paths:
            for tmp in Path(path).parent.glob(f".{glob.escape(Path(path).name)}.*.tmp"):
                with contextlib.suppress(OSError):
                    tmp.unlink()
