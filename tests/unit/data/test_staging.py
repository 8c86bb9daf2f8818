"""Dataset download, reading and splitting (docs/method.md §1) on files in torchvision's formats."""

import csv
import gzip
import hashlib
import io
import pickle
import shutil
import struct
import tarfile
import urllib.error
import urllib.request

import numpy as np
import pytest
from helpers.payload import Payload

from trustcal.data import checksums, cifar, idx
from trustcal.data import staging as data
from trustcal.data.synthetic import write_cifar10, write_mnist


@pytest.mark.parametrize("dataset,shape", [("mnist", (1, 28, 28)), ("cifar10", (3, 32, 32))])
def test_reads_torchvision_formats_as_uint8_nchw(tiny_data, dataset, shape):
    x_train, y_train, x_test, y_test = data.load_raw(dataset, tiny_data, verify_checksums=False)
    assert x_train.shape == (200, *shape) and x_test.shape == (60, *shape)
    assert x_train.dtype == np.uint8 and y_train.dtype == np.int64
    assert set(np.unique(y_train)) == set(range(10))


def test_cifar_channel_order_survives_the_round_trip(tmp_path):
    from trustcal.data.synthetic import class_images, write_cifar10

    write_cifar10(tmp_path, n_train=50, n_test=10, seed=7)
    expected, _ = class_images(50, (3, 32, 32), 7)
    x_train = data.load_raw("cifar10", tmp_path, verify_checksums=False)[0]
    np.testing.assert_array_equal(x_train, expected)


def test_checksummed_cifar_rejects_synthetic_batches(tiny_data):
    with pytest.raises(checksums.DatasetUnavailable, match="cifar-10-python.tar.gz"):
        data.load_raw("cifar10", tiny_data, verify_checksums=True)


# --- CIFAR-10's pickled batches, read without running code (issue 27) -----------------------------


class _Python2Pickler(pickle._Pickler):
    """Writes every str and bytes as Python 2's str (SHORT_BINSTRING/BINSTRING), as Python 2's cPickle wrote
    the official batches; Python 3 reads them back as str with encoding="latin1"."""

    dispatch = pickle._Pickler.dispatch.copy()

    def _save_python2_str(self, obj):
        raw = obj.encode("latin1") if isinstance(obj, str) else obj
        if len(raw) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(raw)]) + raw)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(raw)) + raw)
        self.memoize(obj)

    dispatch[str] = dispatch[bytes] = _save_python2_str


def _pickled(obj, form: str) -> bytes:
    """``obj`` pickled as a CIFAR-10 batch may be: ``python2`` (the official files: Python 2's str, NumPy's
    old module name), or protocol ``2`` (Python 3's bytes through _codecs.encode: the synthetic and the
    rebuilt batches), ``4`` or ``5`` (NumPy's buffer form)."""
    if form != "python2":
        return pickle.dumps(obj, protocol=int(form))
    buf = io.BytesIO()
    _Python2Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue().replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")


def write_cifar10_as(root, form: str, seed: int = 3):
    """Synthetic CIFAR-10 batches in torchvision's layout, pickled in ``form`` (:func:`_pickled`)."""
    from trustcal.data.synthetic import CIFAR_LABEL_NAMES, class_images

    batches = root / "cifar-10-batches-py"
    batches.mkdir(parents=True)
    x, y = class_images(60, (3, 32, 32), seed)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name, xb, yb in zip(names, np.array_split(x, 6), np.array_split(y, 6)):
        batch = {"batch_label": name, "labels": [int(v) for v in yb], "data": xb.reshape(len(xb), -1)}
        batch["filenames"] = [f"{name}_{i}.png" for i in range(len(xb))]
        (batches / name).write_bytes(_pickled(batch, form))
    meta = {"label_names": CIFAR_LABEL_NAMES, "num_cases_per_batch": 10, "num_vis": 3072}
    (batches / "batches.meta").write_bytes(_pickled(meta, form))
    return batches


