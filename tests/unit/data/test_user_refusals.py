"""A user's dataset that cannot give a sound study is refused when it is read (rule `prepare`), with one line
naming the file, the array or link, what is wrong and the fix (docs/usage.md, "A dataset of your own"):
stray labels, a class missing from a split, one class, a file that is not an .npz, NaN pixels, links out
of an image folder, an empty validation split."""

import logging
import os

import numpy as np
import pytest

from trustcal.data import checksums, splits
from trustcal.data import staging as data
from trustcal.data.synthetic import class_images, write_imagefolder, write_svhn
from trustcal.errors import TrustcalError
from trustcal.registry import DatasetSpec

NPZ_FORMAT_FIX = (
    "Fix: set path: in the dataset arrays of your setups: to an .npz file, written by "
    "numpy.savez(file, x_train=…, y_train=…, x_test=…, y_test=…)."
)


def npz_spec(path, **fields):
    return DatasetSpec("arrays", "Arrays", "npz", path=str(path), **fields)


def imagefolder_spec(path, **fields):
    return DatasetSpec("leaves", "Leaves", "imagefolder", path=str(path), **fields)


def write_arrays(path, **changes):
    """A valid user .npz (3 classes, 3×5×5 uint8 NCHW, 12 training and 6 test images, each class in both)
    with ``changes`` (None: the array left out)."""
    x, y = class_images(12, (3, 5, 5), 0, classes=3)
    xt, yt = class_images(6, (3, 5, 5), 1, classes=3)
    arrays = {"x_train": x, "y_train": y, "x_test": xt, "y_test": yt, **changes}
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return path


def refusal(spec, *, step="prepare", tmp_path):
    """The one line ``step`` (prepare: the splits, download: the manifest) refuses ``spec`` with; nothing
    written."""
    out = tmp_path / "results"
    out.mkdir(exist_ok=True)
    with pytest.raises(TrustcalError) as err:
        if step == "prepare":
            splits.prepare(spec, tmp_path / "unused", out / "splits.npz")
        else:
            data.write_manifest(data.download(spec, tmp_path / "unused"), out / "raw_manifest.tsv")
    assert list(out.iterdir()) == [], "nothing written, not even a temporary file"
    message = str(err.value)
    assert "\n" not in message and message.count("Fix: ") == 1, message
    return message


# --- labels: K by a documented rule, never enlarged by a stray label ------------------------------------


def test_one_stray_training_label_is_refused_not_read_as_five_more_classes(tmp_path):
    y = class_images(12, (3, 5, 5), 0, classes=3)[1]
    y[4] = 7
    path = write_arrays(tmp_path / "mine.npz", y_train=y)
    before = path.read_bytes()
    assert refusal(npz_spec(path), tmp_path=tmp_path) == (
        f"arrays: {path}: label 7 (1 image) in y_train only; labels 3..6 in neither: with no classes named, K is "
        "the largest label + 1 (8) and each class 0..7 must have images in both y_train and y_test. Fix: correct "
        "or remove the images of the stray labels, numbering the classes 0..K−1 without gaps."
    )
    assert path.read_bytes() == before
    y[4] = 0  # the same file with the label corrected: read, three classes
    assert data.load_dataset(npz_spec(write_arrays(path, y_train=y)), tmp_path).classes == ("0", "1", "2")


def test_a_stray_label_beyond_the_named_classes_is_refused(tmp_path):
    y = class_images(12, (3, 5, 5), 0, classes=3)[1]
    y[[1, 2]] = 7
    named = write_arrays(tmp_path / "named.npz", y_train=y, classes=np.array(["a", "b", "c"]))
    assert refusal(npz_spec(named), tmp_path=tmp_path) == (
        f"arrays: {named}: y_train holds label 7 (2 images), outside the 3 classes named by its classes array "
        "(labels 0..2). Fix: correct those labels, or name every class in a classes array (label i is the i-th "
        "name)."
    )
    yt = class_images(6, (3, 5, 5), 1, classes=3)[1]
    yt[0], yt[1] = 4, 9
    unnamed = write_arrays(tmp_path / "unnamed.npz", y_train=y, y_test=yt)
    assert refusal(npz_spec(unnamed, classes=("a", "b", "c")), tmp_path=tmp_path) == (
        f"arrays: {unnamed}: y_train holds label 7 (2 images); y_test holds labels 4 (1 image), 9 (1 image), "
        "outside the 3 classes named by classes: in the configuration (labels 0..2). Fix: correct those labels, "
        "or name every class in classes: in the configuration (label i is the i-th name)."
    )


