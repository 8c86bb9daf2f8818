"""Which column is which class: class indices, class names and binary classifiers.

The rules (docs/method.md §11, "Predictions from outside"):

- Columns named by class index (``3,1,2,0``, ``Class_3_Probability``, ``p_3``: one integer,
  the same text around it in every column) are put in the order of those integers, whatever
  their order in the file. When those integers are not 0 … K−1 (e.g. 1 … K), the labels must be
  among them and class k is the k-th smallest.
- Labels given as class names (strings) are matched to columns of the same names (also after
  removing a prefix and a suffix common to every column, as in ``p_setosa``); the classes are
  then in the header's order. Without a header (a ``.npy`` array, a headerless CSV) the
  classes are the sorted names, as scikit-learn's ``classes_`` and ``predict_proba`` order them.
- Unnamed columns (no header, or names that are neither) are the classes 0 … K−1 in order.
- One column (or a 1-D array) is a binary classifier's P(y = positive) or score
  (``decision_function``). The two classes are {0, 1} for labels 0/1, else the two label values
  in sorted order; the positive class is ``positive_class`` when given, else the class the column's
  header names (``0``, ``p0``, ``prob_class_0``, ``p_benign``: the class as a whole word or number
  in it; a header naming both classes is refused as ambiguous), else the larger (scikit-learn's
  ``classes_[1]``). The K = 2 problem is
  p → [1 − p, p] for probabilities and s → logits [0, s] for a score (softmax([0, s]) = sigmoid(s)),
  with the columns swapped when the positive class is the smaller one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trustcal.predictions.errors import LabelError


@dataclass(frozen=True)
class ClassMap:
    """How a table's columns and labels become classes 0 … K−1."""

    labels: np.ndarray  # float64 class indices (or the labels as read, checked later)
    names: tuple[str, ...] | None  # the classes' names, in class order; None: the indices themselves
    order: np.ndarray | None = None  # K columns: values[:, order] has class k in column k
    positive: int | None = None  # binary: the class (0 or 1) the single column is about

    def apply(self, values: np.ndarray, kind: str) -> np.ndarray:
        """N×K values in class order; a binary column as p → [1 − p, p] or s → [0, s]."""
        if self.positive is None:
            return values if self.order is None else values[:, self.order]
        out = np.empty((len(values), 2))
        out[:, self.positive] = values
        out[:, 1 - self.positive] = 1.0 - values if kind == "probs" else 0.0
        return out


def index_names(columns: list[str]) -> list[int] | None:
    """The class index each column is named after (``3``, ``p_3``, ``Class_3_Probability``), or None."""
    matches = [re.fullmatch(r"(\D*?)(\d+)(\D*)", c.strip()) for c in columns]
    if not all(matches) or len({(m[1], m[3]) for m in matches}) != 1:
        return None
    ints = [int(m[2]) for m in matches]
    return ints if len(set(ints)) == len(ints) else None


def _name_candidates(columns: list[str]) -> list[list[str]]:
    """The columns' names as written, then without a prefix and suffix common to all: cut at a
    separator (``p_setosa_prob`` → ``setosa``, even when every name starts with the same letter),
    then wherever they differ (``psetosa`` → ``setosa``)."""
    names = [c.strip() for c in columns]
    out = [names]
    if len(names) < 2:
        return out
    prefix = os.path.commonprefix(names)
    suffix = os.path.commonprefix([n[len(prefix) :][::-1] for n in names])[::-1]
    at_separator = (
        re.match(r"^(.*[^A-Za-z0-9])?", prefix).group(0),
        re.search(r"([^A-Za-z0-9].*)?$", suffix).group(0),
    )
    for head, tail in (at_separator, (prefix, suffix)):
        stripped = [n[len(head) : len(n) - len(tail)] for n in names]
        if all(stripped) and stripped not in out:
            out.append(stripped)
    return out


def _integral(labels: np.ndarray) -> bool:
    return labels.dtype != object and bool(np.all(np.isfinite(labels)) and np.all(labels == np.round(labels)))


def _show(values, limit: int = 8) -> str:
    values = [str(v) for v in values]
    return ", ".join(values[:limit]) + (", …" if len(values) > limit else "")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _first_not_in(labels: np.ndarray, allowed) -> int:
    allowed = set(allowed)
    return next(i for i, v in enumerate(labels) if v not in allowed)


