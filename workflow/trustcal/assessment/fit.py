"""The calibrators of an assessment, fitted on each file's validation predictions (docs/method.md §2)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.calibration.methods import many_classes_advice
from trustcal.calibration.states import PAPER_CALIBRATOR, RAW
from trustcal.calibration.table import CALIBRATION_COLUMNS, calibration_row
from trustcal.evaluation import PredictionSet
from trustcal.numerics import floored_log
from trustcal.predictions import InputWarning, Loaded, PredictionError, SeriesError, Warn
from trustcal.settings import CalibrationSettings


class CalibratorsNotFitted(PredictionError):
    """Calibrators were asked for by name, but no file has validation predictions to fit them on."""


# What each calibrator warning asks of the user, naming the settings (the CLI shows its flags instead).
CALIBRATOR_FIXES = {
    "temperature_at_bound": " Fix: widen t_min/t_max.",
    "calibrator_at_bound": " Fix: widen t_min/t_max.",
}


def calibrator_warnings(cal, path: Path, t_min: float, t_max: float) -> list[InputWarning]:
    """The warnings of a calibrator fitted on ``path``'s validation predictions, each naming the calibrator
    and its state (:meth:`~trustcal.calibration.Calibrator.diagnostics`)."""
    return [
        InputWarning(
            code,
            str(path),
            f"{text} (fitted on the validation predictions).{CALIBRATOR_FIXES.get(code, '')}",
            ("t_min", "t_max") if code in CALIBRATOR_FIXES else (),
        )
        for code, text in cal.diagnostics(t_min, t_max)
    ]


def _observed(epoch: int, state: str, split: str, probs, logits, labels) -> PredictionSet:
    """A file's own predictions: from its logits when it holds logits (exact log-probabilities), else its
    probabilities (whose NLL floors them, docs/method.md §2.12)."""
    if logits is not None and np.shape(logits) == np.shape(probs):
        return PredictionSet.of_logits(epoch, state, split, logits, labels)
    return PredictionSet(epoch, state, split, probs, labels)


def predictions_of(loaded: Sequence[Loaded], warn: Warn, calibration: CalibrationSettings = CalibrationSettings()):
    """The :class:`PredictionSet` of every file, plus calibration.csv rows where calibrators were fitted
    (on a file's validation predictions; a file named as calibrated counts as the paper's
    after-calibration state, calibrator ``temperature``, and is used as it is).

    ``calibration.methods`` None: the paper's temperature scaling wherever validation predictions are
    given; names: those, wherever validation predictions are given. Named methods that are
    ``calibration.required`` are wanted on every epoch: one that no epoch could get (no validation
    predictions anywhere) is a :class:`CalibratorsNotFitted` error; one that some epochs lack gets a
    ``calibrators_not_fitted`` warning naming it and them (the other epochs' rows are right)."""
    requested = calibration.methods is not None and calibration.required
    calibrators = calibration.names
    t_min, t_max = calibration.t_min, calibration.t_max
    preds, rows, source = [], [], {}
    advised: set[str] = set()  # the methods steered away from many classes, said once each
    unfitted: dict[int, Path] = {}  # epoch → a file of that epoch without validation predictions

    def add(p: PredictionSet, path: Path) -> None:
        key = (p.epoch, p.calibrator, p.split)
        if key in source:
            state = "before" if p.calibrator == RAW else f"after calibration ({p.calibrator})"
            raise SeriesError(
                f"{source[key]} and {path}: both give epoch {p.epoch} {state} calibration ({p.split} split): "
                "a file named as calibrated and a temperature fitted on another file's validation data. "
                "Fix: assess them separately, or drop one of them."
            )
        source[key] = path
        preds.append(p)

    for item in loaded:
        f = item.file
        state = PAPER_CALIBRATOR if f.calibrated else RAW
        add(_observed(f.epoch, state, "test", item.probs, item.logits, item.labels), f.path)
        if item.val_probs is None:
            if not f.calibrated:
                unfitted.setdefault(f.epoch, f.path)
            continue
        add(_observed(f.epoch, state, "val", item.val_probs, item.val_logits, item.val_labels), f.path)
        if f.calibrated:
            continue  # already calibrated: used as it is
        # probabilities are fitted as log max(p, PROB_FLOOR): the floor of the reported NLL, so a calibrator's
        # objective at the identity map is the raw NLL (docs/method.md §2.12)
        logits = item.logits if item.logits is not None else floored_log(item.probs)
        val_logits = item.val_logits if item.val_logits is not None else floored_log(item.val_probs)
        for method in calibrators:
            advice = many_classes_advice(method, val_logits.shape[1])
            if advice and method not in advised:
                advised.add(method)
                warn(InputWarning("one_vs_rest_many_classes", str(f.path), advice, ("calibrators",)))
            row, cal = calibration_row(
                f.epoch,
                {"val_logits": val_logits, "val_labels": item.val_labels},
                method,
                "val",
                t_min=t_min,
                t_max=t_max,
            )
            for w in calibrator_warnings(cal, f.path, t_min, t_max):
                warn(w)
            rows.append(row)
            add(PredictionSet.of_calibrator(f.epoch, method, "test", cal, logits, item.labels), f.path)
            add(PredictionSet.of_calibrator(f.epoch, method, "val", cal, val_logits, item.val_labels), f.path)
    if requested:
        _check_calibrators_fitted(calibrators, unfitted, {(p.epoch, p.calibrator) for p in preds}, warn)
    table = pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS)) if rows else None
    return preds, table


def _check_calibrators_fitted(calibrators, unfitted: dict[int, Path], have: set, warn: Warn) -> None:
    """Named calibrators that no epoch got: an error; those some epochs lack: a warning naming them and the files."""
    missing = {m: [e for e in sorted(unfitted) if (e, m) not in have] for m in calibrators}
    missing = {m: epochs for m, epochs in missing.items() if epochs}
    if not missing:
        return
    never = [m for m in missing if not any(c == m for _, c in have)]
    if never:
        files = sorted({str(p) for p in unfitted.values()})
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        raise CalibratorsNotFitted(
            f"{shown}: calibrator{'s' if len(never) > 1 else ''} {', '.join(never)} asked for, but "
            f"{'this file has' if len(files) == 1 else 'these files have'} no validation predictions to fit "
            f"{'them' if len(never) > 1 else 'it'} on, so no results of {'them' if len(never) > 1 else 'it'} "
            "would be written. Fix: give validation predictions of the same model (validation=FILE for a single "
            "file, or val_logits and val_labels in each .npz), or ask for none (calibrators=None: temperature "
            "scaling wherever validation predictions are given).",
            options=("validation", "calibrators"),
        )
    for method, epochs in missing.items():
        files = [unfitted[e] for e in epochs]
        warn(
            InputWarning(
                "calibrators_not_fitted",
                str(files[0]),
                f"calibrator '{method}' asked for but not fitted on {len(files)} file{'s' if len(files) > 1 else ''} "
                f"without validation predictions ({', '.join(p.name for p in files[:3])}"
                f"{', …' if len(files) > 3 else ''}): those epochs have no '{method}' rows. Fix: give their "
                "validation predictions (val_logits and val_labels in each .npz).",
            )
        )
