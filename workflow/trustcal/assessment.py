"""Assess any model's predictions: the workflow's tables and figures, and a one-screen summary.

Shared by ``trustcal assess`` (:mod:`trustcal.cli`), the Python API
(:mod:`trustcal.api`, on arrays: :func:`assess_loaded`) and the workflow's
``external`` rule. The files are read and checked by :mod:`trustcal.predictions`;
the tables are the workflow's own (:func:`tables.trust_tables`,
:func:`tables.score_tables`), with every prediction file treated as the test
split. Where validation predictions come with the test predictions,
temperature scaling is fitted on them as in the workflow and both the
before and after rows are produced.

Everything is written into a temporary directory that replaces the output
directory only once it is complete, so a failure leaves no partial output.
"""

from __future__ import annotations

import glob
import io
import json
import os
import pickle
import sys
import warnings as pywarnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal import __version__
from trustcal.calibration import T_MAX, T_MIN
from trustcal.calibration.table import CALIBRATION_COLUMNS, calibration_row
from trustcal.files import PAPER_CALIBRATOR, RAW, atomic_directory, paper_states, write_csv
from trustcal.measures.bootstrap import BootstrapParams
from trustcal.measures.trust import TrustParams
from trustcal.numerics import floored_log
from trustcal.predictions import (
    HISTORY_NAMES,
    ColumnError,
    InputWarning,
    Loaded,
    PredictionError,
    PredictionFile,
    ReadOptions,
    SeriesError,
    UnreadableFile,
    Warn,
    discover,
    history_beside,
    load_series,
    read_bytes,
)
from trustcal.reporting.figures.registry import CALIBRATOR_SECTION, FIGURES
from trustcal.reporting.tables import (
    MetricParams,
    Predictions,
    SweepParams,
    score_tables,
    trust_sweep_table,
    trust_tables,
)

MARKER = "assess.json"  # written last; marks a directory that assess may replace
FIGURE_FORMATS = ("png", "pdf")
SUMMARY_MAX_EPOCHS = 30  # more epochs than this: the summary shows the first and last 15

# progress(items, what, unit) → the items, shown as they are worked through (the CLI passes a tqdm bar).
Progress = Callable[[Sequence, str, str], Iterable]


def no_progress(items: Sequence, what: str, unit: str) -> Iterable:
    return items


@dataclass
class Assessment:
    files: list[PredictionFile]
    skipped: list[Path]
    tables: dict[str, pd.DataFrame]
    warnings: list[InputWarning]
    classes: int
    samples: list[int]
    history: pd.DataFrame | None = None
    history_file: Path | None = None
    clusters: int = TrustParams().clusters
    ece_bins: int = MetricParams().ece_bins[0]
    figures: list[str] = field(default_factory=list)
    figures_left_out: list[str] = field(default_factory=list)  # could be drawn with more input …
    figures_need: dict[str, str] = field(default_factory=dict)  # … which: figure → what it needs
    class_names: tuple[str, ...] | None = None  # class k's name (string labels, named columns); None: k itself

    def summary(self) -> str:
        return format_summary(self)


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


class CalibratorsNotFitted(PredictionError):
    """Calibrators were asked for by name, but no file has validation predictions to fit them on."""


class WherePossible(tuple):
    """Calibrators to fit where a file has validation predictions, and silently not elsewhere (the workflow's
    ``external`` rule: its config's methods, for sets that may have no validation data):
    ``calibrators=WherePossible(["temperature", "isotonic"])``."""


# What each calibrator warning asks of the user (assess's terms; trustcal.api rewrites the flags).
CALIBRATOR_FIXES = {
    "temperature_at_bound": " Fix: widen --t-min/--t-max.",
    "calibrator_at_bound": " Fix: widen --t-min/--t-max.",
}


def calibrator_warnings(cal, path: Path, t_min: float, t_max: float) -> list[InputWarning]:
    """The warnings of a calibrator fitted on ``path``'s validation predictions, each naming the calibrator
    and its state (:meth:`~trustcal.calibration.Calibrator.diagnostics`)."""
    return [
        InputWarning(code, str(path), f"{text} (fitted on the validation predictions).{CALIBRATOR_FIXES.get(code, '')}")
        for code, text in cal.diagnostics(t_min, t_max)
    ]


