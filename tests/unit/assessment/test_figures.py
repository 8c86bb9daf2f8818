"""trustcal.assessment.figures: the figures of an assessment, drawn in this process or in forked workers.

A figure that fails is skipped with a warning (tests/unit/reporting/test_figures.py); a full disk is not
such a failure: it is a DiskError, in a worker too, so that the assessment stops (and its output directory
is left as it was).
"""

import errno
import os
import re

import numpy as np
import pandas as pd
import pytest
from helpers.full_disk import fill_pdfs

from trustcal.assessment import assess_files, draw_figures, figure_workers
from trustcal.files import DiskError
from trustcal.predictions import ReadOptions
from trustcal.settings import Settings


@pytest.fixture(scope="module")
def assessment(tmp_path_factory):
    """An assessment of one file of predictions (its figures: reliability, trust spectrum and density, …)."""
    folder = tmp_path_factory.mktemp("preds")
    rng = np.random.default_rng(0)
    labels = np.arange(120) % 3
    logits = rng.normal(size=(120, 3))
    logits[np.arange(120), labels] += 2.0
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    pd.DataFrame(probs, columns=["p0", "p1", "p2"]).assign(label=labels).to_csv(folder / "preds.csv", index=False)
    return assess_files([str(folder / "preds.csv")], ReadOptions(), Settings(bootstrap=None))


def processes(n: int) -> int:
    if n > 1 and figure_workers(4, n) < 2:
        pytest.skip("one core (or not Linux): the figures are drawn in this process alone")
    return n


def plain_write_refused(monkeypatch) -> None:
    """A figure whose own write (not trustcal.files') meets a full disk: a bare OSError naming no file."""
    from trustcal.reporting import figures

    def draw(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(figures, "draw", draw)


@pytest.mark.parametrize("workers", [1, 2], ids=["this process", "forked workers"])
@pytest.mark.parametrize("fault", [fill_pdfs, plain_write_refused], ids=["PDF writer", "plain write"])
def test_a_full_disk_while_drawing_is_a_disk_error_not_a_skipped_figure(
    assessment, tmp_path, monkeypatch, workers, fault
):
    fault(monkeypatch)
    fig_dir = tmp_path / "figures"
    warnings_before = list(assessment.warnings)
    with pytest.raises(DiskError) as caught:
        draw_figures(assessment, fig_dir, "t", formats=("png", "pdf"), processes=processes(workers))
    message = str(caught.value)
    assert "\n" not in message and re.match(
        rf"{re.escape(str(fig_dir))}/\w+\.(png|pdf): cannot be written: no space left on device", message
    ), message
    assert assessment.warnings == warnings_before  # no figure_skipped
    assert not [p.name for p in fig_dir.iterdir() if p.name.startswith(".")]  # no half-written temporary
