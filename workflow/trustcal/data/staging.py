"""Datasets: stage MNIST / CIFAR-10 in torchvision's layout, split them as the paper did.

The raw files live where torchvision keeps them under ``data_dir``
(``MNIST/raw/`` and ``cifar-10-batches-py/``). Files staged there by hand (the
archives or their extracted contents) are verified by archive md5 or by
content md5, extracted by us, and never deleted or overwritten; only an
archive this process downloaded itself may be deleted (when corrupt). The
prepared splits are uint8 arrays in NCHW layout (docs/method.md §1: the last 10 % of
the training set is the validation set, as Keras' ``validation_split`` takes
the tail unshuffled). CIFAR-10's batches are pickles: they are read with plain
data and NumPy arrays only (:func:`trustcal.files.load_plain_pickle`), so a
batch that names anything else is refused, whatever ``verify_checksums`` says.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import pickle
import tarfile
import urllib.error
import zlib
from pathlib import Path

import numpy as np
import torchvision.datasets as tvd

from trustcal.errors import TrustcalError
from trustcal.files import RefusedPickle, atomic_directory, atomic_path, load_plain_pickle

log = logging.getLogger(__name__)

DATASETS = ("mnist", "cifar10")

MNIST_DIR = "MNIST/raw"
MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
# Official md5s: of the .gz archives (torchvision's list) and of the uncompressed IDX files.
MNIST_ARCHIVE_MD5 = dict(tvd.MNIST.resources)
MNIST_CONTENT_MD5 = {
    "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
}

CIFAR10_ARCHIVE = tvd.CIFAR10.filename  # cifar-10-python.tar.gz, in data_dir
CIFAR10_DIR = tvd.CIFAR10.base_folder  # cifar-10-batches-py, in data_dir and in the archive
CIFAR10_ARCHIVE_MD5 = tvd.CIFAR10.tgz_md5
CIFAR10_CONTENT_MD5 = {
    **dict(tvd.CIFAR10.train_list),
    **dict(tvd.CIFAR10.test_list),
    tvd.CIFAR10.meta["filename"]: tvd.CIFAR10.meta["md5"],
}

# Extracted files as torchvision lays them out (relative to data_dir).
RAW_FILES = {
    "mnist": [f"{MNIST_DIR}/{name}" for name in MNIST_FILES],
    "cifar10": [f"{CIFAR10_DIR}/{name}" for name in CIFAR10_CONTENT_MD5],
}


# How a file was accepted (the `verified` column of raw_manifest.tsv).
ARCHIVE_MD5 = "archive-md5"
CONTENT_MD5 = "content-md5"
NOT_CHECKED = "not checked (verify_checksums: false)"


class DatasetUnavailable(TrustcalError):
    """Dataset files missing, wrong or not fetchable; the message names the files and the fix."""


class _Mismatch(Exception):
    """A staged file failed its check; the message is one line of the user's error."""


def raw_files(dataset: str, data_dir: str | Path) -> list[str]:
    """The files the download step must leave in ``data_dir`` for ``dataset``."""
    _check_name(dataset)
    return [str(Path(data_dir) / f) for f in RAW_FILES[dataset]]


def _check_name(dataset: str) -> None:
    if dataset not in DATASETS:
        raise TrustcalError(f"unknown dataset {dataset!r}; allowed: {', '.join(DATASETS)}")


