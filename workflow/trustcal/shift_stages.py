"""The workflow stages of dataset shift (``workflow/rules/shift.smk``): one function per stage, as
:mod:`trustcal.stages` has for the others, kept apart from it so that the code digests of those stages (and
so the jobs of a finished run) do not change with these (:mod:`trustcal.codedigest`: a digest covers every
file its script reaches).

``shift_images`` makes one shifted set of a dataset (:mod:`trustcal.shift.sets`), ``shift_logits`` the run's
logits on it at the epochs of ``shift.epochs``, ``shift_scores`` its rows (:mod:`trustcal.reporting.shift`),
``shift_clean`` the clean rows they are compared with, ``shift_table`` a run's ``shift.csv`` /
``shift_ood.csv``. Torch is imported only by ``shift_logits``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
import pandas as pd

from trustcal.calibration.states import PAPER_CALIBRATOR, RAW
from trustcal.calibration.table import load_states
from trustcal.errors import TrustcalError
from trustcal.evaluation import PredictionSet
from trustcal.files import read_result_csv, read_result_npz, write_csv, write_npz
from trustcal.numerics import one_blas_thread
from trustcal.stages import calibrator_name, epoch_of, load_logits

log = logging.getLogger(__name__)
SHIFT_LOGITS_KEYS = ("logits", "epochs", "epoch_labels", "label_epochs", "severities", "labels", "test_indices", "kind")


def shift_images_stage(splits, out, spec: dict, other_splits=None) -> None:
    """One shifted set of a dataset (``results/data/{data}/shift/{set}.npz``): ``spec`` holds the set's
    ``name``, ``kind``, ``source``, ``severities`` and the ``seed`` and ``samples`` of ``shift:``;
    ``other_splits``: the prepared splits of the dataset an out-of-distribution set draws on."""
    from trustcal.data.splits import load_prepared
    from trustcal.shift.sets import ShiftSet, make_set

    spec = dict(spec)
    seed, samples, official = int(spec.pop("seed", 0)), spec.pop("samples", None), spec.pop("official", None)
    shift_set = ShiftSet(**{**spec, "severities": tuple(spec.get("severities", (1,)))})
    data = load_prepared(splits)
    other = load_prepared(other_splits)["x_test"] if other_splits else None
    try:
        arrays = make_set(
            shift_set, data["x_test"], data["y_test"], seed=seed, samples=samples, other_test=other, official=official
        )
    except ValueError as exc:  # a corruption this machine cannot compute, images of another shape
        raise TrustcalError(f"{out}: shift set {shift_set.name}: {exc} (config key shift)") from None
    write_npz(out, **arrays)
    log.info(
        "%s: %s images × %d severities, sha256 %s", out, len(arrays["labels"]), len(arrays["images"]), arrays["sha256"]
    )


def _run_setup(setup, prepared):
    """``setup`` with the class names of a dataset of the user's own (read from its prepared splits)."""
    import dataclasses

    from trustcal import registry
    from trustcal.data.splits import prepared_classes

    if isinstance(setup, registry.Setup) and setup.dataset.num_classes is None:
        if classes := prepared_classes(prepared):
            setup = dataclasses.replace(setup, dataset=dataclasses.replace(setup.dataset, classes=classes))
    return setup


def shift_epochs(history, wanted) -> list[tuple[str, int]]:
    """(label, epoch) of each entry of ``shift.epochs`` for the run of ``history`` (its ``history.csv``)."""
    from trustcal.shift.sets import chosen_epochs
    from trustcal.training.history import best_epoch

    table = read_result_csv(history, ("epoch", "val_loss"), rule="train")
    last = int(table["epoch"].max())
    late = [e for e in wanted if not isinstance(e, str) and int(e) > last]
    if late:
        raise TrustcalError(f"{history}: shift.epochs names epoch {late[0]}, past the run's last ({last})")
    return chosen_epochs(wanted, best_epoch(table), last)


