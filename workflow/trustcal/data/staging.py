"""Datasets: stage the registered ones in torchvision's layout, read them and a user's own, as arrays.

Each dataset is a :class:`~trustcal.registry.DatasetSpec` (or the name of a registered one) and its
``kind`` says how its files are laid out and read (:data:`trustcal.registry.DATASET_KINDS`):

* ``idx`` (MNIST, Fashion-MNIST, KMNIST): four IDX files, or their ``.gz`` archives, in
  ``<data_dir>/<Class>/raw/`` (``MNIST/raw/``, ``FashionMNIST/raw/``, ``KMNIST/raw/``).
* ``cifar`` (CIFAR-10, CIFAR-100): pickled batches in ``cifar-10-batches-py/`` or ``cifar-100-python/``,
  extracted from their ``.tar.gz``.
* ``svhn``: ``train_32x32.mat`` and ``test_32x32.mat`` in ``data_dir`` (the ``extra`` split is not used).
* ``imagefolder`` and ``npz``: a user's images or arrays at the spec's ``path`` (:func:`load_dataset`).

Each kind's files are staged and read by a module of its own (:mod:`trustcal.data.idx`,
:mod:`trustcal.data.cifar`, :mod:`trustcal.data.svhn`, :mod:`trustcal.data.user`); what they share (the
md5 checks, the fetch, :class:`~trustcal.data.checksums.DatasetUnavailable`, the manifest) is
:mod:`trustcal.data.checksums`.

The registered datasets' file names, URLs and md5s are their torchvision class's (``spec.torchvision``);
MNIST's uncompressed IDX files have official md5s too (the registry's ``content_md5``), the other IDX
datasets' archives only. Files staged by hand (the archives or their extracted contents) are verified
by archive md5 or by content md5, extracted by us, and never deleted or overwritten; only an archive this
process downloaded itself may be deleted (when corrupt). A user's files are read as they are: nothing is
written beside them. The arrays are uint8 images in NCHW layout and int64 labels (docs/method.md §1:
trustcal.data.splits takes the last 10 % of the training set as the validation set, as Keras'
``validation_split`` takes the tail unshuffled). CIFAR's batches are pickles: they are read with plain
data and NumPy arrays only (:func:`trustcal.files.load_plain_pickle`), so a batch that names anything
else is refused, whatever ``verify_checksums`` says; SVHN's MATLAB files and a user's ``.npz`` hold no
code (``scipy.io.loadmat``; ``numpy.load`` with ``allow_pickle=False``).
"""

from __future__ import annotations

import logging
from pathlib import Path

import torchvision.datasets as tvd

from trustcal import registry
from trustcal.data import cifar, idx, svhn, user
from trustcal.data.checksums import USER_FILE, RawDataset, file_md5
from trustcal.errors import TrustcalError
from trustcal.files import atomic_path
from trustcal.registry import DatasetSpec

log = logging.getLogger(__name__)

# Each registered kind's module: its files, its staging instructions, stage() and load().
_KIND_MODULES = {registry.IDX: idx, registry.CIFAR: cifar, registry.SVHN: svhn}


def as_dataset_spec(dataset: DatasetSpec | str) -> DatasetSpec:
    """``dataset`` itself (a run's dataset: :func:`trustcal.registry.dataset_spec`), or the registered dataset
    of that name: what every function here accepts."""
    if isinstance(dataset, DatasetSpec):
        if dataset.kind not in registry.DATASET_KINDS:
            raise TrustcalError(
                f"{dataset.name}: unknown kind {dataset.kind!r}; allowed: {', '.join(registry.DATASET_KINDS)}"
            )
        if dataset.kind in registry.USER_KINDS and not dataset.path:
            raise TrustcalError(f"{dataset.name}: a dataset of kind {dataset.kind} needs path: (where it is read from)")
        if dataset.kind not in registry.USER_KINDS and not hasattr(tvd, dataset.torchvision or ""):
            raise TrustcalError(
                f"{dataset.name}: kind {dataset.kind} names its files by a torchvision dataset class, and "
                f"torchvision.datasets has no {dataset.torchvision!r}"
            )
        return dataset
    if dataset not in registry.DATASETS:
        raise TrustcalError(f"unknown dataset {dataset!r}; allowed: {', '.join(registry.DATASETS)}")
    return registry.DATASETS[dataset]


