"""Shared by the training tests (test_loop.py, test_engine.py, test_networks.py, test_recipes.py): data splits,
float32 tolerances, a user's network package."""

import math

import numpy as np

from trustcal.data.synthetic import class_images
from trustcal.training.loop import train_seeds

EPS32 = float(np.finfo(np.float32).eps)
# A K-term sum's rounding error exceeds λ·√K·ε of its size with probability ≤ 2·exp(-λ²/2)
# (tests/unit/training/test_engine.py, 1.): λ ≈ 7.83 makes that 1e-13 per value, one in a million over 1e7 checked values.
LAMBDA = math.sqrt(2 * math.log(2 * 1e7 / 1e-6))


def splits(dataset, n_train=256, n_val=64, n_test=64):
    """Train/validation/test arrays of the synthetic classes in the dataset's image shape."""
    shape = (1, 28, 28) if dataset == "mnist" else (3, 32, 32)
    x, y = class_images(n_train + n_val, shape, seed=0)
    xt, yt = class_images(n_test, shape, seed=1)
    return dict(x_train=x[:n_train], y_train=y[:n_train], x_val=x[n_train:], y_val=y[n_train:], x_test=xt, y_test=yt)


def train(cfg, data, ckpt_dir):
    """One seed's history: :func:`trustcal.training.loop.train_seeds` for a single configuration."""
    return train_seeds([cfg], data, [ckpt_dir])[0]


def overwrite_values(path, n_values=1000, seed=0):
    """Overwrite ``n_values`` float32 values of the largest array in the zip archive ``path`` (a checkpoint,
    an .npz) in place with random ones: a same-size corruption that the zip structure does not reveal."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        info = max(zf.infolist(), key=lambda i: i.file_size)
    assert info.compress_type == zipfile.ZIP_STORED and info.file_size >= 4 * n_values + 128
    with open(path, "r+b") as fh:
        fh.seek(info.header_offset + 26)
        name_len, extra_len = (int.from_bytes(fh.read(2), "little") for _ in range(2))
        fh.seek(info.header_offset + 30 + name_len + extra_len + 128)  # past an .npy header, if any
        fh.write(np.random.default_rng(seed).normal(0, 100, n_values).astype(np.float32).tobytes())


def overwrite_member_start(path, suffix, n_bytes=16):
    """Overwrite the first ``n_bytes`` of the zip member of ``path`` whose name ends with ``suffix`` with 0xFF."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        [info] = [i for i in zf.infolist() if i.filename.endswith(suffix)]
    with open(path, "r+b") as fh:
        fh.seek(info.header_offset + 26)
        name_len, extra_len = (int.from_bytes(fh.read(2), "little") for _ in range(2))
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        fh.write(b"\xff" * n_bytes)


def image_splits(shape, n_train=64, n_val=32, n_test=32, classes=10):
    """Train/validation/test arrays of the synthetic classes in any image ``shape`` (C, H, W)."""
    x, y = class_images(n_train + n_val, shape, seed=0, classes=classes)
    xt, yt = class_images(n_test, shape, seed=1, classes=classes)
    return dict(x_train=x[:n_train], y_train=y[:n_train], x_val=x[n_train:], y_val=y[n_train:], x_test=xt, y_test=yt)


USER_PACKAGE = "mynets"  # the package of a user's networks in the tests: tmp_path/mynets/<module>.py


def write_user_module(root, module, source):
    """``root/mynets/<module>.py`` holding ``source`` (an import path ``mynets.<module>:Class`` once ``root`` is
    on sys.path)."""
    import textwrap
    from pathlib import Path

    package = Path(root) / USER_PACKAGE
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").touch()
    (package / f"{module}.py").write_text(textwrap.dedent(source))
    return f"{USER_PACKAGE}.{module}"


def forget_user_package():
    """Drop the user's package from sys.modules (each test writes its own)."""
    import sys

    for name in [m for m in sys.modules if m == USER_PACKAGE or m.startswith(f"{USER_PACKAGE}.")]:
        del sys.modules[name]
