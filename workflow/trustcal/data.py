"""Datasets: fetch MNIST / CIFAR-10 with torchvision, split them as the paper did.

The raw files live where torchvision keeps them under ``data_dir``
(``MNIST/raw/`` and ``cifar-10-batches-py/``), so files staged by hand on an
air-gapped machine are used without network. The prepared splits are uint8
arrays in NCHW layout (SPEC §1: the last 10 % of the training set is the
validation set, as Keras' ``validation_split`` takes the tail unshuffled).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from .io import TrustcalError, read_npz, write_npz

log = logging.getLogger(__name__)

DATASETS = ("mnist", "cifar10")

# Extracted files as torchvision lays them out (relative to data_dir).
RAW_FILES = {
    "mnist": [
        "MNIST/raw/train-images-idx3-ubyte",
        "MNIST/raw/train-labels-idx1-ubyte",
        "MNIST/raw/t10k-images-idx3-ubyte",
        "MNIST/raw/t10k-labels-idx1-ubyte",
    ],
    "cifar10": [
        *(f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6)),
        "cifar-10-batches-py/test_batch",
        "cifar-10-batches-py/batches.meta",
    ],
}

NUM_CLASSES = {"mnist": 10, "cifar10": 10}
PREPARED_KEYS = ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")


class DatasetUnavailable(TrustcalError):
    pass


def raw_files(dataset: str, data_dir: str | Path) -> list[str]:
    """The files the download step must leave in ``data_dir`` for ``dataset``."""
    _check_name(dataset)
    return [str(Path(data_dir) / f) for f in RAW_FILES[dataset]]


def _check_name(dataset: str) -> None:
    if dataset not in DATASETS:
        raise TrustcalError(f"unknown dataset {dataset!r}; allowed: {', '.join(DATASETS)}")


def _torchvision_class(dataset: str, verify_checksums: bool):
    import torchvision.datasets as tvd

    if dataset == "mnist":
        return tvd.MNIST  # checks archive md5s on download; reads any IDX file
    if verify_checksums:
        return tvd.CIFAR10

    class UncheckedCIFAR10(tvd.CIFAR10):
        """CIFAR10 without md5 checks (torchvision skips a check whose md5 is None)."""

        train_list = [[name, None] for name, _ in tvd.CIFAR10.train_list]
        test_list = [[name, None] for name, _ in tvd.CIFAR10.test_list]
        meta = {**tvd.CIFAR10.meta, "md5": None}

    return UncheckedCIFAR10


def manual_instructions(dataset: str, data_dir: str | Path) -> str:
    """Which files to put where, with the checksums they must match."""
    import torchvision.datasets as tvd

    data_dir = Path(data_dir)
    if dataset == "mnist":
        raw = data_dir / "MNIST" / "raw"
        lines = [f"  {raw / name}  (md5 {md5})" for name, md5 in tvd.MNIST.resources]
        source = f"from {tvd.MNIST.mirrors[0]}"
    else:
        c = tvd.CIFAR10
        lines = [f"  {data_dir / c.filename}  (md5 {c.tgz_md5})"]
        source = f"from {c.url}"
    return (
        f"Download them {source} on a machine with network access and copy them to:\n"
        + "\n".join(lines)
        + "\nthen rerun; files already present are used without network."
    )


def download(
    dataset: str, data_dir: str | Path, *, verify_checksums: bool = True, allow_download: bool = True
) -> list[str]:
    """Fetch and verify ``dataset`` into ``data_dir`` (no-op when already there).

    A corrupt archive (checksum mismatch) is deleted and fetched once more
    before the failure is reported.
    """
    _check_name(dataset)
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    cls = _torchvision_class(dataset, verify_checksums)
    deleted: list[str] = []
    for attempt in (1, 2):
        try:
            for train in (True, False):
                cls(str(data_dir), train=train, download=allow_download)
            break
        except Exception as exc:  # torchvision raises RuntimeError, URLError, OSError …
            corrupt = _delete_corrupt_archives(dataset, data_dir)
            deleted += corrupt
            if attempt == 1 and corrupt and allow_download:
                log.warning("deleted corrupt archive(s) %s; fetching once more", corrupt)
                continue
            reason = (
                "downloading is switched off (config: download: false)"
                if not allow_download
                else f"{type(exc).__name__}: {exc}"
            )
            if deleted:
                reason += f"; deleted archive(s) with a wrong checksum: {', '.join(deleted)}"
            raise DatasetUnavailable(
                f"{dataset}: the dataset files are missing from {data_dir} and could not be "
                f"fetched ({reason}).\n{manual_instructions(dataset, data_dir)}"
            ) from None
    missing = [f for f in raw_files(dataset, data_dir) if not Path(f).exists()]
    if missing:
        raise DatasetUnavailable(f"{dataset}: after download these files are still missing: {missing}")
    return raw_files(dataset, data_dir)


def _delete_corrupt_archives(dataset: str, data_dir: Path) -> list[str]:
    from torchvision.datasets.utils import check_integrity
    import torchvision.datasets as tvd

    if dataset == "mnist":
        raw = data_dir / "MNIST" / "raw"
        archives = [(raw / name, md5) for name, md5 in tvd.MNIST.resources]
    else:
        archives = [(data_dir / tvd.CIFAR10.filename, tvd.CIFAR10.tgz_md5)]
    bad = []
    for path, md5 in archives:
        if path.exists() and not check_integrity(str(path), md5):
            path.unlink()
            bad.append(str(path))
    return bad


def load_raw(dataset: str, data_dir: str | Path, *, verify_checksums: bool = True):
    """Read the raw files through torchvision: (x_train, y_train, x_test, y_test).

    Images come back as uint8 NCHW arrays, labels as int64.
    """
    _check_name(dataset)
    cls = _torchvision_class(dataset, verify_checksums)
    out = []
    for train in (True, False):
        try:
            ds = cls(str(data_dir), train=train, download=False)
        except RuntimeError as exc:
            raise DatasetUnavailable(
                f"{dataset}: cannot read the dataset in {data_dir} ({exc}).\n"
                f"{manual_instructions(dataset, data_dir)}"
            ) from None
        x = np.asarray(ds.data, dtype=np.uint8)
        x = x[:, None, :, :] if x.ndim == 3 else x.transpose(0, 3, 1, 2)
        y = np.asarray(ds.targets, dtype=np.int64)
        out += [np.ascontiguousarray(x), y]
    return tuple(out)


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
        x_train=x_train[:cut], y_train=y_train[:cut],
        x_val=x_train[cut:], y_val=y_train[cut:],
        x_test=x_test, y_test=y_test,
    )
    write_npz(out, **arrays)
    sizes = {k: len(v) for k, v in arrays.items() if k.startswith("x_")}
    log.info("%s: wrote %s with %s", dataset, out, sizes)
    return sizes


def load_prepared(path: str | Path) -> dict[str, np.ndarray]:
    return read_npz(path, PREPARED_KEYS, rule="prepare")