def predictions_of(
    loaded: Sequence[Loaded],
    warn: Warn,
    *,
    t_min=T_MIN,
    t_max=T_MAX,
    calibrators: Sequence[str] | None = None,
):
    """The :class:`Predictions` of every file, plus calibration.csv rows where calibrators were fitted
    (on a file's validation predictions; a file named as calibrated counts as the paper's
    after-calibration state, calibrator ``temperature``, and is used as it is).

    ``calibrators`` None: the paper's temperature scaling wherever validation predictions are given;
    :class:`WherePossible` (names): those, wherever validation predictions are given.
    Named calibrators are wanted on every epoch: one that no epoch could get (no validation predictions
    anywhere) is a :class:`CalibratorsNotFitted` error; one that some epochs lack gets a
    ``calibrators_not_fitted`` warning naming it and them (the other epochs' rows are right)."""
    requested = calibrators is not None and not isinstance(calibrators, WherePossible)
    calibrators = (PAPER_CALIBRATOR,) if calibrators is None else tuple(calibrators)
    preds, rows, source = [], [], {}
    unfitted: dict[int, Path] = {}  # epoch → a file of that epoch without validation predictions

    def add(p: Predictions, path: Path) -> None:
        key = (p.epoch, p.calibrator, p.split)
        if key in source:
            state = "before" if p.calibrator == RAW else f"after calibration ({p.calibrator})"
            raise SeriesError(
                f"{source[key]} and {path}: both give epoch {p.epoch} {state} calibration ({p.split} split): "
                "a file named as calibrated and a temperature fitted on another file's validation data. "
                "Fix: assess them separately, or drop one of them."
            )
        source[key] = path
        preds.append(p)

    for item in loaded:
        f = item.file
        state = PAPER_CALIBRATOR if f.calibrated else RAW
        add(Predictions(f.epoch, state, "test", item.probs, item.labels), f.path)
        if item.val_probs is None:
            if not f.calibrated:
                unfitted.setdefault(f.epoch, f.path)
            continue
        add(Predictions(f.epoch, state, "val", item.val_probs, item.val_labels), f.path)
        if f.calibrated:
            continue  # already calibrated: used as it is
        # probabilities are fitted as log max(p, PROB_FLOOR): the floor of the reported NLL, so a calibrator's
        # objective at the identity map is the raw NLL (docs/method.md §2.12)
        logits = item.logits if item.logits is not None else floored_log(item.probs)
        val_logits = item.val_logits if item.val_logits is not None else floored_log(item.val_probs)
        for method in calibrators:
            row, cal = calibration_row(
                f.epoch,
                {"val_logits": val_logits, "val_labels": item.val_labels},
                method,
                "val",
                t_min=t_min,
                t_max=t_max,
            )
            for w in calibrator_warnings(cal, f.path, t_min, t_max):
                warn(w)
            rows.append(row)
            add(Predictions(f.epoch, method, "test", cal.predict_proba(logits), item.labels), f.path)
            add(Predictions(f.epoch, method, "val", cal.predict_proba(val_logits), item.val_labels), f.path)
    if requested:
        _check_calibrators_fitted(calibrators, unfitted, {(p.epoch, p.calibrator) for p in preds}, warn)
    calibration = pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS)) if rows else None
    return preds, calibration


def _check_calibrators_fitted(calibrators, unfitted: dict[int, Path], have: set, warn: Warn) -> None:
    """Named calibrators that no epoch got: an error; those some epochs lack: a warning naming them and the files."""
    missing = {m: [e for e in sorted(unfitted) if (e, m) not in have] for m in calibrators}
    missing = {m: epochs for m, epochs in missing.items() if epochs}
    if not missing:
        return
    never = [m for m in missing if not any(c == m for _, c in have)]
    if never:
        files = sorted({str(p) for p in unfitted.values()})
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        raise CalibratorsNotFitted(
            f"{shown}: calibrator{'s' if len(never) > 1 else ''} {', '.join(never)} asked for, but "
            f"{'this file has' if len(files) == 1 else 'these files have'} no validation predictions to fit "
            f"{'them' if len(never) > 1 else 'it'} on, so no results of {'them' if len(never) > 1 else 'it'} "
            "would be written. Fix: give validation predictions of the same model (--validation FILE, or "
            "val_logits and val_labels in each .npz), or leave out --calibrators."
        )
    for method, epochs in missing.items():
        files = [unfitted[e] for e in epochs]
        warn(
            InputWarning(
                "calibrators_not_fitted",
                str(files[0]),
                f"calibrator '{method}' asked for but not fitted on {len(files)} file{'s' if len(files) > 1 else ''} "
                f"without validation predictions ({', '.join(p.name for p in files[:3])}"
                f"{', …' if len(files) > 3 else ''}): those epochs have no '{method}' rows. Fix: give their "
                "validation predictions (val_logits and val_labels in each .npz).",
            )
        )


