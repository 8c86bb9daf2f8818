"""trustcal.shift.corruptions: the registry, the arguments corrupt() accepts and refuses, and invariants that
hold whatever the reference (shape, dtype and layout kept, determinism, chunking, severity order)."""

from __future__ import annotations

import numpy as np
import pytest

from trustcal.shift import CORRUPTIONS, SEVERITIES, available, corrupt, unavailable

REFERENCE_ORDER = [
    "gaussian_noise",
    "shot_noise",
    "impulse_noise",
    "defocus_blur",
    "glass_blur",
    "motion_blur",
    "zoom_blur",
    "snow",
    "frost",
    "fog",
    "brightness",
    "contrast",
    "elastic_transform",
    "pixelate",
    "jpeg_compression",
]
RANDOM = {
    "gaussian_noise",
    "shot_noise",
    "impulse_noise",
    "glass_blur",
    "motion_blur",
    "snow",
    "frost",
    "fog",
    "elastic_transform",
}


@pytest.fixture(scope="module")
def images():
    """Six CIFAR-sized images, NCHW: noise, a flat grey one, a black one, a white one."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (6, 3, 32, 32), dtype=np.uint8)
    x[3], x[4], x[5] = 128, 0, 255
    return x


def test_registry_lists_cifar10c_fifteen_in_the_reference_order():
    assert list(CORRUPTIONS) == REFERENCE_ORDER
    assert {name for name, c in CORRUPTIONS.items() if c.random} == RANDOM
    for name, c in CORRUPTIONS.items():
        assert c.name == name and c.reference == name


def test_frost_is_left_out_with_its_reason_and_nothing_else_is():
    assert available() == [name for name in REFERENCE_ORDER if name != "frost"]
    reasons = unavailable()
    assert list(reasons) == ["frost"]
    assert "frost1.png" in reasons["frost"] and "not available" in reasons["frost"]
    assert CORRUPTIONS["frost"].function is None
    with pytest.raises(ValueError, match="cannot be computed here.*frost"):
        corrupt("frost", np.zeros((1, 3, 32, 32), np.uint8), 1, np.random.default_rng(0))


@pytest.mark.parametrize("name", [n for n in REFERENCE_ORDER if n != "frost"])
def test_shape_dtype_layout_and_determinism(images, name):
    rng = np.random.default_rng  # a fresh generator for each call: equal seeds, equal images
    out = corrupt(name, images, 2, rng(11))
    assert out.dtype == np.uint8 and out.shape == images.shape and out.flags.c_contiguous
    np.testing.assert_array_equal(out, corrupt(name, images, 2, rng(11)))
    nhwc = corrupt(name, images.transpose(0, 2, 3, 1), 2, rng(11), layout="NHWC")
    np.testing.assert_array_equal(nhwc, out.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(corrupt(name, images, 2, rng(11), chunk=4), out)  # chunks of 4 and 2
    np.testing.assert_array_equal(corrupt(name, images[:0], 2, rng(11)), images[:0])
    if CORRUPTIONS[name].random:
        assert not np.array_equal(corrupt(name, images, 2, rng(12)), out)
    else:
        np.testing.assert_array_equal(corrupt(name, images, 2), out)  # no rng needed


@pytest.mark.parametrize("name", ["gaussian_noise", "glass_blur", "fog", "snow"])
def test_a_randomstate_is_accepted_and_chunking_keeps_its_draws(images, name):
    out = corrupt(name, images, 4, np.random.RandomState(5))
    np.testing.assert_array_equal(corrupt(name, images, 4, np.random.RandomState(5), chunk=1), out)


@pytest.mark.parametrize("name", ["gaussian_noise", "shot_noise", "impulse_noise"])
def test_noise_grows_with_severity(images, name):
    x = images[:3]  # the noisy ones, away from 0 and 255 on average
    change = [np.abs(corrupt(name, x, s, np.random.default_rng(1)).astype(int) - x).mean() for s in SEVERITIES]
    assert all(a < b for a, b in zip(change, change[1:])), change


def test_flat_images_under_deterministic_corruptions(images):
    """Blurs keep a flat image flat. Contrast takes a flat grey 128 to 127, as the reference does: the mean
    of 1,024 values 128/255 is not exactly 128/255 in float64, and the result is truncated."""
    grey = images[3:4]
    for name in ("zoom_blur", "pixelate", "defocus_blur"):
        np.testing.assert_array_equal(corrupt(name, grey, 5), grey)
    assert np.all(corrupt("contrast", grey, 5) == 127)
    assert np.all(corrupt("brightness", images[5:6], 5) == 255)
    assert np.all(corrupt("brightness", images[4:5], 5) == int(0.3 * 255))


def test_refusals(images):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown corruption 'gausian_noise'.*did you mean 'gaussian_noise'"):
        corrupt("gausian_noise", images, 1, rng)
    for severity in (0, 6, 2.0, True, "3"):
        with pytest.raises(ValueError, match="severity must be an integer from 1 to 5"):
            corrupt("contrast", images, severity)
    with pytest.raises(ValueError, match="draws random numbers: pass rng"):
        corrupt("gaussian_noise", images, 1)
    with pytest.raises(ValueError, match="draws random numbers: pass rng"):
        corrupt("gaussian_noise", images, 1, 42)
    with pytest.raises(ValueError, match=r"images must be uint8 of shape \(N, 3, 32, 32\)"):
        corrupt("contrast", images.astype(np.float32), 1)
    with pytest.raises(ValueError, match=r"images must be uint8 of shape \(N, 32, 32, 3\) \(NHWC"):
        corrupt("contrast", images, 1, layout="NHWC")
    with pytest.raises(ValueError, match="32 × 32 RGB"):
        corrupt("contrast", np.zeros((2, 1, 28, 28), np.uint8), 1)
    with pytest.raises(ValueError, match="layout must be"):
        corrupt("contrast", images, 1, layout="CHW")
    with pytest.raises(ValueError, match="chunk must be a positive integer"):
        corrupt("contrast", images, 1, chunk=0)
    np.testing.assert_array_equal(corrupt("contrast", images, np.int64(2)), corrupt("contrast", images, 2))


def test_a_missing_library_is_reported_not_replaced(monkeypatch, images):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else find_spec(name, *a))
    needing = ["defocus_blur", "glass_blur", "elastic_transform"]
    assert [name for name in available() if name in needing] == []
    reasons = unavailable()
    assert all("needs scipy, not installed" in reasons[name] for name in needing)
    with pytest.raises(ValueError, match="cannot be computed here: needs scipy"):
        corrupt("glass_blur", images, 1, np.random.default_rng(0))
    assert "zoom_blur" in available() and "motion_blur" in available()
