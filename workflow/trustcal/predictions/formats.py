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

:class:`ReadOptions` says how to read them; its field names are the CLI flags and config keys.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trustcal.predictions.errors import (
    CellError,
    ColumnError,
    PredictionError,
    UnreadableFile,
)

# --------------------------------------------------------------------------- options

FORMATS = ("auto", "csv", "npz", "npy", "parquet", "feather")
PARQUET_EXTRA = "pip install 'trustcal[parquet]'"
ARROW_SUFFIXES = ((".parquet", "parquet"), (".pq", "parquet"), (".feather", "feather"), (".arrow", "feather"))
KINDS = ("auto", "probs", "logits")
# Matched against the file name without its extensions (``bef_10.csv.gz`` → ``bef_10``):
# the last number is the epoch; a word before/after/bef/aft/uncalibrated/calibrated
# anywhere in the name is the state (no word: before calibration).
DEFAULT_NAME_PATTERN = (
    r"(?i)^(?=(?:.*?(?<![a-z])(?P<state>before|after|bef|aft|uncalibrated|calibrated)(?![a-z]))?)"
    r".*?(?P<epoch>\d+)\D*$"
)
LABEL_COLUMN_NAMES = ("truelabel", "label", "labels", "target", "targets", "y", "ytrue", "class", "groundtruth")
PROB_KEYS = ("probs", "probabilities", "test_probs", "test_probabilities")
LOGIT_KEYS = ("logits", "test_logits")
LABEL_KEYS = ("labels", "test_labels", "y", "targets")


@dataclass(frozen=True)
class ReadOptions:
    """How to read prediction files; the field names are the keys of the workflow's ``external`` entries
    (and, with dashes, the flags of ``trustcal assess``)."""

    format: str = "auto"  # auto, csv, npz, npy
    kind: str = "auto"  # auto, probs, logits
    label_column: str | None = None
    prob_columns: str | None = None  # regex matching whole column names
    labels: str | None = None  # labels file for predictions without labels (.npy)
    validation: str | None = None  # validation predictions + labels: fit temperature scaling
    name_pattern: str = DEFAULT_NAME_PATTERN
    sum_tolerance: float = 1e-3
    renormalize: bool = False
    num_classes: int | None = None
    positive_class: str | None = None  # binary predictions (one column): the class they are about; None: auto

    def __post_init__(self):
        if self.format not in FORMATS:
            raise PredictionError(
                f"format={self.format!r} is unknown; expected one of {', '.join(FORMATS)}", options=("format",)
            )
        if self.kind not in KINDS:
            raise PredictionError(
                f"kind={self.kind!r} is unknown; expected one of {', '.join(KINDS)}", options=("kind",)
            )
        if not (self.sum_tolerance > 0 and math.isfinite(self.sum_tolerance)):
            raise PredictionError(
                f"sum_tolerance must be a positive number (got {self.sum_tolerance})", options=("sum_tolerance",)
            )
        if self.positive_class is not None and not isinstance(self.positive_class, str):
            object.__setattr__(self, "positive_class", str(self.positive_class))  # a number in config.yaml
        if self.num_classes is not None and self.num_classes < 2:
            raise PredictionError(f"num_classes must be ≥ 2 (got {self.num_classes})", options=("num_classes",))
        name_regex(self.name_pattern)
        if self.prob_columns is not None:
            _compile(self.prob_columns, "prob_columns")


