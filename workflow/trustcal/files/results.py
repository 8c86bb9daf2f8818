"""The tables of the workflow: written atomically, read with errors that name the rule to rerun, and the
results contract, ``results/{dataset}/seed{N}/<table>``."""

from __future__ import annotations

import logging
import os
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.errors import TrustcalError
from trustcal.files.atomic import atomic_path
from trustcal.files.digests import DigestMismatch, seal_zip, verify_zip

log = logging.getLogger(__name__)


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


def write_npz(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    """``np.savez`` of ``arrays``, sealed with its content digest (:func:`seal_zip`), written atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
        seal_zip(tmp)


def read_result_npz(path: str | os.PathLike, keys: tuple[str, ...] | None, rule: str) -> dict[str, np.ndarray]:
    """Load ``keys`` (None: every array) from an ``.npz`` file, checked against its content digest
    (:func:`verify_zip`), turning corruption into a clear error.

    ``rule`` names the Snakemake rule that writes the file, for the hint.
    """
    path = Path(path)
    hint = f"delete it and rerun rule '{rule}'"
    if not path.exists():
        raise TrustcalError(f"{path}: file not found; it is written by rule '{rule}': {hint}.", rerun=rule)
    try:
        verify_zip(path)
    except DigestMismatch as exc:
        raise TrustcalError(f"{path}: {exc}; {hint}.", rerun=rule) from None
    try:
        with np.load(path, allow_pickle=False) as data:
            keys = tuple(data.files) if keys is None else keys
            missing = [k for k in keys if k not in data.files]
            if missing:
                raise TrustcalError(
                    f"{path}: missing array(s) {missing} (has {sorted(data.files)}); {hint}.", rerun=rule
                )
            return {k: data[k] for k in keys}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise TrustcalError(f"{path}: unreadable or truncated ({exc}); {hint}.", rerun=rule) from None


def read_result_csv(path: str | os.PathLike, columns: tuple[str, ...], rule: str) -> pd.DataFrame:
    """Read a CSV written by ``rule`` and check it has ``columns``."""
    path = Path(path)
    hint = f"delete it and rerun rule '{rule}'"
    try:
        df = pd.read_csv(path)
    except FileNotFoundError:
        raise TrustcalError(f"{path}: file not found; it is written by rule '{rule}'.") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TrustcalError(f"{path}: unreadable ({exc}); {hint}.", rerun=rule) from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise TrustcalError(f"{path}: missing column(s) {missing}; {hint}.", rerun=rule)
    return df


SEED_RE = re.compile(r"seed(\d+)")  # a run's folder, seed{N} (or a per-run log's name, seed{N}.log)


def path_seed(path: str | os.PathLike) -> int | None:
    """The seed ``path`` names: N of its last part ``seed{N}`` (a folder ``…/seed{N}/<table>``, or its own name
    without the suffix, ``…/seed{N}.log``); None when no part does."""
    path = Path(path)
    for part in reversed((*path.parent.parts, path.stem)):
        if m := SEED_RE.fullmatch(part):
            return int(m[1])
    return None


def run_key(path: str | os.PathLike) -> tuple[str, int]:
    """(dataset, seed) of a per-run table ``…/{dataset}/seed{N}/<table>``."""
    folder = Path(path).parent
    if not SEED_RE.fullmatch(folder.name) or not folder.parent.name:
        raise TrustcalError(f"{path}: expected a path …/{{dataset}}/seed{{N}}/<table>")
    return folder.parent.name, path_seed(folder)


def read_seeds(paths: Iterable[str | os.PathLike], columns: tuple[str, ...], rule: str) -> pd.DataFrame:
    """One table per seed (``…/seed{N}/…``; seed 0 when the path names none) as one frame with a ``seed`` column."""
    frames = []
    for path in paths:
        seed = path_seed(path)
        frames.append(read_result_csv(path, columns, rule=rule).assign(seed=0 if seed is None else seed))
    if not frames:
        raise TrustcalError(f"no {rule} table given")
    return pd.concat(frames, ignore_index=True)
