"""CIFAR-10 / CIFAR-100: the .tar.gz or its extracted folder of pickled batches.

The batches are pickles: they are read with plain data and NumPy arrays only
(:func:`trustcal.files.load_plain_pickle`), so a batch that names anything else is refused, whatever
``verify_checksums`` says."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import logging
import pickle
import tarfile
import zlib
from pathlib import Path

import numpy as np
import torchvision.datasets as tvd

from trustcal.data import checksums
from trustcal.files import RefusedPickle, atomic_directory, load_plain_pickle
from trustcal.registry import DatasetSpec

log = logging.getLogger(__name__)

CIFAR10_ARCHIVE_MD5 = tvd.CIFAR10.tgz_md5
CIFAR10_CONTENT_MD5 = {
    **dict(tvd.CIFAR10.train_list),
    **dict(tvd.CIFAR10.test_list),
    tvd.CIFAR10.meta["filename"]: tvd.CIFAR10.meta["md5"],
}


@dataclasses.dataclass(frozen=True)
class CifarFiles:
    """Where a CIFAR dataset's files are and the official md5s they are checked against."""

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


def cifar_files(spec: DatasetSpec) -> CifarFiles:
    tv = checksums.torchvision_class(spec)
    if spec.torchvision == "CIFAR10":  # this module's tables, read now: tests put synthetic files' md5s in them
        archive_md5, content_md5 = CIFAR10_ARCHIVE_MD5, CIFAR10_CONTENT_MD5
    else:
        archive_md5 = tv.tgz_md5
        content_md5 = {**dict(tv.train_list), **dict(tv.test_list), tv.meta["filename"]: tv.meta["md5"]}
    return CifarFiles(
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


def instructions(spec: DatasetSpec, data_dir: Path) -> str:
    """Which CIFAR files to put where, with the archive and content md5s they are checked against."""
    files = cifar_files(spec)
    head = (
        f"Download {files.url} on a machine with network access and copy it to {data_dir}/:\n"
        f"  {files.archive}  (archive md5 {files.archive_md5})\n"
        f"or copy its extracted folder there, {data_dir / files.folder}/, holding:"
    )
    lines = [f"  {name}  (md5 {md5})" for name, md5 in files.content_md5.items()]
    return checksums.instructions_text(head, lines, "by archive or content md5")


def stage(spec: DatasetSpec, data_dir: Path, verify: bool, allow_download: bool) -> dict[str, str]:
    """Check the batches in ``data_dir``, or extract them from the archive, fetched when missing; each file →
    how it was verified."""
    files = cifar_files(spec)
    batches, archive = data_dir / files.folder, data_dir / files.archive
    if batches.is_dir() and any(p.is_file() for p in batches.iterdir()):
        how = _check_cifar_batches(spec, files, batches, verify)
    else:
        if not archive.exists():
            checksums.require_download(spec, data_dir, [files.archive], allow_download, instructions(spec, data_dir))
            checksums.fetch(spec, [files.url], archive, files.archive_md5, instructions(spec, data_dir))
            verify = True  # checked by its archive md5 on download
        how = _extract_cifar(spec, files, archive, batches, verify)
    return {str(batches / name): how for name in files.content_md5}


def _check_cifar_batches(spec: DatasetSpec, files: CifarFiles, batches: Path, verify: bool) -> str:
    missing = [name for name in files.content_md5 if not (batches / name).is_file()]
    if missing:
        raise checksums.DatasetUnavailable(
            f"{spec.name}: {batches} is incomplete, it lacks {', '.join(missing)}. Fix: add them, or move the "
            f"folder away so that it is extracted from {files.archive}.\n{instructions(spec, batches.parent)}"
        )
    if not verify:
        return checksums.NOT_CHECKED
    archive = (files.archive, files.archive_md5)
    problems = [
        checksums.mismatch_line(batches / name, found, archive, (name, md5))
        for name, md5 in files.content_md5.items()
        if (found := checksums.file_md5(batches / name)) != md5
    ]
    if problems:
        raise checksums.rejected(spec, problems)
    return checksums.CONTENT_MD5


def _extract_cifar(spec: DatasetSpec, files: CifarFiles, archive: Path, batches: Path, verify: bool) -> str:
    """Extract the batches from ``archive`` into ``batches`` (absent or empty), checked by archive or content md5."""
    found = checksums.file_md5(archive)
    how = (
        checksums.NOT_CHECKED
        if not verify
        else checksums.ARCHIVE_MD5
        if found == files.archive_md5
        else checksums.CONTENT_MD5
    )
    official = (files.archive, files.archive_md5)
    # The marker is never consulted: batches holds no file here, so nothing staged is replaced.
    with atomic_directory(batches, marker=".extracted-by-trustcal") as tmp:
        try:
            members = _extract_members(files, archive, tmp)
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            line = f"  {archive}: md5 {found}, not a readable tar.gz file ({exc}); official md5 {files.archive_md5}"
            raise checksums.rejected(spec, [line]) from None
        missing = [f"{files.folder}/{name}" for name in files.content_md5 if name not in members]
        if missing:
            line = f"  {archive}: md5 {found}, lacks {', '.join(missing)}; official md5 {files.archive_md5}"
            raise checksums.rejected(spec, [line])
        if how == checksums.CONTENT_MD5:
            problems = [
                checksums.mismatch_line(archive, f"{found} (member {name}: {members[name]})", official, (name, md5))
                for name, md5 in files.content_md5.items()
                if members[name] != md5
            ]
            if problems:
                raise checksums.rejected(spec, problems)
    log.info("%s: extracted from %s", batches, archive)
    return how


def _extract_members(files: CifarFiles, archive: Path, dest: Path) -> dict[str, str]:
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


def _cifar_unreadable(spec: DatasetSpec, path: Path, problem: str, data_dir: Path) -> checksums.DatasetUnavailable:
    md5 = cifar_files(spec).content_md5.get(path.name)
    return checksums.DatasetUnavailable(
        f"{spec.name}: {path}: {problem}. Fix: replace it with the official file ({path.name}, md5 {md5}), or rebuild "
        f"the batches.\n{instructions(spec, data_dir)}"
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
    labels_key = cifar_files(spec).labels
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
        checksums.check_labels(
            spec, y, len(spec.classes), batches / name, "replace it with the official file, or rebuild it"
        )
        images.append(x)
        labels.append(y)
    return np.ascontiguousarray(np.concatenate(images)), np.concatenate(labels)


def load(spec: DatasetSpec, data_dir: Path, verify_checksums: bool) -> tuple[np.ndarray, ...]:
    """CIFAR's batches in ``data_dir`` as torchvision's ``CIFAR10`` / ``CIFAR100`` read them, without its
    ``pickle.load``: (x_train, y_train, x_test, y_test), every file checked against its content md5
    first when asked."""
    files = cifar_files(spec)
    batches = data_dir / files.folder
    for name, md5 in files.content_md5.items():
        checksums.check_readable(spec, data_dir, batches / name, md5, verify_checksums, instructions(spec, data_dir))
    meta = _read_cifar_pickle(spec, batches / files.meta, data_dir)
    if files.meta_key not in meta:
        problem = f"not {spec.title}'s {files.meta} (no '{files.meta_key}')"
        raise _cifar_unreadable(spec, batches / files.meta, problem, data_dir)
    return (
        *_read_cifar_split(spec, batches, files.train, data_dir),
        *_read_cifar_split(spec, batches, files.test, data_dir),
    )