def test_a_class_the_training_split_lacks_is_refused(tmp_path):
    y = np.arange(12) % 2  # labels 0, 1; the test split has 0, 1, 2
    path = write_arrays(tmp_path / "mine.npz", y_train=y)
    assert refusal(npz_spec(path), tmp_path=tmp_path) == (
        f"arrays: {path}: label 2 (2 images) in y_test only: with no classes named, K is the largest label + 1 "
        "(3) and each class 0..2 must have images in both y_train and y_test. Fix: correct or remove the images "
        "of the stray labels, numbering the classes 0..K−1 without gaps."
    )
    assert refusal(npz_spec(path, classes=("a", "b", "c")), tmp_path=tmp_path) == (
        f"arrays: {path}: y_train holds no image of class 2 (c); y_test holds label 2 (2 images): a network "
        "cannot learn a class it never sees. Fix: add training images of it, or remove it from the classes "
        "named by classes: in the configuration (and renumber the labels 0..K−1)."
    )


def test_a_class_the_test_split_lacks_is_refused_unless_the_classes_are_named(tmp_path, caplog):
    yt = np.arange(6) % 2  # labels 0, 1; the training split has 0, 1, 2
    path = write_arrays(tmp_path / "mine.npz", y_test=yt)
    assert refusal(npz_spec(path), tmp_path=tmp_path) == (
        f"arrays: {path}: label 2 (4 images) in y_train only: with no classes named, K is the largest label + 1 "
        "(3) and each class 0..2 must have images in both y_train and y_test. Fix: correct or remove the images "
        "of the stray labels, numbering the classes 0..K−1 without gaps, or, if those classes truly have no "
        "test image, save their names as classes=[…] with the arrays."
    )
    named = write_arrays(tmp_path / "named.npz", y_test=yt, classes=np.array(["a", "b", "c"]))
    caplog.set_level(logging.WARNING, logger="trustcal")
    assert data.load_dataset(npz_spec(named), tmp_path).classes == ("a", "b", "c")
    assert f"arrays: {named}: y_test holds no image of class(es) c, named by its classes array" in caplog.text


def test_a_negative_label_is_counted(tmp_path):
    y = class_images(12, (3, 5, 5), 0, classes=3)[1]
    y[[0, 5, 6]] = -1
    path = write_arrays(tmp_path / "mine.npz", y_train=y)
    assert refusal(npz_spec(path), tmp_path=tmp_path) == (
        f"arrays: {path}: array y_train holds label -1 (3 images), below 0. Fix: number the classes 0..K−1 "
        "(docs/usage.md#a-dataset-of-your-own)."
    )


@pytest.mark.parametrize("named", [False, True])
def test_a_dataset_of_one_class_is_refused_before_training(tmp_path, named):
    extra = {"classes": np.array(["only"])} if named else {}
    path = write_arrays(tmp_path / "mine.npz", y_train=np.zeros(12, int), y_test=np.zeros(6, int), **extra)
    what = "only, named by its classes array" if named else "label 0 in y_train and y_test"
    assert refusal(npz_spec(path), tmp_path=tmp_path) == (
        f"arrays: {path}: dataset arrays has one class ({what}); calibration needs at least 2. Fix: add images of "
        "at least one other class (label 1)" + (" and name it in the classes." if named else ".")
    )


def test_an_image_folder_of_one_class_is_refused_before_training(tmp_path):
    root = write_imagefolder(tmp_path / "leaves", ["oak"], n_per_class=3, size=6)
    assert refusal(imagefolder_spec(root), step="download", tmp_path=tmp_path) == (
        f"leaves: {root / 'train'}: dataset leaves has one class (oak); calibration needs at least 2. Fix: add a "
        f"folder of another class's images in {root / 'train'}/ and {root / 'test'}/."
    )


# --- the file: an .npz, or said what it is ---------------------------------------------------------------


def test_a_file_that_is_not_an_npz_is_named_as_such_without_numpys_pickle_advice(tmp_path):
    text = tmp_path / "passwd"
    text.write_text("root:x:0:0:root:/root:/bin/bash\n")
    truncated = tmp_path / "cut.npz"
    truncated.write_bytes(write_arrays(tmp_path / "whole.npz").read_bytes()[:300])
    for path in [text, truncated] + ([p] if (p := os.path.realpath("/etc/passwd")) and os.path.isfile(p) else []):
        for step in ("download", "prepare"):
            message = refusal(npz_spec(path), step=step, tmp_path=tmp_path)
            assert message == (
                f"arrays: {path}: not an .npz archive (an .npz is a zip of .npy arrays; this file is not a zip, or "
                f"a truncated one). {NPZ_FORMAT_FIX}"
            )
            assert "allow_pickle" not in message and f"savez({str(path)!r}" not in message


