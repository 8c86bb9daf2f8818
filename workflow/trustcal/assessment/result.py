"""What an assessment gives (:class:`Assessment`), and the callbacks every part of it takes.

``Progress`` follows long work (the CLI passes a tqdm bar); ``Wording`` puts a message in the caller's
words (the CLI names its flags where the library names a setting, :mod:`trustcal.cli`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from trustcal.assessment.summary import format_summary
from trustcal.evaluation import MetricParams
from trustcal.measures.trust import TrustParams
from trustcal.predictions import InputWarning, PredictionFile

# progress(items, what, unit) → the items, shown as they are worked through (the CLI passes a tqdm bar).
Progress = Callable[[Sequence, str, str], Iterable]

# wording(message, options) → the message in the caller's words; ``options``: the settings it names
# (:class:`~trustcal.predictions.PredictionError`, :class:`~trustcal.predictions.InputWarning`).
Wording = Callable[[str, Sequence[str]], str]


def no_progress(items: Sequence, what: str, unit: str) -> Iterable:
    return items


def library_words(message: str, options: Sequence[str]) -> str:
    """The message as the library wrote it: each setting named as ``name=value``."""
    return message


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
    kept: list[str] = field(default_factory=list)  # files of the output directory trustcal did not write, left there

    def summary(self) -> str:
        """The one-screen summary (:func:`~trustcal.assessment.summary.format_summary`)."""
        return format_summary(self)
