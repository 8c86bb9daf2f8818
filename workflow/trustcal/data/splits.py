"""The train / validation / test splits of a dataset (``prepared.npz``), as Keras' ``validation_split`` makes them."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from trustcal.data.staging import load_raw
from trustcal.files import read_npz, write_npz

log = logging.getLogger(__name__)

PREPARED_KEYS = ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")


def split_validation(n: int, validation_split: float = 0.1) -> int:
    """Index where the validation tail starts, as Keras computes it (ceil of the train part)."""
    if not 0 < validation_split < 1:
        raise ValueError("validation_split must be in (0, 1)")
    return int(math.ceil(n * (1.0 - validation_split)))


def prepare(
    dataset: str,
    data_dir: str | Path,
    out: str | Path,
    *,
    validation_split: float = 0.1,
    verify_checksums: bool = True,
) -> dict[str, int]:
    """Write the train / validation / test splits of ``dataset`` to ``out`` (npz)."""
    x_train, y_train, x_test, y_test = load_raw(dataset, data_dir, verify_checksums=verify_checksums)
    cut = split_validation(len(x_train), validation_split)
    arrays = dict(
        x_train=x_train[:cut],
        y_train=y_train[:cut],
        x_val=x_train[cut:],
        y_val=y_train[cut:],
        x_test=x_test,
        y_test=y_test,
    )
    write_npz(out, **arrays)
    sizes = {k: len(v) for k, v in arrays.items() if k.startswith("x_")}
    log.info("%s: wrote %s with %s", dataset, out, sizes)
    return sizes


def load_prepared(path: str | Path) -> dict[str, np.ndarray]:
    return read_npz(path, PREPARED_KEYS, rule="prepare")