def torchvision_cifar10(root):
    """(x_train, y_train, x_test, y_test) as torchvision's CIFAR10 reads them (md5s unchecked), in load_raw's layout."""
    import torchvision.datasets as tvd

    class Unchecked(tvd.CIFAR10):
        train_list = [[name, None] for name, _ in tvd.CIFAR10.train_list]
        test_list = [[name, None] for name, _ in tvd.CIFAR10.test_list]
        meta = {**tvd.CIFAR10.meta, "md5": None}

    out = []
    for train in (True, False):
        ds = Unchecked(str(root), train=train, download=False)
        out += [np.ascontiguousarray(np.asarray(ds.data, np.uint8).transpose(0, 3, 1, 2)), np.asarray(ds.targets)]
    return out


@pytest.mark.parametrize("form", ["python2", "2", "4", "5"])
def test_cifar_batches_read_as_torchvision_reads_them(tmp_path, form):
    write_cifar10_as(tmp_path, form)
    ours = data.load_raw("cifar10", tmp_path, verify_checksums=False)
    theirs = torchvision_cifar10(tmp_path)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
        assert a.flags.c_contiguous
    assert [a.dtype for a in ours] == [np.uint8, np.int64, np.uint8, np.int64]
    assert ours[0].shape == (50, 3, 32, 32) and ours[2].shape == (10, 3, 32, 32)


def test_the_synthetic_batches_read_as_torchvision_reads_them(tiny_data):
    for a, b in zip(data.load_raw("cifar10", tiny_data, verify_checksums=False), torchvision_cifar10(tiny_data)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["data_batch_3", "test_batch", "batches.meta"])
def test_a_cifar_batch_replaced_by_a_pickle_payload_is_refused_and_never_run(tmp_path, name):
    """Issue 27: with verify_checksums false (rebuilt CIFAR-10, tests/tiny.yaml), a batch file is read
    by an unpickler that builds plain data and NumPy arrays only: a pickle naming anything else
    (here os.system) is refused with the file's name, and nothing in it runs."""
    batches = write_cifar10(tmp_path, n_train=50, n_test=10)
    marker = tmp_path / "ran"
    payload = _pickled({"batch_label": "x", "labels": [0], "data": Payload(marker)}, "2")
    pickle.loads(payload)  # the payload is live: pickle.load runs it
    assert marker.exists()
    marker.unlink()
    (batches / name).write_bytes(payload)
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.load_raw("cifar10", tmp_path, verify_checksums=False)
    first = str(err.value).splitlines()[0]
    assert str(batches / name) in first and "system" in first and "Fix:" in first
    assert not marker.exists(), "the batch's pickle must not run"


@pytest.mark.parametrize(
    "content,expected",
    [
        (b"\x80\x02}q\x00", "unreadable"),  # truncated
        (pickle.dumps([1, 2, 3], protocol=2), "not a CIFAR-10 batch"),
        (pickle.dumps({"labels": [1]}, protocol=2), "not a CIFAR-10 batch"),
    ],
)
def test_a_damaged_cifar_batch_is_named(tmp_path, content, expected):
    batches = write_cifar10(tmp_path, n_train=50, n_test=10)
    (batches / "data_batch_2").write_bytes(content)
    with pytest.raises(checksums.DatasetUnavailable, match=rf"data_batch_2: {expected}.*Fix:"):
        data.load_raw("cifar10", tmp_path, verify_checksums=False)


def test_real_mnist_test_files_load_through_the_same_code(tmp_path, shared):
    """The original t10k archives match torchvision's md5s and read through load_raw."""
    mnist_test_files = shared("datasets/mnist-test")
    raw = write_mnist(tmp_path, n_train=20, n_test=10)
    md5s = idx.MNIST_ARCHIVE_MD5  # torchvision's
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        archive = mnist_test_files / f"{name}.gz"
        assert hashlib.md5(archive.read_bytes()).hexdigest() == md5s[f"{name}.gz"]
        (raw / name).write_bytes(gzip.decompress(archive.read_bytes()))
    _, _, x_test, y_test = data.load_raw("mnist", tmp_path)
    assert x_test.shape == (10000, 1, 28, 28) and x_test.dtype == np.uint8
    assert np.bincount(y_test).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert x_test.max() == 255 and x_test.min() == 0
    assert y_test[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]


