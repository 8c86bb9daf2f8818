"""One function per workflow stage; the Snakemake scripts only call these.

Each reads the stage's input files, computes, and writes its outputs
atomically. Torch is imported only by the stages that need it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trustcal.calibration import T_MAX, T_MIN
from trustcal.calibration.states import PAPER_STATES, RAW
from trustcal.calibration.table import (
    CALIBRATION_COLUMNS,
    SPLITS,
    WORSE_ON_TEST,
    calibration_row,
    load_states,
    save_states,
    worse_on_test,
    worse_on_test_sentence,
)
from trustcal.errors import TrustcalError
from trustcal.evaluation import PredictionSet, score_tables, trust_tables
from trustcal.files import read_result_csv, read_result_npz, write_csv, write_npz
from trustcal.numerics import one_blas_thread
from trustcal.settings import Settings

if TYPE_CHECKING:
    from trustcal.reporting.verdict.settings import VerdictSettings

log = logging.getLogger(__name__)

LOGITS_FILE_KEYS = ("val_logits", "val_labels", "test_logits", "test_labels")
EPOCH_RE = re.compile(r"epoch(\d+)\.npz$")


def epoch_of(path: str | Path) -> int:
    m = EPOCH_RE.search(str(path))
    if not m:
        raise TrustcalError(f"{path}: cannot read the epoch from the file name (expected epochNNN.npz)")
    return int(m.group(1))


def train_stage(
    setup,
    seeds,
    cfg: dict,
    prepared,
    ckpt_dirs,
    history_outs,
    threads: int = 1,
    progress: bool = False,
    deterministic: bool = True,
) -> None:
    """Train ``seeds`` of ``setup`` (a :class:`trustcal.registry.Setup`: its dataset, network and recipe).

    The paper's networks under the paper's recipe train together, as one stacked model, when several;
    any other network or recipe trains one seed after the other (:func:`trustcal.training.loop.train_seeds`).
    ``cfg``: ``epochs``, ``init``, ``device`` (the batch size and learning rate are the recipe's). A
    registered dataset's name for ``setup`` is its default network with the paper's recipe at ``cfg``'s
    ``batch_size`` and ``learning_rate``. ``progress``: a progress bar over the epochs (for a terminal; the
    log has a line per epoch). ``deterministic``: the configuration's key of that name
    (:func:`trustcal.training.config.configure_device`; it changes nothing on a CPU, so changing it retrains
    nothing).
    """
    import dataclasses

    from trustcal import registry
    from trustcal.data.splits import load_prepared, prepared_classes
    from trustcal.training.config import setup_config
    from trustcal.training.loop import train_seeds

    if not isinstance(setup, registry.Setup):  # a registered dataset's name: the callers before setups
        paper = {k: cfg[k] for k in ("batch_size", "learning_rate") if cfg.get(k) is not None}
        setup = registry.resolve_setup(str(setup), base=dataclasses.replace(registry.RECIPES["paper"], **paper))
    if setup.dataset.num_classes is None and (classes := prepared_classes(prepared)):  # a user's, named in the file
        setup = dataclasses.replace(setup, dataset=dataclasses.replace(setup.dataset, classes=classes))
    cfgs = [
        setup_config(
            setup,
            seed,
            cfg["epochs"],
            init=cfg["init"],
            device=cfg["device"],
            threads=threads,
            deterministic=deterministic,
        )
        for seed in seeds
    ]
    for history, out in zip(train_seeds(cfgs, load_prepared(prepared), ckpt_dirs, progress), history_outs):
        write_csv(history, out)


def logits_stage(setup, prepared, ckpt_dir, outputs: Iterable[str]) -> None:
    """Validation and test logits of the checkpoints of ``setup`` (a :class:`trustcal.registry.Setup`, or a
    registered dataset's name) named by ``outputs`` (``logits/epochNNN.npz``)."""
    import dataclasses

    from trustcal import registry
    from trustcal.data.splits import load_prepared, prepared_classes
    from trustcal.files import write_npz
    from trustcal.training.checkpoints import checkpoint_path
    from trustcal.training.config import logits_config
    from trustcal.training.loop import compute_logits

    data = load_prepared(prepared)
    if isinstance(setup, registry.Setup) and setup.dataset.num_classes is None:  # a user's: the file's classes
        if classes := prepared_classes(prepared):
            setup = dataclasses.replace(setup, dataset=dataclasses.replace(setup.dataset, classes=classes))
    cfg = logits_config(setup, data)  # a name: trustcal.registry.resolve_setup(name)
    for out in outputs:
        epoch = epoch_of(out)
        write_npz(out, **compute_logits(checkpoint_path(ckpt_dir, epoch), cfg, data))
        log.info("epoch %d: logits written to %s", epoch, out)


def load_logits(path: str | Path) -> dict[str, np.ndarray]:
    return read_result_npz(path, LOGITS_FILE_KEYS, rule="logits")


def calibrate_stage(
    logit_paths: Iterable[str],
    out_states,
    out_table,
    *,
    method: str = "temperature",
    fit_on: str = "validation",
    t_min: float = T_MIN,
    t_max: float = T_MAX,
    options: dict | None = None,
) -> pd.DataFrame:
    """``method`` fitted per epoch on the validation logits (or, as the author did, on the test
    logits): its state per epoch (``out_states``, npz) and its rows of calibration.csv (``out_table``)."""
    split = SPLITS[fit_on]
    rows, states = [], {}
    for path in sorted(logit_paths, key=epoch_of):
        epoch = epoch_of(path)
        try:
            row, states[epoch] = calibration_row(
                epoch, load_logits(path), method, split, t_min=t_min, t_max=t_max, options=options
            )
        except ValueError as exc:  # e.g. a bad option value: said without a traceback
            raise TrustcalError(
                f"{path}: {method} calibration: {exc} (calibration.options.{method}: {options or {}})"
            ) from None
        for code, text in states[epoch].diagnostics(t_min, t_max):
            fix = " Fix: widen calibration.t_min/t_max." if code.endswith("at_bound") else ""
            log.warning("%s: [%s] %s (fitted on the %s split).%s", path, code, text, fit_on, fix)
        rows.append(row)
    df = pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS))
    write_npz(out_states, **save_states(states))
    write_csv(df, out_table)
    log.info("%s: %d epochs fitted on the %s split", method, len(rows), fit_on)
    return df


