"""Datasets by configuration (trustcal.registry): every registered dataset staged in its real on-disk format and
read back, and a user's image folder and .npz, read without writing a byte beside them."""

import gzip
import hashlib
import io
import logging
import pickle
import tarfile
import urllib.error
import urllib.request

import numpy as np
import pytest
import torchvision.datasets as tvd
from helpers.payload import Payload

from trustcal.data import checksums, splits
from trustcal.data import staging as data
from trustcal.data.synthetic import (
    class_images,
    write_cifar100,
    write_idx_dataset,
    write_imagefolder,
    write_npz_dataset,
    write_svhn,
)
from trustcal.errors import TrustcalError
from trustcal.registry import CIFAR100_CLASSES, DATASETS, DatasetSpec


def md5(content: bytes) -> str:
    return hashlib.md5(content).hexdigest()


@pytest.fixture
def serve(monkeypatch):
    """The dataset hosts, served locally: ``serve[url] = bytes``; returns that dict (a URL not in it is down)."""
    import torchvision.datasets.utils as tvu

    served = {}

    def urlretrieve(url, filename, *args):
        if url not in served:
            raise urllib.error.URLError("Name or service not known")
        with open(filename, "wb") as fh:
            fh.write(served[url])

    monkeypatch.setattr(tvu, "_get_redirect_url", lambda url, max_hops=3: url)
    monkeypatch.setattr(tvu, "_urlretrieve", urlretrieve)
    return served


