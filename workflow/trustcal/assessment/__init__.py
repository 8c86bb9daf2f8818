"""Assess any model's predictions: the workflow's tables and figures, and a one-screen summary.

Shared by ``trustcal assess`` (:mod:`trustcal.cli`), the Python API (:mod:`trustcal.api`, on arrays:
:func:`assess_loaded`) and the workflow's ``external`` rule, each passing its
:class:`~trustcal.settings.Settings` whole. One job per module:

- :mod:`~trustcal.assessment.sources`: the prediction files and the training history, read and checked
  (by :mod:`trustcal.predictions`); :func:`assess_files` reads and assesses them;
- :mod:`~trustcal.assessment.fit`: the calibrators, fitted on each file's validation predictions (where
  there are any; temperature scaling by default, as in the workflow);
- :mod:`~trustcal.assessment.tables`: the workflow's own tables (every prediction file is the test
  split; a series' epochs in forked processes where that is safe), :func:`assess_loaded`;
- :mod:`~trustcal.assessment.summary`: the one-screen summary and the JSON document;
- :mod:`~trustcal.assessment.figures`: the figures, drawn in forked processes where that is safe;
- :mod:`~trustcal.assessment.workers`: the forked processes that share out the figures and a series' epochs;
- :mod:`~trustcal.assessment.output`: everything written into a temporary directory whose files take their
  places in the output directory only once it is complete (:func:`assess_to_dir`), so a failure leaves no
  partial output, and a file there that trustcal did not write stays;
- :mod:`~trustcal.assessment.result`: the :class:`Assessment` they share.
"""

from trustcal.assessment.figures import (
    FIGURE_FORMATS,
    SERIES_FIGURES,
    available_cores,
    draw_figures,
    figure_tables,
    figure_workers,
)
from trustcal.assessment.fit import CalibratorsNotFitted, calibrator_warnings, predictions_of
from trustcal.assessment.output import (
    MARKER,
    assess_to_dir,
    default_title,
    flagged_predictions,
    paper_runs,
    write_assessment,
    write_paper_verdict,
)
from trustcal.assessment.result import Assessment, Progress, Wording, library_words, no_progress
from trustcal.assessment.sources import assess_files, read_history
from trustcal.assessment.summary import calibrator_table, format_summary, summary_dict, summary_table
from trustcal.assessment.tables import assess_loaded, assessment_tables, with_class_names

__all__ = [
    "FIGURE_FORMATS",
    "MARKER",
    "SERIES_FIGURES",
    "Assessment",
    "CalibratorsNotFitted",
    "Progress",
    "Wording",
    "assess_files",
    "assess_loaded",
    "assess_to_dir",
    "assessment_tables",
    "available_cores",
    "calibrator_table",
    "calibrator_warnings",
    "default_title",
    "draw_figures",
    "figure_tables",
    "figure_workers",
    "flagged_predictions",
    "format_summary",
    "library_words",
    "no_progress",
    "paper_runs",
    "predictions_of",
    "read_history",
    "summary_dict",
    "summary_table",
    "with_class_names",
    "write_assessment",
    "write_paper_verdict",
]
