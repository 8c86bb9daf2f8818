"""A user's dataset, read as it is: an image folder (``<path>/train/<class>/*`` and ``<path>/test/<class>/*``)
or one ``.npz`` of ``x_train``, ``y_train``, ``x_test``, ``y_test`` (and ``classes``)."""

from __future__ import annotations

import dataclasses
import logging
import os
import zipfile
from pathlib import Path

import numpy as np
from torchvision.datasets.folder import IMG_EXTENSIONS

from trustcal import registry
from trustcal.data.checksums import DatasetUnavailable, RawDataset, check_labels
from trustcal.registry import DatasetSpec

log = logging.getLogger(__name__)

# --- images: <path>/train/<class>/* and <path>/test/<class>/* ---------------------------------------


@dataclasses.dataclass(frozen=True)
class _Folder:
    classes: tuple[str, ...]
    train: list[tuple[Path, int]]
    test: list[tuple[Path, int]]


def instructions(spec: DatasetSpec) -> str:
    """Where a user's dataset is read from and how its files are laid out."""
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


def load_imagefolder(spec: DatasetSpec) -> RawDataset:
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


# --- arrays: one .npz of x_train, y_train, x_test, y_test (and classes) ---------------------

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


def load_npz(spec: DatasetSpec) -> RawDataset:
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
    check_labels(spec, y_train, num_classes, f"{path}: y_train", fix)
    if y_test.min() < 0 or y_test.max() > y_train.max():
        raise DatasetUnavailable(
            f"{spec.name}: {path}: y_test holds label {int(y_test.max() if y_test.min() >= 0 else y_test.min())}, "
            f"outside the training labels' range 0..{int(y_train.max())}. Fix: test on the classes trained on "
            "(number the classes 0..K−1 in both)."
        )
    return RawDataset(x_train, y_train, x_test, y_test, classes or tuple(str(k) for k in range(num_classes)))


def user_files(spec: DatasetSpec) -> list[Path]:
    """The files a user's dataset is read from, checked to be there and laid out as its kind needs."""
    if spec.kind == registry.NPZ:
        _open_npz(spec).close()
        return [Path(spec.path)]
    folder = _list_imagefolder(spec)
    return [path for path, _ in folder.train + folder.test]