def _compile(pattern: str, option: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise PredictionError(
            f"{option}={pattern!r} is not a valid regular expression ({exc})", options=(option,)
        ) from None


def name_regex(pattern: str) -> re.Pattern:
    rx = _compile(pattern, "name_pattern")
    if "epoch" not in rx.groupindex:
        raise PredictionError(
            f"name_pattern={pattern!r} has no group named 'epoch'; write it like "
            r"'run(?P<epoch>\d+)_(?P<state>bef|aft)'",
            options=("name_pattern",),
        )
    return rx


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


@dataclass
class Table:
    """Numbers read from one file, with what is needed to point at a cell in messages."""

    path: Path
    values: np.ndarray  # N×K float64: probabilities or logits; N (one column): a binary classifier's
    kind: str  # probs, logits or auto (decided from the values)
    labels: np.ndarray | None  # N float64, or N class names (object array of str); checked later
    where: Callable[[int, int | None], str]  # (row, column or None) → "line 7, column 'x'"
    label_where: Callable[[int], str] | None = None
    label_path: Path | None = None
    val: Table | None = None
    columns: list[str] | None = None  # the value columns' names as written in a header (None: no header)
    chosen: bool = False  # the value columns were chosen among a file's columns (prob_columns applies)


def _array_where(key: str):
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


def _labels_array(path: Path, arr: np.ndarray, key: str, n_classes: int | None = None) -> np.ndarray:
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


def _load_numpy(path: Path, data: bytes, fmt: str):
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


def _first_key(arrays: dict, keys) -> str | None:
    return next((k for k in keys if k in arrays), None)


def read_npz(path: Path, data: bytes, opts: ReadOptions) -> Table:
    arrays = _load_numpy(path, data, "npz")
    key = _first_key(arrays, PROB_KEYS + LOGIT_KEYS)
    if key is None:
        raise ColumnError(
            f"{path}: no predictions array; expected 'probs' or 'logits' (N×K) and 'labels' (N), found "
            f"{sorted(arrays) or 'nothing'}. Fix: save with numpy.savez(path, probs=P, labels=y) (or logits=Z)."
        )
    kind = opts.kind if opts.kind != "auto" else "probs" if key in PROB_KEYS else "logits"
    values = _numeric_array(path, arrays[key], key, 2)
    label_key = _first_key(arrays, LABEL_KEYS)
    table = Table(path, values, kind, None, _array_where(key))
    k = values.shape[1] if values.ndim == 2 else 2
    if label_key is not None and not opts.labels:
        table.labels = _labels_array(path, arrays[label_key], label_key, k)
        table.label_where = _array_where(label_key)
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
        val = Table(path, _numeric_array(path, arrays[vkey], vkey, 2), vkey[4:], None, _array_where(vkey))
        val.labels = _labels_array(path, arrays["val_labels"], "val_labels", k)
        val.label_where = _array_where("val_labels")
        table.val = val
    return table


def read_npy(path: Path, data: bytes, opts: ReadOptions) -> Table:
    arr = _load_numpy(path, data, "npy")
    if not opts.labels:
        raise ColumnError(
            f"{path}: an .npy file holds only the predictions; expected the labels in a separate file. "
            "Fix: pass labels=FILE (one integer per row: .npy, .txt or .csv), or save both in an .npz.",
            options=("labels",),
        )
    return Table(path, _numeric_array(path, arr, "array", 2), opts.kind, None, _array_where("array"))


# ----- CSV


def _sniff_sep(first_line: str) -> str:
    counts = {sep: first_line.count(sep) for sep in (",", "\t", ";")}
    sep = max(counts, key=counts.get)
    if counts[sep] == 0:
        return r"\s+" if first_line.strip().count(" ") else ","
    return sep


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _split_line(line: str, sep: str) -> list[str]:
    if sep == r"\s+":
        return line.split()
    return next(csv.reader([line], delimiter=sep), [])


def _ragged(path: Path, line, fields, expected, header: bool) -> ColumnError:
    return ColumnError(
        f"{path}: line {line} has {fields} fields but {'the header has' if header else 'the first line has'} "
        f"{expected}; expected the same columns on every line (one probability per class and the label). "
        f"Fix: repair or delete line {line}."
    )


def read_text_table(path: Path, data: bytes):
    """A text table as (DataFrame, header_present, line_of_row, sep). Column names are kept as written."""
    import pandas as pd

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableFile(
            f"{path}: not a text file (not UTF-8); expected a CSV with one probability column per class and a label "
            'column. Fix: pass format="npz", npy, parquet or feather if it is one of those, or export it as CSV.',
            options=("format",),
        ) from None
    lines = re.split(r"\r\n|\r|\n", text)  # line ends as pandas sees them (not str.splitlines)
    numbered = [i + 1 for i, line in enumerate(lines) if line.strip()]  # file line of each non-blank line
    if not numbered:
        raise UnreadableFile(
            f"{path}: the file holds only blank space; expected one row per sample with one probability per "
            "class and the label. Fix: export the predictions again."
        )
    _check_decimal_commas(path, lines, numbered)
    first = lines[numbered[0] - 1]
    sep = "\t" if path.name.lower().removesuffix(".gz").endswith(".tsv") else _sniff_sep(first)
    header = not all(_is_number(f.strip()) for f in _split_line(first, sep) if f.strip() != "")
    skip = 1 if header else 0

    def line_of(row: int) -> int:
        return numbered[row + skip] if row + skip < len(numbered) else len(lines)

    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, header=0 if header else None, skipinitialspace=True, engine="c")
    except pd.errors.ParserError as exc:
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if m:
            expected, line, saw = m.groups()
            raise _ragged(path, line, saw, expected, header) from None
        raise UnreadableFile(f"{path}: cannot be parsed as CSV ({exc}). Fix: export it as a plain CSV.") from None
    except (pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise UnreadableFile(f"{path}: cannot be parsed as CSV ({exc}). Fix: export it as a plain CSV.") from None
    if len(df) == 0:
        raise UnreadableFile(
            f"{path}: the file has a header but no rows; expected one row per sample. Fix: export the predictions again."
        )
    if not header:
        df.columns = [f"column {i + 1}" for i in range(df.shape[1])]
    else:
        df.columns = [str(c) for c in df.columns]
    # A row with fewer fields than the header is padded with NaN by pandas: find it first.
    if df.isna().to_numpy().any():
        ncols = df.shape[1]
        for line_no in numbered[skip:]:
            n = len(_split_line(lines[line_no - 1], sep))
            if n != ncols:
                raise _ragged(path, line_no, n, ncols, header)
    return df, header, line_of, sep


DECIMAL_COMMA = re.compile(r"^\s*[-+]?\d+,\d+([eE][-+]?\d+)?\s*$")
DECIMAL_COMMA_FIX = (
    "export with a decimal point (e.g. pandas' to_csv(decimal='.'), or a spreadsheet in an English locale)"
)


def _decimal_comma_hint(cell: str) -> str:
    return (
        f" {cell.strip()!r} looks like a number with a decimal comma; {DECIMAL_COMMA_FIX}."
        if DECIMAL_COMMA.match(cell)
        else ""
    )


def _numeric_column(path: Path, df, column: str, at, hint: str) -> np.ndarray:
    """The column as float64; ``at(row)`` says where a row is (``line 7``, ``row 6``)."""
    import pandas as pd

    col = df[column]
    if pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=np.float64)
    if not pd.api.types.is_numeric_dtype(col):
        parsed = pd.to_numeric(col, errors="coerce")
        bad = parsed.isna().to_numpy() & col.notna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            cell = str(col.iloc[row])
            raise CellError(
                f"{path}: {at(row)}, column '{column}': {cell!r} is not a number; "
                f"expected {hint}.{_decimal_comma_hint(cell)} Fix: correct that cell"
                + (", or choose the probability columns with prob_columns=REGEX." if "probability" in hint else "."),
                options=("prob_columns",) if "probability" in hint else (),
            )
        col = parsed
    return col.to_numpy(dtype=np.float64)


