"""A user's dataset, read as it is: an image folder (``<path>/train/<class>/*`` and ``<path>/test/<class>/*``)
or one ``.npz`` of ``x_train``, ``y_train``, ``x_test``, ``y_test`` (and ``classes``): images, or a table of
features (:mod:`trustcal.data.tabular`)."""

from __future__ import annotations

import dataclasses
import logging
import os
import zipfile
from pathlib import Path

import numpy as np
from torchvision.datasets.folder import IMG_EXTENSIONS

from trustcal import registry
from trustcal.data import tabular
from trustcal.data.checksums import DatasetUnavailable, RawDataset
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
        "optionally classes=[names…]: images as uint8 (or floats in [0, 1]) in NCHW, NHWC or NHW layout, or a "
        "table as finite numbers (N, F), labels as integers 0..K−1. The file is read as it is and never changed."
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
    inside = root.resolve()
    for folder in (root / "train", root / "test"):
        _refuse_link_out(spec, inside, folder)
    classes = tuple(sorted(entry.name for entry in os.scandir(root / "train") if entry.is_dir()))
    if not classes:
        raise DatasetUnavailable(
            f"{spec.name}: {root / 'train'}: no class folder in it. {_imagefolder_layout_fix(spec)}"
        )
    if len(classes) == 1:
        raise DatasetUnavailable(
            f"{spec.name}: {root / 'train'}: dataset {spec.name} has one class ({classes[0]}); calibration needs "
            f"at least 2. Fix: add a folder of another class's images in {root / 'train'}/ and {root / 'test'}/."
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
    train, test = (
        _image_files(spec, inside, root / "train", classes),
        _image_files(spec, inside, root / "test", classes),
    )
    empty = [c for i, c in enumerate(classes) if not any(label == i for _, label in train)]
    if empty or not test:
        where = root / "train" / empty[0] if empty else root / "test"
        raise DatasetUnavailable(
            f"{spec.name}: {where}: no image in it (files ending in {', '.join(IMG_EXTENSIONS)}). Fix: add its "
            "images" + (", or remove the folder." if empty else ".")
        )
    return _Folder(classes, train, test)


def _image_files(spec: DatasetSpec, inside: Path, folder: Path, classes: tuple[str, ...]) -> list[tuple[Path, int]]:
    """(file, label) of the images in ``folder/<class>/``, in torchvision's make_dataset order. Links are
    followed while their targets stay in ``inside`` (the dataset's folder, resolved); a link out of it, or
    a folder link back to a folder that holds it (a loop), is refused."""
    out = []
    for label, name in enumerate(classes):
        top = folder / name
        if not top.is_dir():
            continue
        _refuse_link_out(spec, inside, top)
        found = []
        for here, dirnames, filenames in os.walk(top, followlinks=True):
            here = Path(here)
            for d in dirnames:
                _refuse_link_out(spec, inside, here / d)
                if (here / d).is_symlink() and here.resolve().is_relative_to((here / d).resolve()):
                    raise DatasetUnavailable(
                        f"{spec.name}: {here / d}: a link to {(here / d).resolve()}, a folder that holds it (a "
                        "loop). Fix: remove the link, or replace it with a copy of the images it should add."
                    )
            images = sorted(f for f in filenames if f.lower().endswith(IMG_EXTENSIONS))
            for f in images:
                _refuse_link_out(spec, inside, here / f)
            found.append((str(here), images))
        out += [(Path(here) / f, label) for here, images in sorted(found) for f in images]
    return out


def _refuse_link_out(spec: DatasetSpec, inside: Path, path: Path) -> None:
    """Refuse ``path`` when it is a link whose target (resolved) lies outside ``inside``."""
    if path.is_symlink() and not (target := path.resolve()).is_relative_to(inside):
        raise DatasetUnavailable(
            f"{spec.name}: {path}: a link to {target}, outside the dataset's folder {spec.path}; links out of it "
            f"are refused. Fix: copy what it points to into {spec.path}, or remove the link."
        )


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


def _npz_elsewhere_fix(spec: DatasetSpec) -> str:
    """The fix for a path that holds something else: point path: at an ``.npz`` (never overwrite what is there)."""
    return (
        f"Fix: set path: in the dataset {spec.name} of your setups: to an .npz file, written by "
        "numpy.savez(file, x_train=…, y_train=…, x_test=…, y_test=…)."
    )


_NPY_MAGIC = b"\x93NUMPY"


def _open_npz(spec: DatasetSpec):
    """The user's ``.npz`` opened without pickles, holding every array of :data:`NPZ_KEYS`. A file that is
    not a zip archive is refused before NumPy reads it (NumPy would try it as a pickle)."""
    path = Path(spec.path)
    if path.is_dir():
        raise DatasetUnavailable(f"{spec.name}: {path}: a directory, not an .npz file. {_npz_elsewhere_fix(spec)}")
    if not path.exists():
        raise DatasetUnavailable(f"{spec.name}: {path}: no such file. {_npz_fix(spec)}.")
    if not path.is_file():
        raise DatasetUnavailable(f"{spec.name}: {path}: not a regular file. {_npz_elsewhere_fix(spec)}")
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_NPY_MAGIC))
        is_zip = zipfile.is_zipfile(path)
    except OSError as exc:
        raise DatasetUnavailable(
            f"{spec.name}: {path}: cannot be read ({exc.strerror or exc}). Fix: make it readable, or correct "
            f"path: in the dataset {spec.name} of your setups:."
        ) from None
    if head == _NPY_MAGIC:
        raise DatasetUnavailable(f"{spec.name}: {path}: one array (a .npy file), not named arrays. {_npz_fix(spec)}.")
    if not is_zip:
        raise DatasetUnavailable(
            f"{spec.name}: {path}: not an .npz archive (an .npz is a zip of .npy arrays; this file is not a zip, "
            f"or a truncated one). {_npz_elsewhere_fix(spec)}"
        )
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DatasetUnavailable(
            f"{spec.name}: {path}: not a readable .npz archive ({type(exc).__name__}). {_npz_elsewhere_fix(spec)}"
        ) from None
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
        if not (finite := np.isfinite(x)).all():
            counts = tabular.non_finite_counts(x)
            first = int(np.argmin(finite.reshape(len(x), -1).all(axis=1)))
            raise DatasetUnavailable(
                f"{where} holds {counts} (of {x.size}; the first in image {first}), not pixels. Fix: replace "
                f"them (or drop those images and their labels) and save {key} as uint8 pixels 0..255, or as "
                "floats in [0, 1]."
            )
        if x.min() < 0 or x.max() > 1:
            outside = int(((x < 0) | (x > 1)).sum())
            raise DatasetUnavailable(
                f"{where} holds floats outside [0, 1] ({outside} of {x.size} values; from {x.min()} to {x.max()}). "
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
    if len(negative := np.unique(y[y < 0])):
        raise DatasetUnavailable(
            f"{where} holds {_counted(y, negative)}, below 0. Fix: number the classes 0..K−1 "
            "(docs/usage.md#a-dataset-of-your-own)."
        )
    return y.astype(np.int64)


def _images(n: int) -> str:
    return f"{n} image" + ("" if n == 1 else "s")


def _counted(y: np.ndarray, labels, limit: int = 5) -> str:
    """``labels`` with how many images of ``y`` each has: "label 7 (1 image)", "labels 5 (2 images), 9 (1 image)"."""
    labels = sorted(int(label) for label in labels)
    shown = ", ".join(f"{label} ({_images(int((y == label).sum()))})" for label in labels[:limit])
    more = f", … ({len(labels) - limit} more)" if len(labels) > limit else ""
    return ("label " if len(labels) == 1 else "labels ") + shown + more


def _spans(labels) -> str:
    """Sorted labels as runs: "3..6", "2, 5..6"."""
    runs: list[list[int]] = []
    for label in sorted(labels):
        if runs and label == runs[-1][1] + 1:
            runs[-1][1] = label
        else:
            runs.append([label, label])
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in runs)