# --- download and staging ------------------------------------------------------------------------


def md5(content: bytes) -> str:
    return hashlib.md5(content).hexdigest()


def gz(content: bytes, level: int) -> bytes:
    return gzip.compress(content, compresslevel=level, mtime=0)


def tarball(members: dict[str, bytes], level: int = 9, symlinks: dict[str, str] | None = None) -> bytes:
    """A tar.gz of ``members`` (name → bytes) and ``symlinks`` (name → target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=level) as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def read_manifest(verified, path):
    data.write_manifest(verified, path)
    with open(path) as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


@pytest.fixture
def mnist_official(tmp_path, monkeypatch):
    """Synthetic IDX files standing in for MNIST: the md5 tables are patched to them, with the
    gzip level-9 archives as the "official" archives. Returns {name: uncompressed bytes}."""
    raw = write_mnist(tmp_path / "source", n_train=50, n_test=20)
    contents = {name: (raw / name).read_bytes() for name in idx.MNIST_FILES}
    monkeypatch.setattr(idx, "MNIST_CONTENT_MD5", {n: md5(c) for n, c in contents.items()})
    monkeypatch.setattr(idx, "MNIST_ARCHIVE_MD5", {f"{n}.gz": md5(gz(c, 9)) for n, c in contents.items()})
    return contents


@pytest.fixture
def cifar_official(tmp_path, monkeypatch):
    """Synthetic CIFAR-10 batches with the md5 tables patched to them and to their "official"
    tarball. Returns ({name: batch bytes}, the official tarball's bytes)."""
    batches = write_cifar10(tmp_path / "source", n_train=50, n_test=10)
    contents = {name: (batches / name).read_bytes() for name in cifar.CIFAR10_CONTENT_MD5}
    official = tarball({f"cifar-10-batches-py/{n}": c for n, c in contents.items()})
    monkeypatch.setattr(cifar, "CIFAR10_CONTENT_MD5", {n: md5(c) for n, c in contents.items()})
    monkeypatch.setattr(cifar, "CIFAR10_ARCHIVE_MD5", md5(official))
    return contents, official


def stage(directory, files: dict[str, bytes]):
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (directory / name).write_bytes(content)


@pytest.mark.parametrize("level,expected", [(9, checksums.ARCHIVE_MD5), (1, checksums.CONTENT_MD5)])
def test_staged_mnist_archives_are_verified_and_extracted_offline(
    tmp_path, mnist_official, no_network, level, expected
):
    """Level 1 recompresses the archives: their md5 differs from the official one, their content does not."""
    raw = tmp_path / "data" / "MNIST" / "raw"
    archives = {f"{n}.gz": gz(c, level) for n, c in mnist_official.items()}
    stage(raw, archives)
    if level == 1:
        assert all(md5(a) != idx.MNIST_ARCHIVE_MD5[n] for n, a in archives.items())
    verified = data.download("mnist", tmp_path / "data", allow_download=False)
    assert verified == dict.fromkeys(data.raw_files("mnist", tmp_path / "data"), expected)
    for name, content in mnist_official.items():
        assert (raw / name).read_bytes() == content
        assert (raw / f"{name}.gz").read_bytes() == archives[f"{name}.gz"]
    assert sorted(p.name for p in raw.iterdir()) == sorted([*archives, *mnist_official])  # no temporaries
    x_train, _, x_test, _ = data.load_raw("mnist", tmp_path / "data")
    assert x_train.shape == (50, 1, 28, 28) and x_test.shape == (20, 1, 28, 28)


def test_staged_mnist_idx_files_are_accepted_by_content(tmp_path, mnist_official, no_network):
    raw = tmp_path / "MNIST" / "raw"
    stage(raw, mnist_official)
    verified = data.download("mnist", tmp_path, allow_download=False)
    assert set(verified.values()) == {checksums.CONTENT_MD5}
    assert sorted(p.name for p in raw.iterdir()) == sorted(mnist_official)


@pytest.mark.parametrize("allow_download", [False, True])
@pytest.mark.parametrize("form", ["archive", "extracted"])
def test_staged_file_with_wrong_content_is_named_and_kept(tmp_path, mnist_official, no_network, form, allow_download):
    raw = tmp_path / "MNIST" / "raw"
    wrong = bytearray(mnist_official["train-images-idx3-ubyte"])
    wrong[-1] ^= 0xFF
    bad = raw / ("train-images-idx3-ubyte" + (".gz" if form == "archive" else ""))
    staged = gz(bytes(wrong), 9) if form == "archive" else bytes(wrong)
    stage(raw, {bad.name: staged})
    stage(raw, {f"{n}.gz": gz(c, 9) for n, c in mnist_official.items() if n != "train-images-idx3-ubyte"})
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download("mnist", tmp_path, allow_download=allow_download)
    message = str(err.value)
    for text in [
        str(bad),
        md5(staged),
        idx.MNIST_ARCHIVE_MD5["train-images-idx3-ubyte.gz"],
        idx.MNIST_CONTENT_MD5["train-images-idx3-ubyte"],
        "replace",
        "verify_checksums: {mnist: false",
    ]:
        assert text in message
    assert message.count("\n  ") == 1, "only the bad file is named"
    assert bad.read_bytes() == staged
    if form == "archive":
        assert not (raw / "train-images-idx3-ubyte").exists()


def test_verify_checksums_false_accepts_it_and_says_so(tmp_path, mnist_official, no_network, caplog):
    raw = tmp_path / "data" / "MNIST" / "raw"
    staged = {f"{n}.gz": gz(c[::-1], 9) for n, c in mnist_official.items()}  # nothing matches
    stage(raw, staged)
    verified = data.download("mnist", tmp_path / "data", verify_checksums=False, allow_download=False)
    rows = read_manifest(verified, tmp_path / "raw_manifest.tsv")
    assert list(rows[0]) == ["file", "bytes", "md5", "verified"]
    assert [r["file"] for r in rows] == data.raw_files("mnist", tmp_path / "data")
    assert {r["verified"] for r in rows} == {"not checked (verify_checksums: false)"}
    assert rows[0]["md5"] == md5(mnist_official["train-images-idx3-ubyte"][::-1])
    assert any(r.levelname == "WARNING" and "verify_checksums is false" in r.message for r in caplog.records)
    assert all((raw / n).read_bytes() == c for n, c in staged.items())


@pytest.mark.parametrize("level,expected", [(9, checksums.ARCHIVE_MD5), (1, checksums.CONTENT_MD5)])
def test_staged_cifar_tarball_is_verified_and_extracted_offline(tmp_path, cifar_official, no_network, level, expected):
    contents, official = cifar_official
    staged = official if level == 9 else tarball({f"cifar-10-batches-py/{n}": c for n, c in contents.items()}, level)
    stage(tmp_path, {"cifar-10-python.tar.gz": staged})
    verified = data.download("cifar10", tmp_path, allow_download=False)
    assert verified == dict.fromkeys(data.raw_files("cifar10", tmp_path), expected)
    batches = tmp_path / "cifar-10-batches-py"
    assert {p.name: p.read_bytes() for p in batches.iterdir()} == contents
    assert (tmp_path / "cifar-10-python.tar.gz").read_bytes() == staged
    assert data.load_raw("cifar10", tmp_path)[0].shape == (50, 3, 32, 32)  # checked against the patched md5s


def test_cifar_extraction_takes_only_the_expected_members(tmp_path, cifar_official, no_network):
    contents, _ = cifar_official
    members = {f"./cifar-10-batches-py/{n}": c for n, c in contents.items()}
    members |= {
        "../escaped": b"x",
        "cifar-10-batches-py/../../escaped2": b"x",
        "/tmp/absolute-escape": b"x",
        "cifar-10-batches-py/readme.html": b"x",
    }
    stage(tmp_path / "data", {"cifar-10-python.tar.gz": tarball(members)})
    data.download("cifar10", tmp_path / "data", allow_download=False)
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["cifar-10-batches-py", "cifar-10-python.tar.gz"]
    assert sorted(p.name for p in (tmp_path / "data" / "cifar-10-batches-py").iterdir()) == sorted(contents)
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "escaped2").exists()


