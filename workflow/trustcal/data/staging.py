"""Datasets: stage the registered ones in torchvision's layout, read them and a user's own, as arrays.

Each dataset is a :class:`~trustcal.registry.DatasetSpec` (or the name of a registered one) and its
``kind`` says how its files are laid out and read (:data:`trustcal.registry.KINDS`):

* ``idx`` (MNIST, Fashion-MNIST, KMNIST): four IDX files, or their ``.gz`` archives, in
  ``<data_dir>/<Class>/raw/`` (``MNIST/raw/``, ``FashionMNIST/raw/``, ``KMNIST/raw/``).
* ``cifar`` (CIFAR-10, CIFAR-100): pickled batches in ``cifar-10-batches-py/`` or ``cifar-100-python/``,
  extracted from their ``.tar.gz``.
* ``svhn``: ``train_32x32.mat`` and ``test_32x32.mat`` in ``data_dir`` (the ``extra`` split is not used).
* ``imagefolder`` and ``npz``: a user's images or arrays at the spec's ``path`` (:func:`load_dataset`).

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

import dataclasses
import gzip
import hashlib
import logging
import os
import pickle
import tarfile
import urllib.error
import zipfile
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torchvision.datasets as tvd
from torchvision.datasets.folder import IMG_EXTENSIONS

from trustcal import registry
from trustcal.errors import TrustcalError
from trustcal.files import RefusedPickle, atomic_directory, atomic_path, load_plain_pickle
from trustcal.registry import DatasetSpec

log = logging.getLogger(__name__)

# The paper's datasets: the other entries of the per-dataset verify_checksums a fix suggests.
DATASETS = registry.PAPER_DATASETS

MNIST_DIR = "MNIST/raw"
MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
# Official md5s: of the .gz archives (torchvision's list) and of the uncompressed IDX files (the registry's).
MNIST_ARCHIVE_MD5 = dict(tvd.MNIST.resources)
MNIST_CONTENT_MD5 = dict(registry.MNIST.content_md5)

CIFAR10_ARCHIVE = tvd.CIFAR10.filename  # cifar-10-python.tar.gz, in data_dir
CIFAR10_DIR = tvd.CIFAR10.base_folder  # cifar-10-batches-py, in data_dir and in the archive
CIFAR10_ARCHIVE_MD5 = tvd.CIFAR10.tgz_md5
CIFAR10_CONTENT_MD5 = {
    **dict(tvd.CIFAR10.train_list),
    **dict(tvd.CIFAR10.test_list),
    tvd.CIFAR10.meta["filename"]: tvd.CIFAR10.meta["md5"],
}

SVHN_SPLITS = ("train", "test")  # of torchvision's SVHN.split_list; "extra" is not used

# How a file was accepted (the `verified` column of raw_manifest.tsv).
ARCHIVE_MD5 = "archive-md5"
CONTENT_MD5 = "content-md5"
NOT_CHECKED = "not checked (verify_checksums: false)"
USER_FILE = "user file"  # a user's dataset: no official md5 exists; the manifest records the file's


class DatasetUnavailable(TrustcalError):
    """Dataset files missing, wrong or not fetchable; the message names the files and the fix."""


class _Mismatch(Exception):
    """A staged file failed its check; the message is one line of the user's error."""


class _Unverifiable(Exception):
    """A staged file no official md5 can check (an uncompressed IDX file of a dataset whose archive md5s
    alone are known); the message is one line of the user's error."""


