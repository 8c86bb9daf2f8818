"""The bounds of the integer settings, each from what a larger value would cost.

One place for the settings dataclasses (:class:`~trustcal.measures.trust.TrustParams`,
:class:`~trustcal.measures.bootstrap.BootstrapParams`, :class:`~trustcal.measures.metric_params.MetricParams`,
:class:`~trustcal.evaluation.SweepParams`), the command line (``trustcal assess``) and the
workflow's configuration schema (``workflow/schemas/config.schema.yaml``, whose maxima
``tests/unit/test_config.py`` checks against these). An absurd value (``ece_bins: [1000000000]``, which
would allocate 7.45 GiB per resample) is refused in one line before any work starts.
"""

from __future__ import annotations

import numbers

MAX_BINS = 10_000
BINS_COST = (
    "the paper's test sets hold 10,000 images: more bins than test samples are mostly empty, "
    "and every bin costs memory per bootstrap resample"
)
MAX_CLUSTERS = 10_000
CLUSTERS_COST = "more probability clusters than the test set's 10,000 images are mostly empty"
MAX_POINTS = 1_000
POINTS_COST = "a table row per point, label, split, epoch and calibration state"
MAX_RESAMPLES = 10_000
RESAMPLES_COST = (
    "the resample counts are resamples × test samples floats (400 MB for 10,000 × 10,000), "
    "and every interval evaluates its metrics once per resample"
)
MAX_FOLDS = 100
FOLDS_COST = "each fold refits the recalibration of every row of the side tables (20 times the default 5)"
MAX_EPOCHS = 10_000
EPOCHS_COST = "a checkpoint and a logits file per epoch, and rows in every table (100 times the paper's 100)"
MAX_SEED = 2**32 - 1
SEED_COST = "NumPy's and PyTorch's seeds are 32-bit"


def check_count(name: str, value, low: int, high: int, cost: str = "") -> int:
    """``value`` when it is a whole number (an integer, not a bool or a float) in [``low``, ``high``], else a
    :class:`ValueError` in one line naming ``name``, the bound, the value and (``cost``) why the bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number from {low} to {high} (got {value!r})")
    if value < low:
        raise ValueError(f"{name} must be ≥ {low} (got {value})")
    if value > high:
        raise ValueError(f"{name} must be ≤ {high} (got {value})" + (f": {cost}" if cost else ""))
    return int(value)
