"""Each MNIST-C corruption against the reference: google-research/mnist-c ``corruptions.py``.

The golden values were computed by running that file's corruption functions (commit
bba57e4ccc282f106907c5239958e72298451ea7, at their default severities, which are MNIST-C's) image by
image, each on the ``PIL.Image`` of a uint8 28 × 28 image as the reference takes it, on the images of
:func:`mnist_like` (their digest is checked first), with Python 3.11.7, NumPy 2.4.6, SciPy 1.17.1,
Pillow 13.0.0, scikit-image 0.26.0, opencv-python-headless 4.10.0.84 and Wand 0.7.2 over
ImageMagick 6.9.11-60 Q16 (Debian 12's libmagickwand-6.q16-6). The reference returns float32 images
in [0, 255]; the golden values are of ``astype(np.uint8)`` of them (truncation). Only what NumPy 2 and
scikit-image 0.26 no longer accept, or now compute otherwise, was adapted, in a scratch copy:
``np.float_`` read as ``np.float64``; ``np.int`` as ``int``; ``multichannel=True`` as
``channel_axis=-1`` (the same filter: on a 2-D image, along the first axis only);
``skimage.util.random_noise`` given a seeded ``rng`` (it draws from its own Generator otherwise); and
shear's ``transform.AffineTransform(shear=s)`` built from the matrix scikit-image computed in 2019,
when MNIST-C was made, [[1, -sin s, t], [0, cos s, t']] (scikit-image 0.21 and later put -tan s and 1
there). Before each corruption the global ``np.random`` was seeded with 101; for impulse_noise,
``random_noise`` got ``np.random.default_rng(101)``.

Matched exactly (the sha256 of the uint8 output): all sixteen (identity and the benchmark's
fifteen), with the same draws: a ``RandomState(101)`` (impulse_noise: a ``Generator``) passed as
``rng`` reproduces the reference's seeded global state, because the draws are made in its order.
The same holds on real images: the first 200 of MNIST's test split in the shared folder (skipped
where the folder is absent).

Matched by distribution: each random corruption driven by a ``numpy.random.Generator`` (the usage the
project documents), against the reference's mean per-pixel change and mean absolute change over 64
images, within five combined standard errors of the reference's per-image means.
"""

from __future__ import annotations

import gzip
import hashlib

import numpy as np
import pytest

from trustcal.shift.mnist_c import MNIST_C, available_mnist, corrupt_mnist

INPUT_SHA256 = "8fc146661dbf9ad79e6eea081b2b153478739ff24ab9b77349b18248cdf0f6ec"

# sha256 of corruptions.py's output (uint8, N x 28 x 28) on mnist_like(8), per corruption
GOLDEN = {
    "identity": "8fc146661dbf9ad79e6eea081b2b153478739ff24ab9b77349b18248cdf0f6ec",
    "shot_noise": "23a9983ad20d1fe5dcbddd9dac2bd3b7e7c4271c63693100e5bd1538245b38a5",
    "impulse_noise": "817a6af6043790963ee85340b8f48ac2a184f633e9758010631a62cd5bfcd7a0",
    "glass_blur": "38f2fc2d85b013f7c062da1c7b343db870595c5955512e892646d078d56c1cf0",
    "motion_blur": "250ecc8ba66a22ca4fd0c028c58498cf29761778eacb792a57dcfa839026b78e",
    "shear": "59d28a0b5f23f608742c97396a30a4233857da2c0ea2e3b3476ee7296b569d59",
    "scale": "720e33c43b4dbbfed08df4df8e321b8c5cbbd88db975b6244eb2a6386cb91959",
    "rotate": "faf3f5aab150d94ec2c373c48019c1c420336b1de77f47c637c3be64b414a449",
    "brightness": "e323272dbe0e09a3469df9495271838286ac99925add8bd370919ee031db10fc",
    "translate": "b187b8ffefd5c462226be893db014b4618001a3ea92d911af49e4f6f56f1f860",
    "stripe": "5e13219221ccc004c873dae2bc052e0bd7407a57dcedb20d3f8a29c5a8dcfd55",
    "fog": "d8065de195fbe0a8d4d69eda40e9d51264ad71bd5b41df704375748d0e359a66",
    "spatter": "823150a0ea8dcea3101a131e6d07566dc464a477ec9140db298950dba0c0c07c",
    "dotted_line": "4f20df8c57e02a2fc7db48dd57f5988f83089f72a321934c107309f96c76b84d",
    "zigzag": "b5b4a6edebec0bf50076686860caef8a35d8dab3e2520005a5a392d4b7033948",
    "canny_edges": "26c7c3d72bd93d122123d44dac04113a1b38bb5e56bf921da9c1d1af7cba1cb5",
}

