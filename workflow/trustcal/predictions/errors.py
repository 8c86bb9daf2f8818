"""Errors and warnings about prediction files.

Every problem with someone else's predictions is a :class:`PredictionError`
whose message names the file, the line/row and column, what was expected and
how to fix it. Suspicious but valid input gives an :class:`InputWarning`
(handed to a ``warn`` callback, :data:`Warn`) instead.

A message that asks for a setting (a field of :class:`~trustcal.predictions.ReadOptions`,
or of :class:`~trustcal.settings.Settings`) names it as Python and the workflow's
configuration do, ``name=value`` (``kind="logits"``, ``renormalize=True``,
``labels=FILE``), or a name with an underscore alone (``sum_tolerance``), and lists
it in ``options``; the command line shows its flag there instead (``--kind logits``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trustcal.errors import TrustcalError

# --------------------------------------------------------------------------- errors


class PredictionError(TrustcalError):
    """A prediction (or label) file that cannot be assessed as it is.

    ``options``: the settings the message names (module docstring), for the command line's wording.
    """

    def __init__(self, message: str = "", *, options: Sequence[str] = ()):
        super().__init__(message)
        self.options = tuple(options)


class UnreadableFile(PredictionError):
    """Missing, empty, truncated or not in a known format."""


class ColumnError(PredictionError):
    """Missing label column/array, wrong number of columns, wrong array shape."""


class CellError(PredictionError):
    """A cell that is not a finite number."""


class ProbabilityError(PredictionError):
    """Negative or > 1 probabilities, rows that do not sum to 1."""


class LabelError(PredictionError):
    """Labels that are not integer class indices 0 … K−1."""


class LengthMismatch(PredictionError):
    """Predictions and labels (or the files of a series) do not line up."""


class SeriesError(PredictionError):
    """Files of an epoch series: no epoch in the name, duplicates, no files."""


# --------------------------------------------------------------------------- warnings


@dataclass(frozen=True)
class InputWarning:
    """Suspicious but valid input. ``code`` names the kind (the table of warning codes in docs/assess.md);
    ``options``: the settings the message names (module docstring)."""

    code: str
    file: str  # the file it is about ('' when none)
    message: str
    options: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.file}: {self.message}" if self.file else self.message


Warn = Callable[[InputWarning], None]