def snapshot(root):
    """Every file under ``root`` (relative path → bytes): what a user's folder holds."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_refusal(err, *texts):
    """A refusal the user reads: a TrustcalError naming ``texts`` (the file, the array) and the fix."""
    assert isinstance(err.value, TrustcalError)
    message = str(err.value)
    for text in texts:
        assert str(text) in message, f"{text!r} not in {message!r}"
    assert "Fix:" in message, message


# --- the registry's datasets, by name or by spec ---------------------------------------------------


def test_names_and_specs_are_the_same_dataset(tiny_data):
    by_name = data.load_raw("mnist", tiny_data, verify_checksums=False)
    by_spec = data.load_raw(DATASETS["mnist"], tiny_data, verify_checksums=False)
    for a, b in zip(by_name, by_spec):
        np.testing.assert_array_equal(a, b)
    assert data.raw_files("cifar10", tiny_data) == data.raw_files(DATASETS["cifar10"], tiny_data)
    with pytest.raises(TrustcalError, match="unknown dataset 'imagenet'; allowed: mnist, fashion_mnist"):
        data.raw_files("imagenet", tiny_data)


@pytest.mark.parametrize(
    "name,files",
    [
        ("fashion_mnist", ["FashionMNIST/raw/train-images-idx3-ubyte", "FashionMNIST/raw/t10k-labels-idx1-ubyte"]),
        ("kmnist", ["KMNIST/raw/train-images-idx3-ubyte", "KMNIST/raw/t10k-labels-idx1-ubyte"]),
        ("cifar100", ["cifar-100-python/train", "cifar-100-python/test", "cifar-100-python/meta"]),
        ("svhn", ["train_32x32.mat", "test_32x32.mat"]),
    ],
)
def test_raw_files_are_where_torchvision_keeps_them(tmp_path, name, files):
    raw = data.raw_files(name, tmp_path)
    assert all(str(tmp_path / f) in raw for f in files)
    assert len(raw) == {"svhn": 2, "cifar100": 3}.get(name, 4)


@pytest.mark.parametrize("name", list(DATASETS))
def test_download_switched_off_never_touches_the_network_for_any_registered_dataset(tmp_path, no_network, name):
    with pytest.raises(checksums.DatasetUnavailable, match="download: false") as err:
        data.download(name, tmp_path, allow_download=False)
    message = str(err.value)
    assert str(tmp_path) in message and "md5" in message and message.splitlines()[-1].startswith("Fix:")
    tv = getattr(tvd, DATASETS[name].torchvision)
    official = {
        "idx": [m for _, m in getattr(tv, "resources", [])],
        "cifar": [getattr(tv, "tgz_md5", "")],
        "svhn": [entry[2] for split, entry in getattr(tv, "split_list", {}).items() if split != "extra"],
    }[DATASETS[name].kind]
    assert official and all(m in message for m in official), "the official md5s, from torchvision"
    assert not any(tmp_path.iterdir()), "nothing written"


@pytest.mark.parametrize(
    "name,urls",
    [
        ("fashion_mnist", [f"{m}train-images-idx3-ubyte.gz" for m in tvd.FashionMNIST.mirrors]),
        ("kmnist", [f"{m}train-images-idx3-ubyte.gz" for m in tvd.KMNIST.mirrors]),
        ("cifar100", [tvd.CIFAR100.url]),
        ("svhn", [tvd.SVHN.split_list["train"][0]]),
    ],
)
def test_failed_download_tries_torchvisions_urls_and_says_what_to_stage(tmp_path, offline, name, urls):
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download(name, tmp_path / "data")
    message = str(err.value)
    assert "could not be fetched" in message and str(tmp_path / "data") in message
    assert offline == urls, "torchvision's URLs, the first missing file's (the others wait for it)"
    assert message.splitlines()[-1].startswith("Fix: without network access")
    assert "extra_32x32" not in message  # SVHN's extra split is not used


# --- Fashion-MNIST and KMNIST: IDX files whose archive md5s alone are known ------------------------


def idx_archives(name, tmp_path, n_train=40, n_test=20):
    """Synthetic .gz archives of ``name`` written elsewhere: {archive name: bytes}."""
    raw = write_idx_dataset(tmp_path / "source", name, n_train, n_test, archives=True)
    return {p.name: p.read_bytes() for p in raw.iterdir()}


def stage(directory, files):
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (directory / name).write_bytes(content)


@pytest.mark.parametrize("name,folder", [("fashion_mnist", "FashionMNIST"), ("kmnist", "KMNIST"), ("mnist", "MNIST")])
def test_idx_archives_extracted_into_torchvisions_folder_and_read_back(tmp_path, no_network, name, folder):
    raw = tmp_path / "data" / folder / "raw"
    archives = idx_archives(name, tmp_path)
    stage(raw, archives)
    verified = data.download(name, tmp_path / "data", verify_checksums=False, allow_download=False)
    assert list(verified) == data.raw_files(name, tmp_path / "data")
    assert set(verified.values()) == {checksums.NOT_CHECKED}
    for archive, content in archives.items():
        assert (raw / archive.removesuffix(".gz")).read_bytes() == gzip.decompress(content)
        assert (raw / archive).read_bytes() == content
    x_train, y_train, x_test, y_test = data.load_raw(name, tmp_path / "data")
    expected = class_images(40, (28, 28), 0), class_images(20, (28, 28), 1)
    np.testing.assert_array_equal(x_train[:, 0], expected[0][0])
    np.testing.assert_array_equal(y_train, expected[0][1])
    np.testing.assert_array_equal(x_test[:, 0], expected[1][0])
    np.testing.assert_array_equal(y_test, expected[1][1])
    assert x_train.dtype == np.uint8 and y_train.dtype == np.int64 and x_train.flags.c_contiguous
    oracle = getattr(tvd, DATASETS[name].torchvision)(str(tmp_path / "data"), train=True)
    np.testing.assert_array_equal(x_train[:, 0], oracle.data.numpy())
    assert data.load_dataset(name, tmp_path / "data").classes == DATASETS[name].classes


@pytest.mark.parametrize("name", ["fashion_mnist", "kmnist"])
def test_idx_archives_accepted_by_archive_md5(tmp_path, no_network, monkeypatch, name):
    """torchvision's archive md5s, patched to the synthetic archives': accepted, extracted, and on a rerun
    the extracted files are checked against the content of their (verified) archives."""
    archives = idx_archives(name, tmp_path)
    tv = getattr(tvd, DATASETS[name].torchvision)
    monkeypatch.setattr(tv, "resources", [(archive, md5(archives[archive])) for archive, _ in tv.resources])
    raw = tmp_path / tv.__name__ / "raw"
    stage(raw, archives)
    assert set(data.download(name, tmp_path, allow_download=False).values()) == {checksums.ARCHIVE_MD5}
    assert set(data.download(name, tmp_path, allow_download=False).values()) == {checksums.ARCHIVE_MD5}
    extracted = raw / "train-labels-idx1-ubyte"
    changed = extracted.read_bytes()[:-1] + b"\x07"
    extracted.write_bytes(changed)
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download(name, tmp_path, allow_download=False)
    assert_refusal(err, extracted, "not the content of", "train-labels-idx1-ubyte.gz", f"{{{name}: false")
    assert extracted.read_bytes() == changed, "a staged file is never overwritten"


@pytest.mark.parametrize("name", ["fashion_mnist", "kmnist"])
def test_idx_archive_with_wrong_md5_is_named_and_kept(tmp_path, no_network, name):
    archives = idx_archives(name, tmp_path)
    raw = tmp_path / getattr(tvd, DATASETS[name].torchvision).__name__ / "raw"
    stage(raw, archives)
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download(name, tmp_path, allow_download=True)  # staged files are judged before any download
    official = dict(getattr(tvd, DATASETS[name].torchvision).resources)
    assert_refusal(
        err,
        raw / "train-images-idx3-ubyte.gz",
        md5(archives["train-images-idx3-ubyte.gz"]),
        official["train-images-idx3-ubyte.gz"],
        "matching its archive md5",
        f"verify_checksums: {{{name}: false",
    )
    assert str(err.value).count("\n  ") == 4, "each archive named"
    assert snapshot(raw) == archives, "nothing extracted, nothing changed"


@pytest.mark.parametrize("name", ["fashion_mnist", "kmnist"])
def test_uncompressed_idx_files_without_their_archives_cannot_be_checked(tmp_path, no_network, name):
    raw = write_idx_dataset(tmp_path, name, 40, 20)
    before = snapshot(raw)
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download(name, tmp_path, allow_download=False)
    official = dict(getattr(tvd, DATASETS[name].torchvision).resources)
    assert_refusal(
        err,
        "cannot be checked",
        raw / "t10k-images-idx3-ubyte",
        "stage t10k-images-idx3-ubyte.gz",
        official["t10k-images-idx3-ubyte.gz"],
        f"verify_checksums: {{{name}: false",
    )
    assert snapshot(raw) == before
    verified = data.download(name, tmp_path, verify_checksums=False, allow_download=False)
    assert set(verified.values()) == {checksums.NOT_CHECKED}
    assert data.load_raw(name, tmp_path)[0].shape == (40, 1, 28, 28)


def test_idx_archive_fetched_from_torchvisions_mirror(tmp_path, serve, monkeypatch):
    archives = idx_archives("kmnist", tmp_path)
    monkeypatch.setattr(tvd.KMNIST, "resources", [(a, md5(c)) for a, c in archives.items()])
    for archive, content in archives.items():
        serve[f"{tvd.KMNIST.mirrors[0]}{archive}"] = content
    verified = data.download("kmnist", tmp_path / "data")
    assert set(verified.values()) == {checksums.ARCHIVE_MD5}
    assert snapshot(tmp_path / "data" / "KMNIST" / "raw") == {
        **archives,
        **{a.removesuffix(".gz"): gzip.decompress(c) for a, c in archives.items()},
    }


# --- CIFAR-100: cifar-100-python/{train,test,meta}, fine labels ---------------------------------------


def torchvision_cifar100(root):
    """(x_train, y_train, x_test, y_test), classes as torchvision's CIFAR100 reads them (md5s unchecked)."""

    class Unchecked(tvd.CIFAR100):
        train_list = [[name, None] for name, _ in tvd.CIFAR100.train_list]
        test_list = [[name, None] for name, _ in tvd.CIFAR100.test_list]
        meta = {**tvd.CIFAR100.meta, "md5": None}

    out = []
    for train in (True, False):
        ds = Unchecked(str(root), train=train, download=False)
        out += [np.ascontiguousarray(np.asarray(ds.data, np.uint8).transpose(0, 3, 1, 2)), np.asarray(ds.targets)]
    return out, tuple(ds.classes)