# What a pickled loss history may name: numpy's array reconstruction, nothing else.
# np.load(allow_pickle=True) would run whatever code a crafted file names.
_HISTORY_PICKLE_GLOBALS = {
    (module, name)
    for module in ("numpy._core.multiarray", "numpy.core.multiarray")
    for name in ("_reconstruct", "scalar")
} | {("numpy", "ndarray"), ("numpy", "dtype")}


class _HistoryUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in _HISTORY_PICKLE_GLOBALS:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a loss history never needs; not loaded")
        return super().find_class(module, name)


def _load_pickled_npy(data: bytes):
    """The object in a ``.npy`` file written by ``np.save`` of a Python object, unpickled with numpy's types only."""
    f = io.BytesIO(data)
    version = np.lib.format.read_magic(f)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f".npy format version {version} (expected 1.0 or 2.0, as np.save writes)")
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    _, _, dtype = read_header(f)
    if dtype.kind != "O":
        return np.lib.format.read_array(f)
    obj = _HistoryUnpickler(f).load()
    return obj.item() if isinstance(obj, np.ndarray) and obj.shape == () else obj


def read_history(path: str | Path) -> pd.DataFrame:
    """Training history for the loss figure: a CSV with ``epoch, train_loss, val_loss``, or the author's
    ``loss_history.npy`` (a pickled dict ``{'train': [...], 'val': [...]}``). A pickle is read with numpy's
    array types only, so a crafted file cannot run code."""
    path = Path(path)
    data = read_bytes(path)
    if data[:6] == b"\x93NUMPY":
        try:
            obj = _load_pickled_npy(data)
            df = pd.DataFrame(
                {"train_loss": np.asarray(obj["train"], float), "val_loss": np.asarray(obj["val"], float)}
            )
        except Exception as exc:
            raise UnreadableFile(
                f"{path}: not a loss history ({type(exc).__name__}: {exc}); expected a dict with 'train' and 'val' "
                "loss lists, or a CSV with columns epoch, train_loss, val_loss. Fix: pass such a file to --history."
            ) from None
        return df.assign(epoch=np.arange(1, len(df) + 1), seed=0)
    try:
        df = pd.read_csv(path)
    except Exception as exc:
        raise UnreadableFile(
            f"{path}: cannot be read as CSV ({exc}). Fix: pass a CSV with columns epoch, train_loss, val_loss."
        ) from None
    missing = [c for c in ("epoch", "train_loss", "val_loss") if c not in df.columns]
    if missing:
        raise ColumnError(
            f"{path}: missing column(s) {missing}; expected epoch, train_loss, val_loss (found {list(df.columns)}). "
            "Fix: rename the columns."
        )
    return df.assign(seed=df["seed"] if "seed" in df else 0)


def _refuse_histories(sources) -> None:
    """Raise a clear error if a file given as predictions is a training history (what --history reads)."""
    named = [Path(m) for s in map(str, sources) for m in (sorted(glob.glob(s)) if glob.has_magic(s) else [s])]
    for path in named:
        if path.is_file():
            try:
                read_history(path)
            except Exception:
                continue
            raise PredictionError(
                f"{path}: a training loss history, not predictions. Fix: pass it with --history FILE, beside the "
                f"predictions, e.g. trustcal assess preds/ --history {path.name} --out assessed/ "
                f"(a {' or '.join(HISTORY_NAMES)} in the predictions' directory is used by itself)."
            )


