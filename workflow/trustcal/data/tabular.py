"""A user's table: an ``.npz`` whose ``x_train`` and ``x_test`` are (N, F) numbers, one row of F features per
sample (docs/usage.md, "A dataset of your own"), rather than images.

The features are read as float64 (:func:`read_features`: finite floats or integers, any range) and
standardised when the splits are prepared (:func:`standardise_splits`): every split minus the training
split's mean, divided by its (population) standard deviation, both computed once from the training split
alone (not its validation tail, not the test split), so that the network sees the same transform on
every split; a constant feature is centred to 0 and keeps scale 1. ``splits.npz`` stores them as float32,
with the statistics (``feature_mean``, ``feature_scale``), where images are stored as uint8.

What cannot apply to a table is refused before any job, each in one line with the fix
(:func:`setup_problem`, :func:`shift_problems`): a convolutional network (a table trains an MLP,
``paper_mlp``, or a network of one's own), image augmentation and per-channel normalisation, and the
dataset shift's corruptions and out-of-distribution sets, which are images. The configuration check
finds a table by the header of ``x_train`` alone (:func:`npz_shape`), without reading its data.

NumPy only: the configuration check reads this module (the errors of :mod:`trustcal.data.checksums`,
which imports torchvision, are imported where a file is refused).
"""

from __future__ import annotations

import logging
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from trustcal import registry

log = logging.getLogger(__name__)

STATISTICS = ("feature_mean", "feature_scale")  # the arrays splits.npz adds for a table


def npz_shape(path: str | Path, key: str = "x_train") -> tuple[int, ...] | None:
    """The shape of array ``key`` of the ``.npz`` at ``path``, read from its ``.npy`` header alone; None
    where it cannot be read (the download job names what is wrong with the file)."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open(f"{key}.npy") as fh:
            version = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, _ = read(fh)
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    return tuple(int(s) for s in shape)


def table_shape(dataset: registry.DatasetSpec) -> tuple[int, int] | None:
    """(N, F) of a user's ``.npz`` whose ``x_train`` is a table; None for any other dataset."""
    if dataset.kind != registry.NPZ or not dataset.path:
        return None
    shape = npz_shape(dataset.path)
    return shape if shape is not None and len(shape) == 2 else None


def _reads_a_table(network: str) -> bool:
    """Whether ``network`` can read (N, F) rows: a registered MLP, or a network of one's own (built with
    ``in_shape=(F,)``); never torchvision's, which read images."""
    spec = registry.NETWORKS.get(network)
    if spec is not None:
        return spec.tables
    return not network.startswith(registry.TORCHVISION_PREFIX)


def training_problem(
    network: str, augment, normalise: bool, run: str, where: str, default: str | None = None
) -> str | None:
    """Why ``run`` (a table, ``where``: its file and shape) cannot train ``network`` with this recipe (one
    line with the fix; None when it can): a convolutional or torchvision network, image augmentation,
    per-channel normalisation. ``default``: the network of a setup that names none, said where it is that."""
    mlps = [name for name, spec in registry.NETWORKS.items() if spec.tables]
    if not _reads_a_table(network):
        default = " (the default for a dataset of your own)" if network == default else ""
        return (
            f"{where} holds a table, which network {network}{default} cannot read: it is made for images. Fix: set "
            f"network: {mlps[0]} in setups: {run} (hidden widths by network_kwargs: {{hidden: [128]}}), or name a "
            "network of your own built as Class(in_shape=(F,), num_classes=K)"
        )
    if augment:
        return (
            f"{where} holds a table, and recipe augment: [{', '.join(augment)}] crops or flips images. Fix: set "
            f"recipe: {{augment: []}} in setups: {run} (beside the recipe's other fields)"
        )
    if normalise:
        return (
            f"{where} holds a table, whose features are standardised when prepared, and recipe normalise: true "
            f"standardises image channels. Fix: set recipe: {{normalise: false}} in setups: {run} (beside the "
            "recipe's other fields)"
        )
    return None


def _where(dataset: registry.DatasetSpec, shape) -> str:
    return f"dataset {dataset.path} (x_train of shape {tuple(shape)}: {shape[0]} samples of {shape[1]} features)"


def setup_problem(setup: registry.Setup) -> str | None:
    """:func:`training_problem` of ``setup`` when its dataset is a table (None otherwise)."""
    shape = table_shape(setup.dataset)
    if shape is None:
        return None
    r = setup.recipe
    where = _where(setup.dataset, shape)
    return training_problem(setup.network, r.augment, r.normalise, setup.name, where, setup.dataset.network)


def shift_problems(shift: Mapping, setups: Mapping[str, registry.Setup]) -> dict[str, str]:
    """``shift:``'s key → why it cannot apply to a run whose dataset is a table (the first such run): named
    corruptions and out-of-distribution sets (noise, another dataset) are images. ``corruptions: [all]``
    gives a table none, as it gives images of a shape no corruption is made for."""
    names = [n for n in shift.get("corruptions", ()) or () if n != "all"]
    out: dict[str, str] = {}
    for run, setup in setups.items():
        shape = table_shape(setup.dataset)
        if shape is None:
            continue
        where = f"run {run} reads a table, {_where(setup.dataset, shape)}"
        if names and "corruptions" not in out:
            out["corruptions"] = (
                f"{where}; corruptions ({', '.join(names)}) are made for images only. Fix: leave shift.corruptions "
                f"empty (or [all], which gives a table none), or run {run} in a configuration of its own"
            )
        if shift.get("ood") and "ood" not in out:
            out["ood"] = (
                f"{where}; out-of-distribution sets ({', '.join(map(str, shift['ood']))}) are images. Fix: leave "
                f"shift.ood empty, or run {run} in a configuration of its own"
            )
    return out