def test_cifar100_read_as_torchvision_reads_it(tmp_path):
    write_cifar100(tmp_path, n_train=150, n_test=100, seed=4)
    ours = data.load_dataset("cifar100", tmp_path, verify_checksums=False)
    theirs, classes = torchvision_cifar100(tmp_path)
    for a, b in zip(ours[:4], theirs):
        np.testing.assert_array_equal(a, b)
    assert [a.dtype for a in ours[:4]] == [np.uint8, np.int64, np.uint8, np.int64]
    np.testing.assert_array_equal(ours.x_train, class_images(150, (3, 32, 32), 4, classes=100)[0])
    np.testing.assert_array_equal(ours.y_test, class_images(100, (3, 32, 32), 5, classes=100)[1])
    assert set(ours.y_test.tolist()) == set(range(100))  # fine labels, 100 classes
    assert ours.classes == classes == CIFAR100_CLASSES  # the registry's names are the meta file's


def cifar100_tarball(tmp_path, mangle=None):
    batches = write_cifar100(tmp_path / "source", n_train=30, n_test=20)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in ("train", "test", "meta"):
            content = (batches / name).read_bytes()
            content = mangle(name, content) if mangle else content
            info = tarfile.TarInfo(f"cifar-100-python/{name}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue(), {name: (batches / name).read_bytes() for name in ("train", "test", "meta")}


def test_cifar100_tarball_extracted_into_torchvisions_folder(tmp_path, no_network, monkeypatch):
    tarball, contents = cifar100_tarball(tmp_path)
    stage(tmp_path / "data", {"cifar-100-python.tar.gz": tarball})
    monkeypatch.setattr(tvd.CIFAR100, "tgz_md5", md5(tarball))  # the synthetic tarball as the official one
    verified = data.download("cifar100", tmp_path / "data", allow_download=False)
    assert verified == dict.fromkeys(data.raw_files("cifar100", tmp_path / "data"), checksums.ARCHIVE_MD5)
    assert snapshot(tmp_path / "data" / "cifar-100-python") == contents
    assert data.load_raw("cifar100", tmp_path / "data", verify_checksums=False)[0].shape == (30, 3, 32, 32)


def test_cifar100_tarball_with_wrong_md5_is_named_and_kept(tmp_path, no_network):
    tarball, _ = cifar100_tarball(tmp_path, mangle=lambda name, c: c + b"\0" if name == "test" else c)
    stage(tmp_path / "data", {"cifar-100-python.tar.gz": tarball})
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download("cifar100", tmp_path / "data", allow_download=False)
    assert_refusal(
        err,
        tmp_path / "data" / "cifar-100-python.tar.gz",
        md5(tarball),
        tvd.CIFAR100.tgz_md5,
        "member test",
        dict(tvd.CIFAR100.test_list)["test"],
        "verify_checksums: {cifar100: false",
    )
    assert snapshot(tmp_path / "data") == {"cifar-100-python.tar.gz": tarball}, "nothing extracted"
    verified = data.download("cifar100", tmp_path / "data", verify_checksums=False, allow_download=False)
    assert set(verified.values()) == {checksums.NOT_CHECKED}


def test_checksummed_cifar100_names_the_file_and_its_official_md5(tmp_path):
    batches = write_cifar100(tmp_path, n_train=30, n_test=20)
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw("cifar100", tmp_path)
    assert str(batches / "train") in str(err.value) and dict(tvd.CIFAR100.train_list)["train"] in str(err.value)
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download("cifar100", tmp_path, allow_download=False)
    assert_refusal(err, batches / "train", "verify_checksums: {cifar100: false")


def test_a_cifar100_batch_replaced_by_a_pickle_payload_is_refused_and_never_run(tmp_path):
    batches = write_cifar100(tmp_path, n_train=30, n_test=20)
    marker = tmp_path / "ran"
    (batches / "train").write_bytes(pickle.dumps({"fine_labels": [0], "data": Payload(marker)}, protocol=2))
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw("cifar100", tmp_path, verify_checksums=False)
    assert_refusal(err, batches / "train", "not a CIFAR-100 batch", "system")
    assert not marker.exists()


def test_cifar100_labels_beyond_its_classes_are_refused(tmp_path):
    batches = write_cifar100(tmp_path, n_train=30, n_test=20)
    entry = pickle.loads((batches / "test").read_bytes(), encoding="latin1")
    entry["fine_labels"][3] = 100
    (batches / "test").write_bytes(pickle.dumps(entry, protocol=2))
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw("cifar100", tmp_path, verify_checksums=False)
    assert_refusal(err, batches / "test", "label(s) 100 outside 0..99")


# --- SVHN: train_32x32.mat, test_32x32.mat -----------------------------------------------------------


def torchvision_svhn(root):
    class Unchecked(tvd.SVHN):
        split_list = {split: [url, name, None] for split, (url, name, _) in tvd.SVHN.split_list.items()}

    out = []
    for split in ("train", "test"):
        ds = Unchecked(str(root), split=split, download=False)
        out += [ds.data, ds.labels]
    return out


def test_svhn_read_as_torchvision_reads_it_with_label_10_as_digit_0(tmp_path):
    import scipy.io

    write_svhn(tmp_path, n_train=50, n_test=30, seed=2)
    stored = scipy.io.loadmat(tmp_path / "train_32x32.mat")
    assert stored["X"].shape == (32, 32, 3, 50) and 10 in stored["y"] and 0 not in stored["y"]
    ours = data.load_raw("svhn", tmp_path, verify_checksums=False)
    for a, b in zip(ours, torchvision_svhn(tmp_path)):
        np.testing.assert_array_equal(a, b)
    x, y = class_images(50, (3, 32, 32), 2)
    np.testing.assert_array_equal(ours[0], x)
    np.testing.assert_array_equal(ours[1], y)
    assert 0 in ours[1] and ours[0].flags.c_contiguous and ours[1].dtype == np.int64
    assert ours[2].shape == (30, 3, 32, 32)


def test_svhn_md5s_checked_first(tmp_path, no_network, monkeypatch):
    write_svhn(tmp_path, n_train=20, n_test=10)
    train = tmp_path / "train_32x32.mat"
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download("svhn", tmp_path, allow_download=False)
    assert_refusal(
        err, train, md5(train.read_bytes()), tvd.SVHN.split_list["train"][2], "matching its md5", "{svhn: false"
    )
    with pytest.raises(checksums.DatasetUnavailable, match=f"{train}: md5 {md5(train.read_bytes())}, not the official"):
        data.load_raw("svhn", tmp_path)
    assert set(data.download("svhn", tmp_path, verify_checksums=False).values()) == {checksums.NOT_CHECKED}
    official = {
        split: [url, name, md5((tmp_path / name).read_bytes()) if split != "extra" else m]
        for split, (url, name, m) in tvd.SVHN.split_list.items()
    }
    monkeypatch.setattr(tvd.SVHN, "split_list", official)
    assert set(data.download("svhn", tmp_path, allow_download=False).values()) == {checksums.CONTENT_MD5}
    assert data.load_raw("svhn", tmp_path)[0].shape == (20, 3, 32, 32)


def test_svhn_fetched_from_torchvisions_url(tmp_path, serve, monkeypatch):
    write_svhn(tmp_path / "source", n_train=20, n_test=10)
    files = {name: (tmp_path / "source" / name).read_bytes() for name in ("train_32x32.mat", "test_32x32.mat")}
    official = {}
    for split, (url, name, m) in tvd.SVHN.split_list.items():
        official[split] = [url, name, md5(files[name]) if name in files else m]
        if name in files:
            serve[url] = files[name]
    monkeypatch.setattr(tvd.SVHN, "split_list", official)
    verified = data.download("svhn", tmp_path / "data")
    assert set(verified.values()) == {checksums.CONTENT_MD5}
    assert snapshot(tmp_path / "data") == files


def test_a_damaged_svhn_file_is_named(tmp_path):
    write_svhn(tmp_path, n_train=20, n_test=10)
    (tmp_path / "test_32x32.mat").write_bytes(b"not a MATLAB file")
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw("svhn", tmp_path, verify_checksums=False)
    assert_refusal(err, tmp_path / "test_32x32.mat", "not a readable MATLAB file", tvd.SVHN.split_list["test"][2])


# --- a user's image folder: <path>/train/<class>/*, <path>/test/<class>/* ----------------------------


def imagefolder_spec(path, **fields):
    return DatasetSpec("leaves", "Leaves", "imagefolder", path=str(path), **fields)


def torchvision_imagefolder(root, loader=None, transform=None):
    """Both splits as torchvision's ImageFolder reads them, in load_raw's layout, and its class_to_idx."""
    from torchvision.datasets.folder import default_loader

    out, samples = [], []
    for split in ("train", "test"):
        ds = tvd.ImageFolder(str(root / split), loader=loader or default_loader, transform=transform)
        images = [np.asarray(img) for img, _ in ds]
        x = np.stack([img[None] if img.ndim == 2 else img.transpose(2, 0, 1) for img in images])
        out += [x, np.asarray(ds.targets)]
        samples += [path for path, _ in ds.samples]
        if split == "train":
            class_to_idx = ds.class_to_idx
    return out, samples, class_to_idx


def test_an_image_folder_reads_as_torchvisions_imagefolder(tmp_path, no_network):
    root = write_imagefolder(tmp_path / "leaves", ["oak", "Ash", "elm"], n_per_class=4, size=9, n_test_per_class=2)
    deeper = root / "train" / "elm" / "more"
    deeper.mkdir()
    (deeper / "extra.PNG").write_bytes((root / "train" / "oak" / "train_00000.png").read_bytes())
    (root / "train" / "oak" / "notes.txt").write_text("not an image")
    spec = imagefolder_spec(root)
    ours = data.load_dataset(spec, tmp_path / "unused")
    theirs, samples, class_to_idx = torchvision_imagefolder(root)
    assert class_to_idx == {name: i for i, name in enumerate(ours.classes)} == {"Ash": 0, "elm": 1, "oak": 2}
    assert data.raw_files(spec, tmp_path) == samples, "the same files, in the same order"
    for a, b in zip(ours[:4], theirs):
        np.testing.assert_array_equal(a, b)
    assert ours.x_train.shape == (13, 3, 9, 9) and ours.x_test.shape == (6, 3, 9, 9)
    assert ours.x_train.dtype == np.uint8 and ours.y_train.dtype == np.int64
    assert data.load_dataset(imagefolder_spec(root, classes=("Ash", "elm", "oak")), tmp_path).classes == ours.classes


def test_an_image_folder_resized_as_torchvisions_resize(tmp_path):
    from PIL import Image
    from torchvision import transforms

    root = write_imagefolder(tmp_path / "leaves", ["a", "b"], n_per_class=3, size=10)
    wide = (np.arange(8 * 13 * 3) % 256).astype(np.uint8).reshape(8, 13, 3)
    Image.fromarray(wide).save(root / "train" / "a" / "wide.jpg")
    Image.fromarray(np.full((5, 7), 77, np.uint8)).save(root / "test" / "b" / "grey.bmp")  # mode L among RGB
    ours = data.load_raw(imagefolder_spec(root, size=6), tmp_path)
    theirs, _, _ = torchvision_imagefolder(root, transform=transforms.Resize((6, 6)))
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    assert ours[0].shape == (7, 3, 6, 6)


def test_an_image_folder_of_grey_images_has_one_channel(tmp_path):
    from PIL import Image

    root = write_imagefolder(tmp_path / "digits", ["0", "1", "2"], n_per_class=2, size=8, grey=True)
    ours = data.load_raw(imagefolder_spec(root), tmp_path)
    theirs, _, _ = torchvision_imagefolder(root, loader=lambda path: Image.open(path).convert("L"))
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    assert ours[0].shape == (6, 1, 8, 8)
    x, _ = class_images(6, (1, 8, 8), 0, classes=3)
    assert sorted(map(bytes, ours[0])) == sorted(map(bytes, x)), "the pixels written, losslessly"


def test_a_users_image_folder_is_left_as_it_was(tmp_path, no_network):
    root = write_imagefolder(tmp_path / "leaves", ["oak", "ash"], n_per_class=5, size=8)
    before = snapshot(root)
    spec = imagefolder_spec(root)
    verified = data.download(spec, tmp_path / "data", allow_download=False)
    assert set(verified.values()) == {checksums.USER_FILE} and len(verified) == 20
    data.write_manifest(verified, tmp_path / "raw_manifest.tsv")
    sizes = splits.prepare(spec, tmp_path / "data", tmp_path / "splits.npz")
    assert sizes == {"x_train": 9, "x_val": 1, "x_test": 10}
    assert snapshot(root) == before, "byte-identical, no new file"
    assert not (tmp_path / "data").exists()
    assert splits.prepared_classes(tmp_path / "splits.npz") == ("ash", "oak")
    assert set(splits.load_prepared(tmp_path / "splits.npz")) == set(splits.PREPARED_KEYS)


def test_image_folder_refusals_name_the_file_and_the_fix(tmp_path):
    from PIL import Image

    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download(imagefolder_spec(tmp_path / "nowhere"), tmp_path)
    assert_refusal(err, tmp_path / "nowhere", "no such folder", "train/<class>/")

    root = write_imagefolder(tmp_path / "leaves", ["oak", "ash"], n_per_class=2, size=8)
    first = data.raw_files(imagefolder_spec(root), tmp_path)[0]
    (root / "test" / "elm").mkdir()
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw(imagefolder_spec(root), tmp_path)
    assert_refusal(err, root / "test", "elm", "not in", "ash, oak")
    (root / "test" / "elm").rmdir()

    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw(imagefolder_spec(root, classes=("oak", "ash")), tmp_path)
    assert_refusal(err, root / "train", "classes: oak, ash", "ash, oak", "in that order")

    odd = root / "test" / "oak" / "odd.png"
    Image.fromarray(np.zeros((8, 5, 3), np.uint8)).save(odd)
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw(imagefolder_spec(root), tmp_path)
    assert_refusal(err, odd, "8×8", "5×8", "size:")
    assert f"{first} is 8×8" in str(err.value), "and the first of the others"
    odd.unlink()

    broken = root / "train" / "ash" / "broken.png"
    broken.write_text("not a PNG")
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw(imagefolder_spec(root), tmp_path)
    assert_refusal(err, broken, "not a readable image")
    broken.unlink()

    (root / "train" / "pine").mkdir()
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download(imagefolder_spec(root), tmp_path)
    assert_refusal(err, root / "train" / "pine", "no image")


# --- a user's arrays: one .npz -----------------------------------------------------------------------


def npz_spec(path, **fields):
    return DatasetSpec("arrays", "Arrays", "npz", path=str(path), **fields)


@pytest.mark.parametrize(
    "layout,shape,floats",
    [("nchw", (3, 6, 5), False), ("nhwc", (3, 6, 5), False), ("nhw", (1, 6, 5), False), ("nhwc", (3, 6, 5), True)],
)
def test_npz_layouts_read_as_uint8_nchw(tmp_path, caplog, layout, shape, floats):
    caplog.set_level(logging.INFO, logger="trustcal")
    path = write_npz_dataset(tmp_path / "a.npz", 30, 12, shape, 4, layout=layout, floats=floats, seed=3)
    ours = data.load_dataset(npz_spec(path), tmp_path / "unused")
    x, y = class_images(30, shape, 3, classes=4)
    np.testing.assert_array_equal(ours.x_train, x)
    np.testing.assert_array_equal(ours.y_train, y)
    np.testing.assert_array_equal(ours.x_test, class_images(12, shape, 4, classes=4)[0])
    assert ours.x_train.dtype == np.uint8 and ours.y_test.dtype == np.int64 and ours.x_train.flags.c_contiguous
    assert ours.classes == ("0", "1", "2", "3")
    assert ("round(x · 255)" in caplog.text) == floats


def test_npz_images_at_most_4_pixels_wide_are_read_as_channels_last(tmp_path, caplog):
    """The documented rule: a last axis of at most 4 is channels; when axis 1 could be channels too, a warning."""
    x = class_images(12, (2, 3, 4), 0, classes=3)[0]  # NHWC: 2 × 3 pixels, 4 channels
    path = write_arrays(tmp_path / "small.npz", x_train=x, x_test=x[:6])
    ours = data.load_raw(npz_spec(path), tmp_path)
    np.testing.assert_array_equal(ours[0], x.transpose(0, 3, 1, 2))
    assert "read as (N, H, W, C), 4 channels" in caplog.text


def test_npz_class_names_stored_with_the_splits(tmp_path, no_network):
    path = write_npz_dataset(tmp_path / "user" / "a.npz", 40, 10, class_names=["cat", "dog", "emu"])
    before = snapshot(tmp_path / "user")
    spec = npz_spec(path)
    verified = data.download(spec, tmp_path / "data", allow_download=False)
    assert verified == {str(path): checksums.USER_FILE}
    data.write_manifest(verified, tmp_path / "raw_manifest.tsv")
    assert md5(path.read_bytes()) in (tmp_path / "raw_manifest.tsv").read_text()
    assert splits.prepare(spec, tmp_path / "data", tmp_path / "splits.npz") == {"x_train": 36, "x_val": 4, "x_test": 10}
    assert splits.prepared_classes(tmp_path / "splits.npz") == ("cat", "dog", "emu")
    with np.load(tmp_path / "splits.npz") as stored:
        assert stored["classes"].dtype.kind == "U"
    prepared = splits.load_prepared(tmp_path / "splits.npz")
    assert list(prepared) == list(splits.PREPARED_KEYS)
    np.testing.assert_array_equal(prepared["x_val"], class_images(40, (3, 8, 8), 0, classes=3)[0][36:])
    assert snapshot(tmp_path / "user") == before, "byte-identical, no new file"
    assert data.load_dataset(npz_spec(path, classes=("cat", "dog", "emu")), tmp_path).classes == ("cat", "dog", "emu")
    unnamed = write_npz_dataset(tmp_path / "b.npz")  # no classes array: the configuration's classes:
    assert data.load_dataset(npz_spec(unnamed, classes=("x", "y", "z")), tmp_path).classes == ("x", "y", "z")


def test_registered_splits_store_no_class_names(tiny_data, tmp_path):
    splits.prepare("mnist", tiny_data, tmp_path / "splits.npz", verify_checksums=False)
    assert splits.prepared_classes(tmp_path / "splits.npz") == ()
    with np.load(tmp_path / "splits.npz") as stored:
        assert sorted(stored.files) == sorted(splits.PREPARED_KEYS)


def write_arrays(path, **changes):
    """A valid user .npz (3 classes, 3×5×5 uint8 NCHW) with ``changes`` (None: the array left out)."""
    x, y = class_images(12, (3, 5, 5), 0, classes=3)
    xt, yt = class_images(6, (3, 5, 5), 1, classes=3)
    arrays = {"x_train": x, "y_train": y, "x_test": xt, "y_test": yt, **changes}
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return path


@pytest.mark.parametrize(
    "changes,texts",
    [
        ({"x_train": np.array([object(), 1], dtype=object)}, ["x_train", "Python objects", "not dtype object"]),
        ({"classes": np.array(["a", None, "c"], dtype=object)}, ["classes", "Python objects"]),
        (
            {"y_train": np.array([0, 1, 2, 5] * 3), "classes": np.array(["a", "b", "c"])},
            ["y_train holds label 5 (3 images), outside the 3 classes", "name every class"],
        ),
        (
            {"y_test": np.array([0, 1, 2, 3, 0, 1])},
            ["label 3 (1 image) in y_test only", "K is the largest label + 1 (4)"],
        ),
        ({"y_train": -np.ones(12, int)}, ["y_train holds label -1 (12 images), below 0", "number the classes"]),
        ({"y_test": None}, ["no array y_test", "numpy.savez"]),
        ({"x_test": np.zeros((6, 3, 6, 6), np.uint8)}, ["x_train's images are (3, 5, 5)", "(3, 6, 6)"]),
        # two axes are a table (trustcal.data.tabular), which x_test's images are not
        ({"x_train": np.zeros((12, 48), np.uint8)}, ["x_test", "x_train's (12, 48) is a table", "(N, C, H, W)"]),
        ({"x_train": np.full((12, 3, 5, 5), 1.5)}, ["x_train", "outside [0, 1]"]),
        ({"y_train": np.linspace(0, 2, 12)}, ["y_train", "float64", "integers 0..K−1"]),
        ({"y_train": np.eye(3)[np.arange(12) % 3]}, ["y_train", "one-hot", "numpy.argmax"]),
        ({"y_train": np.arange(11) % 3}, ["y_train", "not 12 integer labels"]),
        (
            {"classes": np.array(["a", "b"])},
            ["y_train holds label 2 (4 images); y_test holds label 2 (2 images), outside the 2 classes"],
        ),
    ],
)
def test_npz_refusals_name_the_file_the_array_and_the_fix(tmp_path, changes, texts):
    path = write_arrays(tmp_path / "mine.npz", **changes)
    before = path.read_bytes()
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw(npz_spec(path), tmp_path)
    assert_refusal(err, path, *texts)
    if "Python objects" in texts:
        assert "\n" not in str(err.value), "one line"
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["mine.npz"]


def test_npz_file_refusals(tmp_path):
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download(npz_spec(tmp_path / "missing.npz"), tmp_path)
    assert_refusal(err, tmp_path / "missing.npz", "no such file")
    np.save(tmp_path / "one.npy", np.zeros(3))
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download(npz_spec(tmp_path / "one.npy"), tmp_path)
    assert_refusal(err, tmp_path / "one.npy", "not named arrays")
    (tmp_path / "text.npz").write_text("x")
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download(npz_spec(tmp_path / "text.npz"), tmp_path)
    assert_refusal(err, tmp_path / "text.npz", "not an .npz archive")
    path = write_arrays(tmp_path / "named.npz", classes=np.array(["a", "b", "c"]))
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw(npz_spec(path, classes=("a", "b", "d")), tmp_path)
    assert_refusal(err, path, "classes: a, b, d", "a, b, c")