def assess(
    sources,
    read: ReadOptions = ReadOptions(),
    trust: TrustParams = TrustParams(),
    metrics: MetricParams = MetricParams(),
    sweep: SweepParams | None = SweepParams(),
    *,
    t_min: float = T_MIN,
    t_max: float = T_MAX,
    calibrators: Sequence[str] | None = None,
    bootstrap: BootstrapParams | None = BootstrapParams(),
    history: str | Path | None = None,
    progress: Progress = no_progress,
) -> Assessment:
    """Read, check and assess the predictions named by ``sources`` (files, directories, globs).

    ``calibrators`` are fitted on each file's validation predictions (docs/method.md §2; None: temperature
    scaling where there are any, named ones: an error if no file has any, see :func:`predictions_of`);
    ``bootstrap`` (None: none) puts percentile intervals on the test split's numbers."""
    warnings: list[InputWarning] = []
    sources = [sources] if isinstance(sources, (str, Path)) else sources
    try:
        files, skipped = discover(sources, read)
    except PredictionError:
        _refuse_histories(sources)
        raise
    if read.validation and len(files) > 1:
        raise PredictionError(
            f"--validation {read.validation}: applies to a single prediction file, but {len(files)} were given. "
            "Fix: for a series, save val_logits and val_labels in each epoch's .npz file."
        )
    if history is None:  # a history file in a prediction directory is used, and said so
        history = history_beside(skipped)
        skipped = [p for p in skipped if p != history]
    history_table = read_history(history) if history else None
    try:
        loaded = load_series(progress(files, "reading", "file"), read, warnings.append)
    except PredictionError:
        _refuse_histories([f.path for f in files])
        raise
    return assess_loaded(
        loaded,
        trust,
        metrics,
        sweep,
        t_min=t_min,
        t_max=t_max,
        calibrators=calibrators,
        bootstrap=bootstrap,
        skipped=skipped,
        warnings=warnings,
        history=history_table,
        history_file=Path(history) if history else None,
        progress=progress,
    )


def assess_loaded(
    loaded: Sequence[Loaded],
    trust: TrustParams = TrustParams(),
    metrics: MetricParams = MetricParams(),
    sweep: SweepParams | None = SweepParams(),
    *,
    t_min: float = T_MIN,
    t_max: float = T_MAX,
    calibrators: Sequence[str] | None = None,
    bootstrap: BootstrapParams | None = BootstrapParams(),
    skipped: Sequence[Path] = (),
    warnings: list[InputWarning] | None = None,
    history: pd.DataFrame | None = None,
    history_file: Path | None = None,
    progress: Progress = no_progress,
) -> Assessment:
    """Assess predictions already read and checked (:func:`~trustcal.predictions.load`, or arrays by :mod:`trustcal.api`):
    the workflow's tables, with the ``calibrators`` fitted where validation predictions are given.
    ``progress`` follows the fitting of the calibrators (per file) and the computing of the tables (per epoch)."""
    warnings = [] if warnings is None else warnings
    fitting = (calibrators is None or calibrators) and any(
        x.val_probs is not None and not x.file.calibrated for x in loaded
    )
    preds, calibration = predictions_of(
        progress(loaded, "calibrating", "file") if fitting else loaded,
        warnings.append,
        t_min=t_min,
        t_max=t_max,
        calibrators=calibrators,
    )
    tables = assessment_tables(preds, trust, metrics, sweep, bootstrap, progress)
    if calibration is not None:
        tables["calibration"] = calibration
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
        trust.clusters,
        metrics.ece_bins[0],
        class_names=names,
    )


def assessment_tables(
    preds: Sequence[Predictions],
    trust: TrustParams,
    metrics: MetricParams,
    sweep: SweepParams | None,
    bootstrap: BootstrapParams | None,
    progress: Progress = no_progress,
) -> dict[str, pd.DataFrame]:
    """:func:`~trustcal.reporting.tables.trust_tables` and :func:`~trustcal.reporting.tables.score_tables`
    of ``preds``, computed one epoch at a time so that ``progress`` can follow a long series; the same
    tables, rows in the same order (``preds`` come epoch by epoch), as one call on every epoch.
    ``trust_sweep`` picks its epochs from the whole series, so it is computed on all of them at once."""
    by_epoch: dict[int, list[Predictions]] = {}
    for p in preds:
        by_epoch.setdefault(p.epoch, []).append(p)
    parts = [
        {**trust_tables(group, trust, None, bootstrap), **score_tables(group, metrics, bootstrap)}
        for group in progress(list(by_epoch.values()), "assessing", "epoch")
    ]
    tables = {}
    for name in parts[0]:
        tables[name] = pd.concat([part[name] for part in parts], ignore_index=True)
        if name == "dynamic_trust" and sweep is not None:  # where trust_tables puts it
            tables["trust_sweep"] = trust_sweep_table(preds, trust, sweep)
    return tables


