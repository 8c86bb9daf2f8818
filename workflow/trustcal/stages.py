"""One function per workflow stage; the Snakemake scripts only call these.

Each reads the stage's input files, computes, and writes its outputs
atomically. Torch is imported only by the stages that need it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.calibration import CALIBRATION_COLUMNS, T_MAX, T_MIN, calibration_row, softmax
from trustcal.errors import TrustcalError
from trustcal.files import read_csv, read_npz, write_csv, write_npz
from trustcal.measures.trust import TrustParams
from trustcal.reporting.tables import MetricParams, Predictions, SweepParams, score_tables, trust_tables

log = logging.getLogger(__name__)

LOGIT_KEYS = ("val_logits", "val_labels", "test_logits", "test_labels")
EPOCH_RE = re.compile(r"epoch(\d+)\.npz$")


def epoch_of(path: str | Path) -> int:
    m = EPOCH_RE.search(str(path))
    if not m:
        raise TrustcalError(f"{path}: cannot read the epoch from the file name (expected epochNNN.npz)")
    return int(m.group(1))


def train_stage(
    dataset, seeds, cfg: dict, prepared, ckpt_dirs, history_outs, threads: int = 1, progress: bool = False
) -> None:
    """Train ``seeds`` of ``dataset`` (together, as one stacked model, when several).

    ``progress``: a progress bar over the epochs (for a terminal; the log has a line per epoch).
    """
    from trustcal.data.splits import load_prepared
    from trustcal.training.loop import TrainConfig, train_seeds

    cfgs = [
        TrainConfig(
            dataset=dataset,
            seed=int(seed),
            epochs=cfg["epochs"],
            batch_size=cfg["batch_size"],
            learning_rate=cfg["learning_rate"],
            init=cfg["init"],
            device=cfg["device"],
            threads=threads,
        )
        for seed in seeds
    ]
    for history, out in zip(train_seeds(cfgs, load_prepared(prepared), ckpt_dirs, progress), history_outs):
        write_csv(history, out)


def logits_stage(dataset, prepared, ckpt_dir, outputs: Iterable[str]) -> None:
    from trustcal.data.splits import load_prepared
    from trustcal.files import write_npz
    from trustcal.training.loop import checkpoint_path, compute_logits

    data = load_prepared(prepared)
    for out in outputs:
        epoch = epoch_of(out)
        write_npz(out, **compute_logits(checkpoint_path(ckpt_dir, epoch), dataset, data))
        log.info("epoch %d: logits written to %s", epoch, out)


def load_logits(path: str | Path) -> dict[str, np.ndarray]:
    return read_npz(path, LOGIT_KEYS, rule="logits")


def calibrate_stage(logit_paths: Iterable[str], out, *, fit_on="validation", t_min=T_MIN, t_max=T_MAX) -> pd.DataFrame:
    """Temperature per epoch, fitted on the validation logits (or, as the author did, on the test logits)."""
    split = {"validation": "val", "test": "test"}[fit_on]
    rows = []
    for path in sorted(logit_paths, key=epoch_of):
        row = calibration_row(epoch_of(path), load_logits(path), split, t_min=t_min, t_max=t_max)
        if row["at_bound"]:
            log.warning("%s: temperature hit the search bound (T = %g)", path, row["temperature"])
        rows.append(row)
    df = pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS))
    write_csv(df, out)
    return df


def load_predictions(logit_paths: Iterable[str], calibration_csv, splits=("test", "val")) -> Iterator[Predictions]:
    """Predictions of every epoch and split, before and after temperature scaling."""
    cal = read_csv(calibration_csv, ("epoch", "temperature"), rule="calibrate").set_index("epoch")
    for path in sorted(logit_paths, key=epoch_of):
        epoch = epoch_of(path)
        if epoch not in cal.index:
            raise TrustcalError(
                f"{calibration_csv}: no temperature for epoch {epoch}; rerun "
                "(snakemake --cores 2 --forcerun calibrate)."
            )
        d = load_logits(path)
        for split in splits:
            for calibrated, temperature in ((False, 1.0), (True, float(cal.at[epoch, "temperature"]))):
                yield Predictions(
                    epoch, calibrated, split, softmax(d[f"{split}_logits"], temperature), d[f"{split}_labels"]
                )


def write_tables(tables: dict[str, pd.DataFrame], outputs: dict[str, str]) -> None:
    """Write each named table to the output of the same name."""
    for name, df in tables.items():
        write_csv(df, outputs[name])


def trust_stage(logit_paths, calibration_csv, outputs: dict[str, str], params: TrustParams, sweep: SweepParams) -> None:
    """docs/method.md §3 per epoch, before and after calibration: trust.csv, dynamic_trust.csv, trust_sweep.csv."""
    write_tables(trust_tables(list(load_predictions(logit_paths, calibration_csv)), params, sweep), outputs)


def scores_stage(logit_paths, calibration_csv, outputs: dict[str, str], params: MetricParams) -> None:
    """Every scalar metric (scores.csv) and the per-label / per-bin side tables."""
    write_tables(score_tables(list(load_predictions(logit_paths, calibration_csv)), params), outputs)


BOOTSTRAP_KEYS = ("epochs", "belief", "disbelief", "uncertainty", "resamples", "seed", "level")


def trust_bootstrap_stage(logit_paths, calibration_csv, out, params: TrustParams, bootstrap) -> None:
    """Trust opinions of every epoch, before and after calibration, on ``bootstrap.resamples``
    resamples of the test set (:mod:`trustcal.measures.bootstrap`): ``belief``, ``disbelief`` and
    ``uncertainty`` arrays of shape epochs × 2 (before, after) × resamples × (K + 1) labels."""
    from trustcal.measures.bootstrap import bootstrap_opinions, resample_counts

    by_epoch: dict[int, dict[bool, dict[str, np.ndarray]]] = {}
    counts = None
    for p in load_predictions(logit_paths, calibration_csv, splits=("test",)):
        if counts is None:
            counts = resample_counts(len(p.labels), bootstrap)
        by_epoch.setdefault(p.epoch, {})[p.calibrated] = bootstrap_opinions(p.probs, p.labels, counts, params)
    epochs = sorted(by_epoch)
    arrays = {
        name: np.stack([np.stack([by_epoch[e][c][name] for c in (False, True)]) for e in epochs]).astype(np.float32)
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