def shift_logits_stage(setup, prepared, ckpt_dir, history, set_file, out, wanted) -> None:
    """The logits of one shifted set (``set_file``) at the epochs of ``wanted`` (``shift.epochs``), every
    severity: ``logits`` (epochs × severities × N × K), the network's forward pass of the logits stage on
    the set's uint8 images (so with the run's own normalisation)."""
    from trustcal.data.splits import load_prepared
    from trustcal.training.checkpoints import checkpoint_path
    from trustcal.training.config import logits_config
    from trustcal.training.loop import compute_logits

    chosen = shift_epochs(history, wanted)
    epochs = sorted({e for _, e in chosen})
    shifted = read_result_npz(set_file, ("images", "labels", "severities", "test_indices", "kind"), rule="shift_images")
    data = load_prepared(prepared)
    cfg = logits_config(_run_setup(setup, prepared), data)
    images = shifted["images"]  # severities × N × C × H × W: one forward pass over all of them, per epoch
    flat = images.reshape(-1, *images.shape[2:])
    # the labels are not read (an out-of-distribution set's are -1, no class of the run)
    dummy = np.zeros(len(flat), dtype=np.int64)
    logits = []
    for epoch in epochs:
        arrays = compute_logits(checkpoint_path(ckpt_dir, epoch), cfg, {**data, "x_test": flat, "y_test": dummy})
        logits.append(arrays["test_logits"].reshape(*images.shape[:2], -1))
        log.info("epoch %d: logits of %d severities of %s", epoch, len(images), set_file)
    write_npz(
        out,
        logits=np.stack(logits).astype(np.float32),
        epochs=np.array(epochs, dtype=np.int64),
        epoch_labels=np.array([label for label, _ in chosen]),
        label_epochs=np.array([e for _, e in chosen], dtype=np.int64),
        **{k: shifted[k] for k in ("severities", "labels", "test_indices", "kind")},
    )


def _fitted_states(calibrators) -> dict[str, dict]:
    """Calibrator name → its states by epoch (``calibration/{calibrator}.npz``, verified)."""
    return {calibrator_name(p): load_states(read_result_npz(p, None, rule="calibrate")) for p in calibrators}


def _states_of(epoch: int, fitted: dict[str, dict]) -> dict:
    """The raw model (None) and every calibrator's state of ``epoch``, by name."""
    out = {RAW: None}
    for name, states in fitted.items():
        if epoch not in states:
            raise TrustcalError(f"no {name} calibrator for epoch {epoch}; rerun rule 'calibrate'.", rerun="calibrate")
        out[name] = states[epoch]
    return out


def _predict(epoch: int, name: str, state, split: str, logits, labels) -> PredictionSet:
    if state is None:
        return PredictionSet.of_logits(epoch, name, split, logits, labels)
    return PredictionSet.of_calibrator(epoch, name, split, state, logits, labels)


def _epoch_logits(logit_paths) -> dict[int, str]:
    return {epoch_of(p): str(p) for p in logit_paths}