# --------------------------------------------------------------------------- figures


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
    and last epochs) are drawn for a series only with a history (--history, or one found in a prediction
    directory by :func:`~trustcal.predictions.history_beside`). Those comparing calibrators are drawn when
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
    processes (:func:`figure_workers`); a figure that fails is skipped with a warning, never fatal."""
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
    """Processes that draw ``figures`` figures: at most ``processes`` (the caller's share of the cores:
    the CLI's every core, a workflow job's threads), at most one per figure. Forked, so that they share
    the tables and the imported matplotlib; where fork is not safe (macOS, Windows) this process alone.
    The library's default is 1, this process alone: forking a process with threads of its own (a
    notebook's kernel) is not safe."""
    if sys.platform != "linux" or figures < 2:
        return 1
    return max(1, min(figures, processes, len(os.sched_getaffinity(0))))


def available_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _draw_quietly(draw: Callable, paths: list[Path]) -> str | None:
    """Draw one figure: None, or what stopped it (an optional figure must not break the assessment)."""
    try:
        with pywarnings.catch_warnings():
            pywarnings.simplefilter("ignore")
            draw(paths)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


_FORKED: list[tuple[Callable, list[Path]]] = []  # the figures of the forked workers: inherited, never pickled


def _draw_forked(i: int) -> str | None:
    return _draw_quietly(*_FORKED[i])


def _drawn(jobs: list[tuple[Callable, list[Path]]], workers: int) -> Iterable[str | None]:
    """What :func:`_draw_quietly` says of each job, in order, each as soon as it is drawn."""
    if workers < 2:
        yield from (_draw_quietly(draw, paths) for draw, paths in jobs)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from trustcal.reporting.figures import style

    style.set_style()  # matplotlib imported once, before the fork
    _FORKED[:] = jobs
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_draw_forked, i) for i in range(len(jobs))]
            for future in futures:
                try:
                    yield future.result()
                except Exception as exc:  # a worker that died (memory): that figure is skipped
                    yield f"{type(exc).__name__}: {exc}"
    finally:
        _FORKED.clear()


# --------------------------------------------------------------------------- summary


SUMMARY_SCORES = ("accuracy", "ece", "net_trust_score")
SUMMARY_OPINION = ("belief", "disbelief", "uncertainty")


def _with_intervals(df: pd.DataFrame, names: Sequence[str]) -> list[str]:
    return [c for n in names for c in (n, f"{n}_lo", f"{n}_hi") if c in df.columns]


def calibrator_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per epoch and calibrator (``none``: the raw model), on the test predictions: accuracy, ECE,
    NTS and the network opinion, each with its bootstrap interval where there is one."""
    scores = tables["scores"]
    scores = scores[scores["split"] == "test"]
    scores = scores[["epoch", "calibrator", *_with_intervals(scores, SUMMARY_SCORES)]]
    trust = tables["trust"]
    net = trust[trust["label"].astype(str) == "network"]
    net = net[["epoch", "calibrator", *_with_intervals(net, SUMMARY_OPINION)]]
    order = {c: i for i, c in enumerate(dict.fromkeys(scores["calibrator"]))}  # none, then as fitted
    table = scores.merge(net, on=["epoch", "calibrator"])
    return table.sort_values(
        ["epoch", "calibrator"], key=lambda c: c.map(order) if c.name == "calibrator" else c
    ).reset_index(drop=True)


def summary_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`calibrator_table` for the paper's two states, with a boolean ``calibrated`` column."""
    return paper_states(calibrator_table(tables)).drop(columns="calibrator")


