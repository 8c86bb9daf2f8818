"""How prediction files are read: :class:`ReadOptions` (its field names are the CLI flags and config keys), the
formats, and the names of the columns and arrays that hold the labels, probabilities and logits."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from trustcal.predictions.errors import (
    PredictionError,
)

# --------------------------------------------------------------------------- options

FORMATS = ("auto", "csv", "npz", "npy", "parquet", "feather")
PARQUET_EXTRA = "pip install 'trustcal[parquet]'"
ARROW_SUFFIXES = ((".parquet", "parquet"), (".pq", "parquet"), (".feather", "feather"), (".arrow", "feather"))
PREDICTION_KINDS = ("auto", "probs", "logits")
# Matched against the file name without its extensions (``bef_10.csv.gz`` → ``bef_10``):
# the last number is the epoch; a word before/after/bef/aft/uncalibrated/calibrated
# anywhere in the name is the state (no word: before calibration).
DEFAULT_NAME_PATTERN = (
    r"(?i)^(?=(?:.*?(?<![a-z])(?P<state>before|after|bef|aft|uncalibrated|calibrated)(?![a-z]))?)"
    r".*?(?P<epoch>\d+)\D*$"
)
# The label column's usual names, as messages and docs give them; matched in any case, ignoring spaces, "_" and "-".
LABEL_COLUMN_NAMES = ("True Label", "label", "labels", "target", "targets", "y", "y_true", "class", "ground truth")
PROB_KEYS = ("probs", "probabilities", "test_probs", "test_probabilities")
LOGIT_KEYS = ("logits", "test_logits")
LABEL_KEYS = ("labels", "test_labels", "y", "targets")


@dataclass(frozen=True)
class ReadOptions:
    """How to read prediction files; the field names are the keys of the workflow's ``external`` entries
    (and, with dashes, the flags of ``trustcal assess``)."""

    format: str = "auto"  # one of FORMATS: auto (from the name, then the contents), csv, npz, npy, parquet, feather
    kind: str = "auto"  # auto, probs, logits
    label_column: str | None = None
    prob_columns: str | None = None  # regex matching whole column names
    labels: str | None = None  # labels file for predictions without labels (.npy)
    validation: str | None = None  # validation predictions + labels: fit temperature scaling
    name_pattern: str = DEFAULT_NAME_PATTERN
    sum_tolerance: float = 1e-3
    renormalize: bool = False
    num_classes: int | None = None
    positive_class: str | None = None  # binary predictions (one column): the class they are about; None: auto

    def __post_init__(self):
        if self.format not in FORMATS:
            raise PredictionError(
                f"format={self.format!r} is unknown; expected one of {', '.join(FORMATS)}", options=("format",)
            )
        if self.kind not in PREDICTION_KINDS:
            raise PredictionError(
                f"kind={self.kind!r} is unknown; expected one of {', '.join(PREDICTION_KINDS)}", options=("kind",)
            )
        if not (self.sum_tolerance > 0 and math.isfinite(self.sum_tolerance)):
            raise PredictionError(
                f"sum_tolerance must be a positive number (got {self.sum_tolerance})", options=("sum_tolerance",)
            )
        if self.positive_class is not None and not isinstance(self.positive_class, str):
            object.__setattr__(self, "positive_class", str(self.positive_class))  # a number in config.yaml
        if self.num_classes is not None and self.num_classes < 2:
            raise PredictionError(f"num_classes must be ≥ 2 (got {self.num_classes})", options=("num_classes",))
        name_regex(self.name_pattern)
        if self.prob_columns is not None:
            _compile(self.prob_columns, "prob_columns")


def _compile(pattern: str, option: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise PredictionError(
            f"{option}={pattern!r} is not a valid regular expression ({exc})", options=(option,)
        ) from None


def name_regex(pattern: str) -> re.Pattern:
    rx = _compile(pattern, "name_pattern")
    if "epoch" not in rx.groupindex:
        raise PredictionError(
            f"name_pattern={pattern!r} has no group named 'epoch'; write it like "
            r"'run(?P<epoch>\d+)_(?P<state>bef|aft)'",
            options=("name_pattern",),
        )
    return rx
