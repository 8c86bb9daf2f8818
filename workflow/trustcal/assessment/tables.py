"""The tables of an assessment: predictions already read and checked, with the calibrators fitted,
turned into the workflow's own tables (:func:`~trustcal.evaluation.trust_tables`,
:func:`~trustcal.evaluation.score_tables`), every prediction file treated as the test split.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import pandas as pd

from trustcal.assessment.fit import predictions_of
from trustcal.assessment.result import Assessment, Progress, no_progress
from trustcal.assessment.workers import forked, worker_count
from trustcal.calibration.table import WORSE_ON_TEST, worse_on_test, worse_on_test_sentence
from trustcal.evaluation import PredictionSet, score_tables, trust_sweep_table, trust_tables
from trustcal.numerics import one_blas_thread
from trustcal.predictions import InputWarning, Loaded
from trustcal.settings import Settings

T = TypeVar("T")


def with_class_names(tables: dict[str, pd.DataFrame], names: Sequence[str] | None) -> dict[str, pd.DataFrame]:
    """Every table with a per-class ``label`` column (class indices 0 … K−1, and ``network``) gets a
    ``class_name`` column beside it: the name of class ``label`` (``network`` stays ``network``)."""
    if not names:
        return tables
    out = {}
    for key, df in tables.items():
        if "label" in df.columns and "class_name" not in df.columns:
            df = df.copy()
            df.insert(
                int(df.columns.get_loc("label")) + 1,
                "class_name",
                [names[int(float(v))] if str(v).replace(".", "", 1).isdigit() else str(v) for v in df["label"]],
            )
        out[key] = df
    return out


def assess_loaded(
    loaded: Sequence[Loaded],
    settings: Settings = Settings(),
    *,
    skipped: Sequence[Path] = (),
    warnings: list[InputWarning] | None = None,
    history: pd.DataFrame | None = None,
    history_file: Path | None = None,
    progress: Progress = no_progress,
    processes: int = 1,
) -> Assessment:
    """Assess predictions already read and checked (:func:`~trustcal.predictions.load`, or arrays by :mod:`trustcal.api`):
    the workflow's tables, with the calibrators of ``settings.calibration`` fitted where validation predictions
    are given. ``progress`` follows the fitting of the calibrators (per file) and the computing of the tables
    (per epoch); ``processes``: how many processes may compute the tables (:func:`assessment_tables`)."""
    warnings = [] if warnings is None else warnings
    fitting = settings.calibration.names and any(x.val_probs is not None and not x.file.calibrated for x in loaded)
    preds, calibration = predictions_of(
        progress(loaded, "calibrating", "file") if fitting else loaded, warnings.append, settings.calibration
    )
    tables = assessment_tables(preds, settings, progress, processes)
    if calibration is not None:
        tables["calibration"] = calibration
        warnings.extend(_worse_on_test(tables["scores"], calibration, loaded))
    names = loaded[0].names
    tables = with_class_names(tables, names)
    return Assessment(
        [item.file for item in loaded],
        list(skipped),
        tables,
        warnings,
        loaded[0].classes,
        sorted({len(x.labels) for x in loaded}),
        history,
        history_file,
        settings.trust.clusters,
        settings.metrics.ece_bins[0],
        class_names=names,
    )


def _worse_on_test(scores: pd.DataFrame, calibration: pd.DataFrame, loaded: Sequence[Loaded]) -> list[InputWarning]:
    """A ``calibrator_worse_on_test`` warning naming every fitted calibrator whose test predictions are less
    accurate, or have a higher NLL, than the uncalibrated model's (:func:`~trustcal.calibration.table.worse_on_test`)."""
    found = worse_on_test(
        scores,
        calibration["calibrator"],
        samples=max(len(x.labels) for x in loaded),
        classes=loaded[0].classes,
    )
    if not found:
        return []
    sentences = ". ".join(
        (text if i == 0 else text[0].upper() + text[1:])
        for i, text in enumerate(worse_on_test_sentence(name, f) for name, f in found.items())
    )
    return [
        InputWarning(
            WORSE_ON_TEST,
            str(loaded[0].file.path) if len(loaded) == 1 else "",
            f"{sentences}. {'It was' if len(found) == 1 else 'Each was'} fitted on the validation predictions and "
            "is judged here on the test predictions: a map with many parameters for the validation samples per "
            "class (vector scaling 2K, matrix and Dirichlet scaling K² + K, histogram binning K × bins, isotonic "
            "regression a piece per step) fits their noise, and validation predictions unlike the test ones "
            "mislead any calibrator. Compare the calibrators in scores.csv; more validation samples help.",
        )
    ]


