"""One set of predictions (:class:`PredictionSet`: an epoch's raw model or calibrator on one split) and what
every table of the evaluation does with a sequence of them: their keys, their splits, the test set's resamples
and the interval columns of bootstrap replicates."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from trustcal.measures.bootstrap import BootstrapParams, percentile_interval, resample_counts
from trustcal.numerics import log_softmax

__all__ = ["PredictionSet", "interval_columns", "keys_of", "of_split", "resamples_of", "with_keys"]


@dataclass(frozen=True)
class PredictionSet:
    """One set of predictions: an epoch's raw model (calibrator ``none``) or calibrator on one split."""

    epoch: int
    calibrator: str  # "none" for the raw model
    split: str  # "test" or "val"
    probs: np.ndarray
    labels: np.ndarray
    # The exact log-probabilities (a log-softmax) where the predictions come from logits; None where they
    # come as probabilities, whose NLL floors them (docs/method.md §2.12).
    log_probs: np.ndarray | None = None

    @classmethod
    def of_logits(cls, epoch: int, calibrator: str, split: str, logits, labels) -> PredictionSet:
        """softmax(``logits``), with its exact log-probabilities."""
        log_probs = log_softmax(logits)
        return cls(epoch, calibrator, split, np.exp(log_probs), labels, log_probs)

    @classmethod
    def of_calibrator(cls, epoch: int, calibrator: str, split: str, cal, logits, labels) -> PredictionSet:
        """The predictions of a fitted calibrator ``cal`` (named ``calibrator``) on ``logits``."""
        probs, log_probs = cal.predict(logits)
        return cls(epoch, calibrator, split, probs, labels, log_probs)


def keys_of(p: PredictionSet, **extra) -> dict:
    """The keys of a row of ``p`` (epoch, calibrator, split), then ``extra``."""
    return dict(epoch=p.epoch, calibrator=p.calibrator, split=p.split, **extra)


def with_keys(df: pd.DataFrame, p: PredictionSet, with_split: bool = True) -> pd.DataFrame:
    """``df`` with the keys of ``p`` (:func:`keys_of`; without the split unless ``with_split``) as its first columns."""
    keys = keys_of(p) if with_split else dict(epoch=p.epoch, calibrator=p.calibrator)
    for i, (k, v) in enumerate(keys.items()):
        df.insert(i, k, v)
    return df


def of_split(preds: Iterable[PredictionSet], split: str) -> list[PredictionSet]:
    """The prediction sets of ``split``, in their order."""
    return [p for p in preds if p.split == split]


def resamples_of(preds: Sequence[PredictionSet], bootstrap: BootstrapParams | None) -> np.ndarray | None:
    """The resample counts of the test set (the same for every epoch and calibrator), or None."""
    tests = of_split(preds, "test")
    return _resample_counts(len(tests[0].labels), bootstrap) if bootstrap is not None and tests else None


@lru_cache(maxsize=2)
def _resample_counts(n: int, bootstrap: BootstrapParams) -> np.ndarray:
    """:func:`resample_counts`, drawn once for a series assessed an epoch at a time (read only)."""
    counts = resample_counts(n, bootstrap)
    counts.flags.writeable = False
    return counts


def interval_columns(replicates: dict[str, np.ndarray], level: float) -> dict[str, np.ndarray]:
    """``<name>_lo`` / ``<name>_hi`` of each B-leading replicate array."""
    out = {}
    for name, values in replicates.items():
        out[f"{name}_lo"], out[f"{name}_hi"] = percentile_interval(values, level)
    return out
