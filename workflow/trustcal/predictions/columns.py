"""Tables of named columns: CSV/TSV/whitespace text (a header, or none when the first line is all numbers),
Parquet and Feather (through pandas and pyarrow, the ``parquet`` extra): one column per class and a label
column."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np

from trustcal.predictions.errors import (
    CellError,
    ColumnError,
    UnreadableFile,
)
from trustcal.predictions.options import LABEL_COLUMN_NAMES, PARQUET_EXTRA, ReadOptions
from trustcal.predictions.table import Table, is_number, name_labels

# ----- CSV


def _sniff_sep(first_line: str) -> str:
    counts = {sep: first_line.count(sep) for sep in (",", "\t", ";")}
    sep = max(counts, key=counts.get)
    if counts[sep] == 0:
        return r"\s+" if first_line.strip().count(" ") else ","
    return sep


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
    header = not all(is_number(f.strip()) for f in _split_line(first, sep) if f.strip() != "")
    skip = 1 if header else 0

    def line_of(row: int) -> int:
        return numbered[row + skip] if row + skip < len(numbered) else len(lines)

    try:
        df = pd.read_csv(
            io.BytesIO(data),  # decoded as parsed: no StringIO copy of the text (four bytes a character)
            encoding="utf-8-sig",
            sep=sep,
            header=0 if header else None,
            skipinitialspace=True,
            engine="c",
        )
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


def label_values(path: Path, df, column: str, at) -> np.ndarray:
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


def label_column(path: Path, columns: list[str], header: bool, opts: ReadOptions, required: bool = True) -> str | None:
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
    usual = {_norm(name) for name in LABEL_COLUMN_NAMES}
    for c in columns:
        if _norm(c) in usual:
            return c
    if not required:
        return None
    raise ColumnError(
        f"{path}: no label column; expected a column named {', '.join(map(repr, LABEL_COLUMN_NAMES))} "
        f"(any case), found {columns}. Fix: name the label column with label_column=NAME.",
        options=("label_column",),
    )


def read_frame(path: Path, df, header: bool, at, opts: ReadOptions) -> Table:
    """Predictions (and labels) from a table of columns (a CSV, Parquet or Feather file).

    ``at(row)`` says where a row is in messages (``line 7`` in a CSV, ``row 6`` in Parquet)."""
    columns = list(df.columns)
    label = label_column(path, columns, header, opts, required=not opts.labels)
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
        table.labels = label_values(path, df, label, at)
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


def arrow_frame(path: Path, data: bytes, fmt: str):
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
    return read_frame(path, arrow_frame(path, data, fmt), True, lambda r: f"row {r}", opts)