def _npz_classes(spec: DatasetSpec, data) -> tuple[str, ...]:
    """The class names: the file's ``classes`` array, else the configuration's ``classes:`` (both: equal);
    () when neither names them."""
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
    """A user's ``.npz``: images as :func:`_npz_images` converts them, or a table (``x_train`` of two axes, N
    samples × F features) as :func:`trustcal.data.tabular.read_features` reads it; labels as
    :func:`_npz_num_classes` checks them (docs/usage.md, "A dataset of your own")."""
    with _open_npz(spec) as data:
        x_train = _npz_array(spec, data, "x_train")
        if x_train.ndim <= 2:  # a table (N, F); one axis: refused with the reshape that makes one
            x_train, x_test = tabular.read_features(spec, x_train, _npz_array(spec, data, "x_test"))
        else:
            x_train = _npz_images(spec, x_train, "x_train")
            x_test = _npz_images(spec, _npz_array(spec, data, "x_test"), "x_test")
        y_train = _npz_labels(spec, _npz_array(spec, data, "y_train"), "y_train", len(x_train))
        y_test = _npz_labels(spec, _npz_array(spec, data, "y_test"), "y_test", len(x_test))
        classes = _npz_classes(spec, data)
        named_by = "its classes array" if "classes" in data.files else "classes: in the configuration"
    path = Path(spec.path)
    if x_train.ndim == 4 and x_train.shape[1:] != x_test.shape[1:]:
        raise DatasetUnavailable(
            f"{spec.name}: {path}: x_train's images are {x_train.shape[1:]} (C, H, W), x_test's {x_test.shape[1:]}. "
            "Fix: save both at the same size and channels."
        )
    num_classes = _npz_num_classes(spec, y_train, y_test, classes, named_by)
    return RawDataset(x_train, y_train, x_test, y_test, classes or tuple(str(k) for k in range(num_classes)))


