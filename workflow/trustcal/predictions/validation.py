"""Checking predictions and labels, and turning them into probabilities.

The paper's method is black-box: it needs only predicted probabilities (or
logits) and true labels. Every value read by :mod:`trustcal.predictions.formats`
is checked here; each problem is a :class:`~trustcal.predictions.errors.PredictionError`,
suspicious but valid input an :class:`~trustcal.predictions.errors.InputWarning`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from trustcal.calibration.temperature import softmax
from trustcal.predictions.errors import (
    CellError,
    ColumnError,
    InputWarning,
    LabelError,
    LengthMismatch,
    ProbabilityError,
    Warn,
)
from trustcal.predictions.formats import (
    ReadOptions,
    Table,
    read_labels_file,
    read_table,
)
from trustcal.predictions.series import PredictionFile

RANGE_TOL = 1e-6  # probabilities this far outside [0, 1] are float rounding, clipped
DOUBLE_SOFTMAX_TOL = 1e-5
DOUBLE_SOFTMAX_FRACTION = 0.5  # warn when at least this fraction of rows is that flat (K ≥ 3: for K = 2
# the bound e/(e+1) = 0.73 is too loose to tell a double softmax from an unsure model)


# --------------------------------------------------------------------------- checks


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _check_finite(values: np.ndarray, path: Path, where, what: str, fix: str) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        loc = _first(bad)
        v = values[loc]
        desc = "empty or NaN" if np.isnan(v) else f"{'+' if v > 0 else '-'}inf"
        n = int(bad.sum())
        raise CellError(
            f"{path}: {where(*loc)}: {desc} ({n} such cell{'s' if n > 1 else ''} in the file); "
            f"expected {what}. Fix: {fix}"
        )


def check_labels(labels: np.ndarray, k: int, path: Path, where) -> np.ndarray:
    """Labels as integers 0 … K−1, or a :class:`LabelError` / :class:`CellError`."""
    _check_finite(
        labels, path, where, "an integer class index", "every sample needs its true label; drop unlabelled rows."
    )
    frac = labels != np.round(labels)
    if frac.any():
        (r,) = _first(frac)
        raise LabelError(
            f"{path}: {where(r)}: label {labels[r]:g} is not an integer; expected class indices 0 … {k - 1}. "
            "Fix: write the true class index (not a probability or a class name)."
        )
    out = (labels < 0) | (labels >= k)
    if out.any():
        (r,) = _first(out)
        hint = ""
        if labels.min() >= 1 and labels.max() == k:
            hint = " Your labels look 1-based (1 … K): subtract 1."
        raise LabelError(
            f"{path}: {where(r)}: label {int(labels[r])} is out of range for {k} classes; expected 0 … {k - 1} "
            f"({int(out.sum())} such label(s)). Fix: labels must index the probability columns (0-based, in column "
            f"order); add the missing classes' columns or check --prob-columns.{hint}"
        )
    return labels.astype(np.int64)


def to_probabilities(table: Table, opts: ReadOptions, warn: Warn) -> tuple[np.ndarray, np.ndarray | None]:
    """(probabilities, logits or None) after checking every value of ``table``."""
    values, path, where = table.values, table.path, table.where
    _check_finite(
        values,
        path,
        where,
        "a finite probability or logit",
        "repair the export (NaN: a missing value or a diverged model; ±inf: an overflow) or drop those rows.",
    )
    kind = table.kind
    if kind == "auto":
        kind = "probs"
        outside = (values < -RANGE_TOL) | (values > 1 + RANGE_TOL)
        if outside.any() and not (np.abs(values.sum(axis=1) - 1) <= opts.sum_tolerance).all():
            kind = "logits"
            warn(
                InputWarning(
                    "logits_as_probabilities",
                    str(path),
                    f"{int(outside.sum())} values lie outside [0, 1] (min {values.min():.4g}, max {values.max():.4g}) "
                    "and the rows do not sum to 1: they look like logits passed as probabilities, so they were read as "
                    "logits and turned into probabilities with a softmax. Fix: pass --kind logits to confirm (this "
                    "warning goes away), or export the softmax probabilities.",
                )
            )
    if kind == "logits":
        return softmax(values), values
    for mask, what in ((values < -RANGE_TOL, "negative"), (values > 1 + RANGE_TOL, "greater than 1")):
        if mask.any():
            loc = _first(mask)
            raise ProbabilityError(
                f"{path}: {where(*loc)}: probability {values[loc]:.6g} is {what} ({int(mask.sum())} such value(s)); "
                "expected probabilities in [0, 1]. Fix: export the softmax output; if the values are logits, "
                "pass --kind logits."
            )
    probs = np.clip(values, 0.0, 1.0)
    sums = probs.sum(axis=1)
    off = np.abs(sums - 1) > opts.sum_tolerance
    if off.any():
        (r,) = _first(off)
        if not opts.renormalize:
            raise ProbabilityError(
                f"{path}: {where(r)}: the probabilities sum to {sums[r]:.6g}; expected 1 within ±{opts.sum_tolerance:g} "
                f"({int(off.sum())} of {len(sums)} rows are off). Fix: export softmax probabilities (one column per "
                "class, all classes), or pass --renormalize to divide every row by its sum."
            )
        zero = sums <= 0
        if zero.any():
            (r,) = _first(zero)
            raise ProbabilityError(
                f"{path}: {where(r)}: every probability is 0, so the row cannot be renormalised; expected at least "
                "one positive probability per row. Fix: repair or drop that row."
            )
        warn(
            InputWarning(
                "renormalized",
                str(path),
                f"{int(off.sum())} of {len(sums)} rows did not sum to 1 within "
                f"±{opts.sum_tolerance:g} (sums {sums.min():.4g} … {sums.max():.4g}); every row was divided by its sum "
                "(--renormalize).",
            )
        )
        probs = probs / sums[:, None]
    return probs, None


def double_softmax_threshold(k: int) -> float:
    """e/(e + K − 1): the largest probability a softmax of values in [0, 1] can give."""
    return math.e / (math.e + k - 1)


def flat_rows(probs: np.ndarray) -> int:
    """Rows whose largest probability is at most e/(e + K − 1) (+ a float tolerance)."""
    return int((probs.max(axis=1) <= double_softmax_threshold(probs.shape[1]) + DOUBLE_SOFTMAX_TOL).sum())


def suspicious(probs: np.ndarray, labels: np.ndarray, path: Path, warn: Warn) -> None:
    """Warnings for valid but suspicious predictions: softmax twice, below chance, absent classes."""
    n, k = probs.shape
    flat = flat_rows(probs)
    if k >= 3 and flat >= DOUBLE_SOFTMAX_FRACTION * n:
        warn(
            InputWarning(
                "double_softmax",
                str(path),
                f"{flat} of {n} rows ({flat / n:.0%}) have a largest probability ≤ e/(e+K−1) = "
                f"{double_softmax_threshold(k):.4f}, the most a softmax of probabilities can give: the predictions "
                "probably went through softmax twice. Fix: export softmax(logits) once; ignore this if the model is "
                "really that unsure (e.g. untrained).",
            )
        )
    acc = float((probs.argmax(axis=1) == labels).mean())
    if acc < 1.0 / k:
        warn(
            InputWarning(
                "below_chance",
                str(path),
                f"accuracy {acc:.3f} is below chance (1/K = {1 / k:.3f}). Fix: check that the labels are in the "
                "same order as the rows and that column k holds the probability of class k.",
            )
        )
    absent = np.setdiff1d(np.arange(k), labels)
    if len(absent):
        warn(
            InputWarning(
                "absent_class",
                str(path),
                f"class(es) {', '.join(map(str, absent))} never appear among the {n} labels: their per-class "
                "numbers (trust spectrum, trust density, one-vs-rest reliability) are undefined (NaN) and their trust "
                "opinion rests on no positive evidence.",
            )
        )


# --------------------------------------------------------------------------- loading


@dataclass
class Loaded:
    """One checked prediction file: test predictions and, when present, validation predictions."""

    file: PredictionFile
    probs: np.ndarray
    labels: np.ndarray
    logits: np.ndarray | None  # None when the file held probabilities
    val_probs: np.ndarray | None = None
    val_labels: np.ndarray | None = None
    val_logits: np.ndarray | None = None

    @property
    def classes(self) -> int:
        return self.probs.shape[1]


def _attach_labels(table: Table, opts: ReadOptions) -> None:
    if opts.labels:
        table.labels, table.label_where = read_labels_file(opts.labels, opts)
        table.label_path = Path(opts.labels)
    if len(table.labels) != len(table.values):
        lp = table.label_path or table.path
        raise LengthMismatch(
            f"{table.path}: {len(table.values)} rows of predictions but {lp}: {len(table.labels)} labels; "
            "expected one label per row. Fix: pass the labels of the same samples, in the same order."
        )


def check_table(table: Table, opts: ReadOptions, warn, k: int | None = None):
    """(probs, labels, logits) of a read table after every check."""
    if k is not None and table.values.shape[1] != k:
        raise ColumnError(
            f"{table.path}: {table.values.shape[1]} probability columns; expected {k} (one per class). "
            "Fix: export every class's probability" + (", or correct --num-classes." if opts.num_classes else ".")
        )
    probs, logits = to_probabilities(table, opts, warn)
    labels = check_labels(table.labels, probs.shape[1], table.label_path or table.path, table.label_where)
    return probs, labels, logits


def load(file: PredictionFile, opts: ReadOptions, warn: Warn) -> Loaded:
    """Read and check one prediction file (plus --labels and --validation when given)."""
    table = read_table(file.path, opts)
    _attach_labels(table, opts)
    probs, labels, logits = check_table(table, opts, warn, opts.num_classes)
    suspicious(probs, labels, file.path, warn)
    out = Loaded(file, probs, labels, logits)
    val = table.val
    if opts.validation:
        val = read_table(opts.validation, replace(opts, labels=None))
        if val.val is not None:  # an .npz with val_* arrays given as --validation
            val = val.val
    if val is not None:
        if len(val.labels) != len(val.values):
            raise LengthMismatch(
                f"{val.path}: {len(val.values)} rows of validation predictions but {len(val.labels)} labels; "
                "expected one label per row. Fix: save the validation labels of the same samples."
            )
        out.val_probs, out.val_labels, out.val_logits = check_table(val, opts, warn, probs.shape[1])
    return out


def load_series(files: list[PredictionFile], opts: ReadOptions, warn: Warn) -> list[Loaded]:
    loaded = []
    for f in files:
        item = load(f, opts, warn)
        if loaded and item.classes != loaded[0].classes:
            raise LengthMismatch(
                f"{f.path}: {item.classes} classes but {loaded[0].file.path}: {loaded[0].classes}; expected the same "
                "classes in every file of a series. Fix: assess the files separately."
            )
        loaded.append(item)
    return loaded