def test_cifar_tarball_with_a_link_for_a_batch_is_rejected(tmp_path, cifar_official, no_network):
    contents, _ = cifar_official
    members = {f"cifar-10-batches-py/{n}": c for n, c in contents.items() if n != "data_batch_1"}
    stage(
        tmp_path,
        {"cifar-10-python.tar.gz": tarball(members, symlinks={"cifar-10-batches-py/data_batch_1": "/etc/passwd"})},
    )
    with pytest.raises(checksums.DatasetUnavailable, match="lacks cifar-10-batches-py/data_batch_1"):
        data.download("cifar10", tmp_path, verify_checksums=False, allow_download=False)
    assert not (tmp_path / "cifar-10-batches-py").exists()


def test_cifar_tarball_with_wrong_content_is_named_and_kept(tmp_path, cifar_official, no_network):
    contents, _ = cifar_official
    staged = tarball({f"cifar-10-batches-py/{n}": (c if n != "test_batch" else c + b"\0") for n, c in contents.items()})
    stage(tmp_path, {"cifar-10-python.tar.gz": staged})
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download("cifar10", tmp_path, allow_download=False)
    message = str(err.value)
    for text in [
        str(tmp_path / "cifar-10-python.tar.gz"),
        md5(staged),
        cifar.CIFAR10_ARCHIVE_MD5,
        "test_batch",
        cifar.CIFAR10_CONTENT_MD5["test_batch"],
        "verify_checksums: {cifar10: false",
    ]:
        assert text in message
    assert (tmp_path / "cifar-10-python.tar.gz").read_bytes() == staged
    assert not (tmp_path / "cifar-10-batches-py").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cifar-10-python.tar.gz", "source"]  # no temporaries