def name_labels(path: Path, arr, where) -> np.ndarray:
    """Labels given as class names: an object array of stripped strings (numbers: float64)."""
    texts = [None if x is None or (isinstance(x, float) and math.isnan(x)) else str(x).strip() for x in arr]
    empty = [i for i, t in enumerate(texts) if not t]
    if empty:
        raise CellError(
            f"{path}: {where(empty[0])}: empty label ({len(empty)} such label(s)); expected a class index or name. "
            "Fix: every sample needs its true label; drop unlabelled rows."
        )
    if all(_is_number(t) for t in texts):
        return np.array([float(t) for t in texts])
    return np.array(texts, dtype=object)


def _label_values(path: Path, df, column: str, at) -> np.ndarray:
    """The labels: numbers (class indices), or class names when no cell is a number.

    A column mixing numbers and text is a typo, not names: the first text cell is an error."""
    import pandas as pd

    col = df[column]
    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=np.float64)
    parsed = pd.to_numeric(col, errors="coerce")
    if parsed.notna().any() or col.isna().all():
        return _numeric_column(path, df, column, at, "an integer class index or a class name")
    return name_labels(path, col.to_numpy(dtype=object), lambda r: f"{at(r)}, column '{column}'")


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name.lower())


def _label_column(path: Path, columns: list[str], header: bool, opts: ReadOptions, required: bool = True) -> str | None:
    """The label column: ``label_column``, a column with a usual name, or the last column of a headerless file.

    With ``required=False`` (the labels come from a ``labels`` file) a column found by name is still
    returned, so that it is not read as a class.
    """
    if opts.label_column is not None:
        if opts.label_column in columns:
            return opts.label_column
        raise ColumnError(
            f"{path}: no column named {opts.label_column!r} (from label_column); the columns are {columns}. "
            "Fix: pass the label column's name exactly as in the header.",
            options=("label_column",),
        )
    if not header:
        return columns[-1] if required else None
    for c in columns:
        if _norm(c) in LABEL_COLUMN_NAMES:
            return c
    if not required:
        return None
    raise ColumnError(
        f"{path}: no label column; expected a column named 'True Label', 'label', 'labels', 'target' or 'y' "
        f"(any case), found {columns}. Fix: name the label column with label_column=NAME.",
        options=("label_column",),
    )


