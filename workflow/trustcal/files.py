"""File helpers shared by every stage: atomic writes and readable load errors.

Every output is written to a temporary name in the target's directory and then
renamed, so a crash never leaves a half-written file that looks complete.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.errors import TrustcalError

log = logging.getLogger(__name__)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def remove_stale_temporaries(directory: str | os.PathLike, name_glob: str) -> list[Path]:
    """Delete what :func:`atomic_path` / :func:`atomic_directory` left in ``directory`` for targets
    matching ``name_glob`` when the writing process was killed mid-write (SIGKILL, a node going down).

    Nothing under a target's own name is touched: those are complete by construction. Both writers
    call it for their target before writing it again; returns what was removed.
    """
    removed = []
    for pattern in (f".{name_glob}.*.tmp", f".{name_glob}.*.old"):
        for tmp in Path(directory).glob(pattern):
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)
            log.warning("%s: removed, left half-written by an interrupted run", tmp)
            removed.append(tmp)
    return removed


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent, glob.escape(path.name))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; the result is an ordinary file
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, marker: str) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; on success it replaces ``path`` whole.

    ``path`` may be missing, empty, or a directory written this way before
    (one that holds ``marker``); anything else raises :class:`TrustcalError`
    before any file is written. On any exception nothing is left behind: the
    temporary directory and the parent directories created for it are removed
    and ``path`` is left as it was.
    """
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise TrustcalError(f"{path}: exists and is not a directory. Fix: choose another output directory.")
        if not (path / marker).exists() and any(not p.is_dir() for p in path.rglob("*")):
            raise TrustcalError(
                f"{path}: the output directory holds files that trustcal did not write, which it would replace. "
                "Fix: choose a new or empty directory."
            )
    created = [p for p in reversed(path.parents) if not p.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent, glob.escape(path.name))
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; the result is an ordinary directory
    done = False
    try:
        yield tmp
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old)  # onto an empty directory: allowed by POSIX rename
        try:
            os.replace(tmp, path)
        except OSError:
            if old is not None:
                os.replace(old, path)
            raise
        done = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if not done:
            for p in reversed(created):
                with contextlib.suppress(OSError):
                    p.rmdir()


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


def write_npz(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


def read_npz(path: str | os.PathLike, keys: tuple[str, ...], rule: str) -> dict[str, np.ndarray]:
    """Load ``keys`` from an ``.npz`` file, turning corruption into a clear error.

    ``rule`` names the Snakemake rule that writes the file, for the hint.
    """
    path = Path(path)
    hint = f"delete it and rerun (snakemake --cores 2 --forcerun {rule})"
    if not path.exists():
        raise TrustcalError(f"{path}: file not found; it is written by rule '{rule}': {hint}.")
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [k for k in keys if k not in data.files]
            if missing:
                raise TrustcalError(f"{path}: missing array(s) {missing} (has {sorted(data.files)}); {hint}.")
            return {k: data[k] for k in keys}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise TrustcalError(f"{path}: unreadable or truncated ({exc}); {hint}.") from None


def read_csv(path: str | os.PathLike, columns: tuple[str, ...], rule: str) -> pd.DataFrame:
    """Read a CSV written by ``rule`` and check it has ``columns``."""
    path = Path(path)
    hint = f"delete it and rerun (snakemake --cores 2 --forcerun {rule})"
    try:
        df = pd.read_csv(path)
    except FileNotFoundError:
        raise TrustcalError(f"{path}: file not found; it is written by rule '{rule}'.") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TrustcalError(f"{path}: unreadable ({exc}); {hint}.") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise TrustcalError(f"{path}: missing column(s) {missing}; {hint}.")
    return df


# --- The results contract: results/{dataset}/seed{N}/<table> -------------------------------------

RUN_RE = re.compile(r"(?:^|/)(?P<dataset>[^/]+)/seed(?P<seed>\d+)/[^/]+$")


def run_key(path: str | os.PathLike) -> tuple[str, int]:
    """(dataset, seed) of a per-run table ``…/{dataset}/seed{N}/<table>``."""
    m = RUN_RE.search(Path(path).as_posix())
    if not m:
        raise TrustcalError(f"{path}: expected a path …/{{dataset}}/seed{{N}}/<table>")
    return m["dataset"], int(m["seed"])


def read_seeds(paths: Iterable[str | os.PathLike], columns: tuple[str, ...], rule: str) -> pd.DataFrame:
    """One table per seed (``…/seed{N}/…``; seed 0 when the path names none) as one frame with a ``seed`` column."""
    frames = []
    for path in paths:
        seed = next((p[4:] for p in Path(path).parts if p.startswith("seed") and p[4:].isdigit()), "0")
        frames.append(read_csv(path, columns, rule=rule).assign(seed=int(seed)))
    if not frames:
        raise TrustcalError(f"no {rule} table given")
    return pd.concat(frames, ignore_index=True)


def calibrated_flag(column: pd.Series) -> pd.Series:
    """The ``calibrated`` column as booleans, however a CSV round trip spelled them (True, true, 1, 1.0)."""
    return column.astype(str).str.lower().isin(("true", "1", "1.0"))


RAW, PAPER_CALIBRATOR = "none", "temperature"  # the `calibrator` of the raw model and of the paper's method


def temperature_rows(calibration: pd.DataFrame) -> pd.DataFrame:
    """calibration.csv's rows of temperature scaling (a table from before the ``calibrator`` column: all)."""
    if "calibrator" not in calibration:
        return calibration
    return calibration[calibration["calibrator"] == PAPER_CALIBRATOR]


def paper_states(df: pd.DataFrame) -> pd.DataFrame:
    """The paper's two states of a result table: the raw model's rows (before calibration) and
    temperature scaling's (after), with a boolean ``calibrated`` column beside ``calibrator``.

    A table written before the ``calibrator`` column existed (``calibrated`` only) is read as it is.
    """
    if "calibrator" not in df.columns:
        return df.assign(calibrated=calibrated_flag(df["calibrated"]))
    out = df[df["calibrator"].isin((RAW, PAPER_CALIBRATOR))].copy()
    out.insert(int(out.columns.get_loc("calibrator")) + 1, "calibrated", out["calibrator"] == PAPER_CALIBRATOR)
    return out.reset_index(drop=True)