def format_summary(a: Assessment) -> str:
    table = summary_table(a.tables)
    states = sorted(table["calibrated"].unique())
    wide = table.pivot(index="epoch", columns="calibrated")
    same_acc = len(states) == 2 and np.allclose(wide["accuracy"][False], wide["accuracy"][True], rtol=0, atol=1e-12)
    block = ["ECE", "NTS", "b", "d", "u"] if same_acc else ["acc", "ECE", "NTS", "b", "d", "u"]
    widths = dict(acc=6, ECE=6, NTS=6, b=5, d=5, u=7)
    key = dict(acc="accuracy", ECE="ece", NTS="net_trust_score", b="belief", d="disbelief", u="uncertainty")
    fmt = dict(acc="{:.4f}", ECE="{:.4f}", NTS="{:.4f}", b="{:.3f}", d="{:.3f}", u="{:.1e}")
    block_width = sum(widths[c] for c in block) + len(block) - 1
    single = list(wide.index) == [0]  # one prediction set whose name holds no epoch: no epoch column
    lead_width = (0 if single else 5) + (10 if same_acc else 0)

    def cells(values: dict) -> str:
        return " ".join(
            fmt[c].format(values[c]).rjust(widths[c]) if pd.notna(values[c]) else "–".rjust(widths[c]) for c in block
        )

    groups = " " * lead_width + "".join(
        "  " + (" after calibration " if s else " before calibration ").center(block_width, "-") for s in states
    )
    header = (
        ("" if single else "epoch")
        + ("  accuracy" if same_acc else "")
        + "".join("  " + " ".join(c.rjust(widths[c]) for c in block) for _ in states)
    )
    epochs = list(wide.index)
    if len(epochs) > SUMMARY_MAX_EPOCHS:
        half = SUMMARY_MAX_EPOCHS // 2
        epochs = epochs[:half] + [None] + epochs[-half:]
    rows = []
    for e in epochs:
        if e is None:
            rows.append(
                f"{'…':>5}  ({len(wide) - 2 * (SUMMARY_MAX_EPOCHS // 2)} more epochs in scores.csv and trust.csv)"
            )
            continue
        line = "" if single else f"{e:>5}"
        if same_acc:
            line += f"  {wide['accuracy'][False][e]:>8.4f}"
        for s in states:
            line += "  " + cells({c: wide[key[c]][s].get(e, np.nan) for c in block})
        rows.append(line)
    files = a.files
    n_samples = ", ".join(map(str, a.samples))
    head = [
        f"trustcal assess: {len(files)} prediction file{'s' if len(files) > 1 else ''} "
        f"({', '.join(p.name for p in [f.path for f in files][:2])}{', …' if len(files) > 2 else ''}), "
        f"{a.classes} classes, {n_samples} test samples per file",
    ]
    if a.class_names:
        head.append("classes: " + ", ".join(f"{k} {name}" for k, name in enumerate(a.class_names)))
    if "calibration" in a.tables:  # each calibrator by name; T only for temperature scaling (others have none)
        cal = a.tables["calibration"]
        t = cal.loc[cal["calibrator"] == "temperature", "temperature"]
        others = [c for c in dict.fromkeys(cal["calibrator"]) if c != "temperature"]
        if len(t):
            spread = f"{t.min():.3g}" if len(t) == 1 else f"{t.min():.3g} … {t.max():.3g}"
            head.append(f"temperature scaling fitted on the validation data: T = {spread}")
        if others:
            head.append(f"also fitted on the validation data: {', '.join(others)}")
    if a.history_file is not None:
        head.append(f"training history: {a.history_file}")
    if a.skipped:
        head.append(f"skipped (no epoch number in the name): {', '.join(p.name for p in a.skipped)}")
    foot = [
        f"ECE: top-label, {a.ece_bins} bins; NTS: NetTrustScore; b, d, u: network trust opinion (belief, disbelief, uncertainty)"
    ]
    foot += calibrator_lines(a)
    by_need: dict[str, list[str]] = {}
    for name in a.figures_left_out:
        by_need.setdefault(a.figures_need.get(name, "more input"), []).append(name)
    foot += [f"figures not drawn (need {need}): {', '.join(names)}" for need, names in by_need.items()]
    foot += [
        f"{len(a.warnings)} warning{'s' if len(a.warnings) != 1 else ''}" + (" (warnings.txt)" if a.warnings else ""),
    ]
    if single:  # no epoch column: drop the two spaces that would separate it from the rest
        groups, header, rows = groups[2:], header[2:], [r[2:] for r in rows]
    return "\n".join(head + ["", groups, header, *rows, ""] + foot)


def _interval(row: pd.Series, name: str, fmt: str) -> str:
    value = fmt.format(row[name]) if pd.notna(row[name]) else "–"
    lo, hi = row.get(f"{name}_lo"), row.get(f"{name}_hi")
    if lo is None or pd.isna(lo):
        return value
    return f"{value} [{fmt.format(lo)}, {fmt.format(hi)}]"


