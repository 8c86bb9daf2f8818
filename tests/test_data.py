"""Dataset download, reading and splitting (SPEC §1) on files in torchvision's formats."""

import gzip
import hashlib
import urllib.error

import numpy as np
import pytest

from conftest import MNIST_TEST_FILES
from trustcal import data
from trustcal.synthetic import write_mnist


@pytest.mark.parametrize("dataset,shape", [("mnist", (1, 28, 28)), ("cifar10", (3, 32, 32))])
def test_reads_torchvision_formats_as_uint8_nchw(tiny_data, dataset, shape):
    x_train, y_train, x_test, y_test = data.load_raw(dataset, tiny_data, verify_checksums=False)
    assert x_train.shape == (200, *shape) and x_test.shape == (60, *shape)
    assert x_train.dtype == np.uint8 and y_train.dtype == np.int64
    assert set(np.unique(y_train)) == set(range(10))


def test_cifar_channel_order_survives_the_round_trip(tmp_path):
    from trustcal.synthetic import class_images, write_cifar10

    write_cifar10(tmp_path, n_train=50, n_test=10, seed=7)
    expected, _ = class_images(50, (3, 32, 32), 7)
    x_train = data.load_raw("cifar10", tmp_path, verify_checksums=False)[0]
    np.testing.assert_array_equal(x_train, expected)


def test_validation_is_the_unshuffled_tail(tiny_data, tmp_path):
    out = tmp_path / "splits.npz"
    sizes = data.prepare("mnist", tiny_data, out, verify_checksums=False)
    assert sizes == {"x_train": 180, "x_val": 20, "x_test": 60}
    splits = data.load_prepared(out)
    x_all = data.load_raw("mnist", tiny_data)[0]
    np.testing.assert_array_equal(splits["x_val"], x_all[180:])
    np.testing.assert_array_equal(splits["x_train"], x_all[:180])


def test_keras_split_point():
    assert data.split_validation(60000) == 54000
    assert data.split_validation(50000) == 45000
    assert data.split_validation(101) == 91  # ceil(90.9), as Keras


def test_checksummed_cifar_rejects_synthetic_batches(tiny_data):
    with pytest.raises(data.DatasetUnavailable, match="cifar-10-python.tar.gz"):
        data.load_raw("cifar10", tiny_data, verify_checksums=True)


@pytest.mark.skipif(not MNIST_TEST_FILES.exists(), reason=f"real MNIST test files not found in {MNIST_TEST_FILES}")
def test_real_mnist_test_files_load_through_the_same_code(tmp_path):
    """The original t10k archives match torchvision's md5s and read through load_raw."""
    raw = write_mnist(tmp_path, n_train=20, n_test=10)
    md5s = dict(data._torchvision_class("mnist", True).resources)
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        archive = MNIST_TEST_FILES / f"{name}.gz"
        assert hashlib.md5(archive.read_bytes()).hexdigest() == md5s[f"{name}.gz"]
        (raw / name).write_bytes(gzip.decompress(archive.read_bytes()))
    _, _, x_test, y_test = data.load_raw("mnist", tmp_path)
    assert x_test.shape == (10000, 1, 28, 28) and x_test.dtype == np.uint8
    assert np.bincount(y_test).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert x_test.max() == 255 and x_test.min() == 0
    assert y_test[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]


@pytest.fixture
def offline(monkeypatch):
    calls = []

    def refuse(url, *args, **kwargs):
        calls.append(url)
        raise urllib.error.URLError("Name or service not known")

    import torchvision.datasets.utils as tvu

    monkeypatch.setattr(tvu, "_get_redirect_url", refuse)
    return calls


@pytest.mark.parametrize("dataset,expected", [
    ("mnist", ["train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873", "MNIST/raw"]),
    ("cifar10", ["cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a"]),
])
def test_failed_download_says_which_files_to_put_where(tmp_path, offline, dataset, expected):
    with pytest.raises(data.DatasetUnavailable) as err:
        data.download(dataset, tmp_path / "data")
    message = str(err.value)
    for text in expected + [str(tmp_path / "data"), "could not be fetched"]:
        assert text in message
    assert offline, "the download was attempted"


def test_download_switched_off_never_touches_the_network(tmp_path, offline):
    with pytest.raises(data.DatasetUnavailable, match="download: false"):
        data.download("mnist", tmp_path, allow_download=False)
    assert offline == []


def test_corrupt_archive_is_deleted_and_fetched_once_more(tmp_path, offline):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    bad = raw / "train-images-idx3-ubyte.gz"
    bad.write_bytes(gzip.compress(b"not mnist"))
    with pytest.raises(data.DatasetUnavailable) as err:
        data.download("mnist", tmp_path)
    assert not bad.exists()
    assert len([u for u in offline if u.endswith("train-images-idx3-ubyte.gz")]) >= 1
    assert f"deleted archive(s) with a wrong checksum: {bad}" in str(err.value)


def test_files_already_present_are_used_without_network(tiny_data, offline):
    assert data.download("mnist", tiny_data, verify_checksums=False) == data.raw_files("mnist", tiny_data)
    assert data.download("cifar10", tiny_data, verify_checksums=False) == data.raw_files("cifar10", tiny_data)
    assert offline == []
