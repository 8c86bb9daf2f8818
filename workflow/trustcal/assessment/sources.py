"""Reading what an assessment is given: the prediction files named by its sources (files, directories,
globs) and the training history; :func:`assess_files` reads them and assesses them.

The files are read and checked by :mod:`trustcal.predictions`; a training history given as
predictions is refused with an error that says where it belongs.
"""

from __future__ import annotations

import glob
import io
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.assessment.result import Assessment, Progress, no_progress
from trustcal.assessment.tables import assess_loaded
from trustcal.files import load_plain_pickle
from trustcal.predictions import (
    HISTORY_NAMES,
    ColumnError,
    InputWarning,
    PredictionError,
    ReadOptions,
    UnreadableFile,
    discover,
    history_beside,
    load_series,
    read_bytes,
)
from trustcal.settings import Settings


def _load_pickled_npy(data: bytes):
    """The object in a ``.npy`` file written by ``np.save`` of a Python object, unpickled with plain data and
    NumPy arrays only (:func:`trustcal.files.load_plain_pickle`): ``np.load(allow_pickle=True)`` would run
    whatever code a crafted file names."""
    f = io.BytesIO(data)
    version = np.lib.format.read_magic(f)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f".npy format version {version} (expected 1.0 or 2.0, as np.save writes)")
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    _, _, dtype = read_header(f)
    if dtype.kind != "O":
        return np.lib.format.read_array(f)
    obj = load_plain_pickle(f, "a loss history")
    return obj.item() if isinstance(obj, np.ndarray) and obj.shape == () else obj


HISTORY_EXPECTED = (
    "expected np.save's .npy of a dict with 'train' and 'val' loss lists (as the author's loss_history.npy), "
    "or a CSV with columns epoch, train_loss, val_loss"
)


def _raw_pickle(data: bytes) -> bool:
    """Whether ``data`` is a pickle as ``pickle.dump`` writes it (protocol 2 or later: opcode PROTO, then
    the protocol), not a .npy file."""
    return len(data) > 2 and data[0] == 0x80 and 2 <= data[1] <= 5


def read_history(path: str | Path) -> pd.DataFrame:
    """Training history for the loss figure: a CSV with ``epoch, train_loss, val_loss``, or the author's
    ``loss_history.npy`` (a pickled dict ``{'train': [...], 'val': [...]}``). A pickle is read with numpy's
    array types only, so a crafted file cannot run code. A bare pickle (``pickle.dump``, not ``np.save``)
    and any other file that is neither a .npy file nor text are refused with what was expected."""
    path = Path(path)
    data = read_bytes(path)
    if _raw_pickle(data):
        raise UnreadableFile(
            f"{path}: a Python pickle (written by pickle.dump), not a .npy file written by np.save; {HISTORY_EXPECTED}. "
            f"Fix: save the history with np.save('{path.name}', {{'train': train_losses, 'val': val_losses}}), "
            "or pass a CSV with those columns as history=FILE.",
            options=("history",),
        )
    if data[:6] == b"\x93NUMPY":
        try:
            obj = _load_pickled_npy(data)
            df = pd.DataFrame(
                {"train_loss": np.asarray(obj["train"], float), "val_loss": np.asarray(obj["val"], float)}
            )
        except Exception as exc:
            raise UnreadableFile(
                f"{path}: not a loss history ({type(exc).__name__}: {exc}); expected a dict with 'train' and 'val' "
                "loss lists, or a CSV with columns epoch, train_loss, val_loss. Fix: pass such a file as history=FILE.",
                options=("history",),
            ) from None
        return df.assign(epoch=np.arange(1, len(df) + 1), seed=0)
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableFile(
            f"{path}: not a loss history: neither a .npy file written by np.save nor text; {HISTORY_EXPECTED}. "
            "Fix: pass such a file as history=FILE.",
            options=("history",),
        ) from None
    try:
        df = pd.read_csv(path)
    except Exception as exc:
        raise UnreadableFile(
            f"{path}: cannot be read as CSV ({exc}). Fix: pass a CSV with columns epoch, train_loss, val_loss."
        ) from None
    missing = [c for c in ("epoch", "train_loss", "val_loss") if c not in df.columns]
    if missing:
        raise ColumnError(
            f"{path}: missing column(s) {missing}; expected epoch, train_loss, val_loss (found {list(df.columns)}). "
            "Fix: rename the columns."
        )
    return df.assign(seed=df["seed"] if "seed" in df else 0)


def _refuse_histories(sources) -> None:
    """Raise a clear error if a file given as predictions is a training history (what ``history`` reads)."""
    named = [Path(m) for s in map(str, sources) for m in (sorted(glob.glob(s)) if glob.has_magic(s) else [s])]
    for path in named:
        if path.is_file():
            try:
                read_history(path)
            except Exception:
                continue
            raise PredictionError(
                f'{path}: a training loss history, not predictions. Fix: pass it with history="{path.name}", beside '
                f"the predictions (a {' or '.join(HISTORY_NAMES)} in the predictions' directory is used by itself).",
                options=("history",),
            )


def assess_files(
    sources,
    read: ReadOptions = ReadOptions(),
    settings: Settings = Settings(),
    *,
    history: str | Path | None = None,
    progress: Progress = no_progress,
    processes: int = 1,
) -> Assessment:
    """Read, check and assess the predictions named by ``sources`` (files, directories, globs).

    ``read``: how the files are read; ``settings``: what is computed (:class:`~trustcal.settings.Settings`:
    its calibrators are fitted on each file's validation predictions, docs/method.md §2, see
    :func:`~trustcal.assessment.fit.predictions_of`; its bootstrap, None: none, puts percentile intervals
    on the test split's numbers). ``history``: the training history (a file), else one found beside the
    predictions (:func:`~trustcal.predictions.history_beside`). ``processes``: how many processes may
    compute the tables of a series (:func:`~trustcal.assessment.tables.assessment_tables`)."""
    warnings: list[InputWarning] = []
    sources = [sources] if isinstance(sources, (str, Path)) else sources
    try:
        files, skipped = discover(sources, read)
    except PredictionError:
        _refuse_histories(sources)
        raise
    if read.validation and len(files) > 1:
        raise PredictionError(
            f'validation="{read.validation}": applies to a single prediction file, but {len(files)} were given. '
            "Fix: for a series, save val_logits and val_labels in each epoch's .npz file.",
            options=("validation",),
        )
    if history is None:  # a history file in a prediction directory is used, and said so
        history = history_beside(skipped)
        skipped = [p for p in skipped if p != history]
    history_table = read_history(history) if history else None
    try:
        loaded = load_series(progress(files, "reading", "file"), read, warnings.append)
    except PredictionError:
        _refuse_histories([f.path for f in files])
        raise
    return assess_loaded(
        loaded,
        settings,
        skipped=skipped,
        warnings=warnings,
        history=history_table,
        history_file=Path(history) if history else None,
        progress=progress,
        processes=processes,
    )
