"""Small learnable datasets written in each format trustcal reads, for tests and smoke runs offline.

The registered datasets in torchvision's on-disk layouts: IDX files (or their .gz archives) for
``MNIST/raw``, ``FashionMNIST/raw`` and ``KMNIST/raw``, pickled ``cifar-10-batches-py`` and
``cifar-100-python`` batches, SVHN's MATLAB files; and a user's: an image folder of PNGs and an
``.npz`` of arrays. Each class is a fixed random template plus noise, so a model learns it in a few
epochs and the metrics have something to say.
"""

from __future__ import annotations

import gzip
import pickle
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from trustcal import registry
from trustcal.registry import DatasetSpec

CIFAR_LABEL_NAMES = list(registry.CIFAR10_CLASSES)


def class_images(n: int, shape: tuple[int, ...], seed: int, classes: int = 10, noise: float = 0.6):
    """``n`` uint8 images of ``shape`` and their labels (balanced, shuffled)."""
    rng = np.random.default_rng(seed)
    templates = np.random.default_rng(12345).random((classes, *shape))  # same classes in every split
    labels = rng.permutation(np.arange(n) % classes)
    x = (1 - noise) * templates[labels] + noise * rng.random((n, *shape))
    return np.clip(x * 255, 0, 255).astype(np.uint8), labels.astype(np.int64)


def write_idx(path: str | Path, array: np.ndarray) -> None:
    """IDX (big-endian, unsigned byte) as in LeCun's MNIST files."""
    Path(path).write_bytes(_idx_bytes(array))


def _idx_bytes(array: np.ndarray) -> bytes:
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">I", 0x0800 + array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.tobytes()


def write_idx_dataset(
    data_dir: str | Path,
    spec_or_name: DatasetSpec | str,
    n_train: int = 300,
    n_test: int = 100,
    seed: int = 0,
    *,
    archives: bool = False,
) -> Path:
    """The four IDX files of an MNIST-family dataset in ``<data_dir>/<Class>/raw/`` (torchvision's layout);
    with ``archives``, their ``.gz`` archives (gzip, mtime 0) instead. Returns that folder."""
    spec = spec_or_name if isinstance(spec_or_name, DatasetSpec) else registry.DATASETS[spec_or_name]
    raw = Path(data_dir) / spec.torchvision / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, n, s in (("train", n_train, seed), ("t10k", n_test, seed + 1)):
        x, y = class_images(n, spec.shape[1:], s, classes=len(spec.classes))
        for name, array in ((f"{prefix}-images-idx3-ubyte", x), (f"{prefix}-labels-idx1-ubyte", y)):
            if archives:
                (raw / f"{name}.gz").write_bytes(gzip.compress(_idx_bytes(array), mtime=0))
            else:
                write_idx(raw / name, array)
    return raw


def write_mnist(data_dir: str | Path, n_train: int = 300, n_test: int = 100, seed: int = 0) -> Path:
    return write_idx_dataset(data_dir, registry.MNIST, n_train, n_test, seed)


def write_cifar10(data_dir: str | Path, n_train: int = 300, n_test: int = 100, seed: int = 0) -> Path:
    root = Path(data_dir) / "cifar-10-batches-py"
    root.mkdir(parents=True, exist_ok=True)
    x, y = class_images(n_train, (3, 32, 32), seed)
    for i, (xb, yb) in enumerate(zip(np.array_split(x, 5), np.array_split(y, 5)), start=1):
        _write_batch(root / f"data_batch_{i}", xb, yb, f"training batch {i} of 5")
    xt, yt = class_images(n_test, (3, 32, 32), seed + 1)
    _write_batch(root / "test_batch", xt, yt, "testing batch 1 of 1")
    with open(root / "batches.meta", "wb") as fh:
        pickle.dump({"label_names": CIFAR_LABEL_NAMES, "num_cases_per_batch": len(xt), "num_vis": 3072}, fh, protocol=2)
    return root


def _write_batch(path: Path, x: np.ndarray, y: np.ndarray, name: str) -> None:
    entry = {
        "batch_label": name,
        "labels": [int(v) for v in y],
        "data": x.reshape(len(x), -1),  # rows of 1024 R, then G, then B values
        "filenames": [f"synthetic_{i:05d}.png" for i in range(len(x))],
    }
    with open(path, "wb") as fh:
        pickle.dump(entry, fh, protocol=2)


