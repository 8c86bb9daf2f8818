"""The evaluation engine: tidy result tables from predicted probabilities, shared by the workflow, the CLI and
the API.

Input is a sequence of :class:`PredictionSet` — one (epoch, calibrator, split) each — whatever produced
them (our logits, or someone's prediction files). Output is one long table per result, one row per
(epoch, calibrator, …), so seaborn plots them directly and seeds stack by concatenation. ``calibrator`` is
``none`` for the raw model; :func:`trustcal.calibration.states.paper_states` selects the paper's before
(``none``) and after (``temperature``) calibration.

- :mod:`.prediction_sets`: :class:`PredictionSet` and what every table does with a sequence of them;
- :mod:`.trust`: :func:`trust_tables` (``trust``, ``dynamic_trust``, ``selective``, ``trust_sweep``, its grid
  :class:`SweepParams`);
- :mod:`.scores`: :func:`score_tables` (``scores`` and its side tables) under one
  :class:`~trustcal.measures.metric_params.MetricParams`, the metrics' settings.

With bootstrap parameters, every bootstrapped number of the test split gets ``<name>_lo`` / ``<name>_hi``
columns: the percentile interval over resamples of the test set (:mod:`trustcal.measures.bootstrap`); the
same resamples for every epoch and calibrator.
"""

from trustcal.evaluation.prediction_sets import PredictionSet
from trustcal.evaluation.scores import (
    SIDE_TABLES,
    refinement_losses,
    refinement_replicates,
    score_columns,
    score_tables,
)
from trustcal.evaluation.trust import (
    COVERAGES,
    SweepParams,
    dynamic_trust,
    dynamic_trust_table,
    per_prediction_opinions,
    selective_table,
    sweep_epochs,
    trust_sweep_table,
    trust_table,
    trust_tables,
)
from trustcal.measures.metric_params import MetricParams

__all__ = [
    "COVERAGES",
    "MetricParams",
    "PredictionSet",
    "SIDE_TABLES",
    "SweepParams",
    "dynamic_trust",
    "dynamic_trust_table",
    "per_prediction_opinions",
    "refinement_losses",
    "refinement_replicates",
    "score_columns",
    "score_tables",
    "selective_table",
    "sweep_epochs",
    "trust_sweep_table",
    "trust_table",
    "trust_tables",
]
