"""trustcal.shift.mnist_c: the registry, the arguments corrupt_mnist() accepts and refuses, and invariants
that hold whatever the reference (shape, dtype and layout kept, determinism, chunking)."""

from __future__ import annotations

import numpy as np
import pytest

from trustcal.shift.mnist_c import MNIST_C, SEVERITIES, available_mnist, corrupt_mnist, unavailable_mnist

REFERENCE_ORDER = [
    "identity",
    "shot_noise",
    "impulse_noise",
    "glass_blur",
    "motion_blur",
    "shear",
    "scale",
    "rotate",
    "brightness",
    "translate",
    "stripe",
    "fog",
    "spatter",
    "dotted_line",
    "zigzag",
    "canny_edges",
]
RANDOM = {
    "shot_noise",
    "impulse_noise",
    "glass_blur",
    "motion_blur",
    "shear",
    "rotate",
    "translate",
    "fog",
    "spatter",
    "dotted_line",
    "zigzag",
}


@pytest.fixture(scope="module")
def images():
    """Six MNIST-sized images, (N, 1, 28, 28): noise, a bar on black, a flat grey one, a black one, a
    white one, sparse speckle."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (6, 1, 28, 28), dtype=np.uint8)
    x[1] = 0
    x[1, 0, 5:23, 12:16] = 255
    x[2], x[3], x[4] = 128, 0, 255
    x[5] = np.where(rng.random((1, 28, 28)) < 0.1, x[5], 0)
    return x


def test_registry_lists_mnist_c_in_the_reference_order():
    assert list(MNIST_C) == REFERENCE_ORDER
    assert {name for name, c in MNIST_C.items() if c.random} == RANDOM
    for name, c in MNIST_C.items():
        assert c.name == name and c.reference == name and c.function is not None and c.reason is None
    assert SEVERITIES == (1,)


def test_every_corruption_is_available_and_none_is_left_out():
    assert available_mnist() == REFERENCE_ORDER
    assert unavailable_mnist() == {}


@pytest.mark.parametrize("name", REFERENCE_ORDER)
def test_shape_dtype_layout_and_determinism(images, name):
    rng = np.random.default_rng  # a fresh generator for each call: equal seeds, equal images
    out = corrupt_mnist(images, name, 1, rng(11))
    assert out.dtype == np.uint8 and out.shape == images.shape and out.flags.c_contiguous
    np.testing.assert_array_equal(out, corrupt_mnist(images, name, 1, rng(11)))
    flat = corrupt_mnist(images[:, 0], name, 1, rng(11))  # (N, 28, 28) in, (N, 28, 28) out
    assert flat.shape == (6, 28, 28)
    np.testing.assert_array_equal(flat, out[:, 0])
    np.testing.assert_array_equal(corrupt_mnist(images, name, 1, rng(11), chunk=4), out)  # chunks of 4 and 2
    np.testing.assert_array_equal(corrupt_mnist(images[:0], name, 1, rng(11)), images[:0])
    if MNIST_C[name].random:
        assert not np.array_equal(corrupt_mnist(images, name, 1, rng(12)), out)
    else:
        np.testing.assert_array_equal(corrupt_mnist(images, name), out)  # no rng needed


@pytest.mark.parametrize("name", ["glass_blur", "fog", "zigzag", "translate"])
def test_a_randomstate_is_accepted_and_chunking_keeps_its_draws(images, name):
    out = corrupt_mnist(images, name, 1, np.random.RandomState(5))
    np.testing.assert_array_equal(corrupt_mnist(images, name, 1, np.random.RandomState(5), chunk=1), out)


def test_glass_blur_reads_a_randomstate_as_the_reference_draws():
    """The swaps decoded from the RandomState's words are those of the reference's calls, one pixel at a
    time (``choice([True, False], 1)``, then ``randint(-1, 1, size=(2,))`` when chosen), and the state
    is left where those calls leave it."""
    from trustcal.shift.mnist_c import _glass_draws

    ours, theirs = np.random.RandomState(9), np.random.RandomState(9)
    chosen, shifts = _glass_draws(ours, 2, 300)
    for i in range(2):
        for p in range(300):
            picked = bool(theirs.choice([True, False], 1)[0])
            assert chosen[i, p] == picked
            if picked:
                np.testing.assert_array_equal(shifts[i, p], theirs.randint(-1, 1, size=(2,)))
    assert ours.randint(0, 2**31) == theirs.randint(0, 2**31)


def test_deterministic_corruptions_on_plain_images(images):
    """Stripe inverts the outer columns; brightness lifts black to 127 (0.5 × 255, truncated) and keeps
    white; canny finds no edge in a flat image; scale shrinks a bar towards the centre."""
    black, white, bar = images[3:4], images[4:5], images[1:2]
    striped = corrupt_mnist(black, "stripe")
    assert np.all(striped[..., :7] == 255) and np.all(striped[..., 7:21] == 0) and np.all(striped[..., 21:] == 255)
    assert np.all(corrupt_mnist(black, "brightness") == 127)
    assert np.all(corrupt_mnist(white, "brightness") == 255)
    assert not corrupt_mnist(images[2:3], "canny_edges").any()
    assert set(np.unique(corrupt_mnist(bar, "canny_edges"))) == {0, 255}
    shrunk = corrupt_mnist(bar, "scale")
    assert 0 < (shrunk > 0).sum() < (bar > 0).sum()
    np.testing.assert_array_equal(corrupt_mnist(images, "identity"), images)


def test_refusals(images):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown MNIST-C corruption 'zig_zag'.*did you mean 'zigzag'"):
        corrupt_mnist(images, "zig_zag", 1, rng)
    with pytest.raises(ValueError, match="unknown MNIST-C corruption 'frost'"):
        corrupt_mnist(images, "frost", 1, rng)
    for severity in (0, 2, 5, 1.0, True, "1"):
        with pytest.raises(ValueError, match="severity must be 1.*one fixed strength"):
            corrupt_mnist(images, "stripe", severity)
    with pytest.raises(ValueError, match="draws random numbers: pass rng"):
        corrupt_mnist(images, "shot_noise")
    with pytest.raises(ValueError, match="draws random numbers: pass rng"):
        corrupt_mnist(images, "shot_noise", 1, 42)
    bad = (
        images.astype(np.float32),
        np.zeros((2, 3, 28, 28), np.uint8),
        np.zeros((2, 32, 32), np.uint8),
        np.zeros((2, 1, 32, 32), np.uint8),
        np.zeros((28, 28), np.uint8),
        np.zeros((2, 28, 28, 1), np.uint8),
    )
    for x in bad:
        with pytest.raises(ValueError, match=r"images must be uint8 of shape \(N, 1, 28, 28\) or \(N, 28, 28\)"):
            corrupt_mnist(x, "stripe")
    for chunk in (0, -1, 1.5):
        with pytest.raises(ValueError, match="chunk must be a positive integer"):
            corrupt_mnist(images, "stripe", chunk=chunk)
    np.testing.assert_array_equal(corrupt_mnist(images, "stripe", np.int64(1)), corrupt_mnist(images, "stripe"))


def test_a_missing_library_is_reported_not_replaced(monkeypatch, images):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else find_spec(name, *a))
    needing = ["glass_blur", "spatter", "canny_edges"]
    assert [name for name in available_mnist() if name in needing] == []
    reasons = unavailable_mnist()
    assert list(reasons) == needing
    assert all("needs scipy, not installed" in reasons[name] for name in needing)
    with pytest.raises(ValueError, match="cannot be computed here: needs scipy"):
        corrupt_mnist(images, "glass_blur", 1, np.random.default_rng(0))
    assert "motion_blur" in available_mnist() and "fog" in available_mnist()


def test_the_package_imports_no_image_library():
    import ast
    from pathlib import Path

    import trustcal.shift.mnist_c as module

    tree = ast.parse(Path(module.__file__).read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not names & {"cv2", "skimage", "wand", "PIL"}, names