# --- reading and standardising the features (rule prepare) ----------------------------------------------


def _refused(message: str) -> Exception:
    from trustcal.data.checksums import DatasetUnavailable  # torchvision: not for the configuration check

    return DatasetUnavailable(message)


def _features(spec: registry.DatasetSpec, x: np.ndarray, key: str, train: tuple[int, ...] | None) -> np.ndarray:
    """``x`` (N, F) as float64, refused in one line unless it holds finite numbers; ``train``: the shape of
    x_train, whose F features each row of ``x`` must have (None: ``x`` is x_train)."""
    where = f"{spec.name}: {spec.path}: array {key}"
    one = ", one value per sample" if x.ndim == 1 else ""
    if train is None and x.ndim != 2:
        raise _refused(
            f"{where} has shape {x.shape}{one}, neither a table (N, F) nor images. Fix: save {key} as (N, F), one "
            "row of features per sample (x.reshape(-1, 1) for one feature), or as images (N, C, H, W)."
        )
    if train is not None and (x.ndim != 2 or x.shape[1] != train[1]):
        raise _refused(
            f"{where} has shape {x.shape}{one}, but x_train's {train} is a table of {train[1]} feature"
            f"{'' if train[1] == 1 else 's'} (two axes: samples × features). Fix: save {key} as (N, {train[1]}), "
            "one row of x_train's features per sample"
            + (" (x.reshape(-1, 1))" if x.ndim == 1 and train[1] == 1 else "")
            + ", or save both as images (N, C, H, W)."
        )
    if x.dtype.kind not in "fiub":
        raise _refused(
            f"{where} is {x.dtype}, not numbers. Fix: save {key} as floats or integers (categories as numbers, "
            "e.g. one column per category)."
        )
    if not x.size:
        what = "sample" if not len(x) else "feature"
        raise _refused(f"{where} has shape {x.shape}: no {what}. Fix: save the {what}s in {key}.")
    x = x.astype(np.float64)
    if not (finite := np.isfinite(x)).all():
        row, column = np.argwhere(~finite)[0]
        raise _refused(
            f"{where} holds {non_finite_counts(x)} (of {x.size}; the first in sample {row}, "
            f"feature {column}), not features. Fix: replace them (e.g. by the feature's mean in x_train), or drop "
            f"those samples and their labels, and save {key} again."
        )
    return x


def non_finite_counts(x: np.ndarray) -> str:
    """How many NaN and infinite values ``x`` holds, in words ("2 NaN and 1 infinite values")."""
    nan, inf = int(np.isnan(x).sum()), int(np.isinf(x).sum())
    counts = " and ".join(text for n, text in ((nan, f"{nan} NaN"), (inf, f"{inf} infinite")) if n)
    return counts + (" value" if nan + inf == 1 else " values")


def read_features(spec: registry.DatasetSpec, x_train: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, ...]:
    """The user's table: ``x_train`` and ``x_test`` as float64 (N, F), the same F features, finite; refused in
    one line naming the file, the array and the fix otherwise."""
    train = _features(spec, x_train, "x_train", None)
    test = _features(spec, x_test, "x_test", train.shape)
    log.info(
        "%s: %s: a table of %d features, %d training and %d test samples",
        spec.name,
        spec.path,
        *train.shape[::-1],
        len(test),
    )
    return train, test


def feature_statistics(x_train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean and scale of each feature of ``x_train`` (float64): the population standard deviation (as
    scikit-learn's ``StandardScaler``); a constant feature (every value equal) gets its value as mean, so it is
    centred to exactly 0, and scale 1."""
    x = np.asarray(x_train, dtype=np.float64)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    constant = x.min(axis=0) == x.max(axis=0)
    mean[constant] = x[0, constant]
    scale[constant | (scale == 0)] = 1.0
    return mean, scale


def standardise_splits(spec: registry.DatasetSpec, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The splits (``x_train``, ``x_val``, ``x_test`` and their labels) with each x standardised by the training
    split's :func:`feature_statistics`, as float32, and those statistics (:data:`STATISTICS`)."""
    mean, scale = feature_statistics(arrays["x_train"])
    if not (np.isfinite(mean).all() and np.isfinite(scale).all()):
        raise _refused(
            f"{spec.name}: {spec.path}: array x_train holds values too large for their mean and standard "
            "deviation in float64 (beyond about 1e150). Fix: rescale those features (e.g. take their logarithm) "
            "and save x_train again."
        )
    out = dict(arrays)
    for key in ("x_train", "x_val", "x_test"):
        with np.errstate(over="ignore"):
            out[key] = ((arrays[key] - mean) / scale).astype(np.float32)
        if not np.isfinite(out[key]).all():
            column = int(np.argwhere(~np.isfinite(out[key]))[0][1])
            split = "x_train's validation tail" if key == "x_val" else key
            raise _refused(
                f"{spec.name}: {spec.path}: feature {column} of {split} standardised by the training split's mean "
                f"{mean[column]:g} and scale {scale[column]:g} exceeds float32's range. Fix: rescale that feature "
                "so that its values in every split are of the training split's order, and save the file again."
            )
    return {**out, "feature_mean": mean, "feature_scale": scale}
