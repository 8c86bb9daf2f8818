"""trustcal.shift.sets: which sets a run gets and their names, deterministic images from the seed, the resizing
of another dataset's test images, the epochs chosen, and the config check's one line."""

from __future__ import annotations

import numpy as np
import pytest

from trustcal.config import ConfigError, validate_config
from trustcal.shift.sets import (
    CIFAR_SHAPE,
    MNIST_SHAPE,
    ShiftSet,
    chosen_epochs,
    computable,
    make_set,
    set_seed,
    shift_sets,
    subset_indices,
    to_shape,
)

SHIFT = {"corruptions": ["shot_noise"], "severities": [3, 1], "ood": ["noise_uniform", "fashion_mnist"]}


def test_a_run_gets_the_corruptions_of_its_shape_then_the_ood_sets():
    cifar = shift_sets(SHIFT, CIFAR_SHAPE, "cifar10")
    assert [(s.name, s.kind, s.severities) for s in cifar] == [
        ("shot_noise", "corruption", (1, 3)),
        ("ood-noise_uniform", "noise", (1,)),
        ("ood-fashion_mnist", "dataset", (1,)),
    ]
    mnist = shift_sets(SHIFT, MNIST_SHAPE, "mnist")
    assert mnist[0].severities == (1,)  # MNIST-C: one fixed strength, whatever severities says
    assert [s.name for s in shift_sets(SHIFT, MNIST_SHAPE, "fashion_mnist")] == ["shot_noise", "ood-noise_uniform"]
    assert [s.name for s in shift_sets({"corruptions": ["all"]}, MNIST_SHAPE, "mnist")] == computable(MNIST_SHAPE)
    assert "identity" not in computable(MNIST_SHAPE) and "frost" not in computable(CIFAR_SHAPE)
    assert shift_sets({}, MNIST_SHAPE, "mnist") == []


def test_seeds_are_stable_and_differ_per_set():
    import hashlib

    words = hashlib.sha256(b"0/shot_noise").digest()[:8]  # the contract: the same on every machine and Python
    assert set_seed(0, "shot_noise") == int.from_bytes(words, "little") == 11058447810933201363
    assert len({set_seed(0, "a"), set_seed(1, "a"), set_seed(0, "b"), set_seed(0, "a", 1)}) == 4


def test_the_subset_is_sorted_drawn_once_and_all_by_default():
    assert (subset_indices(5, None, 0) == np.arange(5)).all() and (subset_indices(5, 9, 0) == np.arange(5)).all()
    a = subset_indices(100, 10, 3)
    assert len(set(a)) == 10 and (np.diff(a) > 0).all() and (a == subset_indices(100, 10, 3)).all()
    assert not (a == subset_indices(100, 10, 4)).all()


@pytest.fixture
def digits():
    rng = np.random.default_rng(1)
    return rng.integers(0, 256, (12, 1, 28, 28), dtype=np.uint8), rng.integers(0, 10, 12)


def test_a_set_is_the_same_from_the_same_seed_and_keeps_its_labels(digits):
    images, labels = digits
    spec = ShiftSet("shot_noise", "corruption", "shot_noise")
    a = make_set(spec, images, labels, seed=0, samples=5)
    b = make_set(spec, images, labels, seed=0, samples=5)
    c = make_set(spec, images, labels, seed=1, samples=5)
    assert a["images"].shape == (1, 5, 1, 28, 28) and a["images"].dtype == np.uint8
    assert str(a["sha256"]) == str(b["sha256"]) != str(c["sha256"])
    assert (a["labels"] == labels[a["test_indices"]]).all()
    noise = make_set(ShiftSet("ood-noise_gaussian", "noise", "noise_gaussian"), images, labels, seed=0)
    assert noise["images"].shape == (1, 12, 1, 28, 28) and (noise["labels"] == -1).all()


def test_another_datasets_images_are_resized_and_their_channels_converted():
    grey = np.full((2, 1, 28, 28), 100, dtype=np.uint8)
    rgb = to_shape(grey, CIFAR_SHAPE)
    assert rgb.shape == (2, 3, 32, 32) and (rgb == 100).all()  # a flat image stays flat
    colour = np.zeros((1, 3, 32, 32), dtype=np.uint8)
    colour[:, 0] = 255  # pure red: luma 0.299 × 255
    assert (to_shape(colour, MNIST_SHAPE) == 76).all() and to_shape(colour, MNIST_SHAPE).shape == (1, 1, 28, 28)
    ramp = np.tile(np.arange(0, 256, 8, dtype=np.uint8), (1, 1, 32, 1))  # columns 0, 8, …, 248
    small = to_shape(ramp, (1, 32, 16))
    assert np.allclose(small[0, 0, 0], np.arange(16) * 16 + 4, atol=1)  # pairs of columns averaged
    spec = ShiftSet("ood-cifar10", "dataset", "cifar10")
    out = make_set(
        spec, np.zeros((4, 1, 28, 28), np.uint8), np.zeros(4, int), samples=3, other_test=colour.repeat(5, 0)
    )
    assert out["images"].shape == (1, 3, 1, 28, 28) and len(out["source_indices"]) == 3