def calibration_table_stage(tables: Iterable[str], out) -> None:
    """calibration.csv: the rows of every calibrator, in the config's order."""
    frames = [read_result_csv(t, ("epoch", "calibrator"), rule="calibrate") for t in tables]
    write_csv(pd.concat(frames, ignore_index=True)[list(CALIBRATION_COLUMNS)], out)


def calibrator_name(path: str | Path) -> str:
    """The calibrator of ``calibration/{calibrator}.npz``."""
    return Path(path).stem


def load_predictions(
    logit_paths: Iterable[str], calibrators: Iterable[str], splits=("test", "val")
) -> Iterator[PredictionSet]:
    """Predictions of every epoch and split: the raw model's (calibrator ``none``) and each
    fitted calibrator's (``calibration/{calibrator}.npz`` files, in the order given)."""
    fitted, files = {}, {}
    for path in calibrators:
        fitted[calibrator_name(path)] = load_states(read_result_npz(path, None, rule="calibrate"))  # verified
        files[calibrator_name(path)] = path
    for path in sorted(logit_paths, key=epoch_of):
        epoch = epoch_of(path)
        d = load_logits(path)
        for split in splits:
            logits, labels = d[f"{split}_logits"], d[f"{split}_labels"]
            yield PredictionSet.of_logits(epoch, RAW, split, logits, labels)
            for name, states in fitted.items():
                if epoch not in states:
                    raise TrustcalError(
                        f"{files[name]}: no {name} calibrator for epoch {epoch}; rerun rule 'calibrate'.",
                        rerun="calibrate",
                    )
                yield PredictionSet.of_calibrator(epoch, name, split, states[epoch], logits, labels)


def write_tables(tables: dict[str, pd.DataFrame], outputs: dict[str, str]) -> None:
    """Write each named table to the output of the same name."""
    for name, df in tables.items():
        write_csv(df, outputs[name])


def trust_stage(logit_paths, calibrators, outputs: dict[str, str], settings: Settings) -> None:
    """docs/method.md §3 per epoch, for the raw model and every calibrator: trust.csv (with
    bootstrap intervals when ``settings.bootstrap`` is given), dynamic_trust.csv, trust_sweep.csv
    (``settings.trust``, ``settings.sweep``)."""
    preds = list(load_predictions(logit_paths, calibrators))
    with one_blas_thread():  # as the job's one thread: the same last bits wherever the stage is called
        tables = trust_tables(preds, settings.trust, settings.sweep, bootstrap=settings.bootstrap)
    write_tables(tables, outputs)


def scores_stage(logit_paths, calibrators, outputs: dict[str, str], settings: Settings) -> None:
    """Every scalar metric of ``settings.metrics`` (scores.csv, with bootstrap intervals on the test split
    when ``settings.bootstrap`` is given) and the per-label / per-bin side tables; a warning line for each
    calibrator whose test accuracy is lower, or test NLL higher, than the raw model's in some epoch
    (:func:`~trustcal.calibration.table.worse_on_test`: how many epochs, the worst numbers); with a ``paired``
    output and a bootstrap, the paired replicates of every calibration state on the shared resamples
    (:func:`trustcal.measures.paired.paired_arrays`, docs/method.md §12)."""
    from trustcal.measures.paired import paired_arrays

    preds = list(load_predictions(logit_paths, calibrators))
    kept = {} if settings.bootstrap is not None and "paired" in outputs else None
    with one_blas_thread():  # as the job's one thread: the same last bits wherever the stage is called
        tables = score_tables(preds, settings.metrics, bootstrap=settings.bootstrap, kept=kept)
    write_tables(tables, outputs)
    test = [p for p in preds if p.split == "test"]
    if test:  # a calibrator that made the test split worse than the raw model: a line per calibrator
        found = worse_on_test(
            tables["scores"],
            [calibrator_name(c) for c in calibrators],
            samples=max(len(p.labels) for p in test),
            classes=test[0].probs.shape[1],
            raw=RAW,
        )
        for name, f in found.items():
            odir = name in ("matrix", "dirichlet")
            fix = (
                f" For {name}, ODIR's weights are chosen by cross-validation unless fixed: leave "
                f"calibration.options.{name}: odir_lambda unset, or set a larger one."
            )
            log.warning(
                "%s: [%s] %s.%s", outputs["scores"], WORSE_ON_TEST, worse_on_test_sentence(name, f), fix if odir else ""
            )
    if kept is not None:
        write_npz(outputs["paired"], **paired_arrays(kept, settings.bootstrap))