# From corruptions.py's output on mnist_like(64), the draws seeded as above: (mean change, its standard error
# over the 64 images, mean absolute change, its standard error), in levels of 0-255.
DISTRIBUTION = {
    "shot_noise": (-4.6451, 0.2739, 22.5719, 2.5166),
    "impulse_noise": (14.9866, 0.5223, 21.5201, 0.3223),
    "glass_blur": (-0.6007, 0.036, 20.1707, 0.9793),
    "motion_blur": (-0.2987, 0.0663, 25.424, 0.7241),
    "shear": (-0.4796, 0.3947, 30.0877, 0.838),
    "rotate": (-2.8552, 0.3975, 28.7008, 1.1803),
    "translate": (-4.0874, 0.5678, 43.7042, 0.9426),
    "fog": (59.9609, 4.6627, 77.9408, 3.7952),
    "spatter": (3.2357, 0.4635, 7.637, 0.5431),
    "dotted_line": (6.0777, 0.0837, 6.0777, 0.0837),
    "zigzag": (12.5032, 0.1869, 12.5032, 0.1869),
}

# The first 200 images of MNIST's test split in the shared folder (datasets/mnist/t10k-images-idx3-ubyte.gz),
# and the sha256 of corruptions.py's output on them, computed as above.
MNIST_INPUT_SHA256 = "b40951266842e68099badfd113fb1525bce88e99ecbc0779db1bfac8fe4b0b16"
MNIST_GOLDEN = {
    "identity": "b40951266842e68099badfd113fb1525bce88e99ecbc0779db1bfac8fe4b0b16",
    "shot_noise": "5cd6fc61ed7d38a25628a6ffa629ffba59999fe113f74557f37fcb1e9af08c12",
    "impulse_noise": "6e1fe52404ef0f6e2a2ecde6273106e055e956d35795ca6fd97054cf1bc38d28",
    "glass_blur": "01af4f6fb6dfe2fc871aeb74db1d0f64875374216c2a812ab035c5f7ea1e6121",
    "motion_blur": "df07de0ae36456ee4db0751e2f5395c9442ce0e75d4e3956f2795072340b48af",
    "shear": "9f47c3dac8792b06aeed64fb6f575a3e5635b6ad6cd66c615e6b138bf878e8a5",
    "scale": "682d7b19a7bcaea3d10b2000b08b6a751ae840707eaa85c5316b1325f5c5a33f",
    "rotate": "034e082463dd3d749c4e13b74b69872091fb677e1c1be7be59d609ca6db16a40",
    "brightness": "f2e45757f02b32883c988866a079a2e76787d411b794f28c053f0c0d8ea6e62d",
    "translate": "1558a0dca75d22d0e388a6e482396c5ecdc8d9dfc37aa160556b78ac077ca501",
    "stripe": "063b199c2ba08e8b73b9f7661b69c58438da0bc0f90a5ccdb6f70774ea4d911c",
    "fog": "654d06d055ef1d560f058f727881a08d72cdc504ff0482a4ba9ad64deaa03f71",
    "spatter": "4f581acbc0d5edb92e0141c11c065d19a62c8fa79feab1e18251bff8ca072488",
    "dotted_line": "de2867e3b52c4e56faf88d090f411dc0291593242617b8fae043ae9ff0c4d328",
    "zigzag": "75f824de1b5e944d6685419e46d959cb40238c66cb2ac651252962fdfeed9757",
    "canny_edges": "3afdfe2b296a648dfec66a5ed5079b4f9ce7c96b19dda6c6621727abec7b6253",
}


