"""What a reader returns: the numbers of one file (:class:`Table`), not yet checked, and labels given as class
names."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trustcal.predictions.errors import (
    CellError,
)


@dataclass
class Table:
    """Numbers read from one file, with what is needed to point at a cell in messages."""

    path: Path
    values: np.ndarray  # N×K float64: probabilities or logits; N (one column): a binary classifier's
    kind: str  # probs, logits or auto (decided from the values)
    labels: np.ndarray | None  # N float64, or N class names (object array of str); checked later
    where: Callable[[int, int | None], str]  # (row, column or None) → "line 7, column 'x'"
    label_where: Callable[[int], str] | None = None
    label_path: Path | None = None
    val: Table | None = None
    columns: list[str] | None = None  # the value columns' names as written in a header (None: no header)
    chosen: bool = False  # the value columns were chosen among a file's columns (prob_columns applies)


def is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def name_labels(path: Path, arr, where) -> np.ndarray:
    """Labels given as class names: an object array of stripped strings (numbers: float64)."""
    texts = [None if x is None or (isinstance(x, float) and math.isnan(x)) else str(x).strip() for x in arr]
    empty = [i for i, t in enumerate(texts) if not t]
    if empty:
        raise CellError(
            f"{path}: {where(empty[0])}: empty label ({len(empty)} such label(s)); expected a class index or name. "
            "Fix: every sample needs its true label; drop unlabelled rows."
        )
    if all(is_number(t) for t in texts):
        return np.array([float(t) for t in texts])
    return np.array(texts, dtype=object)