def raw_files(dataset: DatasetSpec | str, data_dir: str | Path) -> list[str]:
    """The files the download step must leave in ``data_dir`` for ``dataset`` (a user's: the files it reads)."""
    spec = as_dataset_spec(dataset)
    data_dir = Path(data_dir)
    if spec.kind == registry.IDX:
        files = idx.idx_files(spec)
        return [str(data_dir / files.raw / name) for name in files.names]
    if spec.kind == registry.CIFAR:
        files = cifar.cifar_files(spec)
        return [str(data_dir / files.folder / name) for name in files.content_md5]
    if spec.kind == registry.SVHN:
        return [str(data_dir / filename) for _, filename, _ in svhn.svhn_files(spec).values()]
    return [str(p) for p in user.user_files(spec)]


def manual_instructions(dataset: DatasetSpec | str, data_dir: str | Path) -> str:
    """Which files to put where, with the archive and content md5s they are checked against."""
    spec = as_dataset_spec(dataset)
    if spec.kind in registry.USER_KINDS:
        return user.instructions(spec)
    return _KIND_MODULES[spec.kind].instructions(spec, Path(data_dir))


def download(
    dataset: DatasetSpec | str, data_dir: str | Path, *, verify_checksums: bool = True, allow_download: bool = True
) -> dict[str, str]:
    """Stage ``dataset`` in ``data_dir``: check and extract the files there, fetch the missing ones.

    Returns each of :func:`raw_files` with how it was verified (``ARCHIVE_MD5``,
    ``CONTENT_MD5`` or ``NOT_CHECKED``). Staged files are never deleted or
    overwritten; ``allow_download=False`` never touches the network. A user's dataset
    (``imagefolder``, ``npz``) never touches it either: its folder or file is checked to be
    there, laid out as its kind needs, and its files are returned as ``USER_FILE`` (the manifest
    then records each one's md5); ``data_dir`` is not used.
    """
    spec = as_dataset_spec(dataset)
    if spec.kind in registry.USER_KINDS:
        files = user.user_files(spec)
        log.info("%s: %d file(s) of your own in %s, read as they are", spec.name, len(files), spec.path)
        return dict.fromkeys(map(str, files), USER_FILE)
    data_dir = Path(data_dir)
    if not verify_checksums:
        log.warning(
            "%s: verify_checksums is false: files staged in %s are used without md5 checks", spec.name, data_dir
        )
    verified = _KIND_MODULES[spec.kind].stage(spec, data_dir, verify_checksums, allow_download)
    for path, how in verified.items():
        log.info("%s: %s", path, how)
    return verified


def write_manifest(verified: dict[str, str], path: str | Path) -> None:
    """``raw_manifest.tsv``: file, bytes, md5 and how it was verified (the result of :func:`download`)."""
    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        fh.write("file\tbytes\tmd5\tverified\n")
        for f, how in verified.items():
            fh.write(f"{f}\t{Path(f).stat().st_size}\t{file_md5(f)}\t{how}\n")


def load_dataset(dataset: DatasetSpec | str, data_dir: str | Path, *, verify_checksums: bool = True) -> RawDataset:
    """Read ``dataset``: its images as uint8 NCHW arrays, its labels as int64, its class names.

    The registered datasets are read from ``data_dir`` (where :func:`download` staged them); their class
    names are the registry's. IDX files are read by torchvision (no pickle in them; :func:`download`
    verified them). CIFAR's batches are read as torchvision reads them (the same arrays), checked
    against their content md5s unless ``verify_checksums`` is false, and unpickled with plain data and
    NumPy arrays only in either case: a batch that names anything else is refused before it can run
    code. SVHN's .mat files are checked against their md5s unless ``verify_checksums`` is false and read
    with ``scipy.io.loadmat`` (label 10 is the digit 0, as torchvision has it). A user's image folder or
    ``.npz`` is read from its ``path`` (``data_dir`` and ``verify_checksums`` do not apply), its class
    names from its folders, its ``classes`` array or ``classes:`` (else the labels' numbers).
    """
    spec = as_dataset_spec(dataset)
    if spec.kind == registry.IMAGEFOLDER:
        return user.load_imagefolder(spec)
    if spec.kind == registry.NPZ:
        return user.load_npz(spec)
    data_dir = Path(data_dir)
    if spec.kind == registry.IDX:
        arrays = idx.load(spec, data_dir)
    else:
        arrays = _KIND_MODULES[spec.kind].load(spec, data_dir, verify_checksums)
    return RawDataset(*arrays, spec.classes)


def load_raw(dataset: DatasetSpec | str, data_dir: str | Path, *, verify_checksums: bool = True):
    """Read the raw files: (x_train, y_train, x_test, y_test), images as uint8 NCHW arrays, labels as int64
    (:func:`load_dataset` without the class names)."""
    return tuple(load_dataset(dataset, data_dir, verify_checksums=verify_checksums)[:4])