def _npz_num_classes(
    spec: DatasetSpec, y_train: np.ndarray, y_test: np.ndarray, classes: tuple[str, ...], named_by: str
) -> int:
    """K, the number of classes, with the labels (each ≥ 0) checked against it.

    Named classes (the file's ``classes`` array or the configuration's ``classes:``): K is their number,
    every label lies in 0..K−1 and every class has training images (a class with no test image is
    accepted, with a warning). No names: K is the largest label of either split + 1, and each of
    0..K−1 has images in both splits, so that a stray label cannot add classes. K ≥ 2 in both cases.
    """
    where = f"{spec.name}: {spec.path}"
    in_train, in_test = set(np.unique(y_train).tolist()), set(np.unique(y_test).tolist())
    if classes:
        k = len(classes)
        outside = [
            (key, y, sorted(c for c in found if c >= k))
            for key, y, found in (("y_train", y_train, in_train), ("y_test", y_test, in_test))
        ]
        if any(bad for _, _, bad in outside):
            held = "; ".join(f"{key} holds {_counted(y, bad)}" for key, y, bad in outside if bad)
            place = "a classes array" if named_by.startswith("its") else "classes: in the configuration"
            raise DatasetUnavailable(
                f"{where}: {held}, outside the {k} classes named by {named_by} (labels 0..{k - 1}). Fix: correct "
                f"those labels, or name every class in {place} (label i is the i-th name)."
            )
    else:
        k = max(in_train | in_test) + 1
    if k < 2:
        what = f"{classes[0]}, named by {named_by}" if classes else "label 0 in y_train and y_test"
        raise DatasetUnavailable(
            f"{where}: dataset {spec.name} has one class ({what}); calibration needs at least 2. Fix: add images "
            "of at least one other class (label 1)" + (" and name it in the classes." if classes else ".")
        )
    untrained = sorted(set(range(k)) - in_train)
    if classes and untrained:
        tested = sorted(c for c in untrained if c in in_test)
        names = ", ".join(f"{c} ({classes[c]})" for c in untrained[:5]) + (", …" if len(untrained) > 5 else "")
        raise DatasetUnavailable(
            f"{where}: y_train holds no image of class{'' if len(untrained) == 1 else 'es'} {names}"
            + (f"; y_test holds {_counted(y_test, tested)}" if tested else "")
            + f": a network cannot learn a class it never sees. Fix: add training images of "
            f"{'it' if len(untrained) == 1 else 'them'}, or remove {'it' if len(untrained) == 1 else 'them'} from "
            f"the classes named by {named_by} (and renumber the labels 0..K−1)."
        )
    if classes:
        if untested := sorted(set(range(k)) - in_test):
            log.warning(
                "%s: %s: y_test holds no image of class(es) %s, named by %s",
                spec.name,
                spec.path,
                ", ".join(classes[c] for c in untested),
                named_by,
            )
        return k
    train_only, test_only = sorted(in_train - in_test), sorted(in_test - in_train)
    neither = sorted(set(range(k)) - in_train - in_test)
    if train_only or test_only or neither:
        parts = [f"{_counted(y_train, train_only)} in y_train only"] if train_only else []
        parts += [f"{_counted(y_test, test_only)} in y_test only"] if test_only else []
        parts += [f"{'label' if len(neither) == 1 else 'labels'} {_spans(neither)} in neither"] if neither else []
        also = (
            ", or, if those classes truly have no test image, save their names as classes=[…] with the arrays"
            if not (test_only or neither)
            else ""
        )
        raise DatasetUnavailable(
            f"{where}: {'; '.join(parts)}: with no classes named, K is the largest label + 1 ({k}) and each "
            f"class 0..{k - 1} must have images in both y_train and y_test. Fix: correct or remove the images "
            f"of the stray labels, numbering the classes 0..K−1 without gaps{also}."
        )
    return k


def user_files(spec: DatasetSpec) -> list[Path]:
    """The files a user's dataset is read from, checked to be there and laid out as its kind needs."""
    if spec.kind == registry.NPZ:
        _open_npz(spec).close()
        return [Path(spec.path)]
    folder = _list_imagefolder(spec)
    return [path for path, _ in folder.train + folder.test]
