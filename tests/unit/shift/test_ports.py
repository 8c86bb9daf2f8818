"""trustcal.shift._ports: the library routines the reference calls, each against the library where it is
installed here (SciPy) or against values the library produced (OpenCV's anti-aliased disks)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from scipy.ndimage import gaussian_filter, zoom

from trustcal.shift import _ports
from trustcal.shift.corruptions import _zoom_factors

# sha256 of make_cifar_c.py's disk(radius, alias_blur) (float32, 17 x 17) per defocus_blur severity, from
# cv2.GaussianBlur of opencv-python-headless 4.10.0.84 and of 5.0.0.93 alike
DISK_SHA256 = {
    (0.3, 0.4): "4d50dd2b503ca57e29cd15cbb758b7768a1ec5b73a9db381acb3c23d9f9a2c8f",
    (0.4, 0.5): "fe36478a15aa0c35e1949e372318d818b8cd3de87264e291f72a66bcf46c3830",
    (0.5, 0.6): "4813eaf6e685caa30d994a0b49033975dc7b855f468489388acca535daef3a29",
    (1, 0.2): "a21071e2f1f8c63cb832553eaf45b63999db2edcbba92071e68693566af470a6",
    (1.5, 0.1): "dccc56a51228b6de0a5baffa4c70ebd503cff3bcecc91dd4b2c0ed613afdcd0c",
}


@pytest.mark.parametrize(("radius", "alias_blur"), list(DISK_SHA256))
def test_disk_kernel_equals_opencvs(radius, alias_blur):
    kernel = _ports.disk_kernel(radius, alias_blur)
    assert kernel.dtype == np.float32 and kernel.shape == (17, 17)
    assert hashlib.sha256(kernel.tobytes()).hexdigest() == DISK_SHA256[(radius, alias_blur)]


def _scipy_clipped_zoom(image: np.ndarray, factor: float) -> np.ndarray:
    """make_cifar_c.py's clipped_zoom, on one image (H, H, C), with scipy.ndimage.zoom itself."""
    h = image.shape[0]
    crop = int(np.ceil(h / factor))
    top = (h - crop) // 2
    zoomed = zoom(image[top : top + crop, top : top + crop], (factor, factor, 1), order=1)
    trim = (zoomed.shape[0] - h) // 2
    return zoomed[trim : trim + h, trim : trim + h]


ZOOMS = sorted({float(f) for s in range(1, 6) for f in _zoom_factors(s)} | {1.0, 1.25, 1.75, 2.25})


@pytest.mark.parametrize("factor", ZOOMS)
def test_clipped_zoom_equals_scipys_bit_for_bit(factor):
    """Every zoom factor zoom_blur and snow use, float32 with three channels and float64 with one."""
    rng = np.random.default_rng(int(factor * 100))
    for dtype, channels in ((np.float32, 3), (np.float64, 1)):
        x = rng.random((4, 32, 32, channels)).astype(dtype)
        expected = np.stack([_scipy_clipped_zoom(image, factor) for image in x])
        side_by_side = np.ascontiguousarray(x.transpose(1, 2, 0, 3).reshape(32, 32, 4 * channels))
        ours = _ports.clipped_zoom(side_by_side, factor).reshape(32, 32, 4, channels).transpose(2, 0, 1, 3)
        assert ours.dtype == expected.dtype
        np.testing.assert_array_equal(ours, expected)


def test_first_zoom_blur_severity_has_seven_factors():
    """np.arange(1, stop, 0.01) reaches 1.06 and 1.11 through float rounding, not 1.16, 1.21, 1.26."""
    assert [len(_zoom_factors(s)) for s in range(1, 6)] == [7, 12, 16, 21, 26]


def test_skimage_gaussian_filters_each_image_alone():
    x = np.random.default_rng(0).random((3, 32, 32, 3))
    stacked = _ports.skimage_gaussian(x, 0.4)
    for i in range(3):  # skimage.filters.gaussian(x[i], 0.4, channel_axis=-1)
        np.testing.assert_array_equal(stacked[i], gaussian_filter(x[i], (0.4, 0.4, 0), mode="nearest", truncate=4.0))


