"""The shifted test sets of a run (the config's ``shift:``): which it gets, their names, and their images.

A run's test split is shifted two ways:

* a **corruption** of its test images (:mod:`trustcal.shift.corruptions` for 3 × 32 × 32 images, CIFAR-10-C's,
  at every severity of ``shift.severities``; :mod:`trustcal.shift.mnist_c` for 1 × 28 × 28 images, MNIST-C's,
  at its one strength, severity 1, whatever ``shift.severities`` says). Its set is named by the corruption
  (``gaussian_noise``) and keeps the test labels;
* an **out-of-distribution** set (``ood-<name>``): ``noise_uniform`` (every value uniform in 0 … 255),
  ``noise_gaussian`` (N(127.5, 64²) per value, rounded and clipped to 0 … 255), both drawn to the run's image
  shape, or another registered dataset's test split by name, resized to the run's H × W (bilinear, pixel
  centres aligned) and converted grey ↔ RGB (grey to RGB repeats the channel, RGB to grey is ITU-R 601's luma,
  as Pillow's ``convert("L")``). Its labels are -1: none is a class of the run.

Every set is uint8 (N, C, H, W), as the prepared splits store images: the run's own normalisation applies to
them as to its test images. Everything random is drawn from a generator seeded by (``shift.seed``, the set's
name[, the severity]) through :func:`set_seed`, a SHA-256 of the words, so a set does not change when others
are added, and the same on every machine. ``shift.samples`` caps the test images per set: the same images
(:func:`subset_indices`) for every set and for the clean rows they are compared with.

This module holds no file reading: the workflow's stages (:mod:`trustcal.stages`) read the splits and write
each set with :func:`make_set`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trustcal.registry import DATASETS, did_you_mean
from trustcal.shift.corruptions import CORRUPTIONS, available, corrupt
from trustcal.shift.mnist_c import MNIST_C, available_mnist, corrupt_mnist

CIFAR_SHAPE = (3, 32, 32)
MNIST_SHAPE = (1, 28, 28)
FAMILIES = {CIFAR_SHAPE: "CIFAR-10-C", MNIST_SHAPE: "MNIST-C"}
OOD_PREFIX = "ood-"
NOISES = ("noise_uniform", "noise_gaussian")
EPOCH_WORDS = ("best", "last")
CLEAN = "clean"  # the set name of the unshifted test rows (severity 0)
OOD_LABEL = -1  # the label of every out-of-distribution image: no class of the run
LUMA = (0.299, 0.587, 0.114)  # ITU-R 601-2, Pillow's convert("L")
ALL = "all"


@dataclass(frozen=True)
class ShiftSet:
    """One shifted set of a run: ``name`` (its file and table name), ``kind`` (``corruption``, ``noise`` or
    ``dataset``), ``source`` (the corruption, the noise or the dataset it draws on) and its ``severities``."""

    name: str
    kind: str
    source: str
    severities: tuple[int, ...] = (1,)

    @property
    def ood(self) -> bool:
        return self.kind != "corruption"


def set_seed(seed: int, *words) -> int:
    """A 64-bit seed from ``seed`` and ``words`` (a set's name, a severity), the same on every machine and
    Python (SHA-256 of the words joined by ``/``; not ``hash()``, which varies per process)."""
    text = "/".join(str(w) for w in (int(seed), *words))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def known_corruptions(shape) -> dict:
    """The corruptions of images of ``shape`` (C, H, W): CIFAR-10-C's, MNIST-C's, or none."""
    shape = tuple(shape) if shape is not None else None
    return {CIFAR_SHAPE: CORRUPTIONS, MNIST_SHAPE: MNIST_C}.get(shape, {})


def computable(shape) -> list[str]:
    """The corruptions of ``shape`` that this machine can compute (``[all]``), MNIST-C's ``identity`` aside
    (it is the clean set)."""
    shape = tuple(shape) if shape is not None else None
    names = {CIFAR_SHAPE: available, MNIST_SHAPE: available_mnist}.get(shape, list)()
    return [n for n in names if n != "identity"]


def corruption_problem(names: Sequence[str], shape, run: str) -> str | None:
    """Why ``names`` (``shift.corruptions``) cannot apply to ``run``, whose images have ``shape``; None when
    they can. ``[all]`` always can (a shape without corruptions gets none)."""
    if list(names) == [ALL] or not names:
        return None
    if ALL in names:
        return "'all' stands alone: write corruptions: [all], or list names"
    known = known_corruptions(shape)
    if not known:
        return (
            f"run {run} has images of shape {tuple(shape) if shape else 'unknown before preparing'}, which no "
            f"corruption is made for (3 × 32 × 32: CIFAR-10-C's, 1 × 28 × 28: MNIST-C's); use [all], which gives "
            "each run the corruptions of its shape, or leave corruptions empty"
        )
    family = FAMILIES[tuple(shape)]
    can = computable(shape)
    for name in names:
        if name not in known:
            return f"{name!r}{did_you_mean(name, can)} is not one of {family}'s for run {run}; valid: {', '.join(can)}"
        if name not in can and name != "identity":
            why = {CIFAR_SHAPE: CORRUPTIONS, MNIST_SHAPE: MNIST_C}[tuple(shape)][name]
            return f"{name!r} cannot be computed here ({why.reason or 'a module it needs is not installed'})"
    return None


def ood_problem(name: str, own: Collection[str]) -> str | None:
    """Why ``name`` (an entry of ``shift.ood``) is no out-of-distribution set of the runs, which read the
    datasets ``own`` (a run does not get its own dataset, which is in its distribution; naming the one
    dataset every run reads is a mistake)."""
    if name in NOISES:
        return None
    if name not in DATASETS:
        choices = [*NOISES, *DATASETS]
        return (
            f"{name!r}{did_you_mean(name, choices)} is no noise and no registered dataset; valid: {', '.join(choices)}"
        )
    if set(own) == {name}:
        return f"{name!r} is the dataset of every run, so out of the distribution of none; name another"
    return None


def epochs_problem(wanted: Sequence, last: int) -> str | None:
    """Why ``shift.epochs`` cannot be chosen from a run of ``last`` epochs."""
    late = [e for e in wanted if not isinstance(e, str) and int(e) > last]
    if late:
        return f"epoch {late[0]} is past the last epoch (epochs: {last}); use best, last or 1 … {last}"
    return None


def shift_sets(shift: Mapping, shape, own: str) -> list[ShiftSet]:
    """The shifted sets of a run whose images have ``shape`` (None: unknown) on dataset ``own``, from the
    ``shift:`` section: the corruptions of its shape first (``[all]``: every computable one), then the
    out-of-distribution sets, in the config's order."""
    names = list(shift.get("corruptions", ()))
    if names == [ALL]:
        names = computable(shape)
    cifar = shape is not None and tuple(shape) == CIFAR_SHAPE
    severities = tuple(sorted(set(shift.get("severities", (1, 2, 3, 4, 5))))) if cifar else (1,)
    out = [ShiftSet(n, "corruption", n, severities) for n in names if n in known_corruptions(shape)]
    for name in shift.get("ood", ()):
        if name != own:
            out.append(ShiftSet(OOD_PREFIX + name, "noise" if name in NOISES else "dataset", name))
    return out


def ood_datasets(shift: Mapping) -> list[str]:
    """The registered datasets whose test splits ``shift.ood`` names (their prepared splits are read)."""
    return [n for n in shift.get("ood", ()) if n not in NOISES and n in DATASETS]


def chosen_epochs(wanted: Sequence, best: int, last: int) -> list[tuple[str, int]]:
    """(label, epoch) of each entry of ``shift.epochs``: ``best`` (the lowest validation loss), ``last``, or
    an epoch by number (labelled by it)."""
    out = []
    for entry in wanted:
        if entry == "best":
            out.append(("best", int(best)))
        elif entry == "last":
            out.append(("last", int(last)))
        else:
            out.append((str(int(entry)), int(entry)))
    return out


def subset_indices(n: int, samples: int | None, seed: int) -> np.ndarray:
    """The test images every set uses: all ``n`` (``samples`` None or ≥ n), else ``samples`` of them drawn
    without replacement with (``seed``, ``subset``), in increasing order."""
    if samples is None or samples >= n:
        return np.arange(n)
    rng = np.random.default_rng(set_seed(seed, "subset"))
    return np.sort(rng.choice(n, size=int(samples), replace=False))


def noise_images(kind: str, n: int, shape, rng: np.random.Generator) -> np.ndarray:
    """``n`` uint8 images of ``shape`` (C, H, W): ``noise_uniform`` or ``noise_gaussian``."""
    size = (int(n), *map(int, shape))
    if kind == "noise_uniform":
        return rng.integers(0, 256, size=size, dtype=np.uint8)
    if kind == "noise_gaussian":
        return np.clip(np.rint(rng.normal(127.5, 64.0, size=size)), 0, 255).astype(np.uint8)
    raise ValueError(f"unknown noise {kind!r}; known: {', '.join(NOISES)}")


def _linear_weights(n_out: int, n_in: int) -> np.ndarray:
    """The (n_out × n_in) matrix of bilinear interpolation with pixel centres aligned (out x ↦ in
    (x + 0.5) n_in / n_out − 0.5, clamped at the edges)."""
    x = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5
    x = np.clip(x, 0, n_in - 1)
    lo = np.floor(x).astype(int)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = x - lo
    w = np.zeros((n_out, n_in))
    w[np.arange(n_out), lo] += 1 - frac
    w[np.arange(n_out), hi] += frac
    return w


def to_shape(images: np.ndarray, shape) -> np.ndarray:
    """uint8 (N, C, H, W) ``images`` as (N, C', H', W') of ``shape``: channels converted (1 → 3 repeats
    the grey channel, 3 → 1 is the luma), then resized bilinearly; rounded to uint8."""
    images = np.asarray(images)
    c_out, h_out, w_out = map(int, shape)
    if images.ndim != 4 or images.dtype != np.uint8:
        raise ValueError(f"images must be uint8 (N, C, H, W), not {images.dtype} of shape {images.shape}")
    x = images.astype(np.float64)
    c_in = x.shape[1]
    if c_in != c_out:
        if c_in == 1:
            x = np.repeat(x, c_out, axis=1)
        elif c_in == 3 and c_out == 1:
            x = np.tensordot(x, np.array(LUMA), axes=([1], [0]))[:, None]
        else:
            raise ValueError(f"cannot convert {c_in}-channel images to {c_out} channels")
    if x.shape[2:] != (h_out, w_out):
        rows, cols = _linear_weights(h_out, x.shape[2]), _linear_weights(w_out, x.shape[3])
        x = np.einsum("ih,nchw,jw->ncij", rows, x, cols)
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def _corrupted(spec: ShiftSet, images: np.ndarray, seed: int) -> np.ndarray:
    """(S, N, C, H, W): ``images`` under ``spec``'s corruption at each of its severities."""
    out = []
    for severity in spec.severities:
        rng = np.random.default_rng(set_seed(seed, spec.name, severity))
        if tuple(images.shape[1:]) == CIFAR_SHAPE:
            out.append(corrupt(spec.source, images, int(severity), rng))
        else:
            out.append(corrupt_mnist(images, spec.source, int(severity), rng))
    return np.stack(out)


def official_files(official: str | Path, source: str, shape) -> tuple[Path, Path]:
    """The published files of corruption ``source`` in folder ``official``: CIFAR-10-C's
    ``<source>.npy`` and ``labels.npy``, or MNIST-C's ``<source>/test_images.npy`` and ``test_labels.npy``."""
    folder = Path(official)
    if tuple(shape) == CIFAR_SHAPE:
        return folder / f"{source}.npy", folder / "labels.npy"
    return folder / source / "test_images.npy", folder / source / "test_labels.npy"


def official_problem(shift: Mapping, setups: Mapping) -> str | None:
    """The first published file ``shift.official`` lacks for a corruption set of the runs of ``setups``
    (run → its Setup), as one line with the fix; None when every one is there."""
    for run, setup in setups.items():
        for spec in shift_sets(shift, setup.dataset.shape, setup.dataset.name):
            if spec.kind != "corruption":
                continue
            for path in official_files(shift["official"], spec.source, setup.dataset.shape):
                if not path.is_file():
                    family = FAMILIES[tuple(setup.dataset.shape)]
                    return (
                        f"{path} not found (corruption {spec.source} of run {run}); stage {family}'s published "
                        "files there, or unset shift.official to compute the corruptions"
                    )
    return None


def read_official(spec: ShiftSet, official: str | Path, test_labels: np.ndarray, shape) -> np.ndarray:
    """(S, N, C, H, W) uint8: the published images of ``spec``'s corruption at its severities, for the whole
    test split, checked against it (shape, dtype, and labels equal to ``test_labels`` in the same order);
    a ValueError naming the file, what is wrong and the fix otherwise. Read as data (no pickle)."""
    images_path, labels_path = official_files(official, spec.source, shape)
    n, (c, h, w) = len(test_labels), shape
    family = FAMILIES[tuple(shape)]
    arrays = []
    for path in (images_path, labels_path):
        if not path.is_file():
            raise ValueError(f"{path}: not found; stage {family}'s published files there, or unset shift.official")
        try:
            arrays.append(np.load(path, allow_pickle=False))
        except (ValueError, OSError) as exc:
            raise ValueError(f"{path}: not a NumPy array file ({exc}); stage {family}'s published file again") from None
    images, labels = arrays
    levels = 5 if family == "CIFAR-10-C" else 1
    if images.dtype != np.uint8 or images.shape != (levels * n, h, w, c):
        raise ValueError(
            f"{images_path}: {images.dtype} of shape {images.shape}, where {family} gives uint8 of shape "
            f"{(levels * n, h, w, c)} for this test split of {n} images; stage the file of this dataset's test split"
        )
    if labels.shape != (levels * n,) or not np.array_equal(
        labels.reshape(levels, n), np.broadcast_to(test_labels, (levels, n))
    ):
        bad = labels.shape != (levels * n,) or int((labels.reshape(levels, n) != test_labels).sum())
        raise ValueError(
            f"{labels_path}: its labels are not the clean test split's in the same order "
            f"({'shape ' + str(labels.shape) if labels.shape != (levels * n,) else str(bad) + ' differ'}); "
            "stage the files of this dataset's test split"
        )
    stacked = images.reshape(levels, n, h, w, c).transpose(0, 1, 4, 2, 3)
    return stacked[[s - 1 for s in spec.severities]] if levels == 5 else stacked


def make_set(
    spec: ShiftSet,
    test_images: np.ndarray,
    test_labels: np.ndarray,
    *,
    seed: int = 0,
    samples: int | None = None,
    other_test: np.ndarray | None = None,
    official: str | Path | None = None,
) -> dict[str, np.ndarray]:
    """The arrays of one set's file: ``images`` (S, N, C, H, W) uint8, one stack per severity of
    ``severities``; ``labels`` (N); ``test_indices``: the run's test images it is compared with (those it
    corrupts, or the in-distribution side of an out-of-distribution set); ``source_indices``: the images of
    ``other_test`` (another dataset's test split, for a ``dataset`` set) it took; ``sha256``: the digest of
    the images and labels (:func:`images_digest`). ``official``: a folder of the published files, read
    instead of computing a corruption (:func:`read_official`)."""
    test_images = np.asarray(test_images)
    shape = test_images.shape[1:]
    chosen = subset_indices(len(test_images), samples, seed)
    source = np.arange(0)
    if spec.kind == "corruption" and official is not None:
        images = read_official(spec, official, np.asarray(test_labels), shape)[:, chosen]
        labels = np.asarray(test_labels)[chosen]
    elif spec.kind == "corruption":
        images, labels = _corrupted(spec, test_images[chosen], seed), np.asarray(test_labels)[chosen]
    elif spec.kind == "noise":
        rng = np.random.default_rng(set_seed(seed, spec.name))
        images = noise_images(spec.source, len(chosen), shape, rng)[None]
        labels = np.full(len(chosen), OOD_LABEL)
    else:
        if other_test is None:
            raise ValueError(f"{spec.name}: the test images of {spec.source} are needed")
        source = subset_indices(len(other_test), samples, set_seed(seed, spec.name))
        images = to_shape(np.asarray(other_test)[source], shape)[None]
        labels = np.full(len(source), OOD_LABEL)
    labels = labels.astype(np.int64)
    return dict(
        images=images,
        labels=labels,
        severities=np.array(spec.severities, dtype=np.int64),
        test_indices=chosen.astype(np.int64),
        source_indices=source.astype(np.int64),
        kind=np.array(spec.kind),
        sha256=np.array(images_digest(images, labels)),
    )


def images_digest(images: np.ndarray, labels: np.ndarray) -> str:
    """SHA-256 of a set's images and labels (their shapes and bytes): what a rerun must reproduce."""
    h = hashlib.sha256()
    for a in (np.ascontiguousarray(images), np.ascontiguousarray(labels)):
        h.update(f"{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()