def read_frame(path: Path, df, header: bool, at, opts: ReadOptions) -> Table:
    """Predictions (and labels) from a table of columns (a CSV, Parquet or Feather file).

    ``at(row)`` says where a row is in messages (``line 7`` in a CSV, ``row 6`` in Parquet)."""
    columns = list(df.columns)
    label = _label_column(path, columns, header, opts, required=not opts.labels)
    if opts.prob_columns is not None:
        rx = re.compile(opts.prob_columns)
        probs = [c for c in columns if rx.fullmatch(c) and c != label]
        if not probs:
            raise ColumnError(
                f"{path}: no column name matches prob_columns={opts.prob_columns!r}; the columns are {columns}. "
                "Fix: write a regular expression that matches whole column names, e.g. 'Class_\\d+_Probability'.",
                options=("prob_columns",),
            )
    else:
        # every column but the label (and an unnamed index column written by DataFrame.to_csv)
        probs = [c for c in columns if c != label and not (header and re.fullmatch(r"Unnamed: 0|", c))]
    if not probs:
        raise ColumnError(
            f"{path}: no probability columns; expected one column per class (or one column P(y = 1) of a binary "
            f"classifier) and the label column. Fix: check the separator and the header"
            + (", or pass prob_columns=REGEX." if header else "."),
            options=("prob_columns",) if header else (),
        )
    values = np.column_stack(
        [_numeric_column(path, df, c, at, "a probability or logit (a decimal number)") for c in probs]
    )
    table = Table(
        path,
        values[:, 0] if len(probs) == 1 else values,
        opts.kind,
        None,
        lambda r, c=None: at(r) + ("" if c is None else f", column '{probs[c]}'"),
        columns=probs if header else None,
        chosen=True,
    )
    if label is not None and not opts.labels:
        table.labels = _label_values(path, df, label, at)
        table.label_where = lambda r: f"{at(r)}, column '{label}'"
    return table