def write_cifar100(data_dir: str | Path, n_train: int = 300, n_test: int = 100, seed: int = 0) -> Path:
    """CIFAR-100's ``cifar-100-python/`` (``train``, ``test``, ``meta``): 100 fine classes, and 20 coarse
    ones (fine // 5; the official grouping differs, nothing here reads it)."""
    root = Path(data_dir) / "cifar-100-python"
    root.mkdir(parents=True, exist_ok=True)
    for name, n, s in (("train", n_train, seed), ("test", n_test, seed + 1)):
        x, y = class_images(n, (3, 32, 32), s, classes=100)
        entry = {
            "filenames": [f"synthetic_{i:05d}.png" for i in range(n)],
            "batch_label": f"{name}ing batch 1 of 1",
            "fine_labels": [int(v) for v in y],
            "coarse_labels": [int(v) // 5 for v in y],
            "data": x.reshape(n, -1),
        }
        with open(root / name, "wb") as fh:
            pickle.dump(entry, fh, protocol=2)
    meta = {
        "fine_label_names": list(registry.CIFAR100_CLASSES),
        "coarse_label_names": [f"superclass_{i}" for i in range(20)],
    }
    with open(root / "meta", "wb") as fh:
        pickle.dump(meta, fh, protocol=2)
    return root


def write_svhn(data_dir: str | Path, n_train: int = 300, n_test: int = 100, seed: int = 0) -> Path:
    """SVHN's ``train_32x32.mat`` and ``test_32x32.mat`` (MATLAB v5) in ``data_dir``: X uint8 of shape
    (32, 32, 3, N), y uint8 of shape (N, 1) with the digit 0 as label 10, as in the official files."""
    import scipy.io

    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, n, s in (("train", n_train, seed), ("test", n_test, seed + 1)):
        x, y = class_images(n, (3, 32, 32), s)
        labels = np.where(y == 0, 10, y).astype(np.uint8).reshape(n, 1)
        scipy.io.savemat(data_dir / f"{name}_32x32.mat", {"X": x.transpose(2, 3, 1, 0), "y": labels})
    return data_dir


def write_imagefolder(
    path: str | Path,
    classes: Sequence[str],
    n_per_class: int,
    size: int,
    *,
    n_test_per_class: int | None = None,
    grey: bool = False,
    seed: int = 0,
) -> Path:
    """A user's image folder: ``<path>/train/<class>/train_00000.png`` … and ``<path>/test/<class>/…``
    (PNG, lossless), ``n_per_class`` (test: ``n_test_per_class``, by default as many) ``size`` × ``size``
    images a class, RGB or ``grey`` (mode L). Returns ``path``."""
    path = Path(path)
    channels = 1 if grey else 3
    for split, per_class, s in (("train", n_per_class, seed), ("test", n_test_per_class or n_per_class, seed + 1)):
        x, y = class_images(per_class * len(classes), (channels, size, size), s, classes=len(classes))
        for i, (image, label) in enumerate(zip(x, y)):
            folder = path / split / classes[label]
            folder.mkdir(parents=True, exist_ok=True)
            _save_png(folder / f"{split}_{i:05d}.png", image)
    return path


def _save_png(path: Path, image: np.ndarray) -> None:
    """One CHW uint8 image as a PNG (mode L for one channel, RGB for three)."""
    from PIL import Image

    Image.fromarray(image[0] if len(image) == 1 else image.transpose(1, 2, 0)).save(path, format="PNG")


def write_npz_dataset(
    path: str | Path,
    n_train: int = 60,
    n_test: int = 20,
    shape: tuple[int, int, int] = (3, 8, 8),
    num_classes: int = 3,
    *,
    layout: str = "nchw",
    floats: bool = False,
    class_names: Sequence[str] | None = None,
    seed: int = 0,
) -> Path:
    """A user's ``.npz`` of ``x_train``, ``y_train``, ``x_test``, ``y_test`` (and ``classes`` when
    ``class_names`` are given): images of ``shape`` (C, H, W) saved in ``layout`` (``nchw``, ``nhwc``, or
    ``nhw`` for one channel), as uint8 or, with ``floats``, as float32 x / 255. Returns ``path``."""
    arrays = {}
    for split, n, s in (("train", n_train, seed), ("test", n_test, seed + 1)):
        x, y = class_images(n, shape, s, classes=num_classes)
        if layout == "nhwc":
            x = x.transpose(0, 2, 3, 1)
        elif layout == "nhw":
            x = x[:, 0]
        arrays[f"x_{split}"] = x.astype(np.float32) / 255 if floats else x
        arrays[f"y_{split}"] = y
    if class_names is not None:
        arrays["classes"] = np.array(class_names, dtype=np.str_)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:  # as named: np.savez would add .npz to a name without it
        np.savez(fh, **arrays)
    return path