def calibrator_lines(a: Assessment) -> list[str]:
    """The last epoch of every calibrator with the bootstrap intervals (none when there are no intervals
    and only the paper's two states)."""
    table = calibrator_table(a.tables)
    if table.empty or ("ece_lo" not in table and table["calibrator"].nunique() <= 2):
        return []
    last = table[table["epoch"] == table["epoch"].max()]
    epoch = int(last["epoch"].iloc[0])
    lines = [
        "",
        ("test set" if epoch == 0 and table["epoch"].nunique() == 1 else f"epoch {epoch}, test set")
        + (", [95 % bootstrap interval]" if "ece_lo" in table else "")
        + ":",
    ]
    width = max(len(str(c)) for c in last["calibrator"])
    for _, row in last.iterrows():
        lines.append(
            f"  {str(row['calibrator']):<{width}}  accuracy {_interval(row, 'accuracy', '{:.4f}')}  "
            f"ECE {_interval(row, 'ece', '{:.4f}')}  NTS {_interval(row, 'net_trust_score', '{:.4f}')}  "
            f"b {_interval(row, 'belief', '{:.3f}')}"
        )
    return lines


def _file_list(a: Assessment) -> list[dict]:
    return [dict(path=str(f.path), epoch=f.epoch, calibrated=f.calibrated) for f in a.files]


def _records(df: pd.DataFrame) -> list[dict]:
    return json.loads(df.to_json(orient="records", double_precision=15))  # NaN → null, numpy → Python numbers


def _temperature_records(calibration: pd.DataFrame | None) -> list[dict]:
    """epoch and T of each temperature-scaling fit (the other calibrators have no temperature)."""
    if calibration is None:
        return []
    return _records(calibration.loc[calibration["calibrator"] == "temperature", ["epoch", "temperature"]])


def summary_dict(a: Assessment) -> dict:
    """The summary for scripts (``trustcal assess --json``): per epoch and state on the test predictions,
    accuracy, ECE, NetTrustScore and the network trust opinion (belief, disbelief, uncertainty), each with
    its bootstrap interval (``*_lo``, ``*_hi``); the same per calibrator (``calibrators``); the files,
    the temperatures fitted, the figures and every warning. Undefined numbers are null."""
    return dict(
        trustcal_version=__version__,
        files=_file_list(a),
        skipped=[str(p) for p in a.skipped],
        classes=a.classes,
        class_names=list(a.class_names) if a.class_names else None,
        test_samples=a.samples,
        clusters=a.clusters,
        ece_bins=a.ece_bins,
        history=str(a.history_file) if a.history_file else None,
        epochs=_records(summary_table(a.tables)),
        calibrators=_records(calibrator_table(a.tables)),
        temperatures=_temperature_records(a.tables.get("calibration")),
        figures=a.figures,
        figures_left_out=a.figures_left_out,
        warnings=[dict(code=w.code, file=w.file, message=w.message) for w in a.warnings],
    )


# --------------------------------------------------------------------------- output


def flagged_predictions(a: Assessment) -> list[tuple[int, bool]]:
    """(epoch, calibrated) of every file whose probabilities look like a softmax applied twice."""
    suspect = {str(w.file) for w in a.warnings if w.code == "double_softmax"}
    return sorted({(f.epoch, bool(f.calibrated)) for f in a.files if str(f.path) in suspect})


def paper_runs(a: Assessment, dataset: str) -> dict:
    """The assessment as one seed of ``dataset`` for :func:`trustcal.reporting.verdict.evaluate`."""
    from trustcal.reporting.verdict import run_from_tables

    history = a.history if a.history is not None else pd.DataFrame(columns=["epoch", "train_loss", "val_loss"])
    return {dataset: {0: run_from_tables(a.tables["trust"], history)}}


def write_paper_verdict(a: Assessment, dataset: str, out: Path, settings: dict) -> pd.DataFrame:
    """The paper's claims about ``dataset`` judged on these predictions: reproduction.{md,csv} in ``out``.
    Epochs flagged as double softmax are named, and every claim is recomputed without them."""
    from trustcal.reporting.verdict import describe_flagged, write_verdict

    provenance = (
        f"Predictions: {len(a.files)} files ({', '.join(sorted({str(f.path.parent) for f in a.files}))}); "
        "one training run, so no sd over seeds; no test-set bootstrap."
    )
    flagged = flagged_predictions(a)
    if flagged:
        provenance += (
            f" Predictions that went through softmax twice: {describe_flagged(flagged)} "
            "(each claim is also computed without them)."
        )
    return write_verdict(
        paper_runs(a, dataset),
        {**settings, "provenance": provenance},
        out / "reproduction.md",
        out / "reproduction.csv",
        flagged={dataset: flagged},
    )


