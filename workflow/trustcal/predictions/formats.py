"""Reading prediction files: the numbers of each format, not yet checked.

Formats (detected from the file name, then the contents; gzip is read as is):

- CSV/TSV/whitespace text: one column per class plus a label column (``True Label``,
  ``label``, ``y``, … or ``label_column``). Named columns are matched to the classes by
  name (:mod:`trustcal.predictions.classes`). A file whose first line is all numbers has
  no header; its last column is the label.
- Parquet and Feather (through pandas and pyarrow, the ``parquet`` extra): the same columns as a CSV.
- ``.npz``: ``probs`` (or ``logits``) and ``labels``; optionally
  ``val_logits``/``val_labels`` (the workflow's logits files use
  ``test_logits``/``test_labels`` and are read too).
- ``.npy``: the N×K array alone; the labels come from a separate file.

One column (CSV) or a 1-D array holds a binary classifier's P(y = positive) or its score
(``decision_function``); labels may be class names (strings) as well as indices.

:class:`~trustcal.predictions.options.ReadOptions` says how to read them; its field names are the CLI flags and
config keys. Each family of formats has its reader module: :mod:`.arrays` (NumPy), :mod:`.columns` (text,
Parquet, Feather); :func:`read_table` picks one.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from trustcal.predictions.arrays import array_where, first_key, labels_array, load_numpy, read_npy, read_npz
from trustcal.predictions.columns import arrow_frame, label_column, label_values, read_arrow, read_csv, read_text_table
from trustcal.predictions.errors import (
    ColumnError,
    UnreadableFile,
)
from trustcal.predictions.options import ARROW_SUFFIXES, LABEL_KEYS, ReadOptions
from trustcal.predictions.table import Table

# --------------------------------------------------------------------------- reading


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes, gunzipped when they are gzip data; clear errors for missing or empty files."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UnreadableFile(f"{path}: file not found. Fix: check the path.") from None
    except OSError as exc:
        raise UnreadableFile(
            f"{path}: cannot be read ({exc.strerror or exc}). Fix: check the path and its permissions."
        ) from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise UnreadableFile(
                f"{path}: the gzip data is truncated or corrupt ({exc}). Fix: copy or export the file again."
            ) from None
    if not data.strip():
        raise UnreadableFile(
            f"{path}: the file is empty; expected one row per sample with one probability per class and the label. "
            "Fix: export the predictions again."
        )
    return data


def detect_format(path: str | Path, data: bytes, forced: str = "auto") -> str:
    if forced != "auto":
        return forced
    name = Path(path).name.lower()
    name = name[:-3] if name.endswith(".gz") else name
    for suffix, fmt in ARROW_SUFFIXES + (
        (".npz", "npz"),
        (".npy", "npy"),
        (".csv", "csv"),
        (".tsv", "csv"),
        (".txt", "csv"),
    ):
        if name.endswith(suffix):
            return fmt
    if data[:2] == b"PK":
        return "npz"
    if data[:6] == b"\x93NUMPY":
        return "npy"
    if data[:4] == b"PAR1":
        return "parquet"
    if data[:6] == b"ARROW1":
        return "feather"
    return "csv"


def read_labels_file(path: str | Path, opts: ReadOptions) -> tuple[np.ndarray, Callable[[int], str]]:
    """Labels from their own file: .npy, .npz (``labels``), Parquet/Feather or text with one label per line."""
    path = Path(path)
    data = read_bytes(path)
    fmt = detect_format(path, data)
    if fmt == "npy":
        return labels_array(path, load_numpy(path, data, "npy"), "array"), array_where("array")
    if fmt == "npz":
        arrays = load_numpy(path, data, "npz")
        key = first_key(arrays, LABEL_KEYS)
        if key is None:
            raise ColumnError(
                f"{path}: no 'labels' array (found {sorted(arrays)}). Fix: save numpy.savez(path, labels=y)."
            )
        return labels_array(path, arrays[key], key), array_where(key)
    if fmt in ("parquet", "feather"):
        df, header, at = arrow_frame(path, data, fmt), True, lambda r: f"row {r}"
    else:
        df, header, line_of, _ = read_text_table(path, data)
        at = lambda r: f"line {line_of(r)}"  # noqa: E731
    columns = list(df.columns)
    if len(columns) == 1:
        column = columns[0]
    else:
        column = label_column(path, columns, header, opts) if header else None
        if column is None:
            raise ColumnError(
                f"{path}: {len(columns)} columns; expected a single column of labels (one integer per line). "
                "Fix: write only the labels, one per line."
            )
    return label_values(path, df, column, at), at


def read_table(path: str | Path, opts: ReadOptions) -> Table:
    """Predictions (and labels, where the file has them) from one file, not yet checked."""
    path = Path(path)
    data = read_bytes(path)
    fmt = detect_format(path, data, opts.format)
    if fmt == "npz":
        return read_npz(path, data, opts)
    if fmt == "npy":
        return read_npy(path, data, opts)
    if fmt in ("parquet", "feather"):
        return read_arrow(path, data, opts, fmt)
    return read_csv(path, data, opts)