def test_epochs_by_word_and_number():
    assert chosen_epochs(["best", "last", 2], best=5, last=9) == [("best", 5), ("last", 9), ("2", 2)]


@pytest.mark.parametrize(
    "shift, line",
    [
        (
            {"corruptions": ["gausian_noise"]},
            "config.yaml: shift.corruptions: 'gausian_noise' (did you mean 'gaussian_noise'?) is not one of "
            "CIFAR-10-C's for run cifar10; valid: gaussian_noise,",
        ),
        ({"corruptions": ["shear"]}, "shift.corruptions: 'shear' is not one of CIFAR-10-C's for run cifar10"),
        ({"ood": ["fashon_mnist"]}, "shift.ood: 'fashon_mnist' (did you mean 'fashion_mnist'?) is no noise"),
        ({"epochs": [7]}, "shift.epochs: epoch 7 is past the last epoch (epochs: 3)"),
    ],
)
def test_a_bad_shift_setting_is_one_line_naming_the_key(shift, line):
    with pytest.raises(ConfigError) as err:
        validate_config({"datasets": ["cifar10"], "epochs": 3, "shift": shift})
    lines = str(err.value).splitlines()
    assert len(lines) == 2 and line in lines[1], str(err.value)


def test_the_default_is_off():
    assert validate_config({})["shift"] == {
        "corruptions": [],
        "severities": [1, 2, 3, 4, 5],
        "ood": [],
        "epochs": ["best", "last"],
        "samples": None,
        "official": None,
        "seed": 0,
    }


def _official_cifar(folder, images, labels, *, corruption="fog", levels=5):
    """Files in CIFAR-10-C's published layout: <corruption>.npy (levels × N, 32, 32, 3) and labels.npy."""
    stack = np.concatenate([np.roll(images, s, axis=-1) for s in range(levels)])  # a different image per level
    np.save(folder / f"{corruption}.npy", stack.transpose(0, 2, 3, 1))
    np.save(folder / "labels.npy", np.tile(labels, levels))
    return stack.reshape(levels, len(images), *images.shape[1:])


def test_official_files_are_read_instead_of_computed_and_checked(tmp_path):
    """CIFAR-10-C's and MNIST-C's published layouts: the severities asked for, the samples drawn, the labels
    those of the clean split; a file of another shape, other labels, or a pickle is one line naming it."""
    rng = np.random.default_rng(0)
    images, labels = rng.integers(0, 256, (40, 3, 32, 32), dtype=np.uint8), rng.integers(0, 10, 40)
    expected = _official_cifar(tmp_path, images, labels)
    spec = ShiftSet("fog", "corruption", "fog", (2, 5))
    arrays = make_set(spec, images, labels, samples=10, seed=3, official=tmp_path)
    chosen = arrays["test_indices"]
    np.testing.assert_array_equal(arrays["images"], expected[[1, 4]][:, chosen])
    np.testing.assert_array_equal(arrays["labels"], labels[chosen])
    with pytest.raises(ValueError, match=r"labels.npy: its labels are not the clean test split's .*\(\d+ differ\)"):
        make_set(spec, images, (labels + 1) % 10, official=tmp_path)
    with pytest.raises(
        ValueError,
        match=r"fog.npy: uint8 of shape \(200, 32, 32, 3\), where CIFAR-10-C gives uint8 of shape \(100, 32, 32, 3\)",
    ):
        make_set(spec, images[:20], labels[:20], official=tmp_path)
    np.save(tmp_path / "fog.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="fog.npy: not a NumPy array file"):
        make_set(spec, images, labels, official=tmp_path)
    with pytest.raises(ValueError, match="snow.npy: not found; stage CIFAR-10-C's published files there"):
        make_set(ShiftSet("snow", "corruption", "snow", (1,)), images, labels, official=tmp_path)
    digits, digit_labels = rng.integers(0, 256, (30, 1, 28, 28), dtype=np.uint8), rng.integers(0, 10, 30)
    (tmp_path / "stripe").mkdir()
    np.save(tmp_path / "stripe" / "test_images.npy", 255 - digits.transpose(0, 2, 3, 1))
    np.save(tmp_path / "stripe" / "test_labels.npy", digit_labels)
    arrays = make_set(ShiftSet("stripe", "corruption", "stripe", (1,)), digits, digit_labels, official=tmp_path)
    np.testing.assert_array_equal(arrays["images"][0], 255 - digits)


def test_a_published_file_missing_is_one_line_before_any_job(tmp_path):
    config = {"datasets": ["mnist"], "shift": {"corruptions": ["fog"], "official": str(tmp_path)}}
    with pytest.raises(
        ConfigError, match=r"shift\.official: .*fog/test_images\.npy not found \(corruption fog of run mnist\)"
    ):
        validate_config(config)
    (tmp_path / "fog").mkdir()
    for name in ("test_images.npy", "test_labels.npy"):
        np.save(tmp_path / "fog" / name, np.zeros(1, np.uint8))
    assert validate_config(config)["shift"]["official"] == str(tmp_path)  # the contents are checked by the job