def class_map(
    values: np.ndarray,
    labels: np.ndarray,
    columns: list[str] | None,
    path: Path,
    label_path: Path,
    label_where: Callable[[int], str],
    positive_class: str | None = None,
    chosen: bool = False,
) -> ClassMap:
    """The :class:`ClassMap` of a table (module docstring); a :class:`ColumnError` or
    :class:`LabelError` naming the file, the columns and the fix when names and labels disagree.
    ``chosen``: the columns were chosen among a file's columns (``prob_columns`` applies)."""
    labels = np.asarray(labels)
    if values.ndim == 1:
        return _binary(labels, columns, path, label_path, label_where, positive_class)
    k = values.shape[1]
    if labels.dtype != object:
        ints = index_names(columns) if columns else None
        if ints is None or not _integral(labels):
            return ClassMap(labels, None)  # unnamed columns: classes in column order; labels checked later
        order = np.argsort(ints)
        if sorted(ints) == list(range(k)):
            return ClassMap(labels, None, order)
        classes = sorted(ints)
        if not set(labels.tolist()) <= set(classes):
            r = _first_not_in(labels.tolist(), classes)
            raise LabelError(
                f"{label_path}: {label_where(r)}: label {_num(labels[r])} is none of the classes the probability "
                f"columns of {path.name} are named after ({_show(columns)}: classes {_show(classes)}); expected "
                "names and labels to agree. Fix: name the columns by the label values (e.g. p_0 … p_"
                f"{k - 1} for labels 0 … {k - 1}), or correct the labels."
            )
        index = {c: i for i, c in enumerate(classes)}
        return ClassMap(np.array([index[v] for v in labels.tolist()], float), tuple(map(str, classes)), order)
    names_seen = sorted(set(labels.tolist()))
    if not columns:
        if len(names_seen) != k:
            raise LabelError(
                f"{label_path}: the labels name {len(names_seen)} classes ({_show(names_seen)}) but {path.name} has "
                f"{k} columns without names, so columns and names cannot be matched. Fix: give the predictions a "
                "header with the class names, or write the labels as class indices 0 … K−1 in column order."
            )
        index = {c: i for i, c in enumerate(names_seen)}
        return ClassMap(np.array([index[v] for v in labels.tolist()], float), tuple(names_seen))
    for candidate in _name_candidates(columns):
        if len(set(candidate)) == k and set(names_seen) <= set(candidate):
            index = {c: i for i, c in enumerate(candidate)}
            return ClassMap(np.array([index[v] for v in labels.tolist()], float), tuple(candidate))
    r = _first_not_in(labels.tolist(), _name_candidates(columns)[-1])
    raise LabelError(
        f"{label_path}: {label_where(r)}: label {labels[r]!r} names none of the probability columns of {path.name} "
        f"({_show(columns)}); expected names and labels to agree. Fix: name the probability columns by class "
        f"(e.g. {_show(names_seen[:3])})" + (" or choose them with prob_columns=REGEX." if chosen else "."),
        options=("prob_columns",) if chosen else (),
    )


def _binary(labels, columns, path, label_path, label_where, positive_class) -> ClassMap:
    named = columns[0].strip() if columns else None
    if labels.dtype == object:
        seen = sorted(set(labels.tolist()))
        positive = positive_class
    else:
        if not _integral(labels):
            return ClassMap(labels, None, positive=1)  # checked later, as labels of classes 0 and 1
        seen = sorted({int(v) for v in labels.tolist()})
        positive = None
        if positive_class is not None:
            try:
                positive = float(positive_class)
            except ValueError:
                raise LabelError(
                    f"{label_path}: the labels are numbers ({_show(seen)}) but the positive class is "
                    f"{positive_class!r}. Fix: give the positive class as one of the label values."
                ) from None
            positive = int(positive) if positive.is_integer() else positive
        if named is not None and positive is None:
            positive = _named_class(named, [0, 1] if set(seen) <= {0, 1} else seen, path)
    if positive is not None and len(seen) == 2 and positive not in seen:
        raise LabelError(
            f"{path}: the positive class {positive_class!r} is not among the labels' classes ({_show(seen)}). "
            "Fix: name one of them as the positive class."
        )
    classes = set(seen) | ({positive} if positive is not None else set())
    if labels.dtype != object and classes <= {0, 1}:
        classes = {0, 1}
    if len(classes) > 2:
        raise LabelError(
            f"{path}: one column of predictions (a binary classifier's P(y = 1) or score) but the labels of "
            f"{label_path.name} hold {len(classes)} classes ({_show(sorted(classes, key=str))}); expected two. "
            "Fix: export one column per class (predict_proba's full matrix), or check the positive class."
        )
    if len(classes) < 2:
        raise LabelError(
            f"{path}: one column of predictions (a binary classifier's) but the labels name only "
            f"{_show(classes)}, so the other class is unknown. Fix: give the positive class (positive_class=NAME) "
            "other than the one in the labels, or write the labels as 0/1.",
            options=("positive_class",),
        )
    order = sorted(classes, key=lambda c: (isinstance(c, str), c))
    if positive is None and named is not None:
        positive = _named_class(named, order, path)
    if positive is None:
        positive = order[1]
    if positive not in order:
        raise LabelError(
            f"{path}: the positive class {positive_class!r} is not among the labels' classes ({_show(order)}). "
            "Fix: name one of them as the positive class."
        )
    index = {c: i for i, c in enumerate(order)}
    names = None if order == [0, 1] else tuple(str(c) for c in order)
    return ClassMap(np.array([index[v] for v in labels.tolist()], float), names, positive=index[positive])


def _named_class(header: str, classes, path: Path):
    """The class a single column's ``header`` names: the header itself, else the one class that appears
    in it as a whole word (a class name) or number (a class index: ``p0``, ``prob_class_0``); None when
    it names none. A header naming both classes is a :class:`LabelError` asking for the positive class."""
    if header in {str(c) for c in classes}:
        return next(c for c in classes if str(c) == header)
    numbers = {int(n) for n in re.findall(r"(?<!\d)\d+(?!\d)", header)}
    named = [
        c
        for c in classes
        if (
            c in numbers
            if isinstance(c, int)
            else re.search(rf"(?<![0-9A-Za-z]){re.escape(str(c))}(?![0-9A-Za-z])", header)
        )
    ]
    if len(named) > 1:
        raise LabelError(
            f"{path}: the one column of predictions, {header!r}, names both classes ({_show(named)}), so which "
            "class it is the probability or score of is ambiguous. Fix: give the positive class "
            "(positive_class=NAME), or rename the column after that class.",
            options=("positive_class",),
        )
    return named[0] if named else None


def transposed_hint(shape: tuple[int, ...], n_labels: int) -> str:
    """A hint when an N×K array was saved as K×N: its other axis has the labels' length."""
    if len(shape) == 2 and shape[1] == n_labels and shape[0] != n_labels:
        return (
            f" The predictions look transposed: {shape[0]}×{shape[1]} where {n_labels}×{shape[0]} is expected "
            "(one row per sample); save the transpose (P.T)."
        )
    return ""
