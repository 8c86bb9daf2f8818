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
from trustcal.predictions.classes import class_map, transposed_hint
from trustcal.predictions.errors import (
    CellError,
    ColumnError,
    InputWarning,
    LabelError,
    LengthMismatch,
    ProbabilityError,
    Warn,
)
from trustcal.predictions.formats import read_labels_file, read_table
from trustcal.predictions.options import ReadOptions
from trustcal.predictions.series import PredictionFile
from trustcal.predictions.table import Table

RANGE_TOL = 1e-6  # probabilities this far outside [0, 1] are float rounding, clipped
DOUBLE_SOFTMAX_TOL = 1e-5
PROBS_SHARE = 0.99  # kind auto: at least this share of rows reads as probabilities → probabilities
LOGITS_SHARE = 0.5  # at most this share → logits; in between: ambiguous, an error asking for the kind
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


def check_labels(labels: np.ndarray, k: int, path: Path, where, chosen: bool = False) -> np.ndarray:
    """Labels as integers 0 … K−1, or a :class:`LabelError` / :class:`CellError`. ``chosen``: the probability
    columns were chosen among a file's columns (``prob_columns`` applies)."""
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
            f"order); add the missing classes' columns" + (f" or check prob_columns.{hint}" if chosen else f".{hint}"),
            options=("prob_columns",) if chosen else (),
        )
    return labels.astype(np.int64)


def _probability_rows(values: np.ndarray, opts: ReadOptions) -> np.ndarray:
    """Rows that read as probabilities: every value in [0, 1] (a binary column: the value), or
    (K ≥ 2) summing to 1 within the tolerance."""
    in_range = ((values >= -RANGE_TOL) & (values <= 1 + RANGE_TOL)).all(axis=1)
    if values.shape[1] == 1:
        return in_range
    return in_range | (np.abs(values.sum(axis=1) - 1) <= opts.sum_tolerance)


def detect_kind(values: np.ndarray, opts: ReadOptions, path: Path, where, warn: Warn) -> str:
    """``probs`` or ``logits`` from the share of rows that read as probabilities (:func:`_probability_rows`).

    At least :data:`PROBS_SHARE` of the rows: probabilities (a bad cell among them is then an error
    naming it); at most :data:`LOGITS_SHARE`: logits (with a warning); in between the file is
    ambiguous, an error asking for the kind. One extreme cell cannot flip a file of 100 rows or more.
    ``values`` is N×K (one column for a binary classifier)."""
    ok = _probability_rows(values, opts)
    n, share = len(ok), float(ok.mean())
    if share >= PROBS_SHARE:
        return "probs"
    outside = (values < -RANGE_TOL) | (values > 1 + RANGE_TOL)
    if share <= LOGITS_SHARE:
        binary = values.shape[1] == 1
        warn(
            InputWarning(
                "logits_as_probabilities",
                str(path),
                f"{int(outside.sum())} values lie outside [0, 1] (min {values.min():.4g}, max {values.max():.4g})"
                + (
                    ": they look like a binary classifier's scores (decision_function), so they were read as the "
                    "logit of the positive class (P = sigmoid(score))."
                    if binary
                    else " and the rows do not sum to 1: they look like logits passed as probabilities, so they were "
                    "read as logits and turned into probabilities with a softmax."
                )
                + ' Fix: pass kind="logits" to confirm (this warning goes away)'
                + (", or export the probabilities." if binary else ", or export the softmax probabilities."),
                ("kind",),
            )
        )
        return "logits"
    loc = _first(outside | ~ok[:, None])
    raise ProbabilityError(
        f"{path}: cannot tell probabilities from logits: {int(ok.sum())} of {n} rows read as probabilities and "
        f"{n - int(ok.sum())} do not (the first: {where(*loc)}: {values[loc]:.6g}). "
        'Fix: pass kind="probs" (the other rows are then errors naming their cells) or kind="logits".',
        options=("kind",),
    )