def test_staged_cifar_batches_are_checked_by_content(tmp_path, cifar_official, no_network):
    contents, _ = cifar_official
    batches = tmp_path / "cifar-10-batches-py"
    stage(batches, contents)
    verified = data.download("cifar10", tmp_path, allow_download=False)
    assert set(verified.values()) == {checksums.CONTENT_MD5}
    (batches / "batches.meta").write_bytes(b"changed")
    with pytest.raises(checksums.DatasetUnavailable, match="batches.meta: md5 " + md5(b"changed")):
        data.download("cifar10", tmp_path, allow_download=False)
    assert (batches / "batches.meta").read_bytes() == b"changed"
    verified = data.download("cifar10", tmp_path, verify_checksums=False, allow_download=False)
    assert set(verified.values()) == {checksums.NOT_CHECKED}


@pytest.mark.parametrize(
    "dataset,expected",
    [
        (
            "mnist",
            [
                "train-images-idx3-ubyte.gz",
                "f68b3c2dcbeaaa9fbdd348bbdeb94873",
                "6bbc9ace898e44ae57da46a324031adb",
                "MNIST/raw",
            ],
        ),
        ("cifar10", ["cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a", "c99cafc152244af753f735de768cd75f"]),
    ],
)
def test_failed_download_says_which_files_to_put_where(tmp_path, offline, dataset, expected):
    with pytest.raises(checksums.DatasetUnavailable) as err:
        data.download(dataset, tmp_path / "data")
    message = str(err.value)
    for text in expected + [str(tmp_path / "data"), "could not be fetched"]:
        assert text in message
    assert offline, "the download was attempted"
    # the last line is the fix: the air-gapped route (workflow/scripts/_common.py logs it with the cause)
    assert message.splitlines()[-1] == (
        "Fix: without network access to the dataset hosts, stage the files listed above by hand and run with "
        "download: false (--config download=false): the air-gapped route, docs/usage.md#the-datasets."
    )