def test_hsv_round_trip_and_known_colours():
    x = np.random.default_rng(1).integers(0, 256, (500, 3)) / 255.0
    np.testing.assert_allclose(_ports.hsv_to_rgb(_ports.rgb_to_hsv(x)), x, atol=1e-12)
    colours = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [0.5, 0.5, 0.5], [0, 0, 0], [1.0, 1.0, 0]])
    expected = np.array([[0, 1, 1], [1 / 3, 1, 1], [2 / 3, 1, 1], [0, 0, 0.5], [0, 0, 0], [1 / 6, 1, 1]])
    np.testing.assert_allclose(_ports.rgb_to_hsv(colours), expected, atol=1e-15)


def test_plasma_fractal_uses_every_draw_and_spans_zero_to_one():
    assert _ports.plasma_draw_count(32) == 1023
    maps = _ports.plasma_fractal(np.random.default_rng(2).random((3, 1023)), 32, 2.0)
    assert maps.shape == (3, 32, 32)
    np.testing.assert_allclose(maps.min(axis=(1, 2)), 0)
    np.testing.assert_allclose(maps.max(axis=(1, 2)), 1)


def test_magick_motion_kernel_and_offsets():
    kernel = _ports.magick_motion_kernel(6, 1)
    assert len(kernel) == 13 and abs(kernel.sum() - 1) < 1e-15 and np.all(np.diff(kernel) < 0)
    assert _ports.magick_motion_offsets(5, 0.0) == ([0, 1, 2, 3, 4], [0, 0, 0, 0, 0])
    assert _ports.magick_motion_offsets(5, 90.0) == ([0, 0, 0, 0, 0], [0, 1, 2, 3, 4])
    assert _ports.magick_motion_offsets(5, -45.0) == ([0, 1, 1, 2, 3], [0, -1, -1, -2, -3])


def test_motion_blur_of_a_flat_image_and_an_edge():
    flat = np.full((2, 32, 32, 3), 77, np.uint8)
    np.testing.assert_array_equal(_ports.magick_motion_blur(flat, 6, 1, np.array([10.0, -30.0])), flat)
    edge = np.full((1, 32, 32, 1), 100, np.uint8)
    edge[:, :, 16:] = 200
    out = _ports.magick_motion_blur(edge, 6, 1, np.array([0.0]))[0, 0, :, 0]
    # blurred towards the right (taps at x, x+1, …), the values floored after the 16-bit rounding
    assert list(out[12:18]) == [100, 100, 108, 142, 200, 200]


def test_affine_matrix_and_identity_warp():
    src = np.float32([[[26, 26], [26, 6], [6, 6]]])
    np.testing.assert_allclose(_ports.affine_transform_matrix(src, src)[0], [[1, 0, 0], [0, 1, 0]], atol=1e-15)
    shifted = _ports.affine_transform_matrix(src, src + np.float32([2.5, -1]))[0]
    np.testing.assert_allclose(shifted, [[1, 0, 2.5], [0, 1, -1]], atol=1e-12)
    x = np.random.default_rng(3).random((2, 32, 32, 3)).astype(np.float32)
    identity = np.broadcast_to(np.array([[1.0, 0, 0], [0, 1, 0]]), (2, 2, 3))
    np.testing.assert_array_equal(_ports.warp_affine_reflect101(x, identity), x)
    # a shift by 0.3 pixel is taken in 1/32-pixel steps, as OpenCV up to 4.10: 10/32 of the neighbour
    step = np.zeros((1, 4, 8, 1), np.float32)
    step[..., 4, :] = 1
    moved = _ports.warp_affine_reflect101(step, np.array([[[1.0, 0, 0.3], [0, 1, 0]]]))
    np.testing.assert_array_equal(moved[0, 0, :, 0], [0, 0, 0, 0, 0.6875, 0.3125, 0, 0])