def shift_scores_stage(set_logits, logit_paths, calibrators, out, settings, keys: dict, curves_out=None) -> None:
    """The rows of one shifted set (``keys``: its ``run``, ``seed`` and ``set``): a corrupted set's scores and
    network opinion per (epoch, severity, calibrator) (:func:`trustcal.reporting.shift.shift_rows`), or an
    out-of-distribution set's detection rows per (epoch, calibrator, signal) against the run's clean test
    images (:func:`trustcal.reporting.shift.ood_rows`); each calibrator's state of the epoch applied unchanged.
    ``curves_out``: the out-of-distribution set's histograms and ROC curves of the raw model and temperature
    scaling (:func:`trustcal.reporting.shift.ood_curves`; a corrupted set's file has the columns only)."""
    from trustcal.measures.bootstrap import resample_counts
    from trustcal.reporting.shift import (
        CURVE_COLUMNS,
        OOD_COLUMNS,
        frame,
        ood_rows,
        other_side,
        shift_columns,
        shift_rows,
    )

    d = read_result_npz(set_logits, SHIFT_LOGITS_KEYS, rule="shift_logits")
    kind, files, fitted = str(d["kind"]), _epoch_logits(logit_paths), _fitted_states(calibrators)
    boot, counts = settings.bootstrap, None
    by_epoch: dict[int, list[dict]] = {}
    curves: dict[int, list[dict]] = {}
    for i, epoch in enumerate(int(e) for e in d["epochs"]):
        rows = by_epoch.setdefault(epoch, [])
        states = _states_of(epoch, fitted)
        if kind == "corruption":
            if counts is None and boot is not None:
                counts = resample_counts(len(d["labels"]), boot)
            for j, severity in enumerate(int(s) for s in d["severities"]):
                preds = {n: _predict(epoch, n, st, "test", d["logits"][i, j], d["labels"]) for n, st in states.items()}
                with one_blas_thread():
                    scored = shift_rows(preds, settings.trust, settings.metrics, counts, boot)
                rows += [dict(kind=kind, severity=severity, n=len(d["labels"]), **r) for r in scored]
            continue
        clean = load_logits(files[epoch])  # the in-distribution side
        idx = d["test_indices"]
        if counts is None and boot is not None:
            counts = (resample_counts(len(idx), boot), resample_counts(len(d["labels"]), other_side(boot)))
        for name, state in states.items():
            inside = _predict(epoch, name, state, "test", clean["test_logits"][idx], clean["test_labels"][idx])
            fit = _predict(epoch, name, state, "val", clean["val_logits"], clean["val_labels"])
            outside = _predict(epoch, name, state, "test", d["logits"][i, 0], d["labels"])
            drawn = name in (RAW, PAPER_CALIBRATOR)  # the figures' two: their curves alone are kept
            with one_blas_thread():
                detected, drawn_rows = ood_rows(inside, outside, fit, settings.trust, counts, boot, curves=drawn)
            rows += [dict(calibrator=name, **r) for r in detected]
            if drawn:
                curves.setdefault(epoch, []).extend(dict(calibrator=name, **c) for c in drawn_rows)
    labelled = list(zip(d["epoch_labels"], d["label_epochs"]))

    def table(per_epoch):
        return [
            {**keys, "epoch": int(e), "epoch_label": str(label), **row}
            for label, e in labelled
            for row in per_epoch.get(int(e), [])
        ]

    columns = shift_columns(boot is not None) if kind == "corruption" else OOD_COLUMNS
    write_csv(frame(table(by_epoch), columns), out)
    if curves_out is not None:
        write_csv(frame(table(curves), CURVE_COLUMNS), curves_out)
    log.info("%s: %d rows", out, sum(len(r) for r in by_epoch.values()))


def shift_clean_stage(logit_paths, calibrators, history, out, settings, shift: dict, keys: dict) -> None:
    """The clean rows of ``shift.csv`` (set ``clean``, severity 0): the scores and network opinion of the
    test images the shifted sets use (``shift.samples`` of them, drawn with ``shift.seed``), at the epochs of
    ``shift.epochs``, as :func:`shift_scores_stage` computes a corrupted set's."""
    from trustcal.measures.bootstrap import resample_counts
    from trustcal.reporting.shift import frame, shift_columns, shift_rows
    from trustcal.shift.sets import CLEAN, subset_indices

    chosen = shift_epochs(history, shift["epochs"])
    files, fitted = _epoch_logits(logit_paths), _fitted_states(calibrators)
    by_epoch: dict[int, list[dict]] = {}
    counts = None
    for epoch in sorted({e for _, e in chosen}):
        clean = load_logits(files[epoch])
        idx = subset_indices(len(clean["test_labels"]), shift.get("samples"), int(shift.get("seed", 0)))
        if counts is None and settings.bootstrap is not None:
            counts = resample_counts(len(idx), settings.bootstrap)
        logits, labels = clean["test_logits"][idx], clean["test_labels"][idx]
        preds = {n: _predict(epoch, n, st, "test", logits, labels) for n, st in _states_of(epoch, fitted).items()}
        with one_blas_thread():
            scored = shift_rows(preds, settings.trust, settings.metrics, counts, settings.bootstrap)
        by_epoch[epoch] = [dict(kind=CLEAN, severity=0, n=len(idx), **r) for r in scored]
    table = [
        {**keys, "set": CLEAN, "epoch": e, "epoch_label": label, **row} for label, e in chosen for row in by_epoch[e]
    ]
    write_csv(frame(table, shift_columns(settings.bootstrap is not None)), out)


def shift_table_stage(tables: Iterable[str], out, rule: str = "shift_scores") -> None:
    """``shift.csv`` or ``shift_ood.csv`` of a run: the rows of every seed and set, in the order given."""
    frames = [read_result_csv(t, ("run", "seed", "epoch", "set"), rule=rule) for t in tables]
    write_csv(pd.concat(frames, ignore_index=True), out)