def _check_decimal_commas(path: Path, lines: list[str], numbered: list[int]) -> None:
    """A hint for decimal commas (``0,25;0,75``): the first two lines hold a cell such as ``0,25``."""
    for line_no in numbered[:2]:
        fields = re.split(r"[;\t]", lines[line_no - 1]) if re.search(r"[;\t]", lines[line_no - 1]) else []
        fields += next(csv.reader([lines[line_no - 1]]), [])  # quoted "0,25" in a comma-separated line
        cell = next((f for f in fields if DECIMAL_COMMA.match(f.strip('"'))), None)
        if cell is not None:
            raise CellError(
                f"{path}: line {line_no}: {cell.strip()!r} looks like a number with a decimal comma; expected a "
                f"decimal point. Fix: {DECIMAL_COMMA_FIX}."
            )


def read_csv(path: Path, data: bytes, opts: ReadOptions) -> Table:
    df, header, line_of, _ = read_text_table(path, data)
    return read_frame(path, df, header, lambda r: f"line {line_of(r)}", opts)


def _arrow_frame(path: Path, data: bytes, fmt: str):
    """A Parquet or Feather file as a DataFrame (pandas through pyarrow)."""
    import pandas as pd

    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise UnreadableFile(
            f"{path}: a {fmt.capitalize()} file; reading it needs pyarrow, which is not installed. "
            f"Fix: {PARQUET_EXTRA} (or export the predictions as CSV)."
        ) from None
    try:
        reader = pd.read_parquet if fmt == "parquet" else pd.read_feather
        df = reader(io.BytesIO(data))
    except Exception as exc:  # any failure to parse the file means it is unreadable
        raise UnreadableFile(
            f"{path}: unreadable or truncated {fmt.capitalize()} file ({type(exc).__name__}: {exc}). "
            f"Fix: write it again (DataFrame.to_{fmt}(path)), or pass format=NAME if it is another format.",
            options=("format",),
        ) from None
    if len(df) == 0:
        raise UnreadableFile(f"{path}: the table has no rows; expected one row per sample. Fix: export it again.")
    df.columns = [str(c) for c in df.columns]
    return df


def read_arrow(path: Path, data: bytes, opts: ReadOptions, fmt: str) -> Table:
    """Parquet or Feather: named columns as in a CSV; rows counted from 0 in messages."""
    return read_frame(path, _arrow_frame(path, data, fmt), True, lambda r: f"row {r}", opts)


def read_labels_file(path: str | Path, opts: ReadOptions) -> tuple[np.ndarray, Callable[[int], str]]:
    """Labels from their own file: .npy, .npz (``labels``), Parquet/Feather or text with one label per line."""
    path = Path(path)
    data = read_bytes(path)
    fmt = detect_format(path, data)
    if fmt == "npy":
        return _labels_array(path, _load_numpy(path, data, "npy"), "array"), _array_where("array")
    if fmt == "npz":
        arrays = _load_numpy(path, data, "npz")
        key = _first_key(arrays, LABEL_KEYS)
        if key is None:
            raise ColumnError(
                f"{path}: no 'labels' array (found {sorted(arrays)}). Fix: save numpy.savez(path, labels=y)."
            )
        return _labels_array(path, arrays[key], key), _array_where(key)
    if fmt in ("parquet", "feather"):
        df, header, at = _arrow_frame(path, data, fmt), True, lambda r: f"row {r}"
    else:
        df, header, line_of, _ = read_text_table(path, data)
        at = lambda r: f"line {line_of(r)}"  # noqa: E731
    columns = list(df.columns)
    if len(columns) == 1:
        column = columns[0]
    else:
        column = _label_column(path, columns, header, opts) if header else None
        if column is None:
            raise ColumnError(
                f"{path}: {len(columns)} columns; expected a single column of labels (one integer per line). "
                "Fix: write only the labels, one per line."
            )
    return _label_values(path, df, column, at), at


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