@pytest.mark.parametrize("dataset", checksums.DATASETS)
def test_download_switched_off_never_touches_the_network(tmp_path, no_network, dataset):
    with pytest.raises(checksums.DatasetUnavailable, match="download: false") as err:
        data.download(dataset, tmp_path, allow_download=False)
    assert "archive md5" in str(err.value) and str(tmp_path) in str(err.value)


@pytest.fixture
def mirrors(monkeypatch, mnist_official):
    """The MNIST mirrors, served locally: the first is down; the second serves each file corrupt
    on its first request, then the official archive. Returns the URLs requested."""
    import torchvision.datasets.utils as tvu

    requested = []

    def urlretrieve(url, filename, *args):
        requested.append(url)
        if url.startswith(("https://ossci", "http://ossci")):
            raise urllib.error.URLError("Name or service not known")
        name = url.rsplit("/", 1)[1].removesuffix(".gz")
        first = requested.count(url) == 1
        with open(filename, "wb") as fh:
            fh.write(b"corrupt" if first else gz(mnist_official[name], 9))

    monkeypatch.setattr(tvu, "_get_redirect_url", lambda url, max_hops=3: url)
    monkeypatch.setattr(tvu, "_urlretrieve", urlretrieve)
    return requested


def test_download_fetches_missing_archives_only_and_retries_a_corrupt_one(tmp_path, mnist_official, mirrors):
    """A staged (recompressed) archive is used as it is; the others are fetched, a corrupt download
    deleted and fetched once more from the same mirror."""
    raw = tmp_path / "MNIST" / "raw"
    staged = gz(mnist_official["train-images-idx3-ubyte"], 1)
    stage(raw, {"train-images-idx3-ubyte.gz": staged})
    verified = data.download("mnist", tmp_path)
    assert list(verified.values()) == [checksums.CONTENT_MD5] + 3 * [checksums.ARCHIVE_MD5]
    assert (raw / "train-images-idx3-ubyte.gz").read_bytes() == staged
    assert not any("train-images" in url for url in mirrors)
    assert any(url.startswith("https://ossci") for url in mirrors), "the first mirror was tried"
    lecun = [url for url in mirrors if "lecun" in url]
    for name in ("train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        assert lecun.count(f"http://yann.lecun.com/exdb/mnist/{name}.gz") == 2
        assert (raw / name).read_bytes() == mnist_official[name]
    assert sorted(p.name for p in raw.iterdir()) == sorted([*mnist_official, *(f"{n}.gz" for n in mnist_official)])


def test_files_already_present_are_used_without_network(tiny_data, no_network):
    assert list(data.download("mnist", tiny_data, verify_checksums=False)) == data.raw_files("mnist", tiny_data)
    assert list(data.download("cifar10", tiny_data, verify_checksums=False)) == data.raw_files("cifar10", tiny_data)


def test_real_mnist_archives_staged_as_they_are(tmp_path, no_network, shared):
    """The shared MNIST: official t10k archives, recompressed training archives with official content."""
    mnist_files = shared("datasets/mnist")  # the complete MNIST; training archives recompressed
    raw = tmp_path / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for archive in sorted(mnist_files.glob("*-ubyte.gz")):
        shutil.copyfile(archive, raw / archive.name)
    verified = data.download("mnist", tmp_path / "data", allow_download=False)
    rows = {r["file"].rsplit("/", 1)[1]: r for r in read_manifest(verified, tmp_path / "raw_manifest.tsv")}
    assert {name: r["verified"] for name, r in rows.items()} == {
        "train-images-idx3-ubyte": "content-md5",
        "train-labels-idx1-ubyte": "content-md5",
        "t10k-images-idx3-ubyte": "archive-md5",
        "t10k-labels-idx1-ubyte": "archive-md5",
    }
    assert {name: r["md5"] for name, r in rows.items()} == idx.MNIST_CONTENT_MD5
    for archive in mnist_files.glob("*-ubyte.gz"):
        assert (raw / archive.name).read_bytes() == archive.read_bytes()