def write_assessment(
    a: Assessment,
    out: Path,
    *,
    title: str,
    figures: bool = True,
    meta: dict | None = None,
    paper_claims: str | None = None,
    progress: Progress = no_progress,
    figure_formats: Sequence[str] = FIGURE_FORMATS,
    processes: int = 1,
) -> None:
    """Tables, figures (a file per format of ``figure_formats``, drawn in up to ``processes`` processes),
    summary.txt, warnings.txt and assess.json into ``out`` (a fresh directory); with ``paper_claims`` (a
    dataset of the paper) also the verdict on the paper's claims."""
    for name, df in a.tables.items():
        write_csv(df, out / f"{name}.csv")
    if paper_claims:
        meta = meta or {}
        settings = {
            "clusters": a.clusters,
            "trust": meta.get("trust", {}),
            "epochs": int(max((f.epoch for f in a.files), default=0)),
        }
        write_paper_verdict(a, paper_claims, out, settings)
    fig_dir = out / "figures"
    fig_dir.mkdir(exist_ok=True)
    if figures:
        a.figures = draw_figures(a, fig_dir, title, progress, figure_formats, processes)
    (out / "summary.txt").write_text(a.summary() + "\n")
    (out / "warnings.txt").write_text("".join(f"[{w.code}] {w}\n" for w in a.warnings))
    info = dict(
        trustcal_version=__version__,
        files=_file_list(a),
        skipped=[str(p) for p in a.skipped],
        history=str(a.history_file) if a.history_file else None,
        class_names=list(a.class_names) if a.class_names else None,
        tables=[f"{n}.csv" for n in a.tables],
        figures=a.figures,
        warnings=len(a.warnings),
        **(meta or {}),
    )
    (out / MARKER).write_text(json.dumps(info, indent=2, default=str) + "\n")


def default_title(sources) -> str:
    """The figures' title: a single file's name without its extension (``model.csv.gz`` → ``model``),
    else the name of the directory of the series (given, or holding the files or the glob)."""
    sources = [Path(str(s)) for s in sources]
    first = sources[0]
    if len(sources) == 1 and first.is_file():
        name = first.name[: -len(".gz")] if first.name.endswith(".gz") else first.name
        return Path(name).stem or first.name
    if first.is_dir():
        return first.resolve().name
    return first.parent.resolve().name or first.name


def assess_to_dir(
    sources,
    out: str | Path,
    read: ReadOptions = ReadOptions(),
    trust: TrustParams = TrustParams(),
    metrics: MetricParams = MetricParams(),
    sweep: SweepParams | None = SweepParams(),
    *,
    t_min: float = T_MIN,
    t_max: float = T_MAX,
    calibrators: Sequence[str] | None = None,
    bootstrap: BootstrapParams | None = BootstrapParams(),
    history: str | Path | None = None,
    title: str | None = None,
    figures: bool = True,
    figure_formats: Sequence[str] = FIGURE_FORMATS,
    paper_claims: str | None = None,
    progress: Progress = no_progress,
    processes: int = 1,
) -> Assessment:
    """:func:`assess`, then write everything to ``out``; on any error ``out`` is left as it was.
    ``paper_claims`` (``mnist`` or ``cifar10``): also judge the paper's claims about that dataset.
    ``progress`` shows the reading of the files and the drawing of the figures; ``processes``: how
    many processes may draw the figures (:func:`figure_workers`)."""
    sources = [str(s) for s in ([sources] if isinstance(sources, (str, Path)) else sources)]
    with atomic_directory(out, MARKER) as tmp:
        a = assess(
            sources,
            read,
            trust,
            metrics,
            sweep,
            t_min=t_min,
            t_max=t_max,
            calibrators=calibrators,
            bootstrap=bootstrap,
            history=history,
            progress=progress,
        )
        meta = dict(
            sources=sources,
            read_options=asdict(read),
            trust=asdict(trust),
            metrics=asdict(metrics),
            sweep=asdict(sweep) if sweep else None,
            t_min=t_min,
            t_max=t_max,
            calibrators=None if calibrators is None else list(calibrators),
            bootstrap=asdict(bootstrap) if bootstrap else None,
        )
        write_assessment(
            a,
            tmp,
            title=title or default_title(sources),
            figures=figures,
            meta=meta,
            paper_claims=paper_claims,
            progress=progress,
            figure_formats=figure_formats,
            processes=processes,
        )
    return a