def test_a_directory_given_as_the_npz_is_named_a_directory(tmp_path):
    folder = tmp_path / "arrays"
    folder.mkdir()
    assert refusal(npz_spec(folder), step="download", tmp_path=tmp_path) == (
        f"arrays: {folder}: a directory, not an .npz file. {NPZ_FORMAT_FIX}"
    )


# --- pixels ----------------------------------------------------------------------------------------------


def test_nan_and_infinite_pixels_are_counted_and_placed(tmp_path):
    x = class_images(12, (3, 5, 5), 0, classes=3)[0] / 255.0
    x[3, 0, 1, 1] = np.nan
    path = write_arrays(tmp_path / "nan.npz", x_train=x)
    assert refusal(npz_spec(path), tmp_path=tmp_path) == (
        f"arrays: {path}: array x_train holds 1 NaN value (of 900; the first in image 3), not pixels. Fix: replace "
        "them (or drop those images and their labels) and save x_train as uint8 pixels 0..255, or as floats in "
        "[0, 1]."
    )
    xt = class_images(6, (3, 5, 5), 1, classes=3)[0] / 255.0
    xt[4, 2, 0, 0] = np.nan
    xt[2, :, 0, 0] = np.inf
    path = write_arrays(tmp_path / "inf.npz", x_test=xt)
    assert "array x_test holds 1 NaN and 3 infinite values (of 450; the first in image 2)" in refusal(
        npz_spec(path), tmp_path=tmp_path
    )
    x[3, 0, 1, 1] = 1.5
    x[4, 0, 1, 1] = -0.5
    path = write_arrays(tmp_path / "range.npz", x_train=x)
    assert refusal(npz_spec(path), tmp_path=tmp_path) == (
        f"arrays: {path}: array x_train holds floats outside [0, 1] (2 of 900 values; from -0.5 to 1.5). Fix: "
        "save x_train as uint8 pixels 0..255, or as floats in [0, 1]."
    )


# --- the splits ------------------------------------------------------------------------------------------


def test_a_training_set_too_small_for_a_validation_split_is_refused_in_prepare(tmp_path):
    x, y = class_images(5, (3, 5, 5), 0, classes=3)
    path = write_arrays(tmp_path / "mine.npz", x_train=x, y_train=y)
    assert refusal(npz_spec(path), tmp_path=tmp_path).replace(str(path), "PATH") == (
        "arrays: PATH: 5 training images, of which validation_split: 0.1 takes the last n − ⌈n × (1 − 0.1)⌉ = "
        "5 − 5 = 0 for validation, so the validation split would be empty. Fix: give the dataset at least 10 "
        "training images, or set validation_split: 0.2 (or more) in the configuration."
    )
    out = tmp_path / "splits.npz"
    assert splits.prepare(npz_spec(path), tmp_path, out, validation_split=0.2) == {
        "x_train": 4,
        "x_val": 1,
        "x_test": 6,
    }


@pytest.mark.parametrize(
    "n,fraction,line",
    [
        (
            1,
            0.1,
            "1 training image, of which validation_split: 0.1 takes the last n − ⌈n × (1 − 0.1)⌉ = 1 − 1 = 0 "
            "for validation, so the validation split would be empty. Fix: give the dataset at least 10 training "
            "images.",
        ),
        (
            9,
            0.1,
            "9 training images, of which validation_split: 0.1 takes the last n − ⌈n × (1 − 0.1)⌉ = 9 − 9 = 0 "
            "for validation, so the validation split would be empty. Fix: give the dataset at least 10 training "
            "images, or set validation_split: 0.12 (or more) in the configuration.",
        ),
        (
            3,
            0.25,
            "3 training images, of which validation_split: 0.25 takes the last n − ⌈n × (1 − 0.25)⌉ = 3 − 3 = "
            "0 for validation, so the validation split would be empty. Fix: give the dataset at least 4 training "
            "images, or set validation_split: 0.34 (or more) in the configuration.",
        ),
    ],
)
def test_the_empty_split_line_names_what_would_do(n, fraction, line):
    with pytest.raises(TrustcalError) as err:
        splits.check_split("mnist", "data", n, fraction)
    assert str(err.value) == f"mnist: data: {line}"
    assert splits.check_split("mnist", "data", 10, 0.1) == 9


# --- links out of an image folder ------------------------------------------------------------------------