def mnist_like(n: int, seed: int = 20240612) -> np.ndarray:
    """``n`` MNIST-like uint8 images (N, 28, 28), white strokes on black, in turn: an anti-aliased ring
    (a "0"); two or three thick anti-aliased strokes; a bright bar on a grey, noisy background (no black
    pixel: it exercises the warps' clipping to the image's range); sparse speckle of random levels."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:28, 0:28].astype(np.float64)
    out = np.empty((n, 28, 28), dtype=np.uint8)
    for i in range(n):
        kind = i % 4
        if kind == 0:
            cy, cx = 14 + rng.uniform(-2, 2, 2)
            ry, rx = rng.uniform(6, 9), rng.uniform(4, 7)
            d = np.sqrt(((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2)
            img = 255 * np.clip(1.5 - 6 * np.abs(d - 1), 0, 1)
        elif kind == 1:
            img = np.zeros((28, 28))
            for _ in range(int(rng.integers(2, 4))):
                p, q = rng.uniform(4, 24, 2), rng.uniform(4, 24, 2)
                v = q - p
                t = np.clip(((yy - p[0]) * v[0] + (xx - p[1]) * v[1]) / max(v @ v, 1e-9), 0, 1)
                dist = np.sqrt((yy - p[0] - t * v[0]) ** 2 + (xx - p[1] - t * v[1]) ** 2)
                img = np.maximum(img, 255 * np.clip(2.2 - dist, 0, 1))
        elif kind == 2:
            img = 40.0 + rng.integers(0, 30, (28, 28))
            img[6:22, 12:16] = 250
        else:
            img = np.where(rng.random((28, 28)) < 0.2, rng.integers(1, 256, (28, 28)), 0).astype(np.float64)
        out[i] = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return out


def reference_rng(name: str):
    """The draws the golden values were made with: the reference's global state seeded with 101
    (impulse_noise: scikit-image's Generator so seeded)."""
    if name == "impulse_noise":
        return np.random.default_rng(101)
    return np.random.RandomState(101)


def sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def images8():
    images = mnist_like(8)
    assert sha256(images) == INPUT_SHA256  # the images the golden values were computed on
    return images


@pytest.fixture(scope="module")
def images64():
    return mnist_like(64)


def test_golden_values_cover_every_computable_corruption():
    assert list(GOLDEN) == list(MNIST_C) == available_mnist() == list(MNIST_GOLDEN)
    assert set(DISTRIBUTION) == {name for name, c in MNIST_C.items() if c.random}
    assert all(c.match == "exact" for c in MNIST_C.values())


@pytest.mark.parametrize("name", list(GOLDEN))
def test_equal_to_reference(images8, name):
    out = corrupt_mnist(images8, name, 1, reference_rng(name))
    assert out.dtype == np.uint8 and out.shape == images8.shape
    assert sha256(out) == GOLDEN[name]


@pytest.mark.parametrize("name", ["glass_blur", "fog", "canny_edges"])
def test_equal_to_reference_in_the_projects_layout(images8, name):
    """(N, 1, 28, 28) in, (N, 1, 28, 28) out: the same images as the reference's."""
    out = corrupt_mnist(images8[:, None], name, 1, reference_rng(name))
    assert out.shape == (8, 1, 28, 28)
    assert sha256(out[:, 0]) == GOLDEN[name]


@pytest.mark.parametrize("name", list(DISTRIBUTION))
def test_distribution_with_a_generator(images64, name):
    """Driven by a numpy Generator (other draws than the reference's), the per-pixel change has the
    reference's mean and mean absolute value."""
    mean, mean_se, mean_abs, mean_abs_se = DISTRIBUTION[name]
    out = corrupt_mnist(images64, name, 1, np.random.default_rng(8))
    change = out.astype(np.int64) - images64.astype(np.int64)
    assert abs(change.mean() - mean) <= 5 * np.sqrt(2) * mean_se + 1e-3, (change.mean(), mean)
    assert abs(np.abs(change).mean() - mean_abs) <= 5 * np.sqrt(2) * mean_abs_se + 1e-3, (
        np.abs(change).mean(),
        mean_abs,
    )


@pytest.fixture(scope="module")
def mnist_test200(shared):
    with gzip.open(shared("datasets/mnist/t10k-images-idx3-ubyte.gz")) as f:
        data = f.read(16 + 200 * 28 * 28)
    images = np.frombuffer(data, np.uint8, offset=16).reshape(200, 28, 28).copy()
    assert sha256(images) == MNIST_INPUT_SHA256
    return images


@pytest.mark.parametrize("name", list(MNIST_GOLDEN))
def test_equal_to_reference_on_mnist(mnist_test200, name):
    """Real images: the same uint8 images as the reference's, to the bit."""
    out = corrupt_mnist(mnist_test200, name, 1, reference_rng(name))
    assert sha256(out) == MNIST_GOLDEN[name]