def _md5(path: str | Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _mismatch(path: Path, found: str, archive: tuple[str, str], content: tuple[str, str]) -> str:
    """The error line for ``path``: the md5 found and the official (name, md5) of archive and content."""
    return f"  {path}: md5 {found}; official md5s: archive {archive[0]} {archive[1]}, content {content[0]} {content[1]}"


def _rejected(dataset: str, problems: list[str]) -> DatasetUnavailable:
    others = "".join(f", {d}: true" for d in DATASETS if d != dataset)
    return DatasetUnavailable(
        f"{dataset}: staged file(s) failed verification (left on disk unchanged):\n"
        + "\n".join(problems)
        + "\nFix: replace each with the official file (matching the archive or the content md5), or, "
        f"for a dataset rebuilt from another source, set verify_checksums: {{{dataset}: false{others}}} "
        f"in config.yaml (or --config 'verify_checksums={{{dataset}: false{others}}}')."
    )


def manual_instructions(dataset: str, data_dir: str | Path) -> str:
    """Which files to put where, with the archive and content md5s they are checked against."""
    data_dir = Path(data_dir)
    if dataset == "mnist":
        head = (
            f"Download the four archives from {tvd.MNIST.mirrors[0]} on a machine with network access "
            f"and copy them (or their uncompressed contents) to {data_dir / MNIST_DIR}/:"
        )
        lines = [
            f"  {name}.gz  (archive md5 {MNIST_ARCHIVE_MD5[name + '.gz']}; uncompressed {name}: "
            f"md5 {MNIST_CONTENT_MD5[name]})"
            for name in MNIST_FILES
        ]
    else:
        head = (
            f"Download {tvd.CIFAR10.url} on a machine with network access and copy it to {data_dir}/:\n"
            f"  {CIFAR10_ARCHIVE}  (archive md5 {CIFAR10_ARCHIVE_MD5})\n"
            f"or copy its extracted folder there, {data_dir / CIFAR10_DIR}/, holding:"
        )
        lines = [f"  {name}  (md5 {md5})" for name, md5 in CIFAR10_CONTENT_MD5.items()]
    return (
        head
        + "\n"
        + "\n".join(lines)
        + "\nthen rerun. Staged files are checked by archive or content md5, used without network, "
        "and never deleted."
    )


def download(
    dataset: str, data_dir: str | Path, *, verify_checksums: bool = True, allow_download: bool = True
) -> dict[str, str]:
    """Stage ``dataset`` in ``data_dir``: check and extract the files there, fetch the missing ones.

    Returns each of :func:`raw_files` with how it was verified (``ARCHIVE_MD5``,
    ``CONTENT_MD5`` or ``NOT_CHECKED``). Staged files are never deleted or
    overwritten; ``allow_download=False`` never touches the network.
    """
    _check_name(dataset)
    data_dir = Path(data_dir)
    if not verify_checksums:
        log.warning("%s: verify_checksums is false: files staged in %s are used without md5 checks", dataset, data_dir)
    stage = _stage_mnist if dataset == "mnist" else _stage_cifar10
    verified = stage(data_dir, verify_checksums, allow_download)
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


def _require_download(dataset: str, data_dir: Path, missing: list[str], allow_download: bool) -> None:
    if not allow_download:
        raise DatasetUnavailable(
            f"{dataset}: not found in {data_dir} and downloading is switched off (config: download: false): "
            f"{', '.join(missing)}.\n{manual_instructions(dataset, data_dir)}\n"
            f"Fix: stage the files listed above by hand (the air-gapped route: {AIR_GAPPED}), then rerun."
        )


def _fetch(dataset: str, data_dir: Path, urls: list[str], target: Path, md5: str) -> None:
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
        f"{dataset}: {target} is missing and could not be fetched ({'; '.join(errors)}).\n"
        f"{manual_instructions(dataset, data_dir)}\n"
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


# --- MNIST: four .gz archives or their uncompressed IDX files in MNIST/raw ---------------------


def _stage_mnist(data_dir: Path, verify: bool, allow_download: bool) -> dict[str, str]:
    raw = data_dir / MNIST_DIR
    how, problems = {}, []
    for name in MNIST_FILES:
        try:
            how[name] = _stage_mnist_file(raw, name, verify)
        except _Mismatch as exc:
            problems.append(str(exc))
    if problems:
        raise _rejected("mnist", problems)
    missing = [name for name in MNIST_FILES if how[name] is None]
    if missing:
        _require_download("mnist", data_dir, [f"{name}.gz" for name in missing], allow_download)
    for name in missing:
        archive = f"{name}.gz"
        urls = [f"{mirror}{archive}" for mirror in tvd.MNIST.mirrors]
        _fetch("mnist", data_dir, urls, raw / archive, MNIST_ARCHIVE_MD5[archive])
        how[name] = _stage_mnist_file(raw, name, verify=True)
    return {str(raw / name): how[name] for name in MNIST_FILES}


def _stage_mnist_file(raw: Path, name: str, verify: bool) -> str | None:
    """Accept ``raw/name``, or extract it from ``raw/name.gz``; how it was verified (None: neither is there).

    Raises :class:`_Mismatch` when the file fails its check.
    """
    target, archive = raw / name, raw / f"{name}.gz"
    official = (archive.name, MNIST_ARCHIVE_MD5[archive.name]), (name, MNIST_CONTENT_MD5[name])
    if target.exists():
        if not verify:
            return NOT_CHECKED
        found = _md5(target)
        if found != MNIST_CONTENT_MD5[name]:
            raise _Mismatch(_mismatch(target, found, *official))
        return CONTENT_MD5
    if not archive.exists():
        return None
    found = _md5(archive)
    try:
        content = gzip.decompress(archive.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise _Mismatch(_mismatch(archive, f"{found} (not a readable gzip file: {exc})", *official)) from None
    how = NOT_CHECKED if not verify else ARCHIVE_MD5 if found == MNIST_ARCHIVE_MD5[archive.name] else None
    if how is None:
        content_md5 = hashlib.md5(content).hexdigest()
        if content_md5 != MNIST_CONTENT_MD5[name]:
            raise _Mismatch(_mismatch(archive, f"{found} (uncompressed: {content_md5})", *official))
        how = CONTENT_MD5
    _write_extracted(target, content)
    log.info("%s: extracted from %s", target, archive.name)
    return how


# --- CIFAR-10: cifar-10-python.tar.gz or its extracted cifar-10-batches-py/ ---------------------


def _stage_cifar10(data_dir: Path, verify: bool, allow_download: bool) -> dict[str, str]:
    batches, archive = data_dir / CIFAR10_DIR, data_dir / CIFAR10_ARCHIVE
    if batches.is_dir() and any(p.is_file() for p in batches.iterdir()):
        how = _check_cifar10_batches(batches, verify)
    else:
        if not archive.exists():
            _require_download("cifar10", data_dir, [CIFAR10_ARCHIVE], allow_download)
            _fetch("cifar10", data_dir, [tvd.CIFAR10.url], archive, CIFAR10_ARCHIVE_MD5)
            verify = True  # checked by its archive md5 on download
        how = _extract_cifar10(archive, batches, verify)
    return {str(batches / name): how for name in CIFAR10_CONTENT_MD5}


def _check_cifar10_batches(batches: Path, verify: bool) -> str:
    missing = [name for name in CIFAR10_CONTENT_MD5 if not (batches / name).is_file()]
    if missing:
        raise DatasetUnavailable(
            f"cifar10: {batches} is incomplete, it lacks {', '.join(missing)}. Fix: add them, or move the "
            f"folder away so that it is extracted from {CIFAR10_ARCHIVE}.\n{manual_instructions('cifar10', batches.parent)}"
        )
    if not verify:
        return NOT_CHECKED
    archive = (CIFAR10_ARCHIVE, CIFAR10_ARCHIVE_MD5)
    problems = [
        _mismatch(batches / name, found, archive, (name, md5))
        for name, md5 in CIFAR10_CONTENT_MD5.items()
        if (found := _md5(batches / name)) != md5
    ]
    if problems:
        raise _rejected("cifar10", problems)
    return CONTENT_MD5


def _extract_cifar10(archive: Path, batches: Path, verify: bool) -> str:
    """Extract the batches from ``archive`` into ``batches`` (absent or empty), checked by archive or content md5."""
    found = _md5(archive)
    how = NOT_CHECKED if not verify else ARCHIVE_MD5 if found == CIFAR10_ARCHIVE_MD5 else CONTENT_MD5
    official = (CIFAR10_ARCHIVE, CIFAR10_ARCHIVE_MD5)
    # The marker is never consulted: batches holds no file here, so nothing staged is replaced.
    with atomic_directory(batches, marker=".extracted-by-trustcal") as tmp:
        try:
            members = _extract_members(archive, tmp)
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            line = f"  {archive}: md5 {found}, not a readable tar.gz file ({exc}); official md5 {CIFAR10_ARCHIVE_MD5}"
            raise _rejected("cifar10", [line]) from None
        missing = [f"{CIFAR10_DIR}/{name}" for name in CIFAR10_CONTENT_MD5 if name not in members]
        if missing:
            line = f"  {archive}: md5 {found}, lacks {', '.join(missing)}; official md5 {CIFAR10_ARCHIVE_MD5}"
            raise _rejected("cifar10", [line])
        if how == CONTENT_MD5:
            problems = [
                _mismatch(archive, f"{found} (member {name}: {members[name]})", official, (name, md5))
                for name, md5 in CIFAR10_CONTENT_MD5.items()
                if members[name] != md5
            ]
            if problems:
                raise _rejected("cifar10", problems)
    log.info("%s: extracted from %s", batches, archive)
    return how


def _extract_members(archive: Path, dest: Path) -> dict[str, str]:
    """Copy the regular-file members ``cifar-10-batches-py/<name>`` of ``archive`` into ``dest``; their md5s.

    Only those names are read, and written under names we build ourselves: no
    other member, link or path from the archive reaches the disk.
    """
    wanted = {f"{CIFAR10_DIR}/{name}": name for name in CIFAR10_CONTENT_MD5}
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


# --- reading and splitting -----------------------------------------------------------------------

CIFAR10_TRAIN_BATCHES = tuple(name for name, _ in tvd.CIFAR10.train_list)  # data_batch_1 … 5, in this order
CIFAR10_TEST_BATCHES = tuple(name for name, _ in tvd.CIFAR10.test_list)  # test_batch
CIFAR10_META = tvd.CIFAR10.meta["filename"]  # batches.meta


def _cifar10_unreadable(path: Path, problem: str, data_dir: Path) -> DatasetUnavailable:
    md5 = CIFAR10_CONTENT_MD5.get(path.name)
    return DatasetUnavailable(
        f"cifar10: {path}: {problem}. Fix: replace it with the official file ({path.name}, md5 {md5}), or rebuild "
        f"the batches.\n{manual_instructions('cifar10', data_dir)}"
    )


def _read_cifar10_pickle(path: Path, data_dir: Path) -> dict:
    """The dict pickled in one batch file (or ``batches.meta``), unpickled with plain data and NumPy arrays
    only; strings written by Python 2 (the official files) are read as latin-1, as torchvision reads them."""
    try:
        with open(path, "rb") as fh:
            entry = load_plain_pickle(fh, "a CIFAR-10 batch", encoding="latin1")
    except RefusedPickle as exc:
        raise _cifar10_unreadable(path, f"refused, not a CIFAR-10 batch: {exc}", data_dir) from None
    except (OSError, EOFError, ValueError, TypeError, KeyError, IndexError, pickle.UnpicklingError) as exc:
        raise _cifar10_unreadable(path, f"unreadable ({type(exc).__name__}: {exc})", data_dir) from None
    if not isinstance(entry, dict):
        raise _cifar10_unreadable(
            path, f"not a CIFAR-10 batch (a pickled {type(entry).__name__}, not a dict)", data_dir
        )
    return entry


def _read_cifar10_split(batches: Path, names: tuple[str, ...], data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """The images (uint8 NCHW) and labels (int64) of the batches ``names``, in order: torchvision's arrays."""
    images, labels = [], []
    for name in names:
        entry = _read_cifar10_pickle(batches / name, data_dir)
        key = "labels" if "labels" in entry else "fine_labels"
        if "data" not in entry or key not in entry:
            found = ", ".join(map(repr, entry)) or "nothing"
            problem = f"not a CIFAR-10 batch (no 'data' and 'labels' entries; it holds {found})"
            raise _cifar10_unreadable(batches / name, problem, data_dir)
        try:
            x = np.asarray(entry["data"], dtype=np.uint8)
            y = np.asarray(entry[key], dtype=np.int64)
            x = x.reshape(len(x), 3, 32, 32)
        except (ValueError, TypeError, OverflowError) as exc:
            problem = f"not a CIFAR-10 batch ('data' must be N rows of 3072 pixels, 'labels' N integers: {exc})"
            raise _cifar10_unreadable(batches / name, problem, data_dir) from None
        if y.shape != (len(x),):
            problem = f"not a CIFAR-10 batch ({len(x)} images but labels of shape {y.shape})"
            raise _cifar10_unreadable(batches / name, problem, data_dir)
        images.append(x)
        labels.append(y)
    return np.ascontiguousarray(np.concatenate(images)), np.concatenate(labels)


def _load_cifar10(data_dir: Path, verify_checksums: bool):
    """CIFAR-10's batches in ``data_dir`` as torchvision's ``CIFAR10`` reads them, without its ``pickle.load``:
    (x_train, y_train, x_test, y_test), every file checked against its content md5 first when asked."""
    batches = data_dir / CIFAR10_DIR
    for name, md5 in CIFAR10_CONTENT_MD5.items():
        path = batches / name
        if not path.is_file():
            raise DatasetUnavailable(
                f"cifar10: cannot read the dataset in {data_dir} ({path} is missing).\n"
                f"{manual_instructions('cifar10', data_dir)}"
            )
        if verify_checksums and (found := _md5(path)) != md5:
            raise DatasetUnavailable(
                f"cifar10: cannot read the dataset in {data_dir} ({path}: md5 {found}, not the official {md5}).\n"
                f"{manual_instructions('cifar10', data_dir)}"
            )
    meta = _read_cifar10_pickle(batches / CIFAR10_META, data_dir)
    if "label_names" not in meta:
        raise _cifar10_unreadable(batches / CIFAR10_META, "not CIFAR-10's batches.meta (no 'label_names')", data_dir)
    return (
        *_read_cifar10_split(batches, CIFAR10_TRAIN_BATCHES, data_dir),
        *_read_cifar10_split(batches, CIFAR10_TEST_BATCHES, data_dir),
    )


def load_raw(dataset: str, data_dir: str | Path, *, verify_checksums: bool = True):
    """Read the raw files: (x_train, y_train, x_test, y_test), images as uint8 NCHW arrays, labels as int64.

    MNIST's IDX files are read by torchvision (no pickle in them; :func:`download` verified them).
    CIFAR-10's batches are read as torchvision reads them (the same arrays), checked against their
    content md5s unless ``verify_checksums`` is false, and unpickled with plain data and NumPy
    arrays only in either case: a batch that names anything else is refused before it can run code.
    """
    _check_name(dataset)
    data_dir = Path(data_dir)
    if dataset == "cifar10":
        return _load_cifar10(data_dir, verify_checksums)
    out = []
    for train in (True, False):
        try:
            ds = tvd.MNIST(str(data_dir), train=train, download=False)
        except RuntimeError as exc:
            raise DatasetUnavailable(
                f"{dataset}: cannot read the dataset in {data_dir} ({exc}).\n{manual_instructions(dataset, data_dir)}"
            ) from None
        x = np.asarray(ds.data, dtype=np.uint8)
        out += [np.ascontiguousarray(x[:, None, :, :]), np.asarray(ds.targets, dtype=np.int64)]
    return tuple(out)