def assessment_tables(
    preds: Sequence[PredictionSet],
    settings: Settings = Settings(),
    progress: Progress = no_progress,
    processes: int = 1,
) -> dict[str, pd.DataFrame]:
    """:func:`~trustcal.evaluation.trust_tables` and :func:`~trustcal.evaluation.score_tables`
    of ``preds``, computed one epoch at a time so that ``progress`` can follow a long series; the same
    tables, rows in the same order (``preds`` come epoch by epoch), as one call on every epoch.
    ``trust_sweep`` picks its epochs from the whole series, so it is computed on all of them at once (with
    the last epoch, before ``progress`` counts it done).

    The tables are computed with BLAS held at one thread (:func:`trustcal.numerics.one_blas_thread`), so
    that their numbers depend neither on ``processes`` nor on the cores (a float32 product's last bits depend
    on how many threads summed it) and equal the workflow's. ``processes`` > 1: the epochs after the first
    are shared out, in chunks, over up
    to that many forked processes (:func:`~trustcal.assessment.workers.worker_count`; none where fork is
    not safe), each epoch's tables coming back in order as they are done. The first epoch is computed
    here before the fork, so the workers inherit what it drew once for the whole series (the
    bootstrap's resample counts); every number is the one computed here alone."""
    by_epoch: dict[int, list[PredictionSet]] = {}
    for p in preds:
        by_epoch.setdefault(p.epoch, []).append(p)
    groups = list(by_epoch.values())
    jobs = [functools.partial(_epoch_tables, group, settings) for group in groups]
    workers = worker_count(len(jobs) - 1, processes)
    sweep = None
    with one_blas_thread(), contextlib.closing(_computed(jobs, workers)) as done:
        parts = []
        for i, _ in enumerate(progress(groups, "assessing", "epoch")):
            parts.append(next(done))
            if i == len(groups) - 1 and settings.sweep is not None:  # within the phase, which shows its progress
                sweep = trust_sweep_table(preds, settings.trust, settings.sweep)
        trust_names = parts[0][1]
        tables = {}
        for name in parts[0][0]:
            tables[name] = pd.concat([part[name] for part, _ in parts], ignore_index=True)
            if name == trust_names[-1] and sweep is not None:  # where trust_tables puts it: after its others
                tables["trust_sweep"] = sweep
    return tables


def _epoch_tables(group: Sequence[PredictionSet], settings: Settings) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The tables of one epoch's predictions, and the names of those of :func:`trust_tables` (the first)."""
    part = trust_tables(group, settings.trust, None, settings.bootstrap)
    return {**part, **score_tables(group, settings.metrics, settings.bootstrap)}, list(part)


def _computed(jobs: Sequence[Callable[[], T]], workers: int) -> Iterator[T]:
    """Each job's result, in order: the first job here, the others in ``workers`` forked processes
    (:func:`~trustcal.assessment.workers.forked`, a few jobs per task) when ``workers`` > 1."""
    if workers < 2:
        yield from (job() for job in jobs)
        return
    yield jobs[0]()
    rest = jobs[1:]
    chunk = max(1, min(MAX_CHUNK, len(rest) // (TASKS_PER_WORKER * workers)))
    with contextlib.closing(forked(rest, workers, chunk)) as futures:
        for future in futures:
            yield from future.result()


MAX_CHUNK = 8  # epochs per task at most: the progress advances at least this often …
TASKS_PER_WORKER = 4  # … and each worker gets at least this many tasks, so that the workers end together