def trust_bootstrap_stage(logit_paths, temperature_states, out, settings: Settings) -> None:
    """Trust opinions (``settings.trust``) of every epoch, before and after temperature scaling (the paper's
    two states), on ``settings.bootstrap.resamples`` resamples of the test set (:mod:`trustcal.measures.bootstrap`):
    ``belief``, ``disbelief`` and ``uncertainty`` arrays of shape epochs × 2 (before, after) ×
    resamples × (K + 1) labels, for the verdict."""
    from trustcal.measures.bootstrap import bootstrap_opinions, resample_counts

    params, bootstrap = settings.trust, settings.bootstrap
    by_epoch: dict[int, dict[str, dict[str, np.ndarray]]] = {}
    counts = None
    for p in load_predictions(logit_paths, [temperature_states], splits=("test",)):
        if counts is None:
            counts = resample_counts(len(p.labels), bootstrap)
        with one_blas_thread():
            by_epoch.setdefault(p.epoch, {})[p.calibrator] = bootstrap_opinions(p.probs, p.labels, counts, params)
    epochs = sorted(by_epoch)
    arrays = {
        name: np.stack([np.stack([by_epoch[e][c][name] for c in PAPER_STATES]) for e in epochs]).astype(np.float32)
        for name in ("belief", "disbelief", "uncertainty")
    }
    write_npz(
        out,
        epochs=np.array(epochs),
        resamples=np.array(bootstrap.resamples),
        seed=np.array(bootstrap.seed),
        level=np.array(bootstrap.level),
        **arrays,
    )
    log.info("%s: %d epochs × %d resamples of the test set", out, len(epochs), bootstrap.resamples)


def figures_stage(dataset: str, inputs: Mapping, outputs: Mapping, options: Mapping) -> None:
    """The figures of ``dataset`` named in ``outputs`` (name → its PNG/PDF paths), drawn from the per-seed
    tables of ``inputs`` (:func:`trustcal.reporting.figures.registry.render_figures`). ``options``: the
    config values the figures read (the rule's params: ``run``, its title and classes, and each figure's
    ``params``); a dataset of the user's own names its classes in its splits (``inputs["splits"]``)."""
    from trustcal.reporting.figures.registry import render_figures

    inputs, options = dict(inputs), dict(options)
    splits = list(inputs.pop("splits", None) or [])
    if splits:  # a dataset of the user's own: its class names are in its splits
        from trustcal.data.splits import prepared_classes

        options["run"] = dict(options["run"], classes=list(prepared_classes(splits[0])))
    render_figures(dataset, inputs, dict(outputs), **options)


def verdict_settings(config: Mapping, provenance: str = "") -> VerdictSettings:
    """What the verdict reads of the configuration (the keys the verdict rule passes: ``epochs``, ``clusters``,
    ``trust``, ``calibration``, ``bootstrap``, ``setups``), typed once: the trust opinion's settings and the
    bootstrap's of :meth:`Settings.from_config`, the epochs, the split the temperature is fitted on and the
    setups; ``provenance``: the line that names the configuration judged."""
    from trustcal.reporting.verdict.settings import VerdictSettings

    settings = Settings.from_config(config)
    return VerdictSettings(
        trust=settings.trust,
        bootstrap=settings.bootstrap,
        epochs=config.get("epochs"),
        fit_on=config.get("calibration", {}).get("fit_on"),
        setups=config.get("setups"),
        provenance=provenance,
    )


def verdict_stage(
    trust_paths, history_paths, out_md, out_csv, config: Mapping, provenance: str = "", **options
) -> pd.DataFrame:
    """results/reproduction.{md,csv,html}: the paper's claims and the general claims judged on every run's
    tables (:func:`trustcal.reporting.verdict.render.write_run_verdicts`, its ``options``: the other outputs,
    the claims files, the logs), under the settings of ``config`` (:func:`verdict_settings`)."""
    from trustcal.reporting.verdict.render import write_run_verdicts

    settings = verdict_settings(config, provenance)
    return write_run_verdicts(trust_paths, history_paths, out_md, out_csv, settings, **options)
