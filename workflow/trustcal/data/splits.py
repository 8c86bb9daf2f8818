"""The train / validation / test splits of a dataset (``splits.npz``), as Keras' ``validation_split`` makes them."""

from __future__ import annotations

import logging
import math
import zipfile
from pathlib import Path

import numpy as np

from trustcal import registry
from trustcal.data import tabular
from trustcal.errors import TrustcalError
from trustcal.files import read_result_npz, write_npz
from trustcal.registry import DatasetSpec

log = logging.getLogger(__name__)

PREPARED_KEYS = ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")


def split_validation(n: int, validation_split: float = 0.1) -> int:
    """Index where the validation tail starts, as Keras computes it (ceil of the train part)."""
    if not 0 < validation_split < 1:
        raise ValueError("validation_split must be in (0, 1)")
    return int(math.ceil(n * (1.0 - validation_split)))


def check_split(name: str, source: str | Path, n: int, validation_split: float) -> int:
    """:func:`split_validation` of ``n`` training images, refused when the training or the validation split
    would be empty (the validation split is where calibration is fitted); ``source``: where they were read."""
    cut = split_validation(n, validation_split)
    if 0 < cut < n:
        return cut
    need = next(m for m in range(max(n, 2), n + 10_000) if 0 < split_validation(m, validation_split) < m)
    larger = next((v / 100 for v in range(1, 100) if 0 < split_validation(n, v / 100) < n), None)
    raise TrustcalError(
        f"{name}: {source}: {n} training image{'' if n == 1 else 's'}, of which validation_split: {validation_split} "
        f"takes the last n − ⌈n × (1 − {validation_split})⌉ = {n} − {cut} = {n - cut} for validation, so the "
        f"{'validation' if cut == n else 'training'} split would be empty. "
        f"Fix: give the dataset at least {need} training images"
        + (f", or set validation_split: {larger} (or more) in the configuration." if larger else ".")
    )


def prepare(
    dataset: DatasetSpec | str,
    data_dir: str | Path,
    out: str | Path,
    *,
    validation_split: float = 0.1,
    verify_checksums: bool = True,
) -> dict[str, int]:
    """Write the train / validation / test splits of ``dataset`` (a spec, or a registered name) to ``out`` (npz).

    A user's dataset (``imagefolder``, ``npz``) also stores its class names, ``classes`` (a unicode array
    in label order: :func:`prepared_classes`), which the registry cannot know; a registered dataset's
    file holds the six arrays alone (its class names are the registry's). Images are stored as uint8; a
    user's table as float32 features standardised by the training split's statistics, which are stored
    too (:func:`trustcal.data.tabular.standardise_splits`).
    """
    from trustcal.data.staging import as_dataset_spec, load_dataset  # torchvision: not for prepared_classes' readers

    spec = as_dataset_spec(dataset)
    raw = load_dataset(spec, data_dir, verify_checksums=verify_checksums)
    source = spec.path if spec.kind in registry.USER_KINDS else data_dir
    cut = check_split(spec.name, source, len(raw.x_train), validation_split)
    arrays = dict(
        x_train=raw.x_train[:cut],
        y_train=raw.y_train[:cut],
        x_val=raw.x_train[cut:],
        y_val=raw.y_train[cut:],
        x_test=raw.x_test,
        y_test=raw.y_test,
    )
    if raw.x_train.ndim == 2:  # a user's table: standardised once, by the training split's mean and scale
        arrays = tabular.standardise_splits(spec, arrays)
    extra = {"classes": np.array(raw.classes, dtype=np.str_)} if spec.kind in registry.USER_KINDS else {}
    write_npz(out, **arrays, **extra)
    sizes = {k: len(v) for k, v in arrays.items() if k.startswith("x_")}
    log.info("%s: wrote %s with %s", spec.name, out, sizes)
    return sizes


def load_prepared(path: str | Path) -> dict[str, np.ndarray]:
    return read_result_npz(path, PREPARED_KEYS, rule="prepare")


def prepared_classes(path: str | Path) -> tuple[str, ...]:
    """The class names ``path`` (a ``splits.npz``) stores, in label order; () when it stores none (a
    registered dataset's: :func:`trustcal.registry.class_names` has them). Reads that array alone."""
    path = Path(path)
    hint = "delete it and rerun rule 'prepare'"
    try:
        with np.load(path, allow_pickle=False) as data:
            return tuple(str(name) for name in data["classes"]) if "classes" in data.files else ()
    except FileNotFoundError:
        raise TrustcalError(
            f"{path}: file not found; it is written by rule 'prepare': {hint}.", rerun="prepare"
        ) from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, AttributeError, TypeError) as exc:
        raise TrustcalError(f"{path}: unreadable or truncated ({exc}); {hint}.", rerun="prepare") from None
