"""Small learnable datasets written in torchvision's on-disk formats.

For tests and smoke runs on machines that cannot download MNIST or CIFAR-10:
IDX files for ``MNIST/raw`` and pickled ``cifar-10-batches-py`` batches. Each
class is a fixed random template plus noise, so a model learns it in a few
epochs and the metrics have something to say.
"""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import numpy as np

CIFAR_LABEL_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def class_images(n: int, shape: tuple[int, ...], seed: int, classes: int = 10, noise: float = 0.6):
    """``n`` uint8 images of ``shape`` and their labels (balanced, shuffled)."""
    rng = np.random.default_rng(seed)
    templates = np.random.default_rng(12345).random((classes, *shape))  # same classes in every split
    labels = rng.permutation(np.arange(n) % classes)
    x = (1 - noise) * templates[labels] + noise * rng.random((n, *shape))
    return np.clip(x * 255, 0, 255).astype(np.uint8), labels.astype(np.int64)


def write_idx(path: str | Path, array: np.ndarray) -> None:
    """IDX (big-endian, unsigned byte) as in LeCun's MNIST files."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">I", 0x0800 + array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    Path(path).write_bytes(header + array.tobytes())


def write_mnist(data_dir: str | Path, n_train: int = 300, n_test: int = 100, seed: int = 0) -> Path:
    raw = Path(data_dir) / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, n, s in (("train", n_train, seed), ("t10k", n_test, seed + 1)):
        x, y = class_images(n, (28, 28), s)
        write_idx(raw / f"{prefix}-images-idx3-ubyte", x)
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", y)
    return raw


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