def test_a_link_out_of_an_image_folder_is_refused(tmp_path):
    root = write_imagefolder(tmp_path / "leaves", ["oak", "ash"], n_per_class=2, size=6)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    secret = outside / "secret.png"
    secret.write_bytes((root / "train" / "oak" / "train_00000.png").read_bytes())
    link = root / "train" / "oak" / "link.png"
    link.symlink_to(secret)
    expected = (
        f"leaves: {link}: a link to {secret}, outside the dataset's folder {root}; links out of it are refused. "
        f"Fix: copy what it points to into {root}, or remove the link."
    )
    assert refusal(imagefolder_spec(root), step="download", tmp_path=tmp_path) == expected
    assert refusal(imagefolder_spec(root), tmp_path=tmp_path) == expected
    link.unlink()

    (outside / "more").mkdir()
    folder_link = root / "test" / "ash" / "more"
    folder_link.symlink_to(outside / "more")  # an empty folder out: refused all the same
    assert refusal(imagefolder_spec(root), step="download", tmp_path=tmp_path) == (
        f"leaves: {folder_link}: a link to {outside / 'more'}, outside the dataset's folder {root}; links out of "
        f"it are refused. Fix: copy what it points to into {root}, or remove the link."
    )
    folder_link.unlink()

    class_link = root / "test" / "elm"
    (outside / "elm").mkdir()
    (root / "train" / "elm").mkdir()
    (root / "train" / "elm" / "a.png").write_bytes(secret.read_bytes())
    class_link.symlink_to(outside / "elm")
    assert refusal(imagefolder_spec(root), step="download", tmp_path=tmp_path).startswith(
        f"leaves: {class_link}: a link to {outside / 'elm'}, outside the dataset's folder {root};"
    )


def test_links_inside_an_image_folder_are_followed_and_a_loop_refused(tmp_path):
    root = write_imagefolder(tmp_path / "leaves", ["oak", "ash"], n_per_class=2, size=6)
    spares = root / "spares"
    spares.mkdir()
    (spares / "x.png").write_bytes((root / "train" / "oak" / "train_00000.png").read_bytes())
    link = root / "train" / "oak" / "z.png"
    link.symlink_to(spares / "x.png")
    spec = imagefolder_spec(root)
    verified = data.download(spec, tmp_path)
    assert str(link) in verified
    assert data.load_dataset(spec, tmp_path).x_train.shape == (5, 3, 6, 6)
    loop = root / "train" / "ash" / "again"
    loop.symlink_to(root / "train")
    assert refusal(spec, step="download", tmp_path=tmp_path) == (
        f"leaves: {loop}: a link to {root / 'train'}, a folder that holds it (a loop). Fix: remove the link, or "
        "replace it with a copy of the images it should add."
    )


# --- every line says "Fix:" once -------------------------------------------------------------------------


def test_no_refusal_says_fix_twice(tmp_path):
    """The lines a user's dataset and a label check can give: one "Fix:" each (never "Fix: Fix:")."""
    y = class_images(12, (3, 5, 5), 0, classes=3)[1]
    cases = {
        "stray": {"y_train": np.where(np.arange(12) == 0, 7, y)},
        "named": {"y_train": np.where(np.arange(12) == 0, 7, y), "classes": np.array(["a", "b", "c"])},
        "negative": {"y_train": -np.ones(12, int)},
        "one class": {"y_train": np.zeros(12, int), "y_test": np.zeros(6, int)},
        "floats": {"x_train": np.full((12, 3, 5, 5), np.nan)},
        "objects": {"x_train": np.array([object(), 1], dtype=object)},
        "one-hot": {"y_train": np.eye(3)[np.arange(12) % 3]},
        "missing": {"y_test": None},
    }
    messages = []
    for name, changes in cases.items():
        path = write_arrays(tmp_path / f"{name}.npz", **changes)
        with pytest.raises(checksums.DatasetUnavailable) as err:
            data.load_raw(npz_spec(path), tmp_path)
        messages.append(str(err.value))
    write_svhn(tmp_path / "svhn", n_train=20, n_test=10)
    import scipy.io

    mat = scipy.io.loadmat(tmp_path / "svhn" / "test_32x32.mat")
    mat["y"][0] = 11
    scipy.io.savemat(tmp_path / "svhn" / "test_32x32.mat", {"X": mat["X"], "y": mat["y"]})
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw("svhn", tmp_path / "svhn", verify_checksums=False)
    messages.append(str(err.value))
    assert messages[-1].endswith("or rebuild it as a MATLAB v5 file with labels 1..10 (10: the digit 0).")
    with pytest.raises(checksums.DatasetUnavailable) as err:
        checksums.check_labels(npz_spec("p.npz"), np.array([0, 4]), 3, "p.npz", "number the classes 0..2.")
    messages.append(str(err.value))
    assert messages[-1] == "arrays: p.npz: label(s) 4 outside 0..2 (3 classes). Fix: number the classes 0..2."
    for message in messages:
        assert "Fix: Fix:" not in message and message.count("Fix:") == 1, message