def to_probabilities(table: Table, opts: ReadOptions, warn: Warn) -> tuple[np.ndarray, np.ndarray | None]:
    """(probabilities, logits or None) after checking every value of ``table``; N×K, in column order
    (a binary classifier's single column stays one column: :class:`~trustcal.predictions.classes.ClassMap`
    makes it two)."""
    path, where = table.path, table.where
    values = table.values.reshape(len(table.values), -1)
    _check_finite(
        values,
        path,
        where,
        "a finite probability or logit",
        "repair the export (NaN: a missing value or a diverged model; ±inf: an overflow) or drop those rows.",
    )
    kind = table.kind if table.kind != "auto" else detect_kind(values, opts, path, where, warn)
    if kind == "logits":
        return (softmax(values) if values.shape[1] > 1 else values), values
    for mask, what in ((values < -RANGE_TOL, "negative"), (values > 1 + RANGE_TOL, "greater than 1")):
        if mask.any():
            loc = _first(mask)
            raise ProbabilityError(
                f"{path}: {where(*loc)}: probability {values[loc]:.6g} is {what} ({int(mask.sum())} such value(s)); "
                "expected probabilities in [0, 1]. Fix: export the softmax output; if the values are logits, "
                'pass kind="logits".',
                options=("kind",),
            )
    probs = np.clip(values, 0.0, 1.0)
    if probs.shape[1] == 1:
        return probs, None
    sums = probs.sum(axis=1)
    off = np.abs(sums - 1) > opts.sum_tolerance
    if off.any():
        (r,) = _first(off)
        if not opts.renormalize:
            raise ProbabilityError(
                f"{path}: {where(r)}: the probabilities sum to {sums[r]:.6g}; expected 1 within ±{opts.sum_tolerance:g} "
                f"({int(off.sum())} of {len(sums)} rows are off). Fix: export softmax probabilities (one column per "
                "class, all classes), or pass renormalize=True to divide every row by its sum.",
                options=("renormalize",),
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
                "(renormalize=True).",
                ("renormalize",),
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
        # two classes: perhaps one column read as the other class's (a binary classifier's P(y = 0))
        binary = (
            "; a single column is the probability (or score) of the positive class: name the class it is about "
            "with positive_class=NAME"
            if k == 2
            else ""
        )
        warn(
            InputWarning(
                "below_chance",
                str(path),
                f"accuracy {acc:.3f} is below chance (1/K = {1 / k:.3f}). Fix: check that the labels are in the "
                f"same order as the rows and that column k holds the probability of class k{binary}.",
                ("positive_class",) if k == 2 else (),
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
    names: tuple[str, ...] | None = None  # the classes' names in class order (None: the indices 0 … K−1)

    @property
    def classes(self) -> int:
        return self.probs.shape[1]


def _attach_labels(table: Table, opts: ReadOptions) -> None:
    if opts.labels:
        table.labels, table.label_where = read_labels_file(opts.labels, opts)
        table.label_path = Path(opts.labels)
    check_lengths(table, "predictions")


def check_lengths(table: Table, what: str) -> None:
    """One label per row, or a :class:`LengthMismatch` (with a hint when the array looks transposed)."""
    if len(table.labels) != len(table.values):
        lp = table.label_path or table.path
        raise LengthMismatch(
            f"{table.path}: {len(table.values)} rows of {what} but {lp}: {len(table.labels)} labels; "
            "expected one label per row. Fix: pass the labels of the same samples, in the same order."
            + transposed_hint(table.values.shape, len(table.labels))
        )


def _aligned(probs, logits, labels, names, target, path: Path):
    """The validation classes put in the order of the test classes (``target``) when both are named."""
    if names == target:
        return probs, logits, labels
    if names is None or target is None or sorted(names) != sorted(target):
        raise LabelError(
            f"{path}: the validation classes ({', '.join(names) if names else 'indices 0 … K−1'}) differ from the "
            f"test classes ({', '.join(target) if target else 'indices 0 … K−1'}); expected the same classes. "
            "Fix: write both with the same column names and the same kind of labels."
        )
    order = np.array([names.index(c) for c in target])
    rank = np.argsort(order)  # validation class i is test class rank[i]
    return probs[:, order], None if logits is None else logits[:, order], rank[labels]


def check_table(table: Table, opts: ReadOptions, warn, k: int | None = None, names=False):
    """(probs, labels, logits, class names) of a read table after every check: the columns matched to the
    classes (:func:`~trustcal.predictions.classes.class_map`: by name, a binary column made two).
    ``names`` (the test classes' names, for validation data): the classes are put in that order."""
    label_path = table.label_path or table.path
    cmap = class_map(
        table.values,
        table.labels,
        table.columns,
        table.path,
        label_path,
        table.label_where,
        opts.positive_class,
        chosen=table.chosen,
    )
    probs, logits = to_probabilities(table, opts, warn)
    if cmap.positive is not None:  # a binary classifier's column
        logits = None if logits is None else cmap.apply(logits[:, 0], "logits")
        probs = softmax(logits) if logits is not None else cmap.apply(probs[:, 0], "probs")
    elif cmap.order is not None:
        probs, logits = cmap.apply(probs, "probs"), None if logits is None else cmap.apply(logits, "logits")
    if k is not None and probs.shape[1] != k:
        raise ColumnError(
            f"{table.path}: {probs.shape[1]} probability columns; expected {k} (one per class). "
            "Fix: export every class's probability" + (", or correct num_classes." if opts.num_classes else "."),
            options=("num_classes",) if opts.num_classes else (),
        )
    labels = check_labels(cmap.labels, probs.shape[1], label_path, table.label_where, table.chosen)
    if names is not False:
        probs, logits, labels = _aligned(probs, logits, labels, cmap.names, names, table.path)
        return probs, labels, logits, names
    return probs, labels, logits, cmap.names


def load(file: PredictionFile, opts: ReadOptions, warn: Warn) -> Loaded:
    """Read and check one prediction file (plus its ``labels`` and ``validation`` files when given)."""
    table = read_table(file.path, opts)
    _attach_labels(table, opts)
    probs, labels, logits, names = check_table(table, opts, warn, opts.num_classes)
    suspicious(probs, labels, file.path, warn)
    out = Loaded(file, probs, labels, logits, names=names)
    val = table.val
    if opts.validation:
        val = read_table(opts.validation, replace(opts, labels=None))
        if val.val is not None:  # an .npz with val_* arrays given as the validation file
            val = val.val
    if val is not None:
        check_lengths(val, "validation predictions")
        out.val_probs, out.val_labels, out.val_logits, _ = check_table(val, opts, warn, probs.shape[1], names)
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
        if loaded and item.names != loaded[0].names:
            raise LabelError(
                f"{f.path}: classes {', '.join(item.names or ['0 … K−1'])} but {loaded[0].file.path}: "
                f"{', '.join(loaded[0].names or ['0 … K−1'])}; expected the same classes in every file of a series. "
                "Fix: write every file with the same column names and labels."
            )
        loaded.append(item)
    return loaded
