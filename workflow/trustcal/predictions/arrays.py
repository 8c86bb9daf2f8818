"""NumPy files: ``.npz`` (``probs`` or ``logits`` and ``labels``; optionally ``val_logits``/``val_labels``) and
``.npy`` (the N×K array alone, its labels in a separate file)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from trustcal.predictions.errors import (
    CellError,
    ColumnError,
    UnreadableFile,
)
from trustcal.predictions.options import LABEL_KEYS, LOGIT_KEYS, PROB_KEYS, ReadOptions
from trustcal.predictions.table import Table, name_labels


def array_where(key: str):
    return lambda r, c=None: f"array '{key}', row {r}" + ("" if c is None else f", column {c}")


def _numeric_array(path: Path, arr: np.ndarray, key: str, ndim: int) -> np.ndarray:
    if arr.dtype.kind not in "biuf":
        raise CellError(
            f"{path}: array '{key}' holds {arr.dtype} values; expected numbers. "
            "Fix: save a float array (probabilities or logits) and an integer label array."
        )
    if ndim == 2 and arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]  # one column: a binary classifier's P(y = positive) or score
    if ndim == 2 and arr.ndim not in (1, 2):
        raise ColumnError(
            f"{path}: array '{key}' has shape {arr.shape}; expected N×K (one row per sample, one column per class) "
            "or N (a binary classifier's P(y = 1) or score). Fix: save the predictions as a 2-D array."
        )
    if len(arr) == 0:
        raise UnreadableFile(
            f"{path}: array '{key}' has no rows; expected one row per sample. Fix: export the predictions again."
        )
    if ndim == 2 and arr.ndim == 2 and arr.shape[1] == 0:
        raise ColumnError(
            f"{path}: array '{key}' has shape {arr.shape}; expected one column per class (at least 2), or one "
            "column for a binary classifier. Fix: save the full N×K matrix of probabilities or logits."
        )
    return arr.astype(np.float64)


def labels_array(path: Path, arr: np.ndarray, key: str, n_classes: int | None = None) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype.kind in "USO" and arr.ndim == 1 and len(arr):  # class names
        if arr.dtype.kind == "S":
            arr = np.char.decode(arr, "utf-8", errors="replace")
        return name_labels(path, arr.astype(object), lambda r: f"array '{key}', row {r}")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    elif arr.ndim == 2 and n_classes is not None and arr.shape[1] == n_classes and arr.dtype.kind in "biuf":
        onehot = arr.astype(np.float64)
        if np.all((onehot == 0) | (onehot == 1)) and np.all(onehot.sum(axis=1) == 1):
            return onehot.argmax(axis=1).astype(np.float64)  # one-hot labels
    if arr.ndim != 1:
        raise ColumnError(
            f"{path}: array '{key}' has shape {arr.shape}; expected one integer class index per sample (shape (N,)). "
            "Fix: save the labels as a 1-D integer array (or one-hot N×K)."
        )
    return _numeric_array(path, arr, key, 1)


def load_numpy(path: Path, data: bytes, fmt: str):
    try:
        loaded = np.load(io.BytesIO(data), allow_pickle=False)
        if fmt == "npz":
            if not hasattr(loaded, "files"):
                raise ValueError("not an .npz archive")
            with loaded:
                return {k: loaded[k] for k in loaded.files}
        if hasattr(loaded, "files"):
            loaded.close()
            raise ValueError("an .npz archive, not an .npy array")
        return loaded
    except Exception as exc:  # any failure to parse the file means it is unreadable
        what = ".npz archive" if fmt == "npz" else ".npy array"
        example = "numpy.savez(path, probs=P, labels=y)" if fmt == "npz" else "numpy.save(path, P)"
        raise UnreadableFile(
            f"{path}: unreadable or truncated {what} ({type(exc).__name__}: {exc}). "
            f"Fix: write it again, e.g. {example}, or pass format=NAME if it is another format.",
            options=("format",),
        ) from None


def first_key(arrays: dict, keys) -> str | None:
    return next((k for k in keys if k in arrays), None)


def read_npz(path: Path, data: bytes, opts: ReadOptions) -> Table:
    arrays = load_numpy(path, data, "npz")
    key = first_key(arrays, PROB_KEYS + LOGIT_KEYS)
    if key is None:
        raise ColumnError(
            f"{path}: no predictions array; expected 'probs' or 'logits' (N×K) and 'labels' (N), found "
            f"{sorted(arrays) or 'nothing'}. Fix: save with numpy.savez(path, probs=P, labels=y) (or logits=Z)."
        )
    kind = opts.kind if opts.kind != "auto" else "probs" if key in PROB_KEYS else "logits"
    values = _numeric_array(path, arrays[key], key, 2)
    label_key = first_key(arrays, LABEL_KEYS)
    table = Table(path, values, kind, None, array_where(key))
    k = values.shape[1] if values.ndim == 2 else 2
    if label_key is not None and not opts.labels:
        table.labels = labels_array(path, arrays[label_key], label_key, k)
        table.label_where = array_where(label_key)
    elif not opts.labels:
        raise ColumnError(
            f"{path}: no labels array; expected 'labels' (N integers) beside '{key}', found {sorted(arrays)}. "
            "Fix: add it (numpy.savez(path, probs=P, labels=y)) or pass labels=FILE.",
            options=("labels",),
        )
    vkey = "val_logits" if "val_logits" in arrays else "val_probs" if "val_probs" in arrays else None
    if vkey is not None and "val_labels" not in arrays:
        raise ColumnError(
            f"{path}: '{vkey}' without 'val_labels'; expected both to fit temperature scaling on the validation "
            f"data. Fix: add val_labels, or drop {vkey}."
        )
    if vkey is not None:
        val = Table(path, _numeric_array(path, arrays[vkey], vkey, 2), vkey[4:], None, array_where(vkey))
        val.labels = labels_array(path, arrays["val_labels"], "val_labels", k)
        val.label_where = array_where("val_labels")
        table.val = val
    return table


def read_npy(path: Path, data: bytes, opts: ReadOptions) -> Table:
    arr = load_numpy(path, data, "npy")
    if not opts.labels:
        raise ColumnError(
            f"{path}: an .npy file holds only the predictions; expected the labels in a separate file. "
            "Fix: pass labels=FILE (one integer per row: .npy, .txt or .csv), or save both in an .npz.",
            options=("labels",),
        )
    return Table(path, _numeric_array(path, arr, "array", 2), opts.kind, None, array_where("array"))