class RawDataset(NamedTuple):
    """A dataset as read from its files: uint8 NCHW images, int64 labels, the class names in label order."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: tuple[str, ...]


def as_dataset_spec(dataset: DatasetSpec | str) -> DatasetSpec:
    """``dataset`` itself (a run's dataset: :func:`trustcal.registry.dataset_spec`), or the registered dataset
    of that name: what every function here accepts."""
    if isinstance(dataset, DatasetSpec):
        if dataset.kind not in registry.KINDS:
            raise TrustcalError(f"{dataset.name}: unknown kind {dataset.kind!r}; allowed: {', '.join(registry.KINDS)}")
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


def _tv(spec: DatasetSpec):
    """The torchvision class whose file names, URLs and md5s a registered dataset uses."""
    return getattr(tvd, spec.torchvision)


def raw_files(dataset: DatasetSpec | str, data_dir: str | Path) -> list[str]:
    """The files the download step must leave in ``data_dir`` for ``dataset`` (a user's: the files it reads)."""
    spec = as_dataset_spec(dataset)
    data_dir = Path(data_dir)
    if spec.kind == registry.IDX:
        files = _idx_files(spec)
        return [str(data_dir / files.raw / name) for name in files.names]
    if spec.kind == registry.CIFAR:
        files = _cifar_files(spec)
        return [str(data_dir / files.folder / name) for name in files.content_md5]
    if spec.kind == registry.SVHN:
        return [str(data_dir / filename) for _, filename, _ in _svhn_files(spec).values()]
    return [str(p) for p in _user_files(spec)]


def _md5(path: str | Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _mismatch(path: Path, found: str, archive: tuple[str, str], content: tuple[str, str | None]) -> str:
    """The error line for ``path``: the md5 found and the official (name, md5) of archive and content."""
    if content[1] is None:  # an IDX dataset whose archive md5s alone are known
        return f"  {path}: md5 {found}; official md5: archive {archive[0]} {archive[1]} (its content's is unknown)"
    return f"  {path}: md5 {found}; official md5s: archive {archive[0]} {archive[1]}, content {content[0]} {content[1]}"


def _checksums_off(dataset: str) -> str:
    """The configuration that switches the md5 checks off for ``dataset`` alone."""
    others = "".join(f", {d}: true" for d in DATASETS if d != dataset)
    return (
        f"verify_checksums: {{{dataset}: false{others}}} in config.yaml "
        f"(or --config 'verify_checksums={{{dataset}: false{others}}}')"
    )


def _rejected(
    spec: DatasetSpec, problems: list[str], official: str = "matching the archive or the content md5"
) -> DatasetUnavailable:
    return DatasetUnavailable(
        f"{spec.name}: staged file(s) failed verification (left on disk unchanged):\n"
        + "\n".join(problems)
        + f"\nFix: replace each with the official file ({official}), or, "
        f"for a dataset rebuilt from another source, set {_checksums_off(spec.name)}."
    )


def manual_instructions(dataset: DatasetSpec | str, data_dir: str | Path) -> str:
    """Which files to put where, with the archive and content md5s they are checked against."""
    spec = as_dataset_spec(dataset)
    data_dir = Path(data_dir)
    if spec.kind in registry.USER_KINDS:
        return _user_instructions(spec)
    checked = "by archive or content md5"
    if spec.kind == registry.IDX:
        files = _idx_files(spec)
        if not files.content_md5:
            checked = "by archive md5 (an uncompressed file against the content of its archive beside it)"
        head = (
            f"Download the four archives from {files.mirrors[0]} on a machine with network access "
            f"and copy them (or their uncompressed contents) to {data_dir / files.raw}/:"
        )
        lines = [
            f"  {name}.gz  (archive md5 {files.archive_md5[name + '.gz']}; uncompressed {name}: "
            + (
                f"md5 {files.content_md5[name]})"
                if name in files.content_md5
                else "no official md5, checked only when its archive is beside it)"
            )
            for name in files.names
        ]
    elif spec.kind == registry.CIFAR:
        files = _cifar_files(spec)
        head = (
            f"Download {files.url} on a machine with network access and copy it to {data_dir}/:\n"
            f"  {files.archive}  (archive md5 {files.archive_md5})\n"
            f"or copy its extracted folder there, {data_dir / files.folder}/, holding:"
        )
        lines = [f"  {name}  (md5 {md5})" for name, md5 in files.content_md5.items()]
    else:
        head = f"Download these files on a machine with network access and copy them to {data_dir}/:"
        checked = "by md5"
        lines = [f"  {url}  (md5 {md5})" for url, _, md5 in _svhn_files(spec).values()]
    return (
        head
        + "\n"
        + "\n".join(lines)
        + f"\nthen rerun. Staged files are checked {checked}, used without network, and never deleted."
    )


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
        files = _user_files(spec)
        log.info("%s: %d file(s) of your own in %s, read as they are", spec.name, len(files), spec.path)
        return dict.fromkeys(map(str, files), USER_FILE)
    data_dir = Path(data_dir)
    if not verify_checksums:
        log.warning(
            "%s: verify_checksums is false: files staged in %s are used without md5 checks", spec.name, data_dir
        )
    stage = {registry.IDX: _stage_idx, registry.CIFAR: _stage_cifar, registry.SVHN: _stage_svhn}[spec.kind]
    verified = stage(spec, data_dir, verify_checksums, allow_download)
    for path, how in verified.items():
        log.info("%s: %s", path, how)
    return verified


def write_manifest(verified: dict[str, str], path: str | Path) -> None:
    """``raw_manifest.tsv``: file, bytes, md5 and how it was verified (the result of :func:`download`)."""
    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        fh.write("file\tbytes\tmd5\tverified\n")
        for f, how in verified.items():
            fh.write(f"{f}\t{Path(f).stat().st_size}\t{_md5(f)}\t{how}\n")


AIR_GAPPED = "docs/usage.md#the-datasets"  # the route without network: files staged by hand, download: false


def _require_download(spec: DatasetSpec, data_dir: Path, missing: list[str], allow_download: bool) -> None:
    if not allow_download:
        raise DatasetUnavailable(
            f"{spec.name}: not found in {data_dir} and downloading is switched off (config: download: false): "
            f"{', '.join(missing)}.\n{manual_instructions(spec, data_dir)}\n"
            f"Fix: stage the files listed above by hand (the air-gapped route: {AIR_GAPPED}), then rerun."
        )


def _fetch(spec: DatasetSpec, data_dir: Path, urls: list[str], target: Path, md5: str) -> None:
    """Download the missing ``target`` from the first of ``urls`` that works, checked against ``md5``.

    torchvision downloads to a temporary name, renamed when verified; a corrupt
    download (wrong md5) is deleted and fetched once more from the same URL.
    """
    from torchvision.datasets import utils as tvu

    errors = []
    for url in urls:
        for attempt in (1, 2):
            try:
                with atomic_path(target) as tmp:
                    tvu.download_url(url, str(tmp.parent), tmp.name, md5)
                log.info("%s: downloaded from %s", target, url)
                return
            except RuntimeError:  # torchvision's md5 check failed; atomic_path deleted the download
                errors.append(f"{url}: corrupt download (md5 is not {md5})")
                if attempt == 1:
                    log.warning("%s: corrupt download from %s deleted; fetching once more", target, url)
            except urllib.error.URLError as exc:  # the host out of reach: its reason ("Name or service not known")
                errors.append(f"{url}: {getattr(exc, 'reason', exc)}")
                break
            except (OSError, ValueError) as exc:
                errors.append(f"{url}: {type(exc).__name__}: {exc}")
                break
    raise DatasetUnavailable(
        f"{spec.name}: {target} is missing and could not be fetched ({'; '.join(errors)}).\n"
        f"{manual_instructions(spec, data_dir)}\n"
        "Fix: without network access to the dataset hosts, stage the files listed above by hand and run with "
        f"download: false (--config download=false): the air-gapped route, {AIR_GAPPED}."
    )


def _write_extracted(target: Path, content: bytes) -> None:
    try:
        with atomic_path(target) as tmp:
            tmp.write_bytes(content)
    except OSError as exc:
        raise DatasetUnavailable(
            f"{target}: cannot write the extracted file ({exc}). Fix: make {target.parent} writable, "
            "or copy the archives into a writable data_dir."
        ) from None


def _check_labels(spec: DatasetSpec, y: np.ndarray, num_classes: int, where: str | Path, fix: str) -> None:
    """Refuse labels outside 0..num_classes−1 (a network has one output per class)."""
    bad = np.unique(y[(y < 0) | (y >= num_classes)])
    if len(bad):
        shown = ", ".join(map(str, bad[:5].tolist())) + (", …" if len(bad) > 5 else "")
        raise DatasetUnavailable(
            f"{spec.name}: {where}: label(s) {shown} outside 0..{num_classes - 1} ({num_classes} classes). Fix: {fix}"
        )


# --- IDX (MNIST, Fashion-MNIST, KMNIST): four .gz archives or their uncompressed files in <Class>/raw -----


@dataclasses.dataclass(frozen=True)
class _IdxFiles:
    raw: str  # the folder, relative to data_dir: <Class>/raw, where torchvision reads them
    names: tuple[str, ...]  # the uncompressed files, in torchvision's order
    archive_md5: dict[str, str]  # <name>.gz → md5 (torchvision's)
    content_md5: dict[str, str]  # <name> → md5, where known (MNIST's)
    mirrors: tuple[str, ...]


def _idx_files(spec: DatasetSpec) -> _IdxFiles:
    tv = _tv(spec)
    archives = [url.rsplit("/", 1)[-1] for url, _ in tv.resources]
    if spec.torchvision == "MNIST":  # this module's tables, read now: tests put synthetic files' md5s in them
        archive_md5, content_md5 = MNIST_ARCHIVE_MD5, MNIST_CONTENT_MD5
    else:
        archive_md5 = {url.rsplit("/", 1)[-1]: md5 for url, md5 in tv.resources}
        content_md5 = dict(spec.content_md5)
    return _IdxFiles(
        raw=f"{tv.__name__}/raw",
        names=tuple(a.removesuffix(".gz") for a in archives),
        archive_md5=archive_md5,
        content_md5=content_md5,
        mirrors=tuple(getattr(tv, "mirrors", ())) or tuple(url.rsplit("/", 1)[0] + "/" for url, _ in tv.resources),
    )


def _stage_idx(spec: DatasetSpec, data_dir: Path, verify: bool, allow_download: bool) -> dict[str, str]:
    files = _idx_files(spec)
    raw = data_dir / files.raw
    how, problems, unverifiable = {}, [], []
    for name in files.names:
        try:
            how[name] = _stage_idx_file(raw, name, files, verify)
        except _Mismatch as exc:
            problems.append(str(exc))
        except _Unverifiable as exc:
            unverifiable.append(str(exc))
    if problems:
        raise _rejected(spec, problems, *([] if files.content_md5 else ["matching its archive md5"]))
    if unverifiable:
        raise DatasetUnavailable(
            f"{spec.name}: staged file(s) cannot be checked: only the md5s of {spec.title}'s .gz archives are "
            "known (torchvision's), not those of their uncompressed contents (left on disk unchanged):\n"
            + "\n".join(unverifiable)
            + "\nFix: put each file's .gz archive (named above) beside it, where it is checked and the file "
            f"against its content; or, for a dataset rebuilt from another source, set {_checksums_off(spec.name)}."
        )
    missing = [name for name in files.names if how[name] is None]
    if missing:
        _require_download(spec, data_dir, [f"{name}.gz" for name in missing], allow_download)
    for name in missing:
        archive = f"{name}.gz"
        urls = [f"{mirror}{archive}" for mirror in files.mirrors]
        _fetch(spec, data_dir, urls, raw / archive, files.archive_md5[archive])
        how[name] = _stage_idx_file(raw, name, files, verify=True)
    return {str(raw / name): how[name] for name in files.names}


def _stage_idx_file(raw: Path, name: str, files: _IdxFiles, verify: bool) -> str | None:
    """Accept ``raw/name``, or extract it from ``raw/name.gz``; how it was verified (None: neither is there).

    An uncompressed file whose official md5 is unknown (Fashion-MNIST's, KMNIST's) is checked against
    the content of its archive beside it, and cannot be checked without one. Raises :class:`_Mismatch`
    when a file fails its check, :class:`_Unverifiable` when it cannot be checked.
    """
    target, archive = raw / name, raw / f"{name}.gz"
    archive_md5, content_md5 = files.archive_md5[archive.name], files.content_md5.get(name)
    official = (archive.name, archive_md5), (name, content_md5)
    if target.exists() and not (verify and content_md5 is None and archive.exists()):
        if not verify:
            return NOT_CHECKED
        if content_md5 is None:
            raise _Unverifiable(f"  {target}: stage {archive.name} (archive md5 {archive_md5})")
        found = _md5(target)
        if found != content_md5:
            raise _Mismatch(_mismatch(target, found, *official))
        return CONTENT_MD5
    if not archive.exists():
        return None
    found = _md5(archive)
    try:
        content = gzip.decompress(archive.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise _Mismatch(_mismatch(archive, f"{found} (not a readable gzip file: {exc})", *official)) from None
    how = NOT_CHECKED if not verify else ARCHIVE_MD5 if found == archive_md5 else None
    if how is None:
        if content_md5 is None:
            raise _Mismatch(_mismatch(archive, found, *official))
        content_found = hashlib.md5(content).hexdigest()
        if content_found != content_md5:
            raise _Mismatch(_mismatch(archive, f"{found} (uncompressed: {content_found})", *official))
        how = CONTENT_MD5
    if target.exists():  # staged beside its verified archive: it must be the archive's content
        found = _md5(target)
        if found != hashlib.md5(content).hexdigest():
            raise _Mismatch(f"  {target}: md5 {found}, not the content of {archive} beside it (which is verified)")
        return how
    _write_extracted(target, content)
    log.info("%s: extracted from %s", target, archive.name)
    return how


def _load_idx(spec: DatasetSpec, data_dir: Path) -> tuple[np.ndarray, ...]:
    """The four IDX files as torchvision's class reads them (no pickle in them; :func:`download` verified them)."""
    out = []
    for train in (True, False):
        try:
            ds = _tv(spec)(str(data_dir), train=train, download=False)
        except RuntimeError as exc:
            raise DatasetUnavailable(
                f"{spec.name}: cannot read the dataset in {data_dir} ({exc}).\n{manual_instructions(spec, data_dir)}"
            ) from None
        x = np.asarray(ds.data, dtype=np.uint8)
        out += [np.ascontiguousarray(x[:, None, :, :]), np.asarray(ds.targets, dtype=np.int64)]
    return tuple(out)


# --- CIFAR-10 / CIFAR-100: the .tar.gz or its extracted folder of pickled batches ---------------------


@dataclasses.dataclass(frozen=True)
class _CifarFiles:
    url: str
    archive: str  # cifar-10-python.tar.gz, in data_dir
    archive_md5: str
    folder: str  # cifar-10-batches-py, in data_dir and in the archive
    content_md5: dict[str, str]  # every file of the folder → md5
    train: tuple[str, ...]  # the training batches, in order
    test: tuple[str, ...]
    meta: str  # batches.meta / meta
    meta_key: str  # label_names / fine_label_names: the class names in the meta file
    labels: str  # labels / fine_labels: the labels in a batch


def _cifar_files(spec: DatasetSpec) -> _CifarFiles:
    tv = _tv(spec)
    if spec.torchvision == "CIFAR10":  # this module's tables, read now: tests put synthetic files' md5s in them
        archive_md5, content_md5 = CIFAR10_ARCHIVE_MD5, CIFAR10_CONTENT_MD5
    else:
        archive_md5 = tv.tgz_md5
        content_md5 = {**dict(tv.train_list), **dict(tv.test_list), tv.meta["filename"]: tv.meta["md5"]}
    return _CifarFiles(
        url=tv.url,
        archive=tv.filename,
        archive_md5=archive_md5,
        folder=tv.base_folder,
        content_md5=content_md5,
        train=tuple(name for name, _ in tv.train_list),
        test=tuple(name for name, _ in tv.test_list),
        meta=tv.meta["filename"],
        meta_key=tv.meta["key"],
        labels=tv.meta["key"].replace("label_names", "labels"),  # CIFAR-100's batches: fine_labels
    )


def _stage_cifar(spec: DatasetSpec, data_dir: Path, verify: bool, allow_download: bool) -> dict[str, str]:
    files = _cifar_files(spec)
    batches, archive = data_dir / files.folder, data_dir / files.archive
    if batches.is_dir() and any(p.is_file() for p in batches.iterdir()):
        how = _check_cifar_batches(spec, files, batches, verify)
    else:
        if not archive.exists():
            _require_download(spec, data_dir, [files.archive], allow_download)
            _fetch(spec, data_dir, [files.url], archive, files.archive_md5)
            verify = True  # checked by its archive md5 on download
        how = _extract_cifar(spec, files, archive, batches, verify)
    return {str(batches / name): how for name in files.content_md5}


def _check_cifar_batches(spec: DatasetSpec, files: _CifarFiles, batches: Path, verify: bool) -> str:
    missing = [name for name in files.content_md5 if not (batches / name).is_file()]
    if missing:
        raise DatasetUnavailable(
            f"{spec.name}: {batches} is incomplete, it lacks {', '.join(missing)}. Fix: add them, or move the "
            f"folder away so that it is extracted from {files.archive}.\n{manual_instructions(spec, batches.parent)}"
        )
    if not verify:
        return NOT_CHECKED
    archive = (files.archive, files.archive_md5)
    problems = [
        _mismatch(batches / name, found, archive, (name, md5))
        for name, md5 in files.content_md5.items()
        if (found := _md5(batches / name)) != md5
    ]
    if problems:
        raise _rejected(spec, problems)
    return CONTENT_MD5


def _extract_cifar(spec: DatasetSpec, files: _CifarFiles, archive: Path, batches: Path, verify: bool) -> str:
    """Extract the batches from ``archive`` into ``batches`` (absent or empty), checked by archive or content md5."""
    found = _md5(archive)
    how = NOT_CHECKED if not verify else ARCHIVE_MD5 if found == files.archive_md5 else CONTENT_MD5
    official = (files.archive, files.archive_md5)
    # The marker is never consulted: batches holds no file here, so nothing staged is replaced.
    with atomic_directory(batches, marker=".extracted-by-trustcal") as tmp:
        try:
            members = _extract_members(files, archive, tmp)
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            line = f"  {archive}: md5 {found}, not a readable tar.gz file ({exc}); official md5 {files.archive_md5}"
            raise _rejected(spec, [line]) from None
        missing = [f"{files.folder}/{name}" for name in files.content_md5 if name not in members]
        if missing:
            line = f"  {archive}: md5 {found}, lacks {', '.join(missing)}; official md5 {files.archive_md5}"
            raise _rejected(spec, [line])
        if how == CONTENT_MD5:
            problems = [
                _mismatch(archive, f"{found} (member {name}: {members[name]})", official, (name, md5))
                for name, md5 in files.content_md5.items()
                if members[name] != md5
            ]
            if problems:
                raise _rejected(spec, problems)
    log.info("%s: extracted from %s", batches, archive)
    return how


def _extract_members(files: _CifarFiles, archive: Path, dest: Path) -> dict[str, str]:
    """Copy the regular-file members ``<folder>/<name>`` of ``archive`` into ``dest``; their md5s.

    Only those names are read, and written under names we build ourselves: no
    other member, link or path from the archive reaches the disk.
    """
    wanted = {f"{files.folder}/{name}": name for name in files.content_md5}
    md5s = {}
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            name = wanted.get(member.name.removeprefix("./"))
            if name is None or not member.isfile():
                continue
            digest = hashlib.md5()
            with tar.extractfile(member) as src, open(dest / name, "wb") as out:
                for block in iter(lambda: src.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
            md5s[name] = digest.hexdigest()
    return md5s


CIFAR10_TRAIN_BATCHES = tuple(name for name, _ in tvd.CIFAR10.train_list)  # data_batch_1 … 5, in this order
CIFAR10_TEST_BATCHES = tuple(name for name, _ in tvd.CIFAR10.test_list)  # test_batch
CIFAR10_META = tvd.CIFAR10.meta["filename"]  # batches.meta


def _cifar_unreadable(spec: DatasetSpec, path: Path, problem: str, data_dir: Path) -> DatasetUnavailable:
    md5 = _cifar_files(spec).content_md5.get(path.name)
    return DatasetUnavailable(
        f"{spec.name}: {path}: {problem}. Fix: replace it with the official file ({path.name}, md5 {md5}), or rebuild "
        f"the batches.\n{manual_instructions(spec, data_dir)}"
    )


def _read_cifar_pickle(spec: DatasetSpec, path: Path, data_dir: Path) -> dict:
    """The dict pickled in one batch file (or the meta file), unpickled with plain data and NumPy arrays
    only; strings written by Python 2 (the official files) are read as latin-1, as torchvision reads them."""
    what = f"a {spec.title} batch"
    try:
        with open(path, "rb") as fh:
            entry = load_plain_pickle(fh, what, encoding="latin1")
    except RefusedPickle as exc:
        raise _cifar_unreadable(spec, path, f"refused, not {what}: {exc}", data_dir) from None
    except (OSError, EOFError, ValueError, TypeError, KeyError, IndexError, pickle.UnpicklingError) as exc:
        raise _cifar_unreadable(spec, path, f"unreadable ({type(exc).__name__}: {exc})", data_dir) from None
    if not isinstance(entry, dict):
        raise _cifar_unreadable(spec, path, f"not {what} (a pickled {type(entry).__name__}, not a dict)", data_dir)
    return entry


def _read_cifar_split(
    spec: DatasetSpec, batches: Path, names: tuple[str, ...], data_dir: Path
) -> tuple[np.ndarray, np.ndarray]:
    """The images (uint8 NCHW) and labels (int64) of the batches ``names``, in order: torchvision's arrays."""
    what = f"a {spec.title} batch"
    labels_key = _cifar_files(spec).labels
    images, labels = [], []
    for name in names:
        entry = _read_cifar_pickle(spec, batches / name, data_dir)
        key = "labels" if "labels" in entry else "fine_labels"  # as torchvision's CIFAR10 and CIFAR100 read them
        if "data" not in entry or key not in entry:
            found = ", ".join(map(repr, entry)) or "nothing"
            problem = f"not {what} (no 'data' and '{labels_key}' entries; it holds {found})"
            raise _cifar_unreadable(spec, batches / name, problem, data_dir)
        try:
            x = np.asarray(entry["data"], dtype=np.uint8)
            y = np.asarray(entry[key], dtype=np.int64)
            x = x.reshape(len(x), 3, 32, 32)
        except (ValueError, TypeError, OverflowError) as exc:
            problem = f"not {what} ('data' must be N rows of 3072 pixels, '{labels_key}' N integers: {exc})"
            raise _cifar_unreadable(spec, batches / name, problem, data_dir) from None
        if y.shape != (len(x),):
            problem = f"not {what} ({len(x)} images but labels of shape {y.shape})"
            raise _cifar_unreadable(spec, batches / name, problem, data_dir)
        _check_labels(spec, y, len(spec.classes), batches / name, "replace it with the official file, or rebuild it")
        images.append(x)
        labels.append(y)
    return np.ascontiguousarray(np.concatenate(images)), np.concatenate(labels)


def _check_readable(spec: DatasetSpec, data_dir: Path, path: Path, md5: str, verify_checksums: bool) -> None:
    """Before reading a staged file: it is there, and (when asked) its md5 is the official one; else the error
    naming it, with the files to stage."""
    if not path.is_file():
        raise DatasetUnavailable(
            f"{spec.name}: cannot read the dataset in {data_dir} ({path} is missing).\n"
            f"{manual_instructions(spec, data_dir)}"
        )
    if verify_checksums and (found := _md5(path)) != md5:
        raise DatasetUnavailable(
            f"{spec.name}: cannot read the dataset in {data_dir} ({path}: md5 {found}, not the official {md5}).\n"
            f"{manual_instructions(spec, data_dir)}"
        )


def _load_cifar(spec: DatasetSpec, data_dir: Path, verify_checksums: bool) -> tuple[np.ndarray, ...]:
    """CIFAR's batches in ``data_dir`` as torchvision's ``CIFAR10`` / ``CIFAR100`` read them, without its
    ``pickle.load``: (x_train, y_train, x_test, y_test), every file checked against its content md5
    first when asked."""
    files = _cifar_files(spec)
    batches = data_dir / files.folder
    for name, md5 in files.content_md5.items():
        _check_readable(spec, data_dir, batches / name, md5, verify_checksums)
    meta = _read_cifar_pickle(spec, batches / files.meta, data_dir)
    if files.meta_key not in meta:
        problem = f"not {spec.title}'s {files.meta} (no '{files.meta_key}')"
        raise _cifar_unreadable(spec, batches / files.meta, problem, data_dir)
    return (
        *_read_cifar_split(spec, batches, files.train, data_dir),
        *_read_cifar_split(spec, batches, files.test, data_dir),
    )


# --- SVHN: train_32x32.mat and test_32x32.mat (MATLAB v5) in data_dir ---------------------------------


def _svhn_files(spec: DatasetSpec) -> dict[str, tuple[str, str, str]]:
    """split → (url, file name, md5), torchvision's, for the splits used."""
    return {split: tuple(_tv(spec).split_list[split]) for split in SVHN_SPLITS}


def _stage_svhn(spec: DatasetSpec, data_dir: Path, verify: bool, allow_download: bool) -> dict[str, str]:
    files = _svhn_files(spec)
    how, problems = {}, []
    for _, filename, md5 in files.values():
        path = data_dir / filename
        if not path.exists():
            continue
        if not verify:
            how[filename] = NOT_CHECKED
        elif (found := _md5(path)) != md5:
            problems.append(f"  {path}: md5 {found}; official md5 {md5}")
        else:
            how[filename] = CONTENT_MD5
    if problems:
        raise _rejected(spec, problems, "matching its md5")
    missing = [(url, filename, md5) for url, filename, md5 in files.values() if filename not in how]
    if missing:
        _require_download(spec, data_dir, [filename for _, filename, _ in missing], allow_download)
    for url, filename, md5 in missing:
        _fetch(spec, data_dir, [url], data_dir / filename, md5)
        how[filename] = CONTENT_MD5
    return {str(data_dir / filename): how[filename] for _, filename, _ in files.values()}


def _load_svhn(spec: DatasetSpec, data_dir: Path, verify_checksums: bool) -> tuple[np.ndarray, ...]:
    """SVHN's two .mat files as torchvision's ``SVHN`` reads them: X of shape (32, 32, 3, N) as NCHW, label 10
    as digit 0; each checked against its md5 first when asked."""
    out = []
    for _, filename, md5 in _svhn_files(spec).values():
        path = data_dir / filename
        _check_readable(spec, data_dir, path, md5, verify_checksums)
        out += _read_svhn_mat(spec, path, md5)
    return tuple(out)


def _read_svhn_mat(spec: DatasetSpec, path: Path, md5: str) -> list[np.ndarray]:
    try:
        import scipy.io
    except ImportError:
        raise DatasetUnavailable(
            f"{spec.name}: {path}: a MATLAB file, read with scipy, which is not installed. Fix: install it "
            "(pip install 'scipy>=1.11', or the calibration extra: pip install 'trustcal[calibration]')."
        ) from None

    fix = f"Fix: replace it with the official file ({path.name}, md5 {md5}), or rebuild it as a MATLAB v5 file"
    try:
        mat = scipy.io.loadmat(path, variable_names=["X", "y"])
    except (scipy.io.matlab.MatReadError, NotImplementedError, ValueError, TypeError, OSError, EOFError) as exc:
        raise DatasetUnavailable(f"{spec.name}: {path}: not a readable MATLAB file ({exc}). {fix}.") from None
    c, h, w = spec.shape
    x, y = mat.get("X"), mat.get("y")
    if x is None or y is None:
        found = ", ".join(k for k in mat if not k.startswith("__")) or "nothing"
        raise DatasetUnavailable(f"{spec.name}: {path}: not an SVHN file (no X and y; it holds {found}). {fix}.")
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[:3] != (h, w, c):
        raise DatasetUnavailable(
            f"{spec.name}: {path}: X is {x.dtype} of shape {x.shape}, not uint8 of shape ({h}, {w}, {c}, N). {fix}."
        )
    if y.size != x.shape[3] or y.dtype.kind not in "ui":
        raise DatasetUnavailable(
            f"{spec.name}: {path}: y is {y.dtype} of shape {y.shape}, not {x.shape[3]} integer labels. {fix}."
        )
    labels = y.astype(np.int64).reshape(-1)
    labels[labels == 10] = 0  # SVHN's label 10 is the digit 0, as torchvision maps it
    _check_labels(spec, labels, len(spec.classes), path, f"labels are 1..10 (10: the digit 0). {fix}.")
    return [np.ascontiguousarray(x.transpose(3, 2, 0, 1)), labels]


# --- a user's images: <path>/train/<class>/* and <path>/test/<class>/* --------------------------------


@dataclasses.dataclass(frozen=True)
class _Folder:
    classes: tuple[str, ...]
    train: list[tuple[Path, int]]
    test: list[tuple[Path, int]]


def _user_instructions(spec: DatasetSpec) -> str:
    if spec.kind == registry.IMAGEFOLDER:
        return (
            f"Put {spec.name}'s images in {spec.path}/train/<class>/ and {spec.path}/test/<class>/: one folder per "
            "class, named for it (labels follow the sorted folder names, as torchvision's ImageFolder has them), "
            f"files ending in {', '.join(IMG_EXTENSIONS)}. They are read as they are and never changed."
        )
    return (
        f"Save {spec.name}'s arrays in {spec.path} with numpy.savez(path, x_train=…, y_train=…, x_test=…, y_test=…), "
        "optionally classes=[names…]: images as uint8 (or floats in [0, 1]) in NCHW, NHWC or NHW layout, labels as "
        "integers 0..K−1. The file is read as it is and never changed."
    )


def _imagefolder_layout_fix(spec: DatasetSpec) -> str:
    return (
        f"Fix: put the images in {spec.path}/train/<class>/ and {spec.path}/test/<class>/ (one folder per class, "
        f"the same names in both), or correct path: in the dataset {spec.name} of your setups:."
    )


def _list_imagefolder(spec: DatasetSpec) -> _Folder:
    """The class folders and image files of a user's image folder, as torchvision's ImageFolder lists them:
    classes are the sorted names of the folders in train/; each class's files (in its subfolders too) are
    those ending in one of torchvision's IMG_EXTENSIONS, in sorted order."""
    root = Path(spec.path)
    for folder in (root, root / "train", root / "test"):
        if not folder.is_dir():
            raise DatasetUnavailable(f"{spec.name}: {folder}: no such folder. {_imagefolder_layout_fix(spec)}")
    classes = tuple(sorted(entry.name for entry in os.scandir(root / "train") if entry.is_dir()))
    if not classes:
        raise DatasetUnavailable(
            f"{spec.name}: {root / 'train'}: no class folder in it. {_imagefolder_layout_fix(spec)}"
        )
    unknown = sorted(entry.name for entry in os.scandir(root / "test") if entry.is_dir() and entry.name not in classes)
    if unknown:
        raise DatasetUnavailable(
            f"{spec.name}: {root / 'test'}: class folder(s) {', '.join(unknown)} not in {root / 'train'}, whose "
            f"classes are {', '.join(classes)}. Fix: rename or remove them, or add training images of those "
            f"classes in {root / 'train'}/."
        )
    if spec.classes and tuple(spec.classes) != classes:
        raise DatasetUnavailable(
            f"{spec.name}: classes: {', '.join(spec.classes)} in the configuration, but the class folders of "
            f"{root / 'train'} are {', '.join(classes)} (label i is the i-th of them, sorted by name). Fix: list "
            "those folders, in that order, under classes:, or leave classes: out."
        )
    train, test = _image_files(root / "train", classes), _image_files(root / "test", classes)
    empty = [c for i, c in enumerate(classes) if not any(label == i for _, label in train)]
    if empty or not test:
        where = root / "train" / empty[0] if empty else root / "test"
        raise DatasetUnavailable(
            f"{spec.name}: {where}: no image in it (files ending in {', '.join(IMG_EXTENSIONS)}). Fix: add its "
            "images" + (", or remove the folder." if empty else ".")
        )
    return _Folder(classes, train, test)


def _image_files(folder: Path, classes: tuple[str, ...]) -> list[tuple[Path, int]]:
    """(file, label) of the images in ``folder/<class>/``, in torchvision's make_dataset order."""
    out = []
    for label, name in enumerate(classes):
        if not (folder / name).is_dir():
            continue
        for root, _, filenames in sorted(os.walk(folder / name, followlinks=True)):
            out += [(Path(root) / f, label) for f in sorted(filenames) if f.lower().endswith(IMG_EXTENSIONS)]
    return out


def _open_image(spec: DatasetSpec, path: Path):
    from PIL import Image

    try:
        return Image.open(path)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise _unreadable_image(spec, path, exc) from None


def _unreadable_image(spec: DatasetSpec, path: Path, exc: Exception) -> DatasetUnavailable:
    return DatasetUnavailable(
        f"{spec.name}: {path}: not a readable image ({type(exc).__name__}: {exc}). Fix: replace it with a readable "
        "image, or move it out of the dataset's folder."
    )


def _load_imagefolder(spec: DatasetSpec) -> RawDataset:
    """A user's image folder as uint8 NCHW arrays: RGB, or grey (one channel) when every image is mode L;
    resized to ``spec.size`` × ``spec.size`` when it is set (bilinear, after the conversion, as
    torchvision's ``Resize((size, size))`` does on a PIL image), else every image must have the same size.
    """
    from PIL import Image

    folder = _list_imagefolder(spec)
    samples = folder.train + folder.test
    grey, sizes = True, {}
    for path, _ in samples:  # the headers only: modes and sizes
        with _open_image(spec, path) as img:
            grey &= img.mode == "L"
            sizes.setdefault(img.size, path)
        if spec.size is None and len(sizes) > 1:
            (a, size_a), (b, size_b) = ((p, s) for s, p in sizes.items())
            raise DatasetUnavailable(
                f"{spec.name}: images of different sizes: {a} is {size_a[0]}×{size_a[1]}, {b} is "
                f"{size_b[0]}×{size_b[1]} (width × height). Fix: set size: (e.g. size: 32) in the dataset "
                f"{spec.name} of your setups:, so that every image is resized to size × size."
            )
    mode = "L" if grey else "RGB"
    width, height = (spec.size, spec.size) if spec.size else next(iter(sizes))
    x = np.empty((len(samples), 1 if grey else 3, height, width), dtype=np.uint8)
    for i, (path, _) in enumerate(samples):
        with _open_image(spec, path) as img:
            try:
                pixels = img.convert(mode)
                if spec.size:
                    pixels = pixels.resize((width, height), Image.Resampling.BILINEAR)
                array = np.asarray(pixels)
            except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
                raise _unreadable_image(spec, path, exc) from None
        x[i] = array[None] if grey else array.transpose(2, 0, 1)
    n = len(folder.train)
    y = np.array([label for _, label in samples], dtype=np.int64)
    log.info(
        "%s: %d training and %d test images of %d classes from %s, %s %d×%d",
        spec.name,
        n,
        len(folder.test),
        len(folder.classes),
        spec.path,
        mode,
        width,
        height,
    )
    return RawDataset(x[:n], y[:n], x[n:], y[n:], folder.classes)


# --- a user's arrays: one .npz of x_train, y_train, x_test, y_test (and classes) ---------------------

NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")


def _npz_fix(spec: DatasetSpec) -> str:
    return (
        f"Fix: save the arrays with numpy.savez({spec.path!r}, x_train=…, y_train=…, x_test=…, y_test=…), "
        "or correct path: in the dataset of your setups:"
    )


def _open_npz(spec: DatasetSpec):
    """The user's ``.npz`` opened without pickles, holding every array of :data:`NPZ_KEYS`."""
    path = Path(spec.path)
    if not path.is_file():
        raise DatasetUnavailable(f"{spec.name}: {path}: no such file. {_npz_fix(spec)}.")
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DatasetUnavailable(f"{spec.name}: {path}: not a readable .npz file ({exc}). {_npz_fix(spec)}.") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise DatasetUnavailable(f"{spec.name}: {path}: one array (a .npy file), not named arrays. {_npz_fix(spec)}.")
    missing = [key for key in NPZ_KEYS if key not in data.files]
    if missing:
        data.close()
        raise DatasetUnavailable(
            f"{spec.name}: {path}: no array {', '.join(missing)} (it holds {', '.join(data.files) or 'nothing'}). "
            f"{_npz_fix(spec)}."
        )
    return data


def _npz_array(spec: DatasetSpec, data, key: str) -> np.ndarray:
    try:
        return data[key]
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise DatasetUnavailable(
                f"{spec.name}: {spec.path}: array {key} holds Python objects, refused (only a pickle could "
                f"read them). Fix: save {key} as a numeric{' or string' if key == 'classes' else ''} array "
                "(e.g. numpy.asarray(…, dtype=numpy.uint8)), not dtype object."
            ) from None
        raise DatasetUnavailable(
            f"{spec.name}: {spec.path}: array {key} unreadable ({exc}). {_npz_fix(spec)}."
        ) from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DatasetUnavailable(
            f"{spec.name}: {spec.path}: array {key} unreadable ({exc}). {_npz_fix(spec)}."
        ) from None


def _npz_images(spec: DatasetSpec, x: np.ndarray, key: str) -> np.ndarray:
    """``x`` as uint8 NCHW. The layout is told by the shape: three axes are NHW (grey); of four, a last
    axis of at most 4 is channels (NHWC, converted), else axis 1 must be (NCHW, as it is), so images
    4 pixels wide or narrower are read as NHWC (said in a warning when axis 1 could be channels too).
    Floats in [0, 1] become round(x · 255)."""
    where = f"{spec.name}: {spec.path}: array {key}"
    if x.ndim == 3:
        x = x[:, None]
    elif x.ndim == 4 and x.shape[-1] <= 4:
        if x.shape[1] <= 4:
            log.warning(
                "%s: %s: %s of shape %s read as (N, H, W, C), %d channels (a last axis of at most 4 is channels)",
                spec.name,
                spec.path,
                key,
                x.shape,
                x.shape[-1],
            )
        x = x.transpose(0, 3, 1, 2)
    elif x.ndim != 4 or x.shape[1] > 4:
        raise DatasetUnavailable(
            f"{where} has shape {x.shape}: not images (N, C, H, W), (N, H, W, C) or (N, H, W) with at most 4 "
            f"channels. Fix: save {key} as one of those layouts."
        )
    if len(x) == 0:
        raise DatasetUnavailable(f"{where} holds no image. Fix: save the images in {key}.")
    if x.dtype.kind == "f":
        if not np.isfinite(x).all() or x.min() < 0 or x.max() > 1:
            raise DatasetUnavailable(
                f"{where} holds floats outside [0, 1] (from {np.nanmin(x)} to {np.nanmax(x)}, or not finite). "
                f"Fix: save {key} as uint8 pixels 0..255, or as floats in [0, 1]."
            )
        log.info("%s: %s: %s holds floats in [0, 1]: converted to uint8 as round(x · 255)", spec.name, spec.path, key)
        x = np.rint(x * 255)
    elif x.dtype.kind in "ui":
        if x.dtype != np.uint8 and (x.min() < 0 or x.max() > 255):
            raise DatasetUnavailable(
                f"{where} holds {x.dtype} values from {x.min()} to {x.max()}, not pixels 0..255. Fix: save {key} "
                "as uint8 pixels 0..255, or as floats in [0, 1]."
            )
    else:
        raise DatasetUnavailable(
            f"{where} is {x.dtype}, not pixels. Fix: save {key} as uint8 pixels 0..255, or as floats in [0, 1]."
        )
    return np.ascontiguousarray(x, dtype=np.uint8)


def _npz_labels(spec: DatasetSpec, y: np.ndarray, key: str, n: int) -> np.ndarray:
    where = f"{spec.name}: {spec.path}: array {key}"
    if y.ndim == 2 and y.shape[0] == n and y.shape[1] > 1:
        raise DatasetUnavailable(
            f"{where} has shape {y.shape}: one-hot rows, not labels. Fix: save numpy.argmax({key}, axis=1) instead."
        )
    y = y.reshape(-1) if y.ndim == 2 and y.shape[1] == 1 else y
    if y.dtype.kind not in "ui" or y.shape != (n,):
        raise DatasetUnavailable(
            f"{where} is {y.dtype} of shape {y.shape}: not {n} integer labels (one per image). Fix: save {key} "
            "as integers 0..K−1, one per image."
        )
    if y.min() < 0:
        raise DatasetUnavailable(f"{where} holds label {y.min()}. Fix: number the classes 0..K−1.")
    return y.astype(np.int64)


def _npz_classes(spec: DatasetSpec, data) -> tuple[str, ...]:
    """The class names: the file's ``classes`` array, else the configuration's ``classes:`` (both: equal)."""
    if "classes" not in data.files:
        return tuple(spec.classes)
    names = _npz_array(spec, data, "classes")
    if names.ndim != 1 or names.dtype.kind not in "US":
        raise DatasetUnavailable(
            f"{spec.name}: {spec.path}: array classes is {names.dtype} of shape {names.shape}, not a list of names. "
            "Fix: save classes as a string array, e.g. numpy.array(['cat', 'dog']), or leave it out."
        )
    found = tuple(n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n) for n in names.tolist())
    if spec.classes and tuple(spec.classes) != found:
        raise DatasetUnavailable(
            f"{spec.name}: classes: {', '.join(spec.classes)} in the configuration, but {spec.path} names "
            f"{', '.join(found)}. Fix: make them equal, or leave classes: out of the configuration."
        )
    return found


def _load_npz(spec: DatasetSpec) -> RawDataset:
    """A user's ``.npz``: images as :func:`_npz_images` converts them, labels 0..K−1 (K: the number of class
    names, else the largest training label + 1), every test label within the training labels' range."""
    with _open_npz(spec) as data:
        x_train = _npz_images(spec, _npz_array(spec, data, "x_train"), "x_train")
        x_test = _npz_images(spec, _npz_array(spec, data, "x_test"), "x_test")
        y_train = _npz_labels(spec, _npz_array(spec, data, "y_train"), "y_train", len(x_train))
        y_test = _npz_labels(spec, _npz_array(spec, data, "y_test"), "y_test", len(x_test))
        classes = _npz_classes(spec, data)
    path = Path(spec.path)
    if x_train.shape[1:] != x_test.shape[1:]:
        raise DatasetUnavailable(
            f"{spec.name}: {path}: x_train's images are {x_train.shape[1:]} (C, H, W), x_test's {x_test.shape[1:]}. "
            "Fix: save both at the same size and channels."
        )
    num_classes = len(classes) or int(y_train.max()) + 1
    fix = "Fix: number the classes 0..K−1" + (f" (K = {len(classes)}: the classes named)." if classes else ".")
    _check_labels(spec, y_train, num_classes, f"{path}: y_train", fix)
    if y_test.min() < 0 or y_test.max() > y_train.max():
        raise DatasetUnavailable(
            f"{spec.name}: {path}: y_test holds label {int(y_test.max() if y_test.min() >= 0 else y_test.min())}, "
            f"outside the training labels' range 0..{int(y_train.max())}. Fix: test on the classes trained on "
            "(number the classes 0..K−1 in both)."
        )
    return RawDataset(x_train, y_train, x_test, y_test, classes or tuple(str(k) for k in range(num_classes)))


def _user_files(spec: DatasetSpec) -> list[Path]:
    """The files a user's dataset is read from, checked to be there and laid out as its kind needs."""
    if spec.kind == registry.NPZ:
        _open_npz(spec).close()
        return [Path(spec.path)]
    folder = _list_imagefolder(spec)
    return [path for path, _ in folder.train + folder.test]


# --- reading -----------------------------------------------------------------------------------------


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
        return _load_imagefolder(spec)
    if spec.kind == registry.NPZ:
        return _load_npz(spec)
    data_dir = Path(data_dir)
    if spec.kind == registry.IDX:
        arrays = _load_idx(spec, data_dir)
        fix = f"replace them with the official files.\n{manual_instructions(spec, data_dir)}"
        for y in arrays[1::2]:
            _check_labels(spec, y, len(spec.classes), data_dir / _idx_files(spec).raw, fix)
    elif spec.kind == registry.CIFAR:
        arrays = _load_cifar(spec, data_dir, verify_checksums)
    else:
        arrays = _load_svhn(spec, data_dir, verify_checksums)
    return RawDataset(*arrays, spec.classes)


def load_raw(dataset: DatasetSpec | str, data_dir: str | Path, *, verify_checksums: bool = True):
    """Read the raw files: (x_train, y_train, x_test, y_test), images as uint8 NCHW arrays, labels as int64
    (:func:`load_dataset` without the class names)."""
    return tuple(load_dataset(dataset, data_dir, verify_checksums=verify_checksums)[:4])
